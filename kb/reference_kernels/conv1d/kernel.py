import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv1d_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C_in, L, C_out, L_out,
                  stride_xn, stride_xc, stride_xl, stride_wo, stride_wi, stride_wk,
                  stride_on, stride_oc, stride_ol, stride, padding,
                  KERNEL_SIZE: tl.constexpr, BLOCK_CO: tl.constexpr, BLOCK_L: tl.constexpr):
    pid_l = tl.program_id(axis=0)   # block of output positions
    pid_co = tl.program_id(axis=1)  # block of output channels
    n = tl.program_id(axis=2)       # batch entry
    co = pid_co * BLOCK_CO + tl.arange(0, BLOCK_CO)
    lo = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    co_mask = co < C_out
    lo_mask = lo < L_out

    acc = tl.zeros((BLOCK_CO, BLOCK_L), dtype=tl.float32)
    for ci in range(0, C_in):  # reduce over every input channel ...
        for k in tl.static_range(KERNEL_SIZE):  # ... and every tap
            pos = lo * stride - padding + k
            x_mask = lo_mask & (pos >= 0) & (pos < L)  # zero padding outside the signal
            x = tl.load(x_ptr + n * stride_xn + ci * stride_xc + pos * stride_xl,
                        mask=x_mask, other=0.0)
            w = tl.load(w_ptr + co * stride_wo + ci * stride_wi + k * stride_wk,
                        mask=co_mask, other=0.0)
            # outer product: every output channel times every output position
            acc += w.to(tl.float32)[:, None] * x.to(tl.float32)[None, :]
    bias = tl.load(b_ptr + co, mask=co_mask, other=0.0).to(tl.float32)
    acc += bias[:, None]
    out_ptrs = out_ptr + n * stride_on + co[:, None] * stride_oc + lo[None, :] * stride_ol
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=co_mask[:, None] & lo_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.stride = stride
        self.padding = padding
        bound = 1.0 / math.sqrt(in_channels * kernel_size)
        self.weight = nn.Parameter(
            torch.empty(out_channels, in_channels, kernel_size).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(out_channels).uniform_(-bound, bound))

    def forward(self, x):
        N, C_in, L = x.shape
        C_out, _, kernel_size = self.weight.shape
        L_out = (L + 2 * self.padding - kernel_size) // self.stride + 1
        out = torch.empty((N, C_out, L_out), device=x.device, dtype=x.dtype)
        BLOCK_CO, BLOCK_L = 16, 32
        grid = (triton.cdiv(L_out, BLOCK_L), triton.cdiv(C_out, BLOCK_CO), N)
        w = self.weight
        conv1d_kernel[grid](x, w, self.bias, out, C_in, L, C_out, L_out,
                            x.stride(0), x.stride(1), x.stride(2),
                            w.stride(0), w.stride(1), w.stride(2),
                            out.stride(0), out.stride(1), out.stride(2),
                            self.stride, self.padding,
                            KERNEL_SIZE=kernel_size, BLOCK_CO=BLOCK_CO, BLOCK_L=BLOCK_L)
        return out
