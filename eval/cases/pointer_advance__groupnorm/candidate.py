import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def group_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, C, HW, num_groups, eps, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    n = pid // num_groups
    g = pid % num_groups
    channels_per_group = C // num_groups
    group_size = channels_per_group * HW
    base = n * C * HW + g * group_size
    offs = tl.arange(0, BLOCK_SIZE)

    # pass 1: mean
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    x_ptrs = x_ptr + base + offs
    for start in range(0, group_size, BLOCK_SIZE):
        mask = start + offs < group_size
        acc += tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32)
        x_ptrs += BLOCK_SIZE
    mean = tl.sum(acc, axis=0) / group_size

    # pass 2: variance
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    x_ptrs = x_ptr + base + offs
    for start in range(0, group_size, BLOCK_SIZE):
        mask = start + offs < group_size
        x = tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        acc += d * d
        x_ptrs += BLOCK_SIZE
    var = tl.sum(acc, axis=0) / group_size
    rstd = 1.0 / tl.sqrt(var + eps)

    # pass 3: normalize, scale and shift
    x_ptrs = x_ptr + base + offs
    y_ptrs = y_ptr + base + offs
    for start in range(0, group_size, BLOCK_SIZE):
        idx = start + offs
        mask = idx < group_size
        c = g * channels_per_group + idx // HW
        w = tl.load(w_ptr + c, mask=mask, other=1.0)
        b = tl.load(b_ptr + c, mask=mask, other=0.0)
        x = tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_ptrs, y, mask=mask)
        x_ptrs += BLOCK_SIZE


class ModelNew(nn.Module):
    def __init__(self, num_groups, num_channels):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_channels, eps=1e-5)

    def forward(self, x):
        x = x.contiguous()
        N, C = x.shape[0], x.shape[1]
        HW = x.numel() // (N * C)
        y = torch.empty_like(x)
        G = self.gn.num_groups
        group_norm_kernel[(N * G,)](
            x, y, self.gn.weight, self.gn.bias, C, HW, G, self.gn.eps, BLOCK_SIZE=512,
        )
        return y
