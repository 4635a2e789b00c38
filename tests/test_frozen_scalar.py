"""The frozen_scalar fix on kernels of our own: Model's learnable scalar (`nn.Parameter(torch.tensor(c))`)
kept by the answer as the plain number `c` (the fault of qwencoder level2/68). KernelBench's verdict cannot
see it; re-drawn parameters can."""
from __future__ import annotations

from debugger.case import case_from_sources
from debugger.evaluate import evaluate, kernelbench_checks, standard_checks
from debugger.recipes.frozen_scalar import frozen_scalar_patch, frozen_scalars
from tests.conftest import write_case

KERNEL = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_min_kernel(x_ptr, w_ptr, b_ptr, out_ptr, c, K, N, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + row * K + ks, mask=ks < K, other=0.0)
        w = tl.load(w_ptr + cols[:, None] * K + ks[None, :], mask=(cols[:, None] < N) & (ks[None, :] < K), other=0.0)
        acc += tl.sum(w * x[None, :], axis=1)
    acc += tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + row * N + cols, tl.minimum(acc, c) - c, mask=cols < N)


@triton.jit
def affine_kernel(x_ptr, out_ptr, scale, shift_ptr, n, C, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    shift = tl.load(shift_ptr + offs % C, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x * scale + shift, mask=offs < n)


def linear_min(x, w, b, c):
    x = x.contiguous()
    M, K = x.shape
    N = w.shape[0]
    out = torch.empty(M, N, device=x.device, dtype=x.dtype)
    linear_min_kernel[(M, triton.cdiv(N, 16))](x, w, b, out, c, K, N, BLOCK_N=16, BLOCK_K=16)
    return out


def affine(x, scale, shift):
    x = x.contiguous()
    out = torch.empty_like(x)
    affine_kernel[(triton.cdiv(x.numel(), 64),)](x, out, scale, shift, x.numel(), x.shape[-1], BLOCK=64)
    return out
'''

# Model: Linear, then min with a learnable scalar, minus it (KernelBench level2/68's operator).
MIN_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, constant):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.constant = nn.Parameter(torch.tensor(constant))

    def forward(self, x):
        x = self.linear(x)
        x = torch.min(x, self.constant)
        return x - self.constant


def get_inputs():
    return [torch.randn(4, 24)]


def get_init_inputs():
    return [24, 20, 0.5]
'''
# The answer: its own randn weights (parameter_init) and the constant kept as a number.
MIN_ANSWER = KERNEL + '''

class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, constant):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features))
        self.bias = nn.Parameter(torch.randn(out_features))
        self.constant = constant

    def forward(self, x):
        return linear_min(x, self.weight, self.bias, self.constant)
'''

# Model: a learnable scalar scale and a (C,) shift. The answer draws the shift as Model does; only the
# scale is frozen, under another name.
AFFINE_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, scale):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(scale))
        self.shift = nn.Parameter(torch.randn(channels))

    def forward(self, x):
        return x * self.scale + self.shift


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [32, 1.5]
'''
AFFINE_ANSWER = KERNEL + '''

class ModelNew(nn.Module):
    def __init__(self, channels, scale_factor):
        super().__init__()
        self.factor = scale_factor
        self.shift = nn.Parameter(torch.randn(channels))

    def forward(self, x):
        return affine(x, self.factor, self.shift)
'''

CHECKS = [standard_checks()[0], standard_checks()[10], kernelbench_checks()[0]]


def _evaluate(reference: str, candidate: str):
    return evaluate(case_from_sources(reference, candidate), "cpu", checks=CHECKS, semantics="kernelbench")


def test_a_frozen_scalar_alone_fails_only_re_drawn_parameters_and_the_fix_passes_them():
    before = _evaluate(AFFINE_REF, AFFINE_ANSWER)
    assert before.verdicts["kernelbench"]["status"] == "pass"
    assert before.verdicts["kernel"]["failed"] == ["params_redrawn"]
    assert before.parameter_map["unmatched_reference"] == ["scale"]
    assert [(s.term, s.attr) for s in frozen_scalars(AFFINE_ANSWER, AFFINE_REF, before.parameter_map)] == \
        [("scale", "factor")]
    patch = frozen_scalar_patch(AFFINE_ANSWER, AFFINE_REF, before.parameter_map)
    assert patch is not None and patch.recipe == "frozen_scalar" and patch.bug_class == "operator_misread"
    assert "self.factor = torch.nn.Parameter(torch.tensor(float(scale_factor)))" in patch.new_src
    assert "affine(x, float(self.factor), self.shift)" in patch.new_src
    assert "_ModelParameters" not in patch.new_src  # the shift was drawn as Model draws it: no holder
    after = _evaluate(AFFINE_REF, patch.new_src)
    assert after.verdicts["kernel"]["status"] == "pass", after.message
    assert after.verdicts["kernelbench"]["status"] == "pass", after.message
    assert after.parameter_map["unmatched_reference"] == []


def test_the_fix_carries_parameter_init_where_the_weights_differ_too():
    before = _evaluate(MIN_REF, MIN_ANSWER)
    assert before.verdicts["kernelbench"]["status"] == "mismatch"
    patch = frozen_scalar_patch(MIN_ANSWER, MIN_REF, before.parameter_map)
    assert patch is not None and "_ModelParameters" in patch.new_src and patch.bug_class == "parameter_init"
    after = _evaluate(MIN_REF, patch.new_src)
    assert after.verdicts["kernel"]["status"] == "pass", after.message
    assert after.verdicts["kernelbench"]["status"] == "pass", after.message


def test_no_patch_where_the_scalar_is_used_as_a_tensor_or_not_frozen():
    pm = {"pairs": [], "unmatched_candidate": [], "unmatched_reference": ["scale"]}
    as_object = AFFINE_ANSWER.replace("affine(x, self.factor, self.shift)", "affine(x, self.factor.real, self.shift)")
    assert frozen_scalar_patch(as_object, AFFINE_REF, pm) is None
    held = AFFINE_ANSWER.replace("self.factor = scale_factor", "self.factor = nn.Parameter(torch.tensor(scale_factor))")
    assert frozen_scalars(held, AFFINE_REF, pm) == []
    assert frozen_scalar_patch(AFFINE_ANSWER, AFFINE_REF, dict(pm, unmatched_reference=[])) is None


def test_kb_repair_fixes_init_and_the_frozen_scalar_and_the_full_gate_accepts(tmp_path, monkeypatch):
    from debugger.case import load_case
    from debugger.integrity.gate import check
    from debugger.repair import repair

    monkeypatch.setenv("KDEBUG_DATA_DIR", str(tmp_path / "data"))
    case = load_case(write_case(tmp_path / "case", MIN_REF, MIN_ANSWER))
    result = repair(case, backend="kb", write_files=False, semantics="kernelbench", write_back=False)
    assert result.status == "repaired", result.message
    assert [h["recipe"] for h in result.history if h.get("outcome") == "fixed"] == ["frozen_scalar"]
    # the gate's full checks (params_redrawn among them), as `kdebug check` runs them
    verdict = check(case.with_candidate(result.repaired_src), "cpu", policy="kernelbench")
    assert verdict.verdict == "accept", verdict.reasons()
