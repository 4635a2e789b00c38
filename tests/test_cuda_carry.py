"""cuda_carry_in_one_thread / cuda_carry_in_every_thread on chunked scans of our own: the total of the chunks
before is kept in a local that only the last thread updates (qwencoder level1/93's shape), so every other
thread adds a carry of zero; the fix has every thread update its own copy from shared memory."""
import pytest
import torch

from debugger import lang
from debugger.recipes import RECIPES
from tests.conftest import emulated_extension, kernel_source, one_function_candidate

# One row a block of 64 threads; a Hillis-Steele scan of each chunk in shared memory; row length a multiple of 64.
KERNEL = r'''
__global__ void NAME_kernel(const float* x, float* y, int n) {
    __shared__ float part[64];
    int tid = threadIdx.x;
    const int last = blockDim.x - 1;
    float carry = 0.0f;
    for (int base = 0; base < n; base += blockDim.x) {
        int i = base + tid;
        part[tid] = x[blockIdx.x * n + i];
        __syncthreads();
        for (int s = 1; s < blockDim.x; s *= 2) {
            float v = tid >= s ? part[tid - s] : 0.0f;
            __syncthreads();
            part[tid] += v;
            __syncthreads();
        }
        y[blockIdx.x * n + i] = part[tid] + carry;
        UPDATE
        __syncthreads();
    }
}

torch::Tensor NAME(torch::Tensor x) {
    auto y = torch::empty_like(x);
    NAME_kernel<<<x.size(0), 64>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1));
    return y;
}
'''
LAST_THREAD = "if (tid == last) {\n            carry += part[tid];\n        }"
BLOCK_DIM = "if (threadIdx.x == blockDim.x - 1) carry += part[threadIdx.x];"


def candidate(name: str, update: str) -> str:
    return one_function_candidate("#include <torch/extension.h>\n" + KERNEL.replace("NAME", name).replace(
        "UPDATE", update), name)


def fix(src: str) -> str:
    [patch] = RECIPES["cuda_carry_in_every_thread"].propose(src, {"bug_class": "scan_semantics"})
    assert patch.bug_class == "scan_semantics"
    return patch.new_src


def tags(src: str) -> set[str]:
    return {f["tag"] for f in lang.static_facts(src)}


@pytest.mark.parametrize("update,fixed", [(LAST_THREAD, "carry += part[last];"),
                                          (BLOCK_DIM, "carry += part[(blockDim.x - 1)];")], ids=["local", "blockdim"])
def test_the_fact_names_the_one_thread_update_and_the_fix_makes_it_every_thread_s(update, fixed):
    before = candidate("carry_scan", update)
    assert "cuda_carry_in_one_thread" in tags(before)
    after = fix(before)
    assert "cuda_carry_in_one_thread" not in tags(after)
    assert fixed in after and "if (tid == last)" not in after


@pytest.mark.parametrize("update", ["if (tid == last) carry += x[blockIdx.x * n + tid];",  # a global read of its own
                                    "if (tid == last) part[0] = carry;",  # a shared store, not a register
                                    "if (tid == last) { carry += part[tid]; } else { carry = 0.0f; }"])
def test_what_is_not_a_one_thread_register_update_is_left_alone(update):
    src = candidate("carry_scan", update)
    assert "cuda_carry_in_one_thread" not in tags(src)
    assert RECIPES["cuda_carry_in_every_thread"].propose(src, {"bug_class": "scan_semantics"}) == []


def test_before_wrong_after_the_first_chunk_and_after_right_on_the_emulated_gpu(tmp_path):
    names = ["carry_before", "carry_after"]
    ext = emulated_extension(tmp_path, "carry_test", [kernel_source(candidate(names[0], LAST_THREAD)),
                                                      kernel_source(fix(candidate(names[1], LAST_THREAD)))],
                             [f"torch::Tensor {n}(torch::Tensor x);" for n in names], names)
    torch.manual_seed(0)
    x = torch.randn(3, 256)
    before = ext.carry_before(x)
    torch.testing.assert_close(before[:, :64], x[:, :64].cumsum(1), rtol=1e-5, atol=1e-5)
    assert not torch.allclose(before[:, 64:], x.cumsum(1)[:, 64:], rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(ext.carry_after(x), x.cumsum(1), rtol=1e-4, atol=1e-4)
