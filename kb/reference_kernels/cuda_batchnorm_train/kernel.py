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

// BatchNorm2d over NCHW, one block per channel c. The channel's N*H*W elements are x[(n * C + c) * HW + s]
// for n < N, s < HW. In training mode the statistics come from this batch (not the running ones): the
// mean, then the biased variance (two passes); eval mode reads the running ones. Training mode then
// updates the running statistics as PyTorch does:
// running = (1 - momentum) * running + momentum * batch, with the unbiased variance (count / (count - 1)).
__global__ void batchnorm_train_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                       const float* __restrict__ bias, float* __restrict__ running_mean,
                                       float* __restrict__ running_var, int64_t* __restrict__ num_batches_tracked,
                                       float* __restrict__ out, bool training, int N, int C, int HW, float eps, float momentum) {
    __shared__ float scratch[THREADS];
    int c = blockIdx.x;
    if (c >= C) {
        return;  // uniform over the block: it is the block's channel
    }
    long long count = (long long)N * HW;

    float mean, var;
    if (training) {  // a kernel argument: uniform over the grid, so the reductions' __syncthreads are safe
        float local = 0.0f;
        for (long long i = threadIdx.x; i < count; i += blockDim.x) {
            long long n = i / HW;  // decoded on copies: i itself stays the loop index
            long long s = i % HW;
            local += x[(n * C + c) * HW + s];
        }
        mean = block_sum(local, scratch) / count;

        float local_sq = 0.0f;
        for (long long i = threadIdx.x; i < count; i += blockDim.x) {
            long long n = i / HW;
            long long s = i % HW;
            float d = x[(n * C + c) * HW + s] - mean;
            local_sq += d * d;
        }
        var = block_sum(local_sq, scratch) / count;  // biased: what the normalisation uses
    } else {
        mean = running_mean[c];  // eval mode: the running statistics
        var = running_var[c];
    }
    float inv_std = rsqrtf(var + eps);

    for (long long i = threadIdx.x; i < count; i += blockDim.x) {
        long long n = i / HW;
        long long s = i % HW;
        long long at = (n * C + c) * HW + s;
        out[at] = (x[at] - mean) * inv_std * weight[c] + bias[c];
    }
    if (training && threadIdx.x == 0) {
        float unbiased = count > 1 ? var * count / (count - 1) : var;
        running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * mean;
        running_var[c] = (1.0f - momentum) * running_var[c] + momentum * unbiased;
        if (c == 0) {
            num_batches_tracked[0] += 1;  // one forward in training mode, counted once
        }
    }
}

torch::Tensor batchnorm_train(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                              torch::Tensor running_mean, torch::Tensor running_var, torch::Tensor num_batches_tracked,
                              bool training, double eps, double momentum) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 4 && x.scalar_type() == torch::kFloat32, "batchnorm_train: NCHW float32");
    TORCH_CHECK(running_mean.is_contiguous() && running_var.is_contiguous(), "running statistics updated in place");
    x = x.contiguous();
    weight = weight.contiguous();
    bias = bias.contiguous();
    int N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
    auto out = torch::empty_like(x);
    if (C > 0 && N * HW > 0) {
        batchnorm_train_kernel<<<C, THREADS>>>(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
                                               running_mean.data_ptr<float>(), running_var.data_ptr<float>(),
                                               num_batches_tracked.data_ptr<int64_t>(), out.data_ptr<float>(), training, N, C, HW, (float)eps, (float)momentum);
    }
    return out;
}
"""

cpp_src = ("torch::Tensor batchnorm_train(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, "
           "torch::Tensor running_mean, torch::Tensor running_var, torch::Tensor num_batches_tracked, bool training, "
           "double eps, double momentum);")
ext = load_inline(name="kdebug_ref_cuda_batchnorm_train", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["batchnorm_train"])


class ModelNew(nn.Module):
    """Keeps Model's nn.BatchNorm2d as the holder of the parameters and buffers (the same names: bn.weight,
    bn.running_mean, ...); its forward is never called: the kernel does the work and the update."""

    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        bn = self.bn
        # nn.BatchNorm2d's rule: the batch's statistics in training mode (KernelBench's harness runs the
        # model so), the running ones in eval mode
        return ext.batchnorm_train(x, bn.weight, bn.bias, bn.running_mean, bn.running_var, bn.num_batches_tracked,
                                   self.training, bn.eps, bn.momentum)
