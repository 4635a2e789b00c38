import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>

// Eval-mode BatchNorm over NCHW: an elementwise map with per-channel scale and shift from the running
// statistics. A grid-stride loop over every element; the channel of flat index i is (i / HW) % C.
__global__ void batchnorm_eval_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                      const float* __restrict__ bias, const float* __restrict__ running_mean,
                                      const float* __restrict__ running_var, float* __restrict__ out,
                                      long long total, int C, int HW, float eps) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)blockDim.x * gridDim.x) {
        int c = (int)((i / HW) % C);
        float inv_std = rsqrtf(running_var[c] + eps);
        out[i] = (x[i] - running_mean[c]) * inv_std * weight[c] + bias[c];
    }
}

torch::Tensor batchnorm_eval(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                             torch::Tensor running_mean, torch::Tensor running_var, bool training, double eps) {
    TORCH_CHECK(!training, "batchnorm_eval: the running statistics only; batch statistics: cuda_batchnorm_train");
    TORCH_CHECK(x.is_cuda() && x.dim() == 4 && x.scalar_type() == torch::kFloat32, "batchnorm_eval: NCHW float32");
    x = x.contiguous();
    weight = weight.contiguous();
    bias = bias.contiguous();
    running_mean = running_mean.contiguous();
    running_var = running_var.contiguous();
    int C = x.size(1), HW = x.size(2) * x.size(3);
    long long total = x.numel();
    auto out = torch::empty_like(x);
    const int threads = 256;
    // ceil division, capped: the grid-stride loop covers whatever the cap leaves
    long long blocks = std::min((total + threads - 1) / threads, (long long)65535);
    if (total > 0) {
        batchnorm_eval_kernel<<<(int)blocks, threads>>>(x.data_ptr<float>(), weight.data_ptr<float>(),
                                                        bias.data_ptr<float>(), running_mean.data_ptr<float>(),
                                                        running_var.data_ptr<float>(), out.data_ptr<float>(),
                                                        total, C, HW, (float)eps);
    }
    return out;
}
"""

cpp_src = ("torch::Tensor batchnorm_eval(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, "
           "torch::Tensor running_mean, torch::Tensor running_var, bool training, double eps);")
ext = load_inline(name="kdebug_ref_cuda_batchnorm_eval", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["batchnorm_eval"])


class ModelNew(nn.Module):
    def __init__(self, channels, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(channels))
        self.bias = nn.Parameter(torch.randn(channels))
        self.register_buffer("running_mean", torch.randn(channels))
        self.register_buffer("running_var", torch.rand(channels) + 0.5)

    def forward(self, x):
        # the reference normalises with the running statistics in every mode: F.batch_norm(..., training=False)
        training = False
        return ext.batchnorm_eval(x, self.weight, self.bias, self.running_mean, self.running_var, training,
                                  self.eps)
