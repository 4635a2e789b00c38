"""Learned fixes: templates extracted from a before/after pair, re-applied to other kernels, written back.

The end-to-end tests record a verified fix into a temporary knowledge base, load the learned pattern
back from its file, let its TemplateRecipe repair a *different* kernel (other names, other operator)
with the same bug, and run both kernels in the Triton interpreter against their references.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from debugger.knowledge import KnowledgeBase, apply_template, extract_template
from debugger.knowledge.embedder import model as load_model
from debugger.knowledge.loader import lint, load_pattern

HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n"

SOFTMAX_REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(8, 100)]


def get_init_inputs():
    return []
'''

SOFTMAX_BEFORE = HEADER + '''@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    numerator = tl.exp(x)
    denominator = tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * stride + cols, numerator / denominator, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        softmax_kernel[(n_rows,)](out, x, n_cols, x.stride(0), BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return out
'''
SOFTMAX_AFTER = SOFTMAX_BEFORE.replace("numerator = tl.exp(x)", "numerator = tl.exp(x - tl.max(x, axis=0))")

# Another operator (softmin), other names, other layout of the launch; the same missing max.
SOFTMIN_REFERENCE = SOFTMAX_REFERENCE.replace("torch.softmax(x, dim=1)", "torch.nn.functional.softmin(x, dim=1)")
SOFTMIN_BEFORE = HEADER + '''@triton.jit
def _softmin_rows(src, dst, ncol, BLOCK: tl.constexpr):
    r = tl.program_id(axis=0)
    offs = tl.arange(0, BLOCK)
    valid = offs < ncol
    z = -tl.load(src + r * ncol + offs, mask=valid, other=float('inf'))
    e = tl.exp(z)  # unnormalised weights
    s = tl.sum(e, axis=0)
    tl.store(dst + r * ncol + offs, e / s, mask=valid)


class ModelNew(nn.Module):
    def forward(self, inp):
        inp = inp.contiguous()
        res = torch.empty_like(inp)
        _softmin_rows[(inp.shape[0],)](inp, res, inp.shape[1], BLOCK=triton.next_power_of_2(inp.shape[1]))
        return res
'''

ADD_BEFORE = HEADER + '''@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, x + y)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK_SIZE=1024)
        return out
'''
ADD_AFTER = ADD_BEFORE.replace(
    "    x = tl.load(x_ptr + offsets)\n    y = tl.load(y_ptr + offsets)\n    tl.store(out_ptr + offsets, x + y)\n",
    "    mask = offsets < n_elements\n    x = tl.load(x_ptr + offsets, mask=mask)\n"
    "    y = tl.load(y_ptr + offsets, mask=mask)\n    tl.store(out_ptr + offsets, x + y, mask=mask)\n")

LEAKY_REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, t):
        return torch.nn.functional.leaky_relu(t, self.negative_slope)


def get_inputs():
    return [torch.randn(1000)]


def get_init_inputs():
    return [0.01]
'''
LEAKY_BEFORE = HEADER + '''@triton.jit
def leaky_relu_fwd(inp, outp, count, slope, BLOCK: tl.constexpr):
    start = tl.program_id(axis=0) * BLOCK
    idx = start + tl.arange(0, BLOCK)
    v = tl.load(inp + idx)
    r = tl.where(v > 0, v, v * slope)
    tl.store(outp + idx, r)


class ModelNew(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, t):
        t = t.contiguous()
        o = torch.empty_like(t)
        total = t.numel()
        leaky_relu_fwd[(triton.cdiv(total, 256),)](t, o, total, self.negative_slope, BLOCK=256)
        return o
'''

SOFTMAX_DIAGNOSIS = {
    "hypotheses": [{"bug_class": "numerical_overflow", "confidence": 0.9,
                    "evidence": ["tl.exp of the loaded row without subtracting its max", "no_max_subtraction"]}],
    "symptoms": ["nan_in_output", "fails_large_magnitude"],
    "error_signature": "mismatch nan x100",
}
MASK_DIAGNOSIS = {
    "hypotheses": [{"bug_class": "mask_missing", "confidence": 0.8, "evidence": "loads and stores without mask"}],
    "symptoms": ["tail_block_wrong", "unmasked_load", "unmasked_store"],
}

RUNNER = '''
import importlib.util, json, sys, torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

ref = load(sys.argv[1], "reference")
scale = float(sys.argv[2])
out = {}
for i, path in enumerate(sys.argv[3:]):
    try:
        cand = load(path, f"candidate{i}")
        torch.manual_seed(0)
        inputs = [x * scale for x in ref.get_inputs()]
        expected = ref.Model(*ref.get_init_inputs())(*inputs)
        got = cand.ModelNew(*ref.get_init_inputs())(*inputs)
        out[path] = bool(torch.allclose(got, expected, atol=1e-5, rtol=1e-4))
    except Exception as e:
        out[path] = repr(e)
print(json.dumps(out))
'''


def run_in_interpreter(tmp_path, reference: str, candidates: dict[str, str], scale: float = 1.0) -> dict:
    """{name: True | False | error} for each candidate against the reference, in the Triton interpreter."""
    (tmp_path / "reference.py").write_text(reference)
    paths = {}
    for name, src in candidates.items():
        paths[name] = tmp_path / f"{name}.py"
        paths[name].write_text(src)
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(tmp_path / "reference.py"), str(scale),
                           *map(str, paths.values())], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    return {name: results[str(path)] for name, path in paths.items()}


@pytest.fixture(scope="module")
def model():
    return load_model()


@pytest.fixture
def kb(tmp_path, model):
    (tmp_path / "kb" / "patterns").mkdir(parents=True)
    return KnowledgeBase(tmp_path / "kb", tmp_path / "data")


# ----------------------------------------------------------------------------- templates


def test_template_abstracts_names_and_keeps_library_calls_and_literals():
    t = extract_template(SOFTMAX_BEFORE, SOFTMAX_AFTER)
    assert len(t.hunks) == 1
    assert (t.hunks[0].before, t.hunks[0].after) == ("$A = tl.exp($B)", "$A = tl.exp($B - tl.max($B, axis=0))")
    assert (t.names["$A"].name, t.names["$B"].name) == ("numerator", "x")
    assert extract_template(SOFTMAX_BEFORE, SOFTMAX_BEFORE) is None


def test_template_repairs_another_kernel_modulo_renaming():
    [fixed] = apply_template(extract_template(SOFTMAX_BEFORE, SOFTMAX_AFTER), SOFTMIN_BEFORE)
    assert fixed == SOFTMIN_BEFORE.replace("e = tl.exp(z)", "e = tl.exp(z - tl.max(z, axis=0))")


def test_inserted_statement_is_anchored_on_the_statement_it_precedes():
    after = SOFTMAX_BEFORE.replace("    numerator = tl.exp(x)\n",
                                   "    x = x - tl.max(x, axis=0)\n    numerator = tl.exp(x)\n")
    [fixed] = apply_template(extract_template(SOFTMAX_BEFORE, after), SOFTMIN_BEFORE)
    assert "    z = z - tl.max(z, axis=0)\n    e = tl.exp(z)  # unnormalised weights\n" in fixed


def test_multi_hunk_template_binds_params_by_role_and_holes_untouched_arguments():
    template = extract_template(ADD_BEFORE, ADD_AFTER)
    assert [h.before for h in template.hunks][1:] == ["$H = tl.load($1)", "tl.store($1, $2)"]
    first, *others = apply_template(template, LEAKY_BEFORE)
    assert "    idx = start + tl.arange(0, BLOCK)\n    mask = idx < count\n    v = tl.load(inp + idx, mask=mask)\n" in first
    assert "    tl.store(outp + idx, r, mask=mask)\n" in first


def test_one_rule_template_also_offers_each_site_alone():
    two_sites = SOFTMIN_BEFORE.replace("    e = tl.exp(z)  # unnormalised weights\n",
                                       "    e = tl.exp(z)\n    g = tl.exp(r)\n")
    both, first, second = apply_template(extract_template(SOFTMAX_BEFORE, SOFTMAX_AFTER), two_sites)
    assert "e = tl.exp(z - tl.max(z, axis=0))\n    g = tl.exp(r - tl.max(r, axis=0))" in both
    assert "e = tl.exp(z - tl.max(z, axis=0))\n    g = tl.exp(r)\n" in first
    assert "e = tl.exp(z)\n    g = tl.exp(r - tl.max(r, axis=0))" in second


def test_a_name_the_fix_introduces_is_never_used_without_its_definition():
    # the loads here do not match the rule that defines `mask`, so the store rule alone must not apply
    target = LEAKY_BEFORE.replace("v = tl.load(inp + idx)", "v = tl.load(inp + 2 * idx)")
    assert apply_template(extract_template(ADD_BEFORE, ADD_AFTER), target) == []


def test_template_that_does_not_apply_proposes_nothing():
    template = extract_template(SOFTMAX_BEFORE, SOFTMAX_AFTER)
    assert apply_template(template, SOFTMAX_AFTER) == []  # already fixed
    assert apply_template(template, LEAKY_BEFORE) == []   # no exp at all


# ----------------------------------------------------------------------------- write-back, end to end


def test_learned_softmax_fix_repairs_softmin_and_merges_repeats(kb, tmp_path):
    result = kb.record_fix("softmax_overflow_case", SOFTMAX_BEFORE, SOFTMAX_AFTER, SOFTMAX_DIAGNOSIS,
                           backend="openai", tokens={"prompt": 1800, "completion": 240},
                           bug_class="numerical_overflow", reference_src=SOFTMAX_REFERENCE, operator="softmax")
    assert result["action"] == "added"
    path = kb.user_dir / "patterns" / "learned" / f"{result['id']}.md"
    assert result["path"] == str(path) and path.is_relative_to(tmp_path / "data")
    pattern = load_pattern(path)
    assert (pattern.status, pattern.occurrences, pattern.bug_class) == ("learned", 1, "numerical_overflow")
    assert pattern.provenance[0].case == "softmax_overflow_case" and pattern.provenance[0].backend == "openai"
    assert "+    numerator = tl.exp(x - tl.max(x, axis=0))" in pattern.provenance[0].diff
    assert pattern.symptoms == ["nan_in_output", "fails_large_magnitude", "no_max_subtraction"]
    assert lint(kb.kb_dir, kb.user_dir) == [] and not (kb.kb_dir / "patterns" / "learned").exists()

    [recipe] = kb.learned_recipes("numerical_overflow")
    [patch] = recipe.propose(SOFTMIN_BEFORE)
    assert (patch.recipe, patch.bug_class, patch.sites) == (f"learned:{result['id']}", "numerical_overflow", [13])
    runs = run_in_interpreter(tmp_path, SOFTMIN_REFERENCE, {"before": SOFTMIN_BEFORE, "repaired": patch.new_src},
                              scale=100.0)
    assert runs == {"before": False, "repaired": True}

    again = kb.record_fix("softmax_overflow_case_2", SOFTMAX_BEFORE, SOFTMAX_AFTER, SOFTMAX_DIAGNOSIS,
                          backend="kb", tokens=0, bug_class="numerical_overflow")
    assert again == {**result, "action": "merged", "occurrences": 2}
    # the same edit found on the other kernel is the same learned fix, not a twin
    third = kb.record_fix("softmin_case", SOFTMIN_BEFORE, patch.new_src, SOFTMAX_DIAGNOSIS, backend="kb",
                          tokens=0, bug_class="numerical_overflow")
    assert third["action"] == "merged" and third["occurrences"] == 3
    merged = load_pattern(path)
    assert merged.occurrences == 3 and [p.case for p in merged.provenance] == [
        "softmax_overflow_case", "softmax_overflow_case_2", "softmin_case"]
    assert len(list((kb.user_dir / "patterns" / "learned").iterdir())) == 1
    assert kb.stats()["learned_occurrences"] == 3
    assert kb.search(symptoms=["nan_in_output"], k=1)[0].id == result["id"]


def test_learned_mask_fix_repairs_leaky_relu(kb, tmp_path):
    result = kb.record_fix("vector_add_tail", ADD_BEFORE, ADD_AFTER, MASK_DIAGNOSIS, backend="openai",
                           tokens=2100, bug_class="mask_missing")
    assert result["action"] == "added"
    [recipe] = kb.learned_recipes("mask_missing")
    patches = recipe.propose(LEAKY_BEFORE)
    assert "mask = idx < count" in patches[0].new_src
    runs = run_in_interpreter(tmp_path, LEAKY_REFERENCE, {"repaired": patches[0].new_src})
    assert runs == {"repaired": True}
    # a fix of another class is never merged into this one
    other = kb.record_fix("softmax_overflow_case", SOFTMAX_BEFORE, SOFTMAX_AFTER, SOFTMAX_DIAGNOSIS,
                          backend="openai", tokens=10, bug_class="numerical_overflow")
    assert other["action"] == "added" and kb.stats()["learned"] == 2
