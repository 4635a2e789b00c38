import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * stride + cols, diff * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    """LayerNorm in one kernel; nn.LayerNorm only holds the parameters (same state_dict keys)."""

    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        shape = x.shape
        x2 = x.contiguous().view(-1, shape[-1])
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        layernorm_kernel[(n_rows,)](x2, self.ln.weight, self.ln.bias, out, n_cols, x2.stride(0), self.ln.eps,
                                    BLOCK=triton.next_power_of_2(n_cols))
        return out.view(shape)
