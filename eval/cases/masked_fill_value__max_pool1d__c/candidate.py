import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def max_pool1d_kernel(
    x_ptr, out_ptr,
    L, L_out, stride_row,
    KERNEL_SIZE: tl.constexpr, STRIDE: tl.constexpr, PADDING: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    pid = tl.program_id(1)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    out_mask = offs < L_out

    x_row = x_ptr + row * stride_row
    acc = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for k in tl.static_range(KERNEL_SIZE):
        pos = offs * STRIDE - PADDING + k
        valid = out_mask & (pos >= 0) & (pos < L)
        v = tl.load(x_row + pos, mask=valid, other=0.0)
        acc = tl.maximum(acc, v.to(tl.float32))

    tl.store(out_ptr + row * L_out + offs, acc, mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, C, L = x.shape
        x2d = x.reshape(B * C, L).contiguous()
        L_out = (L + 2 * self.padding - self.kernel_size) // self.stride + 1
        out = torch.empty(B, C, L_out, device=x.device, dtype=x.dtype)
        BLOCK = 128
        grid = (B * C, triton.cdiv(L_out, BLOCK))
        max_pool1d_kernel[grid](
            x2d, out, L, L_out, x2d.stride(0),
            KERNEL_SIZE=self.kernel_size, STRIDE=self.stride, PADDING=self.padding,
            BLOCK=BLOCK,
        )
        return out
