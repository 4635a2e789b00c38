import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>
#include <cublas_v2.h>
#include <ATen/cuda/CUDAContext.h>

torch::Tensor matmul_forward(torch::Tensor a, torch::Tensor b) {
    const int M = a.size(0), K = a.size(1), N = b.size(1);
    auto c = torch::empty({M, N}, a.options());
    const float alpha = 1.0f, beta = 0.0f;
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    // row-major C = A B computed as column-major C^T = B^T A^T
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha,
                b.data_ptr<float>(), N, a.data_ptr<float>(), K, &beta, c.data_ptr<float>(), N);
    return c;
}
"""

cpp_source = "torch::Tensor matmul_forward(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="matmul_ext", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["matmul_forward"], extra_ldflags=["-lcublas"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.matmul_forward(A.contiguous(), B.contiguous())
