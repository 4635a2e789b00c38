import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def batchnorm_infer_kernel(x_ptr, y_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, n_elements, C, HW, eps,
                           BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    c = offs % C
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + c, mask=mask, other=0.0)
    var = tl.load(var_ptr + c, mask=mask, other=1.0)
    w = tl.load(w_ptr + c, mask=mask, other=1.0)
    b = tl.load(b_ptr + c, mask=mask, other=0.0)
    y = (x - mean) * tl.rsqrt(var + eps) * w + b
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        N, C, H, W = x.shape
        y = torch.empty_like(x)
        n_elements = x.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        batchnorm_infer_kernel[grid](
            x, y, self.running_mean, self.running_var, self.weight, self.bias,
            n_elements, C, H * W, self.eps, BLOCK_SIZE=BLOCK_SIZE,
        )
        return y
