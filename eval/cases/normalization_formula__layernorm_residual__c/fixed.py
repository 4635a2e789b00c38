import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_layernorm_kernel(
    x_ptr, res_ptr, w_ptr, b_ptr, out_ptr,
    N, stride_x, stride_res, stride_out, eps,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N

    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(res_ptr + row * stride_res + cols, mask=mask, other=0.0).to(tl.float32)
    h = x + r

    mean = tl.sum(h, axis=0) / N
    diff = tl.where(mask, h - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)

    w = tl.load(w_ptr + cols, mask=mask, other=1.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    y = diff * rstd * w + b
    tl.store(out_ptr + row * stride_out + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size, eps=1e-5)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        residual = residual.contiguous()
        M, N = x.shape
        out = torch.empty_like(x)
        BLOCK_N = triton.next_power_of_2(N)
        add_layernorm_kernel[(M,)](
            x, residual, self.norm.weight, self.norm.bias, out,
            N, x.stride(0), residual.stride(0), out.stride(0), self.norm.eps,
            BLOCK_N=BLOCK_N,
        )
        return out
