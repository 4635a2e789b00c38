"""The train-mode BatchNorm recipes (bn_batch_stats for Triton, cuda_bn_batch_stats for CUDA in load_inline)
on kernels of our own that fold BatchNorm into its running statistics while the harness runs in train mode.

On the CPU: a Triton BatchNorm2d+ReLU repaired end to end by the kb backend on the interpreter (KernelBench's
verdict fails before, passes after, the gate accepts); a second Triton kernel (BatchNorm1d with buffers of
its own, the input handed as `x.contiguous()`) repaired by the recipe, its running statistics updated as
PyTorch's; two CUDA kernels checked statically (the patched file parses, the CUDA with tree-sitter-cuda
too, the statistics kernel is in the answer's source, exported through its functions= and called from
forward in train mode only). On a GPU (`-m gpu`): all four compiled before and after, compared with the
reference in train mode (output and running statistics).
"""
from __future__ import annotations

import ast
import itertools
import json
import os
import subprocess
import sys

import pytest

from debugger import lang
from debugger.case import case_from_sources
from debugger.evaluate import evaluate, kernelbench_checks, standard_checks
from debugger.integrity.relative import regressions
from debugger.lang.cuda import units
from debugger.lang.cuda.splice import error_count
from debugger.recipes import RECIPES
from debugger.source.tree import parses

CUDA = lang.get("cuda")

REF_2D = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return torch.relu(self.bn(x))


def get_inputs():
    return [torch.randn(4, 3, 5, 5) * 2 + 1]


def get_init_inputs():
    return [3]
'''

REF_1D = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features, eps=1e-5, momentum=0.1):
        super().__init__()
        self.bn = nn.BatchNorm1d(features, eps=eps, momentum=momentum)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(10, 7) * 3 - 1]


def get_init_inputs():
    return [7, 1e-5, 0.3]
'''

TRITON_2D = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_relu_kernel(x_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, out_ptr, total, C, HW, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    c = (offs // HW) % C
    x = tl.load(x_ptr + offs, mask=mask)
    scale = tl.load(w_ptr + c, mask=mask) / tl.sqrt(tl.load(var_ptr + c, mask=mask) + eps)
    shift = tl.load(b_ptr + c, mask=mask) - tl.load(mean_ptr + c, mask=mask) * scale
    tl.store(out_ptr + offs, tl.maximum(x * scale + shift, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n, c, h, w = x.shape
        bn_relu_kernel[(triton.cdiv(x.numel(), 128),)](x, self.bn.running_mean, self.bn.running_var,
                                                       self.bn.weight, self.bn.bias, out, x.numel(), c, h * w,
                                                       self.bn.eps, BLOCK=128)
        return out
'''

TRITON_1D = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def affine_bn_kernel(x_ptr, rm_ptr, rv_ptr, w_ptr, b_ptr, y_ptr, rows, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    j = tl.arange(0, BLOCK)
    mask = j < cols
    x = tl.load(x_ptr + row * cols + j, mask=mask)
    rstd = 1.0 / tl.sqrt(tl.load(rv_ptr + j, mask=mask) + eps)
    y = (x - tl.load(rm_ptr + j, mask=mask)) * rstd * tl.load(w_ptr + j, mask=mask) + tl.load(b_ptr + j, mask=mask)
    tl.store(y_ptr + row * cols + j, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features, eps=1e-5, momentum=0.1):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_var", torch.ones(features))
        self.eps = eps
        self.momentum = momentum

    def forward(self, x):
        rows, cols = x.shape
        y = torch.empty_like(x)
        affine_bn_kernel[(rows,)](x.contiguous(), self.running_mean, self.running_var, self.weight, self.bias, y,
                                  rows, cols, self.eps, BLOCK=triton.next_power_of_2(cols))
        return y
'''

CUDA_2D = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

bn_relu_source = """
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void bn_relu_kernel(const float* x, const float* mean, const float* var, const float* gamma,
                               const float* beta, float* y, int total, int C, int HW, float eps) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < total) {
        int c = (idx / HW) % C;
        float v = (x[idx] - mean[c]) / sqrtf(var[c] + eps) * gamma[c] + beta[c];
        y[idx] = fmaxf(v, 0.0f);
    }
}

torch::Tensor bn_relu_cuda(torch::Tensor x, torch::Tensor mean, torch::Tensor var, torch::Tensor gamma,
                           torch::Tensor beta, double eps) {
    auto y = torch::empty_like(x);
    int total = x.numel();
    int C = x.size(1);
    int HW = x.size(2) * x.size(3);
    const int threads = 256;
    const int blocks = (total + threads - 1) / threads;
    bn_relu_kernel<<<blocks, threads>>>(x.data_ptr<float>(), mean.data_ptr<float>(), var.data_ptr<float>(),
                                        gamma.data_ptr<float>(), beta.data_ptr<float>(), y.data_ptr<float>(),
                                        total, C, HW, (float)eps);
    return y;
}
"""

bn_relu_cpp_source = """
torch::Tensor bn_relu_cuda(torch::Tensor x, torch::Tensor mean, torch::Tensor var, torch::Tensor gamma,
                           torch::Tensor beta, double eps);
"""

bn_relu = load_inline(name="kdebug_bn_train_2d", cpp_sources=bn_relu_cpp_source, cuda_sources=bn_relu_source,
                      functions=["bn_relu_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        self.ext = bn_relu

    def forward(self, x):
        with torch.no_grad():
            return self.ext.bn_relu_cuda(x, self.bn.running_mean, self.bn.running_var, self.bn.weight,
                                         self.bn.bias, self.bn.eps)
'''

CUDA_1D = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>

__global__ void affine_bn(const float* x, const float* rm, const float* rv, const float* w, const float* b,
                          float* y, int rows, int cols, float eps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) {
        int j = i % cols;
        float scale = w[j] * rsqrtf(rv[j] + eps);
        y[i] = (x[i] - rm[j]) * scale + b[j];
    }
}

torch::Tensor bn1d(torch::Tensor x, torch::Tensor rm, torch::Tensor rv, torch::Tensor w, torch::Tensor b, double eps) {
    auto y = torch::empty_like(x);
    int rows = x.size(0), cols = x.size(1);
    affine_bn<<<(rows * cols + 127) / 128, 128>>>(x.data_ptr<float>(), rm.data_ptr<float>(), rv.data_ptr<float>(),
                                                  w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(),
                                                  rows, cols, (float)eps);
    return y;
}
"""

ext = load_inline(name="kdebug_bn_train_1d", cpp_sources="torch::Tensor bn1d(torch::Tensor x, torch::Tensor rm, torch::Tensor rv, torch::Tensor w, torch::Tensor b, double eps);",
                  cuda_sources=cuda_src, functions="bn1d")


class ModelNew(nn.Module):
    def __init__(self, features, eps=1e-5, momentum=0.1):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_var", torch.ones(features))
        self.eps = eps
        self.momentum = momentum

    def forward(self, x):
        return ext.bn1d(x.contiguous(), self.running_mean, self.running_var, self.weight, self.bias, self.eps)
'''

# name -> (reference, candidate, recipe)
CASES = {
    "triton_2d": (REF_2D, TRITON_2D, "bn_batch_stats"),
    "triton_1d": (REF_1D, TRITON_1D, "bn_batch_stats"),
    "cuda_2d": (REF_2D, CUDA_2D, "cuda_bn_batch_stats"),
    "cuda_1d": (REF_1D, CUDA_1D, "cuda_bn_batch_stats"),
}
CUDA_CASES = {"cuda_2d": ("self.ext", "self.bn"), "cuda_1d": ("ext", "self")}  # extension object, statistics owner


def patched(name: str) -> str:
    _, src, recipe = CASES[name]
    patches = RECIPES[recipe].propose(src)
    assert len(patches) == 1, name
    return patches[0].new_src


def _kernelbench(ref: str, src: str):
    return evaluate(case_from_sources(ref, src), "cpu", checks=[standard_checks()[0], kernelbench_checks()[0]],
                    semantics="kernelbench")


# -- Triton, on the interpreter -----------------------------------------------------------------------------
def test_kb_repair_of_a_triton_batchnorm_on_running_statistics(tmp_path, monkeypatch):
    from debugger.repair import repair

    monkeypatch.setenv("KDEBUG_DATA_DIR", str(tmp_path / "data"))
    case = case_from_sources(REF_2D, TRITON_2D)
    before = _kernelbench(REF_2D, TRITON_2D)
    assert before.verdicts["kernelbench"]["status"] == "mismatch" and before.verdicts["kernel"]["status"] == "mismatch"
    result = repair(case, backend="kb", write_files=False, semantics="kernelbench", write_back=False,
                    retrieval=False)
    assert result.status == "repaired", result.message
    assert result.bug_class == "train_eval_mode" and result.iterations == 1
    assert result.verdict["verdict"] == "accept"
    assert "_bn_batch_stats_kernel[(c,)]" in result.repaired_src
    after = evaluate(case.with_candidate(result.repaired_src), "cpu", semantics="kernelbench")
    assert after.status == "pass" and after.verdicts["kernel"]["status"] == "pass"


def test_second_triton_kernel_with_buffers_of_its_own():
    new = patched("triton_1d")
    assert "_bn_input = x.contiguous()" in new and "_bn_momentum(self)" in new
    assert _kernelbench(REF_1D, TRITON_1D).verdicts["kernelbench"]["status"] == "mismatch"
    after = _kernelbench(REF_1D, new)
    assert after.status == "pass" and after.verdicts["kernel"]["status"] == "pass"
    assert regressions(TRITON_1D, new, REF_1D, "kernelbench") == []


RUNNING = r'''
import importlib.util, json, sys, tempfile, torch
from pathlib import Path
ref_src, new_src = json.loads(sys.stdin.read())
folder = Path(tempfile.mkdtemp())
def load(name, src):  # from a file: @triton.jit reads its kernel's source (Triton 3.6 on a GPU cannot from exec)
    (folder / f"{name}.py").write_text(src)
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)
ns, rs = load("bn_candidate", new_src), load("bn_reference", ref_src)
args = rs["get_init_inputs"]()
torch.manual_seed(0)
new, ref = ns["ModelNew"](*args).to(DEVICE), rs["Model"](*args).to(DEVICE)
new.load_state_dict(ref.state_dict(), strict=False)
out = []
for step in range(2):
    x = rs["get_inputs"]()[0].to(DEVICE)
    out.append((new(x) - ref(x)).abs().max().item())
stats = [(a - b).abs().max().item() for a, b in zip(
    [b for n, b in new.named_buffers() if "running" in n], [b for n, b in ref.named_buffers() if "running" in n])]
new.eval(); ref.eval()
x = rs["get_inputs"]()[0].to(DEVICE)
print(json.dumps({"train": out, "stats": stats, "eval": (new(x) - ref(x)).abs().max().item()}))
'''


def _run_models(ref: str, src: str, device: str) -> dict:
    """Two train-mode steps and one eval step of ModelNew and Model with the same weights, in a fresh process
    (the interpreter on the CPU): the largest output differences and running-statistics differences."""
    env = dict(os.environ, TRITON_INTERPRET="1") if device == "cpu" else dict(os.environ)
    proc = subprocess.run([sys.executable, "-c", RUNNING.replace("DEVICE", repr(device))], input=json.dumps([ref, src]),
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_running_statistics_are_updated_as_pytorchs():
    """momentum 0.3 (REF_1D's init inputs), two steps: the running mean and unbiased variance match
    nn.BatchNorm1d's; eval mode still normalises with them."""
    result = _run_models(REF_1D, patched("triton_1d"), "cpu")
    assert max(result["train"]) < 1e-5 and len(result["stats"]) == 2 and max(result["stats"]) < 1e-5
    assert result["eval"] < 1e-5


# -- CUDA, statically ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CUDA_CASES))
def test_cuda_patch_adds_an_exported_statistics_kernel(name):
    ref, src, _ = CASES[name]
    new = patched(name)
    assert "cuda_reads_running_stats" in {f.tag for f in CUDA.static_facts(src)}
    assert parses(new) and error_count(units(new)) == 0 == error_count(units(src))
    assert "cuda_reads_running_stats" not in {f.tag for f in CUDA.static_facts(new)}
    added = {"bn_batch_stats_train_partials_kernel", "bn_batch_stats_train_kernel"}
    assert {k.name for k in CUDA.kernels(new)} == {k.name for k in CUDA.kernels(src)} | added
    assert {(k, "bn_batch_stats_train") for k in added} <= {(ln.kernel, ln.host) for ln in CUDA.launches(new)}
    assert CUDA.bound_functions(new) == {**CUDA.bound_functions(src), "bn_batch_stats_train": "bn_batch_stats_train"}
    cpp = next(u for u in units(new) if u.source.kind == "cpp")
    assert "std::vector<torch::Tensor> bn_batch_stats_train(" in cpp.source.text
    # the answer's own kernel and host function are kept as written
    old_cuda = next(u for u in units(src) if u.source.kind == "cuda").source.text
    assert next(u for u in units(new) if u.source.kind == "cuda").source.text.startswith(old_cuda)
    # forward: the statistics through the answer's extension object in train mode, the running ones otherwise
    forward = next(n for n in ast.walk(ast.parse(new)) if isinstance(n, ast.FunctionDef) and n.name == "forward")
    cond = next(n for n in ast.walk(forward) if isinstance(n, ast.IfExp))
    assert ast.unparse(cond.test) == "self.training"
    extension, owner = CUDA_CASES[name]
    assert ast.unparse(cond.body.func) == f"{extension}.bn_batch_stats_train"
    assert [ast.unparse(e) for e in cond.orelse.elts] == [f"{owner}.running_mean", f"{owner}.running_var"]
    assert regressions(src, new, ref, "kernelbench") == []


def test_sites_of_two_extensions_share_the_first_ones_statistics_function():
    """forward calls two extensions with running statistics: the first extension's load_inline exports the
    statistics function, both sites call it through its module-level name."""
    head = CUDA_2D.split("\n\nclass ModelNew")[0]
    second = CUDA_1D.split("load_inline\n", 1)[1].split("\n\nclass ModelNew")[0]
    src = head + "\n" + second + '''

class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        self.head = nn.BatchNorm1d(channels)

    def forward(self, x):
        y = bn_relu.bn_relu_cuda(x, self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias, 1e-5)
        return ext.bn1d(y[:, :, 0, 0], self.head.running_mean, self.head.running_var, self.head.weight,
                        self.head.bias, 1e-5)
'''
    (patch,) = RECIPES["cuda_bn_batch_stats"].propose(src)
    new = patch.new_src
    assert parses(new) and error_count(units(new)) == 0
    assert new.count("bn_relu.bn_batch_stats_train(") == 2 and "ext.bn_batch_stats_train" not in new
    assert CUDA.bound_functions(new) == {**CUDA.bound_functions(src), "bn_batch_stats_train": "bn_batch_stats_train"}
    assert new.count("std::vector<torch::Tensor> bn_batch_stats_train(") == 2  # definition and declaration, once each
    assert "_bn_input_2 = y[:, :, 0, 0]" in new and "_bn_mean_2, _bn_var_2 = (" in new


def test_a_computed_multi_line_input_is_bound_once_in_brackets():
    from debugger.recipes.batchnorm_train import forward_edits, stats_sites
    from debugger.source.edits import apply_edits

    src = "class M:\n    def forward(self, x):\n        return k(x +\n                 1, self.bn.running_mean, self.bn.running_var)\n"
    new = apply_edits(src.encode(), forward_edits(src, stats_sites(src), lambda site: "stats"))
    assert parses(new) and "_bn_input = (x +\n                 1)\n" in new
    assert "return k(_bn_input, _bn_mean, _bn_var)" in new and new.count("x +") == 1


def test_nothing_to_fix_gives_no_patch():
    """After the fix (forward tests training), on an answer that never reads running statistics, or that
    normalises in train mode already: no patch."""
    for name, (_, src, recipe) in CASES.items():
        assert RECIPES[recipe].propose(patched(name)) == [], name
    plain = TRITON_2D.replace("self.bn.running_mean, self.bn.running_var", "self.bn.weight, self.bn.weight")
    assert RECIPES["bn_batch_stats"].propose(plain) == []
    branching = TRITON_2D.replace("        x = x.contiguous()\n", "        assert not self.training\n        x = x.contiguous()\n")
    assert RECIPES["bn_batch_stats"].propose(branching) == []
    assert RECIPES["bn_batch_stats"].propose(CUDA_2D) == [] and RECIPES["cuda_bn_batch_stats"].propose(TRITON_2D) == []


def test_the_kb_backend_proposes_it_when_train_eval_mode_is_proved():
    from debugger.backends.kb import KBBackend, _applies

    proved = {"hypotheses": [{"bug_class": "train_eval_mode", "confidence": 0.9, "supported": True, "lines": [],
                              "evidence": ["experiment: both models in eval mode pass"]},
                             {"bug_class": "other", "confidence": 0.1, "supported": False, "lines": []}],
              "experiments": [{"recipe": "eval_mode", "bug_class": "train_eval_mode", "result": "fixed"}]}
    unproved = {"hypotheses": [{"bug_class": "mask_missing", "confidence": 0.9, "supported": True, "lines": []},
                               {"bug_class": "train_eval_mode", "confidence": 0.1, "supported": False, "lines": []}]}
    for name, (_, src, recipe) in CASES.items():
        proposals = KBBackend().propose(src, proved, {"patterns": []}, {})
        assert proposals and proposals[0].recipe == recipe, (name, [(p.recipe, p.score) for p in proposals[:3]])
        ours = [p for p in KBBackend().propose(src, unproved, {"patterns": []}, {}) if p.recipe == recipe]
        assert not any(_applies(p, unproved["hypotheses"], set()) for p in ours), name  # a guess at most


# -- on a GPU -----------------------------------------------------------------------------------------------
_counter = itertools.count()


def _unique(src: str) -> str:
    """Distinct extension names for before and after (builds of one name wait on each other's lock)."""
    return src.replace('name="kdebug_bn_train_', f'name="kdebug_bn_train_{os.getpid()}_{next(_counter)}_')


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("name", sorted(CASES))
def test_on_the_gpu_before_departs_in_train_mode_and_after_matches(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", os.environ.get("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext")))
    ref, src, _ = CASES[name]
    before = _run_models(ref, _unique(src), "cuda")
    assert max(before["train"]) > 1e-2, before
    after = _run_models(ref, _unique(patched(name)), "cuda")
    assert max(after["train"]) < 1e-4 and max(after["stats"]) < 1e-5 and after["eval"] < 1e-4, after
