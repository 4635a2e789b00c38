"""cuda_exit_before_barrier / cuda_exit_after_barriers on tiled kernels of our own: a thread-dependent early
return before the shared tiles' barriers (gemini level1/14's shape: its triangular matmul returned below the
diagonal before loading its share of each tile) moves after the last barrier."""
import pytest
import torch

from debugger import lang
from debugger.recipes import RECIPES
from tests.conftest import emulated_extension, kernel_source

REFERENCE = 'import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n    def forward(self, a, b):\n        return torch.matmul(a, b)\n\n\nM, K, N = 37, 45, 29\n\n\ndef get_inputs():\n    return [torch.randn(M, K), torch.randn(K, N)]\n\n\ndef get_init_inputs():\n    return []\n'

EDGE_EXIT = 'import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\ncuda_src = """\n#include <torch/extension.h>\n\n#define TILE 16\n\n__global__ void tiled_matmul_kernel(const float* a, const float* b, float* c, int M, int K, int N) {\n    __shared__ float a_tile[TILE][TILE];\n    __shared__ float b_tile[TILE][TILE];\n    int row = blockIdx.y * TILE + threadIdx.y;\n    int col = blockIdx.x * TILE + threadIdx.x;\n    if (row >= M || col >= N) return;\n    float acc = 0.0f;\n    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {\n        int ak = t * TILE + threadIdx.x;\n        int bk = t * TILE + threadIdx.y;\n        a_tile[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? a[row * K + ak] : 0.0f;\n        b_tile[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? b[bk * N + col] : 0.0f;\n        __syncthreads();\n        for (int k = 0; k < TILE; ++k) {\n            acc += a_tile[threadIdx.y][k] * b_tile[k][threadIdx.x];\n        }\n        __syncthreads();\n    }\n    c[row * N + col] = acc;\n}\n\ntorch::Tensor tiled_matmul(torch::Tensor a, torch::Tensor b) {\n    auto ac = a.contiguous();\n    auto bc = b.contiguous();\n    int M = ac.size(0), K = ac.size(1), N = bc.size(1);\n    auto c = torch::empty({M, N}, ac.options());\n    dim3 block(TILE, TILE);\n    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);\n    tiled_matmul_kernel<<<grid, block>>>(ac.data_ptr<float>(), bc.data_ptr<float>(), c.data_ptr<float>(), M, K, N);\n    return c;\n}\n"""\n\ncpp_src = "torch::Tensor tiled_matmul(torch::Tensor a, torch::Tensor b);"\n\ntiled = load_inline(name="tiled_matmul_edge_exit", cpp_sources=cpp_src, cuda_sources=cuda_src,\n                    functions=["tiled_matmul"], verbose=False)\n\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n    def forward(self, a, b):\n        return tiled.tiled_matmul(a, b)\n'

# A triangular product (C = triu(A @ B) of upper-triangular A, B) that leaves below the diagonal first.
TRIANGULAR = (EDGE_EXIT.replace("if (row >= M || col >= N) return;", "if (row > col) {\n        return;\n    }")
              .replace("(row < M && ak < K) ? a[row * K + ak] : 0.0f",
                       "(row < M && ak < K && row <= ak) ? a[row * K + ak] : 0.0f")
              .replace("c[row * N + col] = acc;", "if (row < M && col < N) {\n        c[row * N + col] = acc;\n    }"))


def fix(src: str) -> str:
    [patch] = RECIPES["cuda_exit_after_barriers"].propose(src, {"bug_class": "write_race"})
    assert patch.bug_class == "write_race"
    return patch.new_src


def tags(src: str) -> set[str]:
    return {f["tag"] for f in lang.static_facts(src)}


@pytest.mark.parametrize("src,exit_line", [(EDGE_EXIT, "if (row >= M || col >= N) return;"),
                                           (TRIANGULAR, "if (row > col) { return; }")])
def test_the_exit_moves_after_the_last_barrier(src, exit_line):
    assert "cuda_exit_before_barrier" in tags(src)
    after = fix(src)
    assert "cuda_exit_before_barrier" not in tags(after) and "cuda_unguarded_store" not in tags(after)
    body = after[after.index("__global__"):after.index("torch::Tensor tiled_matmul(")]
    # gone from before the tile loop, back between the loop's end and the store
    assert body.index("for (int t = 0;") < body.index(exit_line) < body.index("c[row * N + col] = acc;")
    assert body.count("return") == 1


@pytest.mark.parametrize("load", ["a[row * K + ak]", "(ak < K) ? a[row * K + ak] : 0.0f"])
def test_an_exit_that_guards_a_load_before_the_barrier_is_left_alone(load):
    """Moving the exit would let the threads past the edge read past their input - a load with no condition
    of its own, or one whose condition leaves out the row only the exit bounded (opus level3/50's shape):
    no patch."""
    unguarded = EDGE_EXIT.replace("(row < M && ak < K) ? a[row * K + ak] : 0.0f", load)
    assert "cuda_exit_before_barrier" in tags(unguarded)
    assert RECIPES["cuda_exit_after_barriers"].propose(unguarded, {"bug_class": "write_race"}) == []


def test_a_block_wide_exit_is_no_fault():
    block_wide = EDGE_EXIT.replace("if (row >= M || col >= N) return;", "if (blockIdx.z > 0) return;")
    assert "cuda_exit_before_barrier" not in tags(block_wide)


def test_before_wrong_after_right_on_the_emulated_gpu(tmp_path):
    """Before and after in one emulated build: the before leaves the ragged edge's tiles stale (half the
    elements wrong when the recipe was written), the after computes the product."""
    names = ["before_matmul", "after_matmul"]
    ext = emulated_extension(tmp_path, "barrier_exit_test",
                             [kernel_source(src).replace("tiled_matmul", n)
                              for src, n in zip((EDGE_EXIT, fix(EDGE_EXIT)), names)],
                             [f"torch::Tensor {n}(torch::Tensor a, torch::Tensor b);" for n in names], names)
    torch.manual_seed(0)
    a, b = torch.randn(37, 45), torch.randn(45, 29)
    assert not torch.allclose(ext.before_matmul(a, b), a @ b, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(ext.after_matmul(a, b), a @ b, rtol=1e-4, atol=1e-4)
