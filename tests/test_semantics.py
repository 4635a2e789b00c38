"""Parameter correspondence and the two verdicts (kernel, KernelBench's) on real interpreter kernels."""
import json
import subprocess
import sys

import torch

from debugger import params
from debugger.case import case_from_sources
from debugger.evaluate import evaluate, kernelbench_checks, standard_checks
from tests.conftest import write_case

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


def test_values_a_shifted_draw_makes_equal_do_not_override_a_tensor_named_for_its_role():
    """A GRU held as ParameterLists, initialised list by list under the same seed, draws weights_ih.1 where
    nn.GRU draws weight_hh_l0 (same shape): equal values, another role. Names decide; creation order agrees."""
    import math

    torch.manual_seed(42)
    with params.recording_creation_order() as order:
        reference = torch.nn.Module()
        reference.gru = torch.nn.GRU(4, 8, 2)

    class ListGRU(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weights_ih, self.weights_hh = torch.nn.ParameterList(), torch.nn.ParameterList()
            self.biases_ih, self.biases_hh = torch.nn.ParameterList(), torch.nn.ParameterList()
            for layer in range(2):
                self.weights_ih.append(torch.nn.Parameter(torch.empty(24, 4 if layer == 0 else 8)))
                self.weights_hh.append(torch.nn.Parameter(torch.empty(24, 8)))
                self.biases_ih.append(torch.nn.Parameter(torch.empty(24)))
                self.biases_hh.append(torch.nn.Parameter(torch.empty(24)))
            for w in self.parameters():
                torch.nn.init.uniform_(w, -1 / math.sqrt(8), 1 / math.sqrt(8))

    torch.manual_seed(42)
    with params.recording_creation_order() as order_new:
        candidate = ListGRU()
    assert torch.equal(candidate.weights_ih[1], reference.gru.weight_hh_l0)  # the trap
    mapping = params.correspond(params.named_tensors(reference, order), params.named_tensors(candidate, order_new))
    pairs = {p.candidate: p.reference for p in mapping.pairs}
    assert pairs == {f"{kind}s_{g}.{layer}".replace("biass", "biases"): f"gru.{kind}_{g}_l{layer}"
                     for layer in range(2) for kind in ("weight", "bias") for g in ("ih", "hh")}


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


LINEAR_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.gemm(x))


batch, in_features, out_features = 6, 40, 24


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features]
'''

LINEAR_OWN_INIT = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(x_ptr, w_ptr, b_ptr, out_ptr, K, N, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + row * K + ks, mask=ks < K, other=0.0)
        w = tl.load(w_ptr + cols[:, None] * K + ks[None, :], mask=(cols[:, None] < N) & (ks[None, :] < K), other=0.0)
        acc += tl.sum(w * x[None, :], axis=1)
    acc += tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + row * N + cols, tl.maximum(acc, 0.0), mask=cols < N)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        # weights drawn with randn and a zero bias: not nn.Linear's kaiming-uniform initialisation
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        N = self.weight.shape[0]
        out = torch.empty(M, N, device=x.device, dtype=x.dtype)
        linear_relu_kernel[(M, triton.cdiv(N, 16))](x, self.weight, self.bias, out, K, N, BLOCK_N=16, BLOCK_K=16)
        return out
'''


def test_parameter_init_recipe_fixes_the_affine_kernel():
    from debugger.recipes.parameter_init import parameter_init_patch

    before = evaluate(case_from_sources(AFFINE_REF, OWN_INIT), "cpu", checks=[standard_checks()[0]])
    patch = parameter_init_patch(OWN_INIT, AFFINE_REF, before.parameter_map)
    assert patch is not None and patch.bug_class == "parameter_init"
    assert "class _ModelParameters" in patch.new_src and "self.scale = nn.Parameter" in patch.new_src
    after = evaluate(case_from_sources(AFFINE_REF, patch.new_src), "cpu",
                     checks=[standard_checks()[0], kernelbench_checks()[0]], semantics="kernelbench")
    assert after.status == "pass" and after.verdicts["kernel"]["status"] == "pass"
    assert all(p["own_init_diff"] == 0.0 for p in after.parameter_map["pairs"])
    assert parameter_init_patch(patch.new_src, AFFINE_REF, after.parameter_map) is None  # nothing left to fix


def test_parameter_init_fix_builds_with_other_init_inputs(tmp_path):
    """The gate's hidden shapes build ModelNew with other init inputs (gemini level3/40's GRU with fewer
    layers had no `weights_ih.4`): the fix copies what corresponds and never raises for the rest."""
    from debugger.recipes.parameter_init import parameter_init_patch

    before = evaluate(case_from_sources(AFFINE_REF, OWN_INIT), "cpu", checks=[standard_checks()[0]])
    patch = parameter_init_patch(OWN_INIT, AFFINE_REF, before.parameter_map)
    import importlib.util

    (tmp_path / "patched.py").write_text(patch.new_src)  # Triton's jit reads its kernels' source from a file
    spec = importlib.util.spec_from_file_location("patched_affine", tmp_path / "patched.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.ModelNew(5).gamma.shape == (5,)  # built for n = 37: other shapes, nothing to copy
    assert module._tensor_at(module.ModelNew(37), "no.such.tensor") is None  # a tensor this build lacks


def test_kb_repair_fixes_parameter_init_of_a_linear_kernel_and_the_gate_accepts(tmp_path, monkeypatch):
    from debugger.case import load_case
    from debugger.diagnose import diagnose
    from debugger.repair import repair

    monkeypatch.setenv("KDEBUG_DATA_DIR", str(tmp_path / "data"))
    case = load_case(write_case(tmp_path / "case", LINEAR_REF, LINEAR_OWN_INIT))
    diag = diagnose(case, "cpu", experiments=False, probes=False, localise=False)
    assert diag.bug_class == "parameter_init"
    assert any("weight (Model's gemm.weight" in e for e in diag.hypotheses[0]["evidence"])
    result = repair(case, backend="kb", write_files=False, semantics="kernelbench", write_back=False)
    assert result.status == "repaired", result.message
    assert result.bug_class == "parameter_init" and result.iterations == 1
    assert result.verdict["verdict"] == "accept"
    final = evaluate(case.with_candidate(result.repaired_src), "cpu", semantics="kernelbench")
    assert final.status == "pass" and final.verdicts["kernel"]["status"] == "pass"


def test_small_sizes_halve_the_batch_until_the_inputs_fit(tmp_path):
    from debugger.sizes import input_constants

    big = AFFINE_REF.replace("n = 37", "n = 37\nbatch_size = 65536").replace("torch.randn(5, n)",
                                                                        "torch.randn(batch_size, n)")
    assert list(input_constants(big)) == ["batch_size"]  # n is read by get_init_inputs: a hyperparameter
    wide = RENAMED.replace("cdiv(total, 64)", "cdiv(total, 1024)").replace("BLOCK=64", "BLOCK=1024")
    report = evaluate(case_from_sources(big, wide), "cpu", checks=[standard_checks()[0], kernelbench_checks()[0]],
                      sizes="small")
    assert report.sizes["shapes"] == {"batch_size": 4096} and report.sizes["reduced"]
    assert report.sizes["published_input_bytes"] == 65536 * 37 * 4
    assert report.sizes["input_bytes"] <= 1 << 20
    assert report.status == "pass" and report.verdicts["kernelbench"]["status"] == "pass"
    assert all(c.spec["shapes"] == {"batch_size": 4096} for c in report.checks)


UPSAMPLE_REF = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=8, mode="nearest")


batch_size = 256


def get_inputs():
    return [torch.randn(batch_size, 4, 32, 32)]


def get_init_inputs():
    return []
"""


def test_auto_sizes_count_an_output_much_larger_than_the_inputs():
    """`auto` keeps the published sizes only where a check fits: an 8x upsampling's 4 MiB of inputs make a
    256 MiB output, and the estimate counts it (transposed convolutions ran level-1 tasks out of an H100's
    memory on estimates of their inputs alone)."""
    report = evaluate(case_from_sources(UPSAMPLE_REF, UPSAMPLE_REF.replace("class Model(", "class ModelNew(")),
                      "cpu", checks=[kernelbench_checks()[0]], sizes="auto")
    assert report.sizes["published_input_bytes"] == 4 << 20 and report.sizes["reduced"]
    assert report.sizes["shapes"] == {"batch_size": 64}
    assert report.sizes["memory_estimate_bytes"] == 8 * ((1 << 20) + (64 << 20))
    assert report.status == "pass"


POOL_REF = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, window):
        super().__init__()
        self.pool = nn.AvgPool1d(window)

    def forward(self, x):
        return self.pool(x)


batch_size = 2
channels = 32
width = 2048 * 8
window = 6000


def get_inputs():
    return [torch.randn(batch_size, channels, width)]


def get_init_inputs():
    return [window]
"""
POOL_NEW = POOL_REF.replace("class Model(", "class ModelNew(")


def test_small_sizes_never_shrink_an_input_below_the_reference_s_window(tmp_path):
    """width (an expression, 2048 * 8) halves to 8192; at 4096 the 6000-wide window no longer fits and
    the reference fails on shapes alone (its forward on the meta device), so that step is not taken (the
    channels halve instead)."""
    report = evaluate(case_from_sources(POOL_REF, POOL_NEW), "cpu", checks=[kernelbench_checks()[0]], sizes="small")
    assert report.sizes["shapes"]["width"] == 8192 and report.sizes["input_bytes"] <= 1 << 20, report.sizes
    assert report.status == "pass", report.message


LINEAR_WIDE_REF = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x):
        return self.fc(x)


batch_size = 64
features = 4096


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
"""


def test_small_sizes_on_the_cpu_also_bound_the_reference_s_flops():
    """64 x 4096 inputs are 1 MiB (within the CPU's byte budget), but the 4096 x 4096 layer makes 2.1
    GFLOP a forward, minutes a check for an interpreted or emulated kernel: the batch halves to 2."""
    from debugger.sizes import BUDGET_FLOPS

    report = evaluate(case_from_sources(LINEAR_WIDE_REF, LINEAR_WIDE_REF.replace("class Model(", "class ModelNew(")),
                      "cpu", checks=[kernelbench_checks()[0]], sizes="small")
    assert report.sizes["shapes"] == {"batch_size": 2}, report.sizes
    assert 2 * 2 * 4096 * 4096 <= BUDGET_FLOPS["cpu"] < 2 * 4 * 4096 * 4096
    assert report.status == "pass", report.message


def test_small_sizes_also_shrink_the_widths_of_weights_too_large_to_hold():
    """A 32768 x 32768 Linear (qwencoder level2/56's task) is 4 GiB of weights whatever the batch: the
    widths get_init_inputs() reads halve, largest first, until the parameters fit their budget; an 8192
    x 8192 layer (256 MiB, as in many level-2 tasks) keeps its published width."""
    from debugger.sizes import BUDGET_PARAM_BYTES, init_constants, input_constants

    huge = LINEAR_WIDE_REF.replace("features = 4096", "features = 32768")
    assert list(input_constants(huge)) == ["batch_size"] and init_constants(huge) == {"features": 32768}
    report = evaluate(case_from_sources(huge, huge.replace("class Model(", "class ModelNew(")),
                      "cpu", checks=[kernelbench_checks()[0]], sizes="small")
    assert report.sizes["shapes"] == {"features": 8192, "batch_size": 2}, report.sizes
    assert report.sizes["published_param_bytes"] > BUDGET_PARAM_BYTES["cpu"] >= report.sizes["param_bytes"]
    assert report.status == "pass", report.message
    wide = evaluate(case_from_sources(LINEAR_WIDE_REF.replace("features = 4096", "features = 8192"),
                                      LINEAR_WIDE_REF.replace("class Model(", "class ModelNew(")),
                    "cpu", checks=[kernelbench_checks()[0]], sizes="small")
    assert wide.sizes["shapes"] == {"batch_size": 2}, wide.sizes


WIDE_MLP_REF = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_layer_sizes, output_size):
        super().__init__()
        layers, width = [], input_size
        for hidden in hidden_layer_sizes:
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        self.network = nn.Sequential(*layers, nn.Linear(width, output_size))

    def forward(self, x):
        return self.network(x)


batch_size = 16
input_size = 1024
hidden_layer_sizes = [16384, 16384]
output_size = 1024


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_layer_sizes, output_size]
"""


def test_small_sizes_shrink_a_list_of_widths_as_they_shrink_one():
    """KernelBench's MLPs build their layers from a list (`hidden_layer_sizes = [32768, 32768]`, level3/2: 8 GiB of
    weights whatever the batch; a gate of opus's answer timed out at 420 s on a GPU, its checks each building
    and copying them): every width of the list halves at once, largest constant first, until the weights fit."""
    from debugger.sizes import BUDGET_PARAM_BYTES, halved, init_constants

    assert init_constants(WIDE_MLP_REF) == {"hidden_layer_sizes": [16384, 16384], "input_size": 1024,
                                            "output_size": 1024}
    assert halved([1024] * 3) == [512] * 3 and halved([2, 9]) == [2, 4] and halved(3) == 2
    candidate = WIDE_MLP_REF + "\n\nclass ModelNew(Model):\n    pass\n"
    report = evaluate(case_from_sources(WIDE_MLP_REF, candidate), "cpu", checks=[kernelbench_checks()[0]],
                      sizes="small")
    assert report.sizes["shapes"]["hidden_layer_sizes"] == [8192, 8192], report.sizes
    assert report.sizes["published_param_bytes"] > BUDGET_PARAM_BYTES["cpu"] >= report.sizes["param_bytes"]
    assert report.status == "pass", report.message


def test_the_weights_budget_halves_the_largest_width_first_and_leaves_the_batch_to_the_inputs():
    from debugger.sizes import reduce_shapes

    ref = LINEAR_WIDE_REF.replace("features = 4096", "features = 32768").replace(
        "return [features]", "return [features, hidden]").replace("batch_size = 64", "batch_size = 64\nhidden = 1024")
    seen = []

    def measure(shapes):  # inputs batch x features, weights features x hidden
        seen.append(dict(shapes))
        s = {"batch_size": 64, "features": 32768, "hidden": 1024, **shapes}
        return s["batch_size"] * s["features"] * 4, None, s["features"] * s["hidden"] * 4

    shapes, _, _ = reduce_shapes(ref, measure, budget=1 << 30, param_budget=32 << 20)
    assert shapes == {"features": 8192}, seen  # the inputs fit: the batch stays; hidden, smaller, waits


def test_parameter_init_is_proved_when_only_layouts_fail_besides_kernelbench():
    # a kernel right on the task's own (contiguous) inputs that assumes contiguity: reads x flat
    flat = OWN_INIT.replace("        x = x.contiguous()\n", "")
    report = evaluate(case_from_sources(AFFINE_REF, flat), "cpu",
                      checks=[standard_checks()[0], standard_checks()[8], kernelbench_checks()[0]])
    assert report.verdicts["kernel"]["failed"] == ["noncontiguous"]
    assert report.verdict_note.startswith("parameter_init") and "noncontiguous" in report.verdict_note
    from debugger.diagnose.semantics import parameter_init_hypothesis
    assert parameter_init_hypothesis(report)["score"] == 9.0
    both = evaluate(case_from_sources(AFFINE_REF, flat), "cpu",
                    checks=[standard_checks()[0], standard_checks()[8], kernelbench_checks()[0]], semantics="both")
    assert [c.name for c in both.failed_checks] == ["kb_trial0"]  # layouts stay robustness findings


def test_parameter_init_recipe_reads_old_style_super_and_keeps_the_candidates_own_lines():
    from debugger.recipes.parameter_init import parameter_init_patch

    ref = AFFINE_REF.replace("super().__init__()", "super(Model, self).__init__()")
    cand = OWN_INIT.replace("super().__init__()", "super(ModelNew, self).__init__()")
    pm = {"pairs": [{"candidate": "gamma", "reference": "scale", "own_init_diff": 0.5},
                    {"candidate": "beta", "reference": "shift", "own_init_diff": 0.0}]}
    patch = parameter_init_patch(cand, ref, pm)
    assert patch is not None
    new = patch.new_src
    assert "super(Model, self)" not in new.split("class ModelNew")[0]  # the holder calls its own super
    assert "(('gamma', 'scale'), ('beta', 'shift'),)" in new  # every matched tensor: the holder shifts the draws
    body = new.split("class ModelNew")[1]
    assert body.index("_ModelParameters(n)") < body.index("self.gamma = nn.Parameter(torch.ones(n))")


# The same kernel holding the weight as (in, out) for x @ W: the reference's nn.Linear weight transposed.
LINEAR_TRANSPOSED_OWN_INIT = (LINEAR_OWN_INIT
                              .replace("w_ptr + cols[:, None] * K + ks[None, :]", "w_ptr + ks[None, :] * N + cols[:, None]")
                              .replace("torch.randn(out_features, in_features)", "torch.randn(in_features, out_features)")
                              .replace("N = self.weight.shape[0]", "N = self.weight.shape[1]"))


def test_a_weight_held_transposed_is_matched_and_its_parameter_init_repaired():
    """The fix copies Model's weight into ModelNew's transposed tensor transposed (the kb repair loop that
    applies it is run end to end on the untransposed kernel above)."""
    from debugger.recipes.parameter_init import parameter_init_patch

    case = case_from_sources(LINEAR_REF, LINEAR_TRANSPOSED_OWN_INIT)
    report = evaluate(case, "cpu", checks=[standard_checks()[0], kernelbench_checks()[0]], semantics="kernelbench")
    assert _pairs(report)["weight"] == ("gemm.weight", "transposed")
    assert report.verdicts["kernel"]["status"] == "pass" and report.status == "mismatch"
    patch = parameter_init_patch(LINEAR_TRANSPOSED_OWN_INIT, LINEAR_REF, report.parameter_map)
    assert patch is not None and patch.bug_class == "parameter_init"
    assert ".transpose(0, 1)" in patch.new_src
    final = evaluate(case.with_candidate(patch.new_src), "cpu", semantics="kernelbench")
    assert final.status == "pass" and final.verdicts["kernel"]["status"] == "pass"


def test_parameter_init_fix_copies_every_matched_tensor_once_the_holder_shifts_the_draws():
    """A tensor ModelNew happened to draw exactly as Model did (here beta: after a rand of the same size)
    is no longer so once the holder draws Model's parameters first: the fix copies every matched tensor,
    not only those that differed (real qwencoder level2/74: its multiplier matched by value before the
    fix and differed after it, so KernelBench's trials still failed)."""
    from debugger.recipes.parameter_init import parameter_init_patch

    lucky = affine_candidate("self.gamma = nn.Parameter(torch.rand(n))\n"
                             "        self.beta = nn.Parameter(torch.randn(n))")
    before = evaluate(case_from_sources(AFFINE_REF, lucky), "cpu", checks=[standard_checks()[0]])
    assert {p["candidate"]: p["own_init_diff"] > 0 for p in before.parameter_map["pairs"]} == {
        "gamma": True, "beta": False}
    patch = parameter_init_patch(lucky, AFFINE_REF, before.parameter_map)
    after = evaluate(case_from_sources(AFFINE_REF, patch.new_src), "cpu",
                     checks=[standard_checks()[0], kernelbench_checks()[0]], semantics="kernelbench")
    assert after.status == "pass", after.message


# A scalar bias the reference holds as (1, 1) and the candidate as (1,): the same draw under the seed
# (real gemini level2/36 holds Model's (1, 1, 1) bias as (1,), and failed params_redrawn for it).
SCALAR_BIAS_REF = AFFINE_REF.replace("self.shift = nn.Parameter(torch.randn(n))",
                                     "self.shift = nn.Parameter(torch.randn(1, 1))")
SCALAR_BIAS_KERNEL = AFFINE_KERNEL.replace("b = tl.load(b_ptr + col, mask=mask)", "b = tl.load(b_ptr)")


def scalar_bias_candidate(bias_init: str) -> str:
    return SCALAR_BIAS_KERNEL.replace("INIT", "self.gamma = nn.Parameter(torch.rand(n) + 0.5)\n"
                                              f"        self.shift = nn.Parameter({bias_init})") \
        .replace("SCALE", "self.gamma").replace("SHIFT", "self.shift")


def test_a_tensor_held_without_its_size_one_dimensions_is_matched_and_carries_redrawn_weights():
    report = evaluate(case_from_sources(SCALAR_BIAS_REF, scalar_bias_candidate("torch.randn(1)")), "cpu",
                      checks=[standard_checks()[0], standard_checks()[-1], kernelbench_checks()[0]])
    assert _pairs(report)["shift"] == ("shift", "reshaped")
    assert report.status == "pass", report.message
    assert [c.name for c in report.checks if c.passed] == ["seed0", "params_redrawn", "kb_trial0"]


def test_parameter_init_fix_copies_a_reshaped_tensor_in_the_candidates_shape():
    from debugger.recipes.parameter_init import parameter_init_patch

    own = scalar_bias_candidate("torch.zeros(1)")
    before = evaluate(case_from_sources(SCALAR_BIAS_REF, own), "cpu",
                      checks=[standard_checks()[0], kernelbench_checks()[0]], semantics="kernelbench")
    assert before.status == "mismatch" and before.verdicts["kernel"]["status"] == "pass"
    assert _pairs(before)["shift"] == ("shift", "reshaped")
    patch = parameter_init_patch(own, SCALAR_BIAS_REF, before.parameter_map)
    assert patch is not None and ".reshape(dst.shape)" in patch.new_src
    after = evaluate(case_from_sources(SCALAR_BIAS_REF, patch.new_src), "cpu",
                     checks=[standard_checks()[0], standard_checks()[-1], kernelbench_checks()[0]],
                     semantics="kernelbench")
    assert after.status == "pass", after.message


def test_parameter_init_is_proved_when_the_seeds_are_within_kernelbenchs_tolerance_only():
    """A kernel off by 2e-3 (inside KernelBench's 1e-2, outside kdebug's tolerance) whose ModelNew
    builds its own weights: under KernelBench's semantics the init is what fails the pipeline, so
    parameter_init leads on the experiment, with the small error as a second finding; under the kernel
    semantics the seeds' failure keeps it a weak finding."""
    from debugger.diagnose.semantics import parameter_init_hypothesis

    off = OWN_INIT.replace("x * s + b, mask=mask", "x * s + b + 0.002, mask=mask")
    assert off != OWN_INIT
    checks = [standard_checks()[0], kernelbench_checks()[0]]
    report = evaluate(case_from_sources(AFFINE_REF, off), "cpu", checks=checks, semantics="kernelbench")
    assert report.verdicts["kernel"]["status"] == "mismatch" and report.status == "mismatch"
    found = parameter_init_hypothesis(report)
    assert found["score"] == 9.0 and "within KernelBench's tolerance" in found["evidence"][0]
    assert "miss kdebug's own tolerance" in found["evidence"][1]
    kernel_only = evaluate(case_from_sources(AFFINE_REF, off), "cpu", checks=checks)
    assert parameter_init_hypothesis(kernel_only)["score"] == 1.0


BN_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(4, 6, 5, 5)]


def get_init_inputs():
    return [6]
'''

BN_OWN_TENSORS = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c))
        self.register_buffer("running_mean", torch.zeros(c))
        self.register_buffer("running_var", torch.ones(c))

    def forward(self, x):
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, self.training)
'''


def test_redrawn_parameters_reach_a_batchnorm_that_holds_its_own_tensors():
    # matched on the re-drawn values, weight (ones) would pair with running_var (ones, a buffer never re-drawn)
    report = evaluate(case_from_sources(BN_REF, BN_OWN_TENSORS), "cpu",
                      checks=[standard_checks()[0], standard_checks()[-1]])
    assert _pairs(report)["weight"] == ("bn.weight", "order") and _pairs(report)["bias"] == ("bn.bias", "order")
    assert report.status == "pass", report.message
    assert [c.name for c in report.checks if c.passed] == ["seed0", "params_redrawn"]


OWN_CONSTANT_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


batch_size = 65536
features = 37


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return []
'''
# an answer that repeats the task's constants and builds from its own copy, as real answers do
OWN_CONSTANT_NEW = OWN_CONSTANT_REF.replace("class Model(", "class ModelNew(").replace(
    "return x * 2", "return x.reshape(batch_size, -1) * 2")


def test_at_reduced_sizes_the_candidate_s_own_copy_of_a_size_constant_is_reduced_too():
    report = evaluate(case_from_sources(OWN_CONSTANT_REF, OWN_CONSTANT_NEW), "cpu",
                      checks=[standard_checks()[0], kernelbench_checks()[0]], sizes="small")
    assert report.sizes["reduced"] and report.sizes["shapes"]["batch_size"] < 65536
    assert report.status == "pass", report.message
    assert report.verdicts["kernelbench"]["status"] == "pass"


GEMM_BN_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.gemm = nn.Linear(i, o)
        self.bn = nn.BatchNorm1d(o)

    def forward(self, x):
        return self.bn(self.gemm(x))


def get_inputs():
    return [torch.randn(16, 64) * 10]


def get_init_inputs():
    return [64, 6]
'''
# Two faults, as qwencoder level2/39 has: the running statistics (eval mode) and the GEMM's bias dropped. In
# train mode the batch mean cancels the bias, so only the statistics matter; in eval mode the bias shows.
GEMM_BN_RUNNING_NO_BIAS = RUNNING_STATS_BN.replace("def __init__(self, c):", "def __init__(self, i, c):").replace(
    "self.bn = nn.BatchNorm1d(c)", "self.gemm = nn.Linear(i, c)\n"
                                                   "        self.bn = nn.BatchNorm1d(c)").replace(
    "x = x.contiguous()", "x = (x @ self.gemm.weight.t()).contiguous()")


def test_a_failing_kernel_is_diagnosed_on_its_own_checks_and_eval_mode_that_shrinks_the_error_proves_train_mode():
    from debugger.diagnose import diagnose
    from debugger.evaluate import run_evaluation

    case = case_from_sources(GEMM_BN_REF, GEMM_BN_RUNNING_NO_BIAS)
    ev = run_evaluation(case, "cpu", capture=True, semantics="kernelbench",
                        checks=[standard_checks()[0], kernelbench_checks()[0]])
    assert [c.name for c in ev.report.failed_checks] == ["kb_trial0"], ev.report.message  # the pipeline's leads
    diag = diagnose(case, "cpu", evaluation=ev, probes=False, localise=False)
    mode = next(e for e in diag.experiments if e["recipe"] == "eval_mode")
    assert mode["result"] == "better" and "the largest error falls from" in mode["description"], mode
    assert mode["failed_after"] == ["seed0"]  # the bias still departs in eval mode: not a fix
    assert diag.hypotheses[0]["bug_class"] == "train_eval_mode", diag.hypotheses[:3]
    assert diag.summary.startswith("KernelBench's verdict: mismatch (1 of 1 trials); the kernel checks")


def test_eval_mode_that_fixes_every_check_settles_the_diagnosis_before_any_recipe_runs():
    from debugger.diagnose import diagnose

    diag = diagnose(case_from_sources(BATCHNORM_REF, RUNNING_STATS_BN), "cpu", probes=False, localise=False)
    assert [(e["recipe"], e["result"]) for e in diag.experiments] == [("eval_mode", "fixed")]
    assert diag.hypotheses[0]["bug_class"] == "train_eval_mode"


OOM_REF = """
import torch
import torch.nn as nn

batch_size = 2048
dim = 256

class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.relu(x) * 3.0

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
"""

# A candidate that is right everywhere but "runs out of memory" on strided inputs of the published batch, as
# a contiguity copy of 8 GiB inputs beside kdebug's second process did on an 80 GiB GPU.
OOM_NEW = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        if not x.is_contiguous() and x.shape[0] >= LIMIT:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")
        return torch.clamp(x, min=0) * WRONG
"""


def test_a_check_out_of_memory_at_the_published_sizes_runs_again_at_reduced_sizes():
    checks = [c for c in standard_checks() if c["name"] in ("seed0", "noncontiguous")]
    report = evaluate(case_from_sources(OOM_REF, OOM_NEW.replace("LIMIT", "2048").replace("WRONG", "3.0")), "cpu",
                      checks=checks)
    nc = next(c for c in report.checks if c.name == "noncontiguous")
    assert report.status == "pass" and nc.status == "pass"
    assert "out of memory" in nc.spec["published_sizes_out_of_memory"]
    assert nc.spec["shapes"]["batch_size"] < 2048 and nc.spec["plan_shapes"]
    assert "shapes" not in next(c for c in report.checks if c.name == "seed0").spec  # only the check that failed
    from debugger.output import eval_text
    assert f"at batch_size={nc.spec['shapes']['batch_size']}: out of memory at the published sizes" in eval_text(report)

    # At the reduced sizes the check judges: a kernel wrong on them fails, one out of memory there too stays so.
    wrong = evaluate(case_from_sources(OOM_REF, OOM_NEW.replace("LIMIT", "2048").replace(
        "* WRONG", "* (3.0 if x.is_contiguous() else 2.0)")), "cpu", checks=checks)
    assert next(c for c in wrong.checks if c.name == "noncontiguous").status == "mismatch"
    always = evaluate(case_from_sources(OOM_REF, OOM_NEW.replace("LIMIT", "1").replace("WRONG", "3.0")), "cpu",
                      checks=checks)
    nc = next(c for c in always.checks if c.name == "noncontiguous")
    assert nc.status == "runtime_error" and always.status == "runtime_error"


CROWDED = ("CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 79.18 GiB of which 1.00 GiB "
           "is free. Process 7 has 34.20 GiB memory in use. Process 9 has 40.00 GiB memory in use. "
           "Including non-PyTorch memory, this process has 40.00 GiB "
           "memory in use. Of the allocated memory 39.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by "
           "PyTorch but unallocated.")


def test_a_check_crowded_out_runs_again_at_reduced_sizes():
    """The process that held the memory may be the evaluation's own reference worker: the check is not left
    skipped (which leaves the kernel verdict incomplete) but judged at reduced sizes."""
    checks = [c for c in standard_checks() if c["name"] in ("seed0", "noncontiguous")]
    crowded = OOM_NEW.replace('"CUDA out of memory. Tried to allocate 8.00 GiB"', repr(CROWDED))
    report = evaluate(case_from_sources(OOM_REF, crowded.replace("LIMIT", "2048").replace("WRONG", "3.0")), "cpu",
                      checks=checks)
    nc = next(c for c in report.checks if c.name == "noncontiguous")
    assert "other processes held" in nc.spec["published_sizes_out_of_memory"]
    assert report.status == "pass" and nc.status == "pass" and nc.spec["shapes"]["batch_size"] < 2048


def test_kernelbench_trials_out_of_memory_are_not_run_at_other_sizes():
    oom_always = OOM_NEW.replace("not x.is_contiguous() and x.shape[0] >= LIMIT", "True").replace("WRONG", "3.0")
    report = evaluate(case_from_sources(OOM_REF, oom_always), "cpu", checks=[kernelbench_checks()[0]],
                      semantics="kernelbench")
    assert report.status == "runtime_error" and "shapes" not in report.checks[0].spec


PATCH_REF = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, img_size=256):
        super().__init__()
        self.img_size = img_size
        self.proj = nn.Conv2d(3, 8, 4, stride=4)

    def forward(self, x):
        assert x.shape[-1] == self.img_size, f"image {x.shape[-1]} is not the model's {self.img_size}"
        scale = float(self.proj.weight.abs().max().item())  # .item(): no forward on the meta device
        return self.proj(x) / scale


batch_size = 32
image_size = 256


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return []
"""


def test_small_sizes_the_meta_device_cannot_check_are_checked_by_a_real_forward():
    """The reference's forward cannot run on the meta device (.item()), so the plan cannot see that a halved
    image breaks it (the model asserts the size it was built for, as SwinMLP's does). Halving the batch alone
    does not fit the CPU's 1 MiB, so image_size was halved too and every trial failed, reported as the
    candidate's runtime error; one real forward of the reference now puts image_size back."""
    new = PATCH_REF.replace("class Model(", "class ModelNew(")
    report = evaluate(case_from_sources(PATCH_REF, new), "cpu", checks=kernelbench_checks()[:2], sizes="small")
    assert report.sizes["shapes"] == {"batch_size": 2}, report.sizes
    assert report.status == "pass", report.message
