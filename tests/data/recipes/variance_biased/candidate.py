import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def standardize_kernel(x_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / (N - 1)
    y = diff / tl.sqrt(var + eps)
    tl.store(y_ptr + row * N + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, eps=1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        M, N = x.shape
        standardize_kernel[(M,)](x, y, N, self.eps, BLOCK=triton.next_power_of_2(N))
        return y
