import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_channels_kernel(
    x_ptr, y_ptr,
    C, S,
    stride_b, stride_c,
    eps,
    BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr,
):
    pid_b = tl.program_id(0)
    pid_s = tl.program_id(1)
    offs_c = tl.arange(0, BLOCK_C)
    offs_s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    mask = (offs_c[:, None] < C) & (offs_s[None, :] < S)
    offsets = pid_b * stride_b + offs_c[:, None] * stride_c + offs_s[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / C
    inv_rms = 1.0 / (tl.sqrt(mean_sq) + eps)
    y = x * inv_rms[None, :]
    tl.store(y_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, C = x.shape[0], x.shape[1]
        S = x[0, 0].numel()
        y = torch.empty_like(x)
        BLOCK_C = triton.next_power_of_2(C)
        BLOCK_S = 32
        grid = (B, triton.cdiv(S, BLOCK_S))
        rmsnorm_channels_kernel[grid](
            x, y, C, S, x.stride(0), x.stride(1), self.eps,
            BLOCK_C=BLOCK_C, BLOCK_S=BLOCK_S,
        )
        return y
