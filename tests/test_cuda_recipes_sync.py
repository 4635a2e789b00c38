"""The CUDA recipes of block reductions and shared memory (recipes/sync.py, partials.py, rowloop.py), each on
two small CUDA-in-load_inline kernels of our own with the same fault:

- cuda_syncthreads (fact cuda_shared_no_sync): a row sum whose shared store is read with no barrier, a
  dot product whose tree reduction has no barrier between its steps;
- cuda_atomic_partials (cuda_block_partials_race): a mean squared error whose blocks all store to out[0],
  a per-batch sum over a (batch, channel) grid whose channel blocks all store to out[b] (the output
  allocated on the Python side);
- cuda_combine_partials (cuda_partials_not_combined): a sum of squares into partial[blockIdx.x] of which
  the host returns only the first, row sums over a (column chunk, row) grid storing y[row] per chunk;
- cuda_block_stride_row (cuda_block_smaller_than_row): a row max and a row L2 norm whose threads load
  one element of the row each.

Statically: the fact fires, the first patch parses (Python and CUDA), holds the fix, the fact is gone,
only the CUDA functions of the fix change, and the kernel without the fault gets no patch of the recipe.
On a GPU (`-m gpu`, skipped without CUDA): before disagrees with the torch reference (a race is tried a
few times), after agrees.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pytest

from debugger import lang
from debugger.lang.cuda import units
from debugger.lang.cuda.splice import error_count
from debugger.recipes import RECIPES, propose_all
from debugger.source.tree import parses
from tests.test_cuda_recipes import (HEAD, TAIL, _compile, _cuda_available, _empty, _randn,
                                     assert_kb_proposes_each_first, cuda_text, first_patch, function_texts, tags)

CUDA = lang.get("cuda")

# The output allocated by the Python side, handed to the extension to fill.
TAIL_OUT = TAIL.replace("        return ext.run(x, w)", '''        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        ext.run(x, out)
        return out''')


@dataclass
class Fix:
    recipe: str
    fact: str
    cuda: str
    clean: str               # the same kernel without the fault
    holds: tuple[str, ...]   # CUDA text the patch must hold
    edited: set[str]         # the CUDA functions the patch changes
    inputs: Callable         # () -> (x, w) on the GPU
    reference: Callable      # (x, w) -> expected output
    tail: str = TAIL
    racy: bool = False       # the fault is a race: before is tried a few times

    @property
    def src(self) -> str:
        return HEAD + self.cuda + self.tail

    @property
    def clean_src(self) -> str:
        return HEAD + self.clean + self.tail


# -- write_race: shared memory read with no barrier (cuda_syncthreads) ----------------------------------
ROW_SUM_SYNC = '''
__global__ void row_sum(const float* x, float* y, int cols) {
    __shared__ float s[1024];
    int tid = threadIdx.x;
    const float* row = x + (long)blockIdx.x * cols;
    float acc = 0.0f;
    for (int j = tid; j < cols; j += blockDim.x) acc += row[j];
    s[tid] = acc;  // each thread's share of the row
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) y[blockIdx.x] = s[0];
}

torch::Tensor run(torch::Tensor x, torch::Tensor w) {
    auto y = torch::empty({x.size(0)}, x.options());
    row_sum<<<x.size(0), 1024>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1));
    return y;
}
'''
DOT_SYNC = '''
__global__ void dot(const float* a, const float* b, float* out, int n) {
    __shared__ float partial[512];
    int t = threadIdx.x;
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x) {
        acc += a[i] * b[i];
    }
    partial[t] = acc;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) {
            partial[t] = partial[t] + partial[t + stride];
        }
        __syncthreads();
    }
    if (t == 0) atomicAdd(out, partial[0]);
}

torch::Tensor run(torch::Tensor x, torch::Tensor w) {
    auto out = torch::zeros({1}, x.options());
    int n = x.numel();
    dot<<<64, 512>>>(x.data_ptr<float>(), w.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
'''

# -- write_race: every block stores its partial to one element (cuda_atomic_partials) ------------------
MSE_RACE = '''
__global__ void mse(const float* a, const float* b, float* out, int n) {
    __shared__ float s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    float d = i < n ? a[i] - b[i] : 0.0f;
    s[tid] = d * d;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) out[0] = s[0] / n;
}

torch::Tensor run(torch::Tensor x, torch::Tensor w) {
    int n = x.numel();
    auto out = torch::empty({}, x.options());
    mse<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), w.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
'''
BATCH_SUM_RACE = '''
__global__ void batch_sum(const float* x, float* out, int C, int HW) {
    __shared__ float s[128];
    int b = blockIdx.x, c = blockIdx.y, tid = threadIdx.x;
    const float* plane = x + ((long)b * C + c) * HW;
    float acc = 0.0f;
    for (int j = tid; j < HW; j += blockDim.x) acc += plane[j];
    s[tid] = acc;
    __syncthreads();
    for (int k = 64; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) {
        out[b] += s[0];
    }
}

torch::Tensor run(torch::Tensor x, torch::Tensor out) {
    int B = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
    dim3 grid(B, C);
    batch_sum<<<grid, 128>>>(x.data_ptr<float>(), out.data_ptr<float>(), C, HW);
    return out;
}
'''

# -- reduction_axis: one partial per block, never combined (cuda_combine_partials) ---------------------
SQ_SUM_PARTIALS = '''
__global__ void sq_sum(const float* x, float* partial, int n) {
    __shared__ float s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    s[tid] = v * v;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}

torch::Tensor run(torch::Tensor x, torch::Tensor w) {
    int n = x.numel();
    int blocks = (n + 255) / 256;
    auto partial = torch::empty({blocks}, x.options());
    sq_sum<<<blocks, 256>>>(x.data_ptr<float>(), partial.data_ptr<float>(), n);
    return partial[0];
}
'''
ROW_CHUNKS_PARTIALS = '''
__global__ void row_sum_chunks(const float* x, float* y, int rows, int cols) {
    __shared__ float buf[256];
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y;
    buf[threadIdx.x] = col < cols ? x[row * cols + col] : 0.0f;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k) buf[threadIdx.x] += buf[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[row] = buf[0];
}

torch::Tensor run(torch::Tensor x, torch::Tensor w) {
    int rows = x.size(0), cols = x.size(1);
    auto y = torch::empty({rows}, x.options());
    dim3 grid((cols + 255) / 256, rows);
    row_sum_chunks<<<grid, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    return y;
}
'''

# -- reduction_axis: one element per thread of a longer row (cuda_block_stride_row) --------------------
ROW_MAX_ONE_EACH = '''
__global__ void row_max(const float* x, float* y, int rows, int cols) {
    __shared__ float s[256];
    int tid = threadIdx.x;
    int row = blockIdx.x;
    s[tid] = tid < cols ? x[row * cols + tid] : -INFINITY;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] = fmaxf(s[tid], s[tid + k]);
        __syncthreads();
    }
    if (tid == 0) y[row] = s[0];
}

torch::Tensor run(torch::Tensor x, torch::Tensor w) {
    auto y = torch::empty({x.size(0)}, x.options());
    row_max<<<x.size(0), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1));
    return y;
}
'''
ROW_L2_ONE_EACH = '''
__global__ void row_norm(const double* x, double* y, int D) {
    __shared__ double sq[128];
    int c = threadIdx.x;
    int r = blockIdx.x;
    double v = c < D ? x[r * D + c] : 0.0;
    sq[c] = v * v;
    __syncthreads();
    for (int k = 64; k > 0; k >>= 1) {
        if (c < k) sq[c] += sq[c + k];
        __syncthreads();
    }
    if (c == 0) y[r] = sqrt(sq[0]);
}

torch::Tensor run(torch::Tensor x, torch::Tensor w) {
    auto y = torch::empty({x.size(0)}, x.options());
    row_norm<<<x.size(0), 128>>>(x.data_ptr<double>(), y.data_ptr<double>(), x.size(1));
    return y;
}
'''


def _drop(text: str, needle: str) -> str:
    assert needle in text, needle
    return text.replace(needle, "", 1)


CASES = {
    "sync_row_sum": Fix(
        "cuda_syncthreads", "cuda_shared_no_sync",
        _drop(ROW_SUM_SYNC, "    __syncthreads();\n"),
        ROW_SUM_SYNC,
        ("    s[tid] = acc;  // each thread's share of the row\n    __syncthreads();\n    for (int k",),
        {"row_sum"}, lambda: (_randn(4096, 2048), _empty()), lambda x, w: x.sum(1), racy=True),
    "sync_dot_steps": Fix(
        "cuda_syncthreads", "cuda_shared_no_sync",
        _drop(DOT_SYNC, "        __syncthreads();\n"), DOT_SYNC,
        ("            partial[t] = partial[t] + partial[t + stride];\n        }\n        __syncthreads();\n    }",),
        {"dot"}, lambda: (_randn(1 << 20), _randn(1 << 20)), lambda a, b: (a * b).sum().view(1), racy=True),
    "atomic_mse": Fix(
        "cuda_atomic_partials", "cuda_block_partials_race", MSE_RACE,
        MSE_RACE.replace("out[0] = s[0] / n", "atomicAdd(&out[0], s[0] / n)").replace("torch::empty({}",
                                                                                       "torch::zeros({}"),
        ("if (tid == 0) atomicAdd(&out[0], s[0] / n);", "auto out = torch::zeros({}, x.options());"),
        {"mse", "run"}, lambda: (_randn(100000), _randn(100000)), lambda a, b: ((a - b) ** 2).mean()),
    "atomic_batch_sum_python_output": Fix(
        "cuda_atomic_partials", "cuda_block_partials_race", BATCH_SUM_RACE.replace("out[b] += s[0]", "out[b] = s[0]"),
        BATCH_SUM_RACE.replace("out[b] += s[0]", "atomicAdd(&out[b], s[0])").replace(
            "    dim3 grid(B, C);\n", "    dim3 grid(B, C);\n    out.zero_();\n"),
        ("        atomicAdd(&out[b], s[0]);", "    out.zero_();\n    batch_sum<<<grid, 128>>>"),
        {"batch_sum", "run"}, lambda: (_randn(4, 6, 17, 19), _empty()), lambda x, w: x.sum((1, 2, 3)),
        tail=TAIL_OUT),
    "combine_sq_sum": Fix(
        "cuda_combine_partials", "cuda_partials_not_combined", SQ_SUM_PARTIALS,
        SQ_SUM_PARTIALS.replace("return partial[0];", "return partial.sum();"),
        ("if (tid == 0) atomicAdd(&partial[0], s[0]);", "auto partial = torch::zeros({blocks}, x.options());"),
        {"sq_sum", "run"}, lambda: (_randn(100000), _empty()), lambda x, w: (x * x).sum()),
    "combine_row_chunks": Fix(
        "cuda_combine_partials", "cuda_partials_not_combined", ROW_CHUNKS_PARTIALS,
        ROW_CHUNKS_PARTIALS.replace("y[row] = buf[0]", "atomicAdd(&y[row], buf[0])").replace("torch::empty({rows}",
                                                                                              "torch::zeros({rows}"),
        ("if (threadIdx.x == 0) atomicAdd(&y[row], buf[0]);", "auto y = torch::zeros({rows}, x.options());"),
        {"row_sum_chunks", "run"}, lambda: (_randn(37, 1000), _empty()), lambda x, w: x.sum(1)),
    "stride_row_max": Fix(
        "cuda_block_stride_row", "cuda_block_smaller_than_row", ROW_MAX_ONE_EACH,
        ROW_MAX_ONE_EACH.replace("    s[tid] = tid < cols ? x[row * cols + tid] : -INFINITY;\n", '''    float m = -INFINITY;
    for (int j = tid; j < cols; j += blockDim.x) m = fmaxf(m, x[row * cols + j]);
    s[tid] = m;
'''),
        ("    float s_acc = -INFINITY;\n    for (int i = tid; i < cols; i += blockDim.x) {\n"
         "        s_acc = fmaxf(s_acc, i < cols ? x[row * cols + i] : -INFINITY);\n    }\n    s[tid] = s_acc;\n"
         "    __syncthreads();",),
        {"row_max"}, lambda: (_randn(33, 1000), _empty()), lambda x, w: x.amax(1)),
    "stride_row_l2": Fix(
        "cuda_block_stride_row", "cuda_block_smaller_than_row", ROW_L2_ONE_EACH,
        ROW_L2_ONE_EACH.replace("    double v = c < D ? x[r * D + c] : 0.0;\n    sq[c] = v * v;\n", '''    double t = 0.0;
    for (int j = c; j < D; j += blockDim.x) t += x[r * D + j] * x[r * D + j];
    sq[c] = t;
'''),
        ("    double sq_acc = 0.0;\n    for (int i = c; i < D; i += blockDim.x) {\n"
         "        double v = i < D ? x[r * D + i] : 0.0;\n        sq_acc += v * v;\n    }\n    sq[c] = sq_acc;\n",),
        {"row_norm"}, lambda: (_randn(21, 300, dtype=_float64()), _empty()), lambda x, w: x.norm(dim=1)),
}
IDS = list(CASES)


def _float64():
    import torch

    return torch.float64


# -- static --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", IDS)
def test_the_fault_is_there_and_the_clean_kernel_has_none(name):
    case = CASES[name]
    assert case.fact in tags(case.src)
    assert case.fact not in tags(case.clean_src)


@pytest.mark.parametrize("name", IDS)
def test_the_patch_parses_holds_the_fix_and_the_fact_is_gone(name):
    case = CASES[name]
    patch = first_patch(case)
    assert patch.recipe == case.recipe and parses(patch.new_src)
    assert error_count(units(patch.new_src)) == 0
    after = cuda_text(patch.new_src)
    for needle in case.holds:
        assert needle in after, (needle, after)
    assert case.fact not in tags(patch.new_src), patch.description
    assert not tags(patch.new_src) & {"cuda_shared_no_sync", "cuda_block_partials_race", "cuda_partials_not_combined",
                                      "cuda_block_smaller_than_row", "cuda_atomic_uninitialised_output",
                                      "cuda_unguarded_load", "cuda_unguarded_store"}


@pytest.mark.parametrize("name", IDS)
def test_only_the_cuda_functions_of_the_fix_change(name):
    case = CASES[name]
    patch = first_patch(case)
    py_before, py_after = case.src.split('cuda_src = """'), patch.new_src.split('cuda_src = """')
    assert py_before[0] == py_after[0] and py_before[1].split('"""', 1)[1] == py_after[1].split('"""', 1)[1]
    before, after = function_texts(case.src), function_texts(patch.new_src)
    assert set(before) == set(after)
    assert {n for n in before if before[n] != after[n]} == case.edited


@pytest.mark.parametrize("name", IDS)
def test_the_kernel_without_the_fault_gets_no_patch(name):
    case = CASES[name]
    assert RECIPES[case.recipe].propose(case.clean_src) == []
    assert RECIPES[case.recipe].propose(case.clean_src, {"recipe": case.recipe}) == []


def test_each_recipe_is_tested_on_two_kernels_and_leaves_the_others_alone():
    by_recipe: dict[str, list[str]] = {}
    for name, case in CASES.items():
        by_recipe.setdefault(case.recipe, []).append(name)
    assert all(len(v) == 2 for v in by_recipe.values()) and len(by_recipe) == 4
    for name, case in CASES.items():
        others = {r for r in by_recipe if r != case.recipe}
        proposed = {p.recipe for p in propose_all(case.src)}
        assert case.recipe in proposed and not proposed & others, (name, proposed)


def test_a_barrier_is_never_put_under_a_thread_condition():
    """A section only thread 0 runs: a barrier there would hang the block; the recipe leaves it."""
    solo = ROW_SUM_SYNC.replace("    if (tid == 0) y[blockIdx.x] = s[0];\n", '''    if (tid == 0) {
        float total = s[0];
        s[1] = total;
        y[blockIdx.x] = s[1] + s[2] * 0.0f;
    }
''')
    src = HEAD + solo + TAIL
    assert "cuda_shared_no_sync" in tags(src)
    assert RECIPES["cuda_syncthreads"].propose(src) == []


def test_a_buffer_every_thread_fills_at_the_same_slots_gets_no_barrier():
    """Each thread writes its own values to scratch[0..C): a race inside one phase (the buffer wanted to
    be per thread), which a barrier after the loop would only hide from the fact."""
    scratch = '''
__global__ void softmax_max(const float* x, float* y, int C, int total) {
    __shared__ float scratch[64];
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    float denom = 0.0f;
    for (int c = 0; c < C; c++) {
        scratch[c] = expf(x[idx * C + c]);
        denom += scratch[c];
    }
    float best = 0.0f;
    for (int c = 0; c < C; c++) best = fmaxf(best, scratch[c] / denom);
    y[idx] = best;
}

torch::Tensor run(torch::Tensor x, torch::Tensor w) {
    auto y = torch::empty({x.size(0)}, x.options());
    int total = x.size(0);
    softmax_max<<<(total + 127) / 128, 128>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1), total);
    return y;
}
'''
    src = HEAD + scratch + TAIL
    assert "cuda_shared_no_sync" in tags(src)
    assert RECIPES["cuda_syncthreads"].propose(src) == []
    per_block = src.replace("expf(x[idx * C + c])", "expf(x[blockIdx.x * C + c])")  # same value in every thread
    patch = RECIPES["cuda_syncthreads"].propose(per_block)
    assert patch and "cuda_shared_no_sync" not in tags(patch[0].new_src)


def test_both_missing_barriers_of_a_reduction_go_in_one_patch():
    src = HEAD + ROW_SUM_SYNC.replace("__syncthreads();", "") + TAIL
    assert "__syncthreads" not in src
    (patch,) = RECIPES["cuda_syncthreads"].propose(src)
    kernel = cuda_text(patch.new_src).split("torch::Tensor run")[0]
    assert kernel.count("__syncthreads();") == 2 and "cuda_shared_no_sync" not in tags(patch.new_src)
    assert "    s[tid] = acc;  // each thread's share of the row\n    __syncthreads();\n" in kernel
    assert "        if (tid < k) s[tid] += s[tid + k];\n        __syncthreads();\n" in kernel  # after each step


def test_a_max_reduction_is_not_made_atomic_add():
    racy_max = MSE_RACE.replace("s[tid] += s[tid + k]", "s[tid] = fmaxf(s[tid], s[tid + k])")
    src = HEAD + racy_max + TAIL
    assert "cuda_block_partials_race" in tags(src)
    assert RECIPES["cuda_atomic_partials"].propose(src) == []


def test_registered_with_their_classes():
    from debugger.recipes import for_bug_class

    for name, cls in (("cuda_syncthreads", "write_race"), ("cuda_atomic_partials", "write_race"),
                      ("cuda_combine_partials", "reduction_axis"), ("cuda_block_stride_row", "reduction_axis")):
        assert RECIPES[name] in for_bug_class(cls)
        assert RECIPES[name] in CUDA.recipes()


def test_the_kb_backend_proposes_the_recipe_of_the_diagnosed_class():
    assert_kb_proposes_each_first(CASES)


# -- on a GPU --------------------------------------------------------------------------------------------
def _agrees(model, case: Fix, seed: int) -> bool:
    import torch

    torch.manual_seed(seed)
    x, w = case.inputs()
    try:
        out = model(x, w)
        torch.cuda.synchronize()
    except RuntimeError:
        return False
    expected = case.reference(x, w)
    return out.shape == expected.shape and torch.allclose(out, expected, atol=1e-3, rtol=1e-3)


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("name", IDS)
def test_on_the_gpu_before_fails_and_after_passes(name, tmp_path):
    case = CASES[name]
    patch = first_patch(case)
    before = _compile(case.src, tmp_path)
    tries = range(8) if case.racy else range(1)
    assert not all(_agrees(before, case, seed) for seed in tries), "the faulty kernel agrees with the reference"
    after = _compile(patch.new_src, tmp_path)
    assert all(_agrees(after, case, seed) for seed in range(3)), patch.description
