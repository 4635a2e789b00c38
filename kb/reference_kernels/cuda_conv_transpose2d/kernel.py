import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>

// Transposed 2-D convolution, NCHW, written as a gather: one thread per output element.
// The forward (scatter) rule is: input (ih, iw) and tap (kh, kw) add to output
//   oh = ih * stride - padding + kh * dilation,   ow = iw * stride - padding + kw * dilation,
// with weight[ci][co][kh][kw] (ConvTranspose2d's layout: in channels first). Inverted for an output
// (oh, ow): for each tap, ih = (oh + padding - kh * dilation) / stride, which must divide exactly and
// land inside the input; the taps are NOT flipped (that is what the inversion already does).
__global__ void conv_transpose2d_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                        const float* __restrict__ bias, float* __restrict__ out,
                                        int N, int Cin, int H, int W, int Cout, int K, int Ho, int Wo,
                                        int stride, int padding, int dilation) {
    long long total = (long long)N * Cout * Ho * Wo;
    for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (long long)blockDim.x * gridDim.x) {
        long long rest = idx;  // decode on a copy
        int ow = rest % Wo;
        rest /= Wo;
        int oh = rest % Ho;
        rest /= Ho;
        int co = rest % Cout;
        int n = rest / Cout;

        float acc = bias[co];
        for (int kh = 0; kh < K; ++kh) {
            int th = oh + padding - kh * dilation;  // = ih * stride for a contributing input row
            if (th < 0 || th % stride != 0) {
                continue;  // tested before dividing: C's % and / truncate toward zero for negatives
            }
            int ih = th / stride;
            if (ih >= H) {
                continue;
            }
            for (int kw = 0; kw < K; ++kw) {
                int tw = ow + padding - kw * dilation;
                if (tw < 0 || tw % stride != 0) {
                    continue;
                }
                int iw = tw / stride;
                if (iw >= W) {
                    continue;
                }
                for (int ci = 0; ci < Cin; ++ci) {
                    acc += x[(((long long)n * Cin + ci) * H + ih) * W + iw] *
                           w[(((long long)ci * Cout + co) * K + kh) * K + kw];
                }
            }
        }
        out[idx] = acc;
    }
}

torch::Tensor conv_transpose2d_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, int64_t stride,
                                       int64_t padding, int64_t output_padding, int64_t dilation) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 4 && x.scalar_type() == torch::kFloat32, "conv_transpose2d: NCHW float32");
    x = x.contiguous();
    weight = weight.contiguous();
    bias = bias.contiguous();
    int N = x.size(0), Cin = x.size(1), H = x.size(2), W = x.size(3);
    int Cout = weight.size(1), K = weight.size(2);
    // PyTorch's output size
    int Ho = (H - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1;
    int Wo = (W - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1;
    auto out = torch::empty({N, Cout, Ho, Wo}, x.options());
    long long total = out.numel();
    const int threads = 256;
    long long blocks = std::min((total + threads - 1) / threads, (long long)65535);  // ceil, capped
    if (total > 0) {
        conv_transpose2d_kernel<<<(int)blocks, threads>>>(x.data_ptr<float>(), weight.data_ptr<float>(),
                                                          bias.data_ptr<float>(), out.data_ptr<float>(), N, Cin, H, W,
                                                          Cout, K, Ho, Wo, (int)stride, (int)padding, (int)dilation);
    }
    return out;
}
"""

cpp_src = ("torch::Tensor conv_transpose2d_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, "
           "int64_t stride, int64_t padding, int64_t output_padding, int64_t dilation);")
ext = load_inline(name="kdebug_ref_cuda_conv_transpose2d", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["conv_transpose2d_forward"])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, dilation):
        super().__init__()
        self.stride, self.padding, self.output_padding, self.dilation = stride, padding, output_padding, dilation
        # ConvTranspose2d's weight layout: [in_channels, out_channels, K, K]
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels, kernel_size, kernel_size))
        self.bias = nn.Parameter(torch.empty(out_channels))
        nn.init.kaiming_uniform_(self.weight, a=5 ** 0.5)  # nn.ConvTranspose2d's initialisation
        bound = 1 / (out_channels * kernel_size * kernel_size) ** 0.5  # its fan-in is weight.size(1) * K * K
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return ext.conv_transpose2d_forward(x, self.weight, self.bias, self.stride, self.padding,
                                            self.output_padding, self.dilation)
