"""Parameter correspondence and the two verdicts (kernel, KernelBench's) on real interpreter kernels."""
import json
import subprocess
import sys

import torch

from debugger import params
from debugger.case import case_from_sources
from debugger.evaluate import evaluate, kernelbench_checks, standard_checks

AFFINE_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(n) + 0.5)
        self.shift = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return x * self.scale + self.shift


n = 37


def get_inputs():
    return [torch.randn(5, n)]


def get_init_inputs():
    return [n]
'''

AFFINE_KERNEL = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def affine_kernel(x_ptr, s_ptr, b_ptr, out_ptr, total, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    x = tl.load(x_ptr + offs, mask=mask)
    col = offs % n
    s = tl.load(s_ptr + col, mask=mask)
    b = tl.load(b_ptr + col, mask=mask)
    tl.store(out_ptr + offs, x * s + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        INIT

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        total = x.numel()
        affine_kernel[(triton.cdiv(total, 64),)](x, SCALE, SHIFT, out, total, x.shape[-1], BLOCK=64)
        return out
'''


def affine_candidate(init: str, scale: str = "self.gamma", shift: str = "self.beta") -> str:
    return AFFINE_KERNEL.replace("INIT", init).replace("SCALE", scale).replace("SHIFT", shift)


RENAMED = affine_candidate("self.gamma = nn.Parameter(torch.rand(n) + 0.5)\n"
                           "        self.beta = nn.Parameter(torch.randn(n))")
OWN_INIT = affine_candidate("self.gamma = nn.Parameter(torch.ones(n))\n"
                            "        self.beta = nn.Parameter(torch.zeros(n))")
PLAIN_TENSORS = affine_candidate("self.beta = torch.zeros(n)\n        self.gamma = torch.ones(n)")


def _pairs(report):
    return {p["candidate"]: (p["reference"], p["by"]) for p in report.parameter_map["pairs"]}


def test_renamed_parameters_are_matched_by_value_and_carry_redrawn_weights():
    report = evaluate(case_from_sources(AFFINE_REF, RENAMED), "cpu",
                      checks=[standard_checks()[0], standard_checks()[-1], kernelbench_checks()[0]])
    assert report.status == "pass", report.message
    assert _pairs(report) == {"gamma": ("scale", "value"), "beta": ("shift", "value")}
    assert report.verdicts["kernel"]["status"] == report.verdicts["kernelbench"]["status"] == "pass"
    assert [c.name for c in report.checks if c.passed] == ["seed0", "params_redrawn", "kb_trial0"]


def test_own_initialisation_fails_kernelbench_only_and_says_which_parameters():
    case = case_from_sources(AFFINE_REF, OWN_INIT)
    report = evaluate(case, "cpu", checks=[standard_checks()[0], kernelbench_checks()[0]])
    assert report.status == "pass"  # the kernel verdict: Model's weights mapped in
    assert report.verdicts["kernelbench"]["status"] == "mismatch"
    assert _pairs(report) == {"gamma": ("scale", "order"), "beta": ("shift", "order")}
    assert report.verdict_note.startswith("parameter_init")
    assert "gamma (Model's scale" in report.verdict_note and "beta (Model's shift" in report.verdict_note
    pipeline = evaluate(case, "cpu", checks=[standard_checks()[0], kernelbench_checks()[0]],
                        semantics="kernelbench")
    assert pipeline.status == "mismatch" and [c.name for c in pipeline.failed_checks] == ["kb_trial0"]


def test_plain_tensor_attributes_are_matched_and_receive_the_reference_values():
    ref = AFFINE_REF.replace("torch.rand(n) + 0.5", "torch.ones(n)")
    # gamma = ones equals Model's scale (value); beta, created first, then takes the one left (order)
    report = evaluate(case_from_sources(ref, PLAIN_TENSORS), "cpu", checks=[standard_checks()[0]])
    assert _pairs(report) == {"gamma": ("scale", "value"), "beta": ("shift", "order")}
    assert report.parameter_map["unmatched_candidate"] == [] and report.parameter_map["unmatched_reference"] == []
    assert report.status == "pass", report.message


def test_creation_order_puts_a_child_module_before_a_later_own_parameter():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)
            self.bias = torch.nn.Parameter(torch.zeros(3))

    with params.recording_creation_order() as order:
        net = Net()
    assert [t.name for t in params.named_tensors(net, order)] == ["lin.weight", "lin.bias", "bias"]
    assert [k for k in net.state_dict()] == ["bias", "lin.weight", "lin.bias"]  # why order is recorded


def test_kernelbench_trials_use_kernelbench_seeds():
    from debugger.inputs import kernelbench_trial_seeds

    torch.manual_seed(42)
    expected = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(5)]
    assert kernelbench_trial_seeds(5) == expected


BATCHNORM_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm1d(c)

    def forward(self, x):
        return self.bn(x)


c = 6


def get_inputs():
    return [torch.randn(9, c) * 2 + 1]


def get_init_inputs():
    return [c]
'''

RUNNING_STATS_BN = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_infer_kernel(x_ptr, m_ptr, v_ptr, w_ptr, b_ptr, out_ptr, total, c, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    ch = offs % c
    x = tl.load(x_ptr + offs, mask=mask)
    m = tl.load(m_ptr + ch, mask=mask)
    v = tl.load(v_ptr + ch, mask=mask)
    w = tl.load(w_ptr + ch, mask=mask)
    b = tl.load(b_ptr + ch, mask=mask)
    tl.store(out_ptr + offs, (x - m) / tl.sqrt(v + eps) * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm1d(c)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        bn = self.bn
        bn_infer_kernel[(triton.cdiv(x.numel(), 64),)](x, bn.running_mean, bn.running_var, bn.weight, bn.bias,
                                                       out, x.numel(), x.shape[1], bn.eps, BLOCK=64)
        return out
'''


def test_models_run_in_train_mode_so_running_statistics_are_not_batchnorm():
    report = evaluate(case_from_sources(BATCHNORM_REF, RUNNING_STATS_BN), "cpu",
                      checks=[standard_checks()[0], kernelbench_checks()[0]])
    assert report.verdicts["kernel"]["status"] == report.verdicts["kernelbench"]["status"] == "mismatch"
    eval_mode = dict(standard_checks()[0], eval_mode=True, name="seed0_eval")
    assert evaluate(case_from_sources(BATCHNORM_REF, RUNNING_STATS_BN), "cpu", checks=[eval_mode]).status == "pass"


def test_cli_semantics_sets_the_exit_status(tmp_path):
    (tmp_path / "reference.py").write_text(AFFINE_REF)
    (tmp_path / "candidate.py").write_text(OWN_INIT)
    run = [sys.executable, "-m", "debugger.cli", "eval", str(tmp_path), "--device", "cpu", "--json"]
    kernel = subprocess.run(run, capture_output=True, text=True, timeout=600)
    pipeline = subprocess.run(run + ["--semantics", "kernelbench"], capture_output=True, text=True, timeout=600)
    assert (kernel.returncode, pipeline.returncode) == (0, 1), kernel.stderr[-2000:]
    out = json.loads(pipeline.stdout)
    assert out["status"] == "mismatch" and out["verdicts"]["kernel"]["status"] == "pass"
    assert out["parameter_map"]["pairs"][0]["candidate"] == "gamma"
    assert out["verdict_note"].startswith("parameter_init")
