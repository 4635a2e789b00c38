"""The policies beyond the static rules: the dynamic robustness split, repairs judged against their
candidate, the verdict naming its policy, and extension calls recorded as the candidate's launches."""
from __future__ import annotations

import types

import torch

from debugger.case import case_from_sources
from debugger.integrity import gate
from debugger.integrity.dynamic import robustness_split, run_checks, task_produces
from debugger.integrity.gate import check
from debugger.integrity.relative import regressions
from debugger.records import CheckResult
from debugger.sandbox.hooks import LaunchRecorder, written_by_launch
from tests.test_integrity_real_forms import RELU_LAUNCH, ref, triton_candidate

RAND_REF = ref("torch.sqrt(x)", inputs="torch.rand(16, 64)")
RANDN_REF = ref("torch.relu(x)", inputs="torch.randn(16, 64)")
TRANSPOSED_REF = ref("torch.relu(x)", inputs="torch.randn(64, 16).t()")


def failed(*names: str) -> list[CheckResult]:
    return [CheckResult(name=n, kind="distribution", passed=False, status="mismatch", message="mismatch") for n in names]


def test_kernelbench_reports_what_the_task_never_produces_and_strict_rejects_it():
    checks = failed("noncontiguous", "negated", "x100", "seed1", "hidden_shape1", "hidden_seed1009")
    rejecting, notes = robustness_split(checks, RAND_REF, "kernelbench")
    assert [c.name for c in rejecting] == ["seed1", "hidden_seed1009"]  # other values at the task's size reject
    assert any("assumes contiguous inputs" in n for n in notes) and any("negated" in n for n in notes)
    assert any("smaller size than the task's" in n for n in notes)  # KernelBench's task has one size
    rejecting, notes = robustness_split(checks, RAND_REF, "strict")
    assert len(rejecting) == 6 and notes == []
    rejecting, _ = robustness_split(checks, RAND_REF, "kernelbench", repair=True)  # a fix fitted to the loop's sizes
    assert [c.name for c in rejecting] == ["seed1", "hidden_shape1", "hidden_seed1009"]


def test_a_distribution_or_layout_the_task_itself_produces_still_rejects():
    assert task_produces(RANDN_REF) == {"sign"} and task_produces(TRANSPOSED_REF) == {"layout", "sign"}
    rejecting, _ = robustness_split(failed("negated", "transposed"), RANDN_REF, "kernelbench")
    assert [c.name for c in rejecting] == ["negated"]
    rejecting, _ = robustness_split(failed("transposed"), TRANSPOSED_REF, "kernelbench")
    assert [c.name for c in rejecting] == ["transposed"]


HONEST = triton_candidate(f"y = x.contiguous()\nout = torch.empty_like(y)\n{RELU_LAUNCH}\nreturn out")


def test_a_repair_may_not_add_pytorch_compute_fallbacks_or_precision_loss():
    assert regressions(HONEST, HONEST.replace("y = x.contiguous()", "y = x.contiguous().clone()"), RANDN_REF,
                       "kernelbench") == []
    more_torch = HONEST.replace("return out", "return torch.relu(out)")
    assert [f.rule for f in regressions(HONEST, more_torch, RANDN_REF, "kernelbench")] == ["repair_adds_torch_compute"]
    fallback = HONEST.replace("y = x.contiguous()", "if x.dtype == torch.float16:\n            return torch.relu(x)\n"
                                                    "        y = x.contiguous()")
    assert "repair_adds_shape_special_case" in {f.rule for f in regressions(HONEST, fallback, RANDN_REF, "kernelbench")}
    half = HONEST.replace("y = x.contiguous()", "y = x.contiguous().half()")
    assert "repair_adds_precision_downgrade" in {f.rule for f in regressions(HONEST, half, RANDN_REF, "strict")}
    # what the candidate already had is not held against its repair
    assert regressions(more_torch, more_torch.replace("y = x.contiguous()", "y = x"), RANDN_REF, "kernelbench") == []


def test_arithmetic_on_the_modules_own_tensors_alone_is_not_pytorch_compute():
    """The dropped_term fix hands a kernel `self.bias + self.add_value.reshape(...)`: parameters prepared, no
    value of forward computed; the same add on a forward value still counts."""
    prepared = HONEST.replace("y = x.contiguous()", "shift = self.bias + self.extra.reshape(self.bias.shape)\n"
                                                    "        y = x.contiguous()")
    assert regressions(HONEST, prepared, RANDN_REF, "kernelbench") == []
    on_data = HONEST.replace("return out", "return out + self.bias.reshape(-1)")
    assert [f.rule for f in regressions(HONEST, on_data, RANDN_REF, "kernelbench")] == ["repair_adds_torch_compute"]


def test_the_static_verdict_names_its_policy_and_judges_a_repair_against_its_baseline():
    case = case_from_sources(RANDN_REF, HONEST.replace("return out", "return torch.relu(out)"))
    verdict = check(case, "cpu", dynamic=False, policy="strict", baseline_src=HONEST)
    assert verdict.to_dict()["policy"] == "strict" and not verdict.accepted
    assert "repair_adds_torch_compute" in {f.rule for f in verdict.findings}
    assert check(case_from_sources(RANDN_REF, HONEST), "cpu", dynamic=False, policy="kernelbench").policy == "kernelbench"
    assert check(case_from_sources(RANDN_REF, HONEST), "cpu", dynamic=False).policy == "strict"  # the repair loop's


def test_a_repair_is_not_rejected_for_pytorch_compute_its_candidate_already_had():
    more_torch = HONEST.replace("return out", "return torch.relu(out)")
    assert not check(case_from_sources(RANDN_REF, more_torch), "cpu", dynamic=False, policy="strict").accepted
    repaired = more_torch.replace("y = x.contiguous()", "y = x.contiguous().view(x.shape)")
    verdict = check(case_from_sources(RANDN_REF, repaired), "cpu", dynamic=False, policy="strict",
                    baseline_src=more_torch)
    assert verdict.accepted, verdict.reasons()
    assert any(f.rule == "torch_compute" and "inherited" in f.message for f in verdict.findings)
    # a cheat is not inherited: the same repair of a candidate that calls the reference still rejects
    cheat = more_torch.replace("return torch.relu(out)", "return Model().forward(x)")
    verdict = check(case_from_sources(RANDN_REF, cheat.replace("y = x.contiguous()", "y = x.contiguous().view(x.shape)")),
                    "cpu", dynamic=False, policy="strict", baseline_src=cheat)
    assert not verdict.accepted


def test_calls_into_a_built_extension_are_recorded_as_launches_with_what_they_return():
    recorder = LaunchRecorder()
    module = types.ModuleType("relu_ext")
    module.relu_cuda = lambda x: torch.relu(x)
    recorder.wrap_extension(module)
    x = torch.randn(8)
    module.relu_cuda(x)
    assert recorder.launches == []  # not recording outside a forward
    recorder.active = True
    out = module.relu_cuda(x)
    recorder.active = False
    assert recorder.kernels() == ["relu_cuda"] and written_by_launch(out, recorder.launches)
    recorder.wrap_extension(module)  # wrapping twice records once
    recorder.active = True
    module.relu_cuda(x)
    assert len(recorder.launches) == 2


SYMMETRIC_REF = ref("torch.relu(x)", inputs="(lambda a: (a + a.T) / 2)(torch.randn(64, 64))")
FLAT_RELU = triton_candidate(f"y = x\nout = torch.empty(y.shape)\n{RELU_LAUNCH}\nreturn out")  # ignores strides


def test_the_layouts_the_task_produces_are_measured_not_read_off_a_transpose_in_its_source():
    # `(a + a.T) / 2` is contiguous: the source alone would say the task produces a transposed layout
    assert "layout" in task_produces(SYMMETRIC_REF) and "layout" not in task_produces(SYMMETRIC_REF, False)
    verdict = check(case_from_sources(SYMMETRIC_REF, FLAT_RELU), "cpu", policy="kernelbench")
    assert verdict.accepted, verdict.reasons()
    assert any(f.rule == "robustness" and "contiguous" in f.message for f in verdict.findings)
    # a task whose own inputs are a transposed view still holds the kernel to it
    verdict = check(case_from_sources(TRANSPOSED_REF, FLAT_RELU), "cpu", policy="kernelbench")
    assert not verdict.accepted and "fails_evaluation" in {f.rule for f in verdict.findings}


GELU_TANH = triton_candidate("""
    y = x.contiguous()
    out = torch.empty_like(y)
    gelu_tanh_kernel[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
    return out
""", helper='''

@triton.jit
def gelu_tanh_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    tanh = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + tanh), mask=mask)
''')


def test_an_approximation_within_kernelbenchs_tolerance_is_a_note_under_kernelbench_and_rejects_under_strict(monkeypatch):
    """gemini level2/67 (recorded correct) computes GELU with the tanh formula where the task's is exact: about
    3e-4 off, which KernelBench's allclose(1e-2) passes and kdebug's kernel verdict does not."""
    case = case_from_sources(ref("F.gelu(x)"), GELU_TANH)
    runs = []

    def counted(*args, **kwargs):
        runs.append(args)
        return run_checks(*args, **kwargs)

    monkeypatch.setattr(gate, "run_checks", counted)
    verdicts = gate.check_policies(case, "cpu", ("kernelbench", "strict"))  # both judged from one sandboxed run
    assert len(runs) == 1 and list(verdicts) == ["kernelbench", "strict"]
    kernelbench, strict = verdicts["kernelbench"], verdicts["strict"]
    assert kernelbench.accepted and kernelbench.policy == "kernelbench", kernelbench.findings
    assert any(f.rule == "precision" and "within KernelBench's tolerance" in f.message for f in kernelbench.findings)
    assert not strict.accepted and strict.policy == "strict" and "fails_evaluation" in {f.rule for f in strict.findings}
    assert strict.evaluation == kernelbench.evaluation  # the same run's checks


def test_kdebug_check_judges_both_policies_at_once(tmp_path, capsys):
    """`kdebug check --policy both --json`: one object per policy; the exit status is 3 when either rejects."""
    import json

    from debugger.cli import main

    (tmp_path / "ref.py").write_text(RANDN_REF)
    (tmp_path / "cand.py").write_text(triton_candidate(RELU_LAUNCH))
    code = main(["check", str(tmp_path / "cand.py"), "--ref", str(tmp_path / "ref.py"), "--policy", "both",
                 "--static-only", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"kernelbench", "strict"} and {v["policy"] for v in out.values()} == {"kernelbench", "strict"}
    assert code == (0 if all(v["verdict"] == "accept" for v in out.values()) else 3)


def test_only_value_differences_within_the_tolerance_are_precision_notes():
    from debugger.integrity.dynamic import precision_split
    from debugger.records import OutputStats

    def one(name, err, **kw):
        out = OutputStats(index=0, shape=[4], dtype="float32", passed=False, max_abs_err=err,
                          nan_mismatch=kw.pop("nan", 0))
        return CheckResult(name=name, kind="seed", passed=False, status="mismatch", max_abs_err=err, outputs=[out], **kw)

    checks = [one("close", 4e-3), one("far", 0.05), one("nan", 4e-3, nan=3), one("race", 4e-3, drift=1e-3),
              one("mutates", 4e-3, inputs_mutated=True)]
    rejecting, notes = precision_split(checks, "kernelbench")
    assert [c.name for c in rejecting] == ["far", "nan", "race", "mutates"] and len(notes) == 1 and "close" in notes[0]
    assert precision_split(checks, "strict")[0] == checks and precision_split(checks, "kernelbench", repair=True)[1] == []
