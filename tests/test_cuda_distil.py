"""Distillation for CUDA: a verified fix inside load_inline's CUDA strings becomes a learned template
(language cuda) that re-applies to another CUDA kernel with the same fault.

The first fault: the host function launches `n / threads` blocks (floor division), so the tail past the
last whole block is never computed (grid_undercount; the recipe cuda_ceil_div_grid fixes it). The fix
of kernel A (the recipe's own patch) is recorded into a temporary knowledge base; its learned pattern
is loaded back from the file, and its TemplateRecipe repairs kernel B (another operator, other names,
other launch) exactly as the recipe and a hand fix do. The second, a rewrite of several statements: a
__half accumulator (cuda_float_accumulator) learned on a row sum re-applies to a column sum. On a GPU
(`-m gpu`): kdebug's evaluation on device cuda fails each B and passes the re-applied patch.
"""
from __future__ import annotations

import pytest

from debugger import lang
from debugger.knowledge import KnowledgeBase, apply_template, extract_template
from debugger.knowledge.loader import lint, load_pattern
from debugger.recipes import RECIPES

HEAD = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>
'''

# Kernel A: y = 2x + 1 over a flat tensor; 16 x 1000 elements are not a multiple of 256.
A_CUDA = '''
__global__ void affine_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = 2.0f * x[i] + 1.0f;
    }
}

torch::Tensor affine(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    int threads = 256;
    int blocks = n / threads;
    affine_kernel<<<blocks, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

cpp_src = "torch::Tensor affine(torch::Tensor x);"
ext = load_inline(name="kdebug_distil_affine", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["affine"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.affine(x.contiguous())
'''
A_REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return 2 * x + 1


def get_inputs():
    return [torch.randn(16, 1000)]


def get_init_inputs():
    return []
'''

# Kernel B: another operator (a * b + c, three inputs), other names, a 128-thread block, a guard that
# returns early; the same floor-divided grid.
B_CUDA = '''
__global__ void fma3(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ c,
                     float* __restrict__ out, int total) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    out[idx] = a[idx] * b[idx] + c[idx];
}

torch::Tensor fused_fma(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
    auto out = torch::empty_like(a);
    int total = a.numel();
    int block_size = 128;
    int num_blocks = total / block_size;
    fma3<<<num_blocks, block_size>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(),
                                     out.data_ptr<float>(), total);
    return out;
}
"""

cpp_src = "torch::Tensor fused_fma(torch::Tensor a, torch::Tensor b, torch::Tensor c);"
fma_ext = load_inline(name="kdebug_distil_fma", cpp_sources=cpp_src, cuda_sources=cuda_src,
                      functions=["fused_fma"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return fma_ext.fused_fma(a.contiguous(), b.contiguous(), c.contiguous())
'''
B_REFERENCE = '''import torch
import torch.nn as nn

SIZE = 3000


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return a * b + c


def get_inputs():
    return [torch.randn(SIZE), torch.randn(SIZE), torch.randn(SIZE)]


def get_init_inputs():
    return []
'''

A_BEFORE, B_BEFORE = HEAD + A_CUDA, HEAD + B_CUDA

# A second fault, several statements: a __half accumulator (float_accumulator's cuda_float_accumulator).
# A sums rows (its accumulator inside an if block), B sums columns (an early return, other names, r++).
HALF_HEAD = HEAD + "#include <cuda_fp16.h>\n"
HALF_A = HALF_HEAD + '''
__global__ void row_total(const __half* x, __half* y, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        __half acc = __float2half(0.0f);
        for (int j = 0; j < cols; ++j) {
            acc = __hadd(acc, x[row * cols + j]);
        }
        y[row] = acc;
    }
}

torch::Tensor row_sum(torch::Tensor x) {
    int rows = x.size(0), cols = x.size(1);
    auto y = torch::empty({rows}, x.options());
    const int threads = 64;
    row_total<<<(rows + threads - 1) / threads, threads>>>((const __half*)x.data_ptr<at::Half>(), (__half*)y.data_ptr<at::Half>(), rows, cols);
    return y;
}
"""

cpp_src = "torch::Tensor row_sum(torch::Tensor x);"
ext = load_inline(name="kdebug_distil_half_rows", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["row_sum"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.row_sum(x.contiguous())
'''
HALF_B = HALF_HEAD + '''
__global__ void col_total(const __half* __restrict__ inp, __half* __restrict__ res, int n_rows, int n_cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cols) return;
    __half total = __float2half(0.0f);
    for (int r = 0; r < n_rows; r++) {
        total = __hadd(total, inp[r * n_cols + c]);
    }
    res[c] = total;
}

torch::Tensor col_sum(torch::Tensor inp) {
    int n_rows = inp.size(0), n_cols = inp.size(1);
    auto res = torch::empty({n_cols}, inp.options());
    col_total<<<(n_cols + 127) / 128, 128>>>((const __half*)inp.data_ptr<at::Half>(), (__half*)res.data_ptr<at::Half>(), n_rows, n_cols);
    return res;
}
"""

cpp_src = "torch::Tensor col_sum(torch::Tensor inp);"
ext = load_inline(name="kdebug_distil_half_cols", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["col_sum"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.col_sum(x.contiguous())
'''
HALF_B_REFERENCE = '''import torch
import torch.nn as nn

ROWS = 2000
COLS = 300


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=0)


def get_inputs():
    return [torch.randn(ROWS, COLS).half()]


def get_init_inputs():
    return []
'''
HALF_B_HAND_FIX = HALF_B.replace(
    "#include <cuda_fp16.h>\n",
    "#include <cuda_fp16.h>\n__device__ __forceinline__ float kdebug_to_float(float v) { return v; }\n"
    "__device__ __forceinline__ float kdebug_to_float(__half v) { return __half2float(v); }\n").replace(
    "    __half total = __float2half(0.0f);\n",
    "    __half total = __float2half(0.0f);\n    float acc_f = kdebug_to_float(total);\n").replace(
    "        total = __hadd(total, inp[r * n_cols + c]);\n    }\n",
    "        acc_f += kdebug_to_float(inp[r * n_cols + c]);\n    }\n    total = __float2half(acc_f);\n")
B_HAND_FIX = B_BEFORE.replace("int num_blocks = total / block_size;",
                              "int num_blocks = (total + block_size - 1) / block_size;")
DIAGNOSIS = {"hypotheses": [{"bug_class": "grid_undercount", "confidence": 0.9,
                             "evidence": ["cuda_floor_div_grid", "tail_block_wrong"]}],
             "symptoms": ["cuda_floor_div_grid", "never_written", "tail_block_wrong"], "operator": "affine"}


def recipe_fix(src: str) -> str:
    """The cuda_ceil_div_grid recipe's first patch (the grid alone, no added guard)."""
    patches = RECIPES["cuda_ceil_div_grid"].propose(src, {})
    assert patches, "the recipe proposes nothing"
    return patches[0].new_src


def test_the_fixture_kernels_have_the_fault_the_recipe_fixes():
    cuda = lang.get("cuda")
    for src in (A_BEFORE, B_BEFORE):
        assert "cuda_floor_div_grid" in {f.tag for f in cuda.static_facts(src)}
        assert "cuda_floor_div_grid" not in {f.tag for f in cuda.static_facts(recipe_fix(src))}
    assert recipe_fix(B_BEFORE) == B_HAND_FIX


def test_a_cuda_fix_distils_over_the_cuda_text():
    template = extract_template(A_BEFORE, recipe_fix(A_BEFORE))
    assert template.language == "cuda" and len(template.hunks) == 1
    assert (template.hunks[0].before, template.hunks[0].after) == ("int $A = $B / $C;",
                                                                  "int $A = ($B + $C - 1) / $C;")
    assert [template.names[p].name for p in ("$A", "$B", "$C")] == ["blocks", "n", "threads"]
    # the learned edit, modulo names, is the hand fix of B; and it leaves a fixed kernel alone
    assert apply_template(template, B_BEFORE) == [B_HAND_FIX]
    assert apply_template(template, B_HAND_FIX) == []


def test_learned_cuda_template_repairs_another_kernel(tmp_path):
    (tmp_path / "kb" / "patterns").mkdir(parents=True)
    kb = KnowledgeBase(tmp_path / "kb", tmp_path / "data")
    kb.index.embedder = None  # metadata-only index: the test is about the template, not the ranking
    a_fixed = recipe_fix(A_BEFORE)
    result = kb.record_fix("affine_floor_grid", A_BEFORE, a_fixed, DIAGNOSIS, backend="kb", tokens=0,
                           bug_class="grid_undercount", reference_src=A_REFERENCE, operator="affine")
    assert result["action"] == "added"
    pattern = load_pattern(kb.user_dir / "patterns" / "learned" / f"{result['id']}.md")
    assert (pattern.language, pattern.template.language, pattern.status) == ("cuda", "cuda", "learned")
    assert "+    int blocks = (n + threads - 1) / threads;" in pattern.provenance[0].diff
    assert lint(kb.kb_dir, kb.user_dir) == []

    [recipe] = kb.learned_recipes("grid_undercount")
    patches = recipe.propose(B_BEFORE)
    assert patches and patches[0].new_src == recipe_fix(B_BEFORE) == B_HAND_FIX
    assert patches[0].sites == [B_BEFORE.splitlines().index("    int num_blocks = total / block_size;") + 1]
    assert recipe.propose(A_BEFORE)[0].new_src == a_fixed  # and it still fixes the kernel it came from

    # the same edit found on B is one more occurrence of the learned fix, not a twin
    again = kb.record_fix("fma_floor_grid", B_BEFORE, patches[0].new_src, DIAGNOSIS, backend="kb", tokens=0,
                          bug_class="grid_undercount")
    assert (again["action"], again["id"], again["occurrences"]) == ("merged", result["id"], 2)


def test_a_learned_several_statement_cuda_fix_repairs_another_kernel():
    fixed_a = RECIPES["cuda_float_accumulator"].propose(HALF_A, {})[0].new_src
    template = extract_template(HALF_A, fixed_a)
    assert template.language == "cuda" and len(template.hunks) == 4  # the helpers, float copy, loop, write-back
    assert fixed_a in apply_template(template, HALF_A)  # (one of the ways of placing the helpers)
    [repaired] = apply_template(template, HALF_B)
    assert repaired == HALF_B_HAND_FIX
    # the recipe's own fix of B, but for the name of the float accumulator and a blank line
    by_recipe = RECIPES["cuda_float_accumulator"].propose(HALF_B, {})[0].new_src
    assert repaired.replace("acc_f", "total_f").split() == by_recipe.split()
    cuda = lang.get("cuda")
    assert "cuda_half_accumulator" in {f.tag for f in cuda.static_facts(HALF_B)}
    assert "cuda_half_accumulator" not in {f.tag for f in cuda.static_facts(repaired)}


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="the CUDA kernels run on a GPU")
def test_reapplied_template_passes_evaluation_on_the_gpu():
    from debugger.case import case_from_sources
    from debugger.evaluate import evaluate

    template = extract_template(A_BEFORE, recipe_fix(A_BEFORE))
    [repaired] = apply_template(template, B_BEFORE)
    before = evaluate(case_from_sources(B_REFERENCE, B_BEFORE, name="fma_before"), device="cuda")
    after = evaluate(case_from_sources(B_REFERENCE, repaired, name="fma_repaired"), device="cuda")
    failed = [(c.name, c.status, c.message) for c in after.checks if not c.passed]
    assert before.status in ("mismatch", "runtime_error") and after.status == "pass", \
        f"{before.status}: {after.message} {failed}"
    a_after = evaluate(case_from_sources(A_REFERENCE, recipe_fix(A_BEFORE), name="affine_fixed"), device="cuda")
    assert a_after.status == "pass", a_after.message  # the learned fix was a verified one


@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="the CUDA kernels run on a GPU")
def test_reapplied_float_accumulator_passes_evaluation_on_the_gpu():
    from debugger.case import case_from_sources
    from debugger.evaluate import evaluate

    template = extract_template(HALF_A, RECIPES["cuda_float_accumulator"].propose(HALF_A, {})[0].new_src)
    [repaired] = apply_template(template, HALF_B)
    before = evaluate(case_from_sources(HALF_B_REFERENCE, HALF_B, name="half_cols_before"), device="cuda")
    after = evaluate(case_from_sources(HALF_B_REFERENCE, repaired, name="half_cols_repaired"), device="cuda")
    failed = [(c.name, c.status, c.message) for c in after.checks if not c.passed]
    assert before.status in ("mismatch", "runtime_error") and after.status == "pass", \
        f"{before.status}: {after.message} {failed}"
