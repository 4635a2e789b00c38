import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_contiguous_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(x > 0, x, 0.0), mask=mask)


@triton.jit
def relu_strided_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_xr, stride_xc, stride_or,
                        BLOCK_COLS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xr + cols * stride_xc, mask=mask)
    tl.store(out_ptr + row * stride_or + cols, tl.where(x > 0, x, 0.0), mask=mask)


class ModelNew(nn.Module):
    """ReLU with a fast path for contiguous inputs and a strided Triton path for the rest."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.is_contiguous():
            out = torch.empty_like(x)
            n = x.numel()
            relu_contiguous_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
            return out
        x2 = x.reshape(-1, x.shape[-1]) if x.dim() != 2 else x
        rows, cols = x2.shape
        out = torch.empty((rows, cols), device=x.device, dtype=x.dtype)
        grid = (rows, triton.cdiv(cols, 256))
        relu_strided_kernel[grid](x2, out, rows, cols, x2.stride(0), x2.stride(1), out.stride(0), BLOCK_COLS=256)
        return out.view(x.shape)
