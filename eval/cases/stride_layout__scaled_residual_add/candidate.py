import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scaled_residual_add_kernel(x_ptr, res_ptr, out_ptr, n_elements, scale, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    r = tl.load(res_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * scale + r, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n_elements = x.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        scaled_residual_add_kernel[grid](x, residual, out, n_elements, self.scale, BLOCK_SIZE=BLOCK_SIZE)
        return out
