import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_exp_sum_kernel(e_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(e_ptr + row * stride_row + cols, mask=mask, other=0.0)
    e = tl.exp(v)  # exp again: the host already took it
    total = tl.sum(tl.where(mask, e, 0.0), axis=0)
    tl.store(out_ptr + row, total)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        ex = torch.exp(x)
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        row_exp_sum_kernel[(x.shape[0],)](ex, out, x.shape[1], ex.stride(0),
                                          BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
