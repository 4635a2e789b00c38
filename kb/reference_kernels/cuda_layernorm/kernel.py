import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>

#define THREADS 256  // a power of two: the tree reduction halves it

// Sum of v over the block's threads; every thread gets it. `shared` holds THREADS floats.
__device__ float block_sum(float v, float* shared) {
    int tid = threadIdx.x;
    shared[tid] = v;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half >>= 1) {
        if (tid < half) {
            shared[tid] += shared[tid + half];
        }
        __syncthreads();
    }
    float result = shared[0];
    __syncthreads();  // read by all before the buffer is reused
    return result;
}

// One block per row of `cols` features: mean, then the biased variance as the mean of (x - mean)^2
// (two passes: no cancellation of E[x^2] - mean^2 for inputs with a large mean), then the output.
__global__ void layernorm_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                 const float* __restrict__ bias, float* __restrict__ out,
                                 int rows, int cols, float eps) {
    __shared__ float scratch[THREADS];
    int row = blockIdx.x;
    if (row >= rows) {
        return;  // uniform over the block
    }
    const float* xr = x + (long long)row * cols;
    float* outr = out + (long long)row * cols;

    float local = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        local += xr[c];
    }
    float mean = block_sum(local, scratch) / cols;

    float local_sq = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float d = xr[c] - mean;
        local_sq += d * d;
    }
    float var = block_sum(local_sq, scratch) / cols;  // biased, as F.layer_norm uses
    float inv_std = rsqrtf(var + eps);

    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        outr[c] = (xr[c] - mean) * inv_std * weight[c] + bias[c];
    }
}

torch::Tensor layernorm(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "layernorm: float32 CUDA tensor");
    x = x.contiguous();
    weight = weight.contiguous();
    bias = bias.contiguous();
    int cols = x.size(-1);
    int rows = cols > 0 ? x.numel() / cols : 0;  // every leading dimension flattened into rows
    auto out = torch::empty_like(x);
    if (rows > 0) {
        layernorm_kernel<<<rows, THREADS>>>(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
                                            out.data_ptr<float>(), rows, cols, (float)eps);
    }
    return out;
}
"""

cpp_src = "torch::Tensor layernorm(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps);"
ext = load_inline(name="kdebug_ref_cuda_layernorm", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["layernorm"])


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(hidden))
        self.bias = nn.Parameter(torch.randn(hidden))

    def forward(self, x):
        return ext.layernorm(x, self.weight, self.bias, self.eps)
