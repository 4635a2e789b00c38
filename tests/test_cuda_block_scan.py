"""cuda_block_scan_no_carry / cuda_block_scan_carry on scans of our own: a row longer than the block scanned
chunk by chunk with cub::BlockScan, every chunk restarting from zero (qwencoder level1/89's cumsum shape),
gets the carry of the chunks before it; built and run on the emulated GPU before and after."""
import pytest
import torch

from debugger import lang
from debugger.recipes import RECIPES
from tests.conftest import emulated_extension, kernel_source, one_function_candidate

# One row a block; `for (int i = threadIdx.x; i < n; i += blockDim.x)` over the row's chunks of 128.
BLOCK_STRIDE = r'''
__global__ void NAME_kernel(const float* x, float* y, int n) {
    typedef cub::BlockScan<float, 128> Scan;
    __shared__ typename Scan::TempStorage storage;
    const float* row = x + blockIdx.x * n;
    float* out = y + blockIdx.x * n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = (i < n) ? row[i] : 0.0f;
        Scan(storage).SUM(v, v);
        __syncthreads();
        if (i < n) out[i] = v;
    }
}
'''

# `using`, a chunk base counted from zero (every thread already runs every chunk), no barrier after the scan.
CHUNK_BASE = r'''
__global__ void NAME_kernel(const float* x, float* y, int n) {
    using Scan = cub::BlockScan<float, 128>;
    __shared__ Scan::TempStorage storage;
    for (int base = 0; base < n; base += 128) {
        int i = base + threadIdx.x;
        float v = i < n ? x[blockIdx.x * n + i] : 0.0f;
        float s;
        Scan(storage).SUM(v, s);
        if (i < n) y[blockIdx.x * n + i] = s;
    }
}
'''

HOST = r'''
torch::Tensor NAME(torch::Tensor x) {
    auto y = torch::empty_like(x);
    NAME_kernel<<<x.size(0), 128>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1));
    return y;
}
'''


def candidate(kernel: str, name: str, sum_kind: str = "InclusiveSum") -> str:
    return one_function_candidate("#include <torch/extension.h>\n#include <cub/cub.cuh>\n" + (kernel + HOST).replace(
        "NAME", name).replace("SUM", sum_kind), name)


def fix(src: str) -> str:
    [patch] = RECIPES["cuda_block_scan_carry"].propose(src, {"bug_class": "scan_semantics"})
    assert patch.bug_class == "scan_semantics"
    return patch.new_src


def tags(src: str) -> set[str]:
    return {f["tag"] for f in lang.static_facts(src)}


VARIANTS = [("block_stride_incl", BLOCK_STRIDE, "InclusiveSum"), ("block_stride_excl", BLOCK_STRIDE, "ExclusiveSum"),
            ("chunk_base_incl", CHUNK_BASE, "InclusiveSum")]


@pytest.mark.parametrize("name,kernel,kind", VARIANTS)
def test_the_fact_names_the_chunked_scan_and_the_fix_carries(name, kernel, kind):
    before = candidate(kernel, name, kind)
    assert "cuda_block_scan_no_carry" in tags(before)
    after = fix(before)
    assert "cuda_block_scan_no_carry" not in tags(after)
    code = kernel_source(after)
    assert f"{kind}(v, {'v' if kernel is BLOCK_STRIDE else 's'}, scan_total)" in code
    assert code.count("__syncthreads()") == 1  # one barrier between chunks: the answer's, or the fix's
    if kernel is BLOCK_STRIDE:
        assert "i - threadIdx.x < n" in code  # every thread takes part in the last chunk's scan
    else:
        assert "base < n" in code


def test_a_chunk_loop_whose_load_only_the_loop_bounds_is_left_alone():
    """Running every thread through the last chunk would read past the row: no patch."""
    unguarded = candidate(BLOCK_STRIDE.replace("(i < n) ? row[i] : 0.0f", "row[i]"), "unguarded")
    assert "cuda_block_scan_no_carry" in tags(unguarded)
    assert RECIPES["cuda_block_scan_carry"].propose(unguarded, {"bug_class": "scan_semantics"}) == []


def test_a_scan_that_already_takes_the_chunk_total_is_no_fault():
    carried = candidate(BLOCK_STRIDE.replace("Scan(storage).SUM(v, v);", "float t; Scan(storage).SUM(v, v, t);"),
                        "carried")
    assert "cuda_block_scan_no_carry" not in tags(carried)


def test_before_wrong_after_each_chunk_and_after_right_on_the_emulated_gpu(tmp_path):
    """All the variants, before and after, in one emulated build: before, each chunk of 128 restarts from
    zero; after, the rows' scans match torch.cumsum at a length that is not a multiple of the block."""
    names, cuda = [], []
    for name, kernel, kind in VARIANTS:
        for stage, src in (("before", candidate(kernel, f"{name}_before", kind)),
                           ("after", fix(candidate(kernel, f"{name}_after", kind)))):
            cuda.append(kernel_source(src))
            names.append(f"{name}_{stage}")
    ext = emulated_extension(tmp_path, "block_scan_carry_test", cuda,
                             [f"torch::Tensor {n}(torch::Tensor x);" for n in names], names)
    torch.manual_seed(0)
    x = torch.randn(3, 300)
    for name, _, kind in VARIANTS:
        want = x.cumsum(1) if kind == "InclusiveSum" else x.cumsum(1) - x
        before, after = getattr(ext, f"{name}_before")(x), getattr(ext, f"{name}_after")(x)
        torch.testing.assert_close(before[:, :128], want[:, :128], rtol=1e-5, atol=1e-5)  # the first chunk is right
        assert not torch.allclose(before[:, 128:], want[:, 128:], rtol=1e-3, atol=1e-3)
        torch.testing.assert_close(after, want, rtol=1e-4, atol=1e-4)
