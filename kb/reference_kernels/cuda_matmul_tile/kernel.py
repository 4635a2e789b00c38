import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>

#define TILE 16

// C[M, N] = A[M, K] @ B[K, N], row-major. Each block computes a TILE x TILE tile of C; thread (ty, tx)
// owns C[row][col]. The K dimension is walked in TILE-wide steps: both tiles are staged in shared
// memory (zero where they run past M, N or K, so the partial last tiles add nothing), then multiplied.
__global__ void matmul_tile_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                   int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;  // float accumulator
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int a_col = k0 + tx;
        int b_row = k0 + ty;
        As[ty][tx] = (row < M && a_col < K) ? A[(long long)row * K + a_col] : 0.0f;
        Bs[ty][tx] = (b_row < K && col < N) ? B[(long long)b_row * N + col] : 0.0f;
        __syncthreads();  // both tiles are complete before anyone reads them
        for (int k = 0; k < TILE; ++k) {
            acc += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();  // everyone is done with the tiles before the next step overwrites them
    }
    if (row < M && col < N) {  // threads of the partial edge tiles store nothing
        C[(long long)row * N + col] = acc;
    }
}

torch::Tensor matmul_tile(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "matmul_tile: [M, K] @ [K, N]");
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32, "matmul_tile: float32");
    a = a.contiguous();
    b = b.contiguous();
    int M = a.size(0), K = a.size(1), N = b.size(1);
    auto c = torch::empty({M, N}, a.options());
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);  // ceil division: the edge tiles are launched
    if (M > 0 && N > 0) {
        matmul_tile_kernel<<<grid, block>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), M, N, K);
    }
    return c;
}
"""

cpp_src = "torch::Tensor matmul_tile(torch::Tensor a, torch::Tensor b);"
ext = load_inline(name="kdebug_ref_cuda_matmul_tile", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["matmul_tile"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return ext.matmul_tile(a, b)
