import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv1d_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C_IN, L_IN, C_OUT, L_OUT, KSIZE,
                  BLOCK_L: tl.constexpr, BLOCK_C: tl.constexpr):
    batch = tl.program_id(0)
    oc = tl.program_id(1)
    pos = tl.program_id(2) * BLOCK_L + tl.arange(0, BLOCK_L)
    ic = tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_L,), dtype=tl.float32)
    for k in range(0, KSIZE):
        x = tl.load(x_ptr + batch * C_IN * L_IN + ic[:, None] * L_IN + (pos + k)[None, :],
                    mask=(ic[:, None] < C_IN) & (pos[None, :] < L_OUT), other=0.0)
        w = tl.load(w_ptr + oc * C_IN * KSIZE + ic * KSIZE + k, mask=ic < C_IN, other=0.0)
        acc += tl.sum(x * w[:, None], axis=0)
    acc += tl.load(b_ptr + oc)
    tl.store(out_ptr + batch * C_OUT * L_OUT + oc * L_OUT + pos, acc, mask=pos < L_OUT)


class ModelNew(nn.Module):
    """Direct 1D convolution (stride 1, no padding); nn.Conv1d only holds the weights."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        x = x.contiguous()
        batch, c_in, l_in = x.shape
        c_out, _, ksize = self.conv.weight.shape
        l_out = l_in - ksize + 1
        out = torch.empty((batch, c_out, l_out), device=x.device, dtype=x.dtype)
        grid = (batch, c_out, triton.cdiv(l_out, 64))
        conv1d_kernel[grid](x, self.conv.weight.contiguous(), self.conv.bias, out, c_in, l_in, c_out, l_out, ksize,
                            BLOCK_L=64, BLOCK_C=triton.next_power_of_2(c_in))
        return out
