import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The form of a real answer KernelBench recorded as correct: a kernel is written and bound, but the host
# function computes the result with ATen, here through C++ operator overloads, and never launches it.
cuda_source = """
#include <torch/extension.h>

__global__ void add_kernel(const float* a, const float* b, float* out, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) {
    const long n = a.numel();
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    (void)blocks;
    // the fused kernel is launched for large inputs in the tuned build
    auto out = a + b;
    return out;
}
"""

cpp_source = "torch::Tensor add_forward(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="add_ext_operator", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["add_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = ext

    def forward(self, a, b):
        return self.ext.add_forward(a.contiguous(), b.contiguous())
