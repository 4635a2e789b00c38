"""The repair loop's screen (the failing checks of the best version, run first on a proposal): it runs
at the loop's sizes, and a screen whose checks could not all run is no verdict on the proposal."""
from __future__ import annotations

from types import SimpleNamespace

from debugger.records import CheckResult, EvalReport
from debugger.repair import nodes
from debugger.repair.state import Limits, RunContext


def _report(status: str, checks: list[CheckResult], semantics: str = "both") -> EvalReport:
    return EvalReport(status=status, checks=checks, semantics=semantics)


def _state() -> dict:
    failing = {"name": "kb_trial0", "kind": "kernelbench", "passed": False, "status": "mismatch",
               "spec": {"name": "kb_trial0", "kind": "kernelbench"}}
    return {"case_name": "c", "reference_src": "", "candidate_src": "NEW = 1\n", "best_src": "OLD = 1\n",
            "best_report": {"checks": [failing]}, "diagnosis": {}}


def _runtime(sizes: str) -> SimpleNamespace:
    ctx = RunContext(device="cpu", limits=Limits(), kb_backend=None, model_backend=None, knowledge=None,
                     ledger=None, run_id="t", semantics="kernelbench", sizes=sizes)
    return SimpleNamespace(context=ctx)


def test_a_screen_that_could_not_run_falls_through_to_the_full_evaluation(monkeypatch):
    calls = []

    def fake(case, device, **kw):
        calls.append(kw)
        if kw.get("checks") and len(kw["checks"]) == 1:  # the screen: its one check skipped (memory)
            rep = _report("mismatch", [CheckResult(name="kb_trial0", kind="kernelbench", passed=False,
                                                   status="skipped")])
        else:
            rep = _report("pass", [CheckResult(name="seed0", kind="seed", passed=True, status="pass")])
        return SimpleNamespace(report=rep)

    monkeypatch.setattr(nodes, "run_evaluation", fake)
    out = nodes.verify(_state(), _runtime("auto"))
    assert out["verify"]["passed"] and not out["verify"]["screen"]
    assert calls[0]["sizes"] == "small"  # the screen runs at the loop's sizes, not the published ones


def test_a_screen_that_ran_and_failed_is_the_verdict(monkeypatch):
    def fake(case, device, **kw):
        return SimpleNamespace(report=_report("mismatch", [CheckResult(name="kb_trial0", kind="kernelbench",
                                                                       passed=False, status="mismatch")]))

    monkeypatch.setattr(nodes, "run_evaluation", fake)
    out = nodes.verify(_state(), _runtime("published"))
    assert out["verify"]["screen"] and not out["verify"]["passed"] and out["verify"]["score"] > 0


def test_a_screen_that_failed_without_a_measurable_failure_falls_through(monkeypatch):
    def fake(case, device, **kw):
        if kw.get("checks") and len(kw["checks"]) == 1:  # ran, failed, but nothing it counts failed
            rep = _report("mismatch", [CheckResult(name="kb_trial0", kind="kernelbench", passed=False,
                                                   status="mismatch")], semantics="kernel")
        else:
            rep = _report("pass", [CheckResult(name="seed0", kind="seed", passed=True, status="pass")])
        return SimpleNamespace(report=rep)

    monkeypatch.setattr(nodes, "run_evaluation", fake)
    out = nodes.verify(_state(), _runtime("published"))
    assert out["verify"]["passed"] and not out["verify"]["screen"]


def _failing_state(frac: float) -> dict:
    state = _state()
    state["best_report"]["checks"][0]["frac_wrong"] = frac
    return state


def _screen_then_full(frac_screen: float, calls: list):
    def fake(case, device, **kw):
        calls.append(kw)
        if kw.get("checks") and len(kw["checks"]) == 1:  # the screen: still failing, this much wrong
            rep = _report("mismatch", [CheckResult(name="kb_trial0", kind="kernelbench", passed=False,
                                                   status="mismatch", frac_wrong=frac_screen)])
        else:
            rep = _report("mismatch", [CheckResult(name="kb_trial0", kind="kernelbench", passed=False,
                                                   status="mismatch", frac_wrong=frac_screen),
                                       CheckResult(name="seed0", kind="seed", passed=True, status="pass")])
        return SimpleNamespace(report=rep)
    return fake


def test_a_screen_less_wrong_on_every_failing_check_is_judged_by_the_full_evaluation(monkeypatch):
    calls = []
    monkeypatch.setattr(nodes, "run_evaluation", _screen_then_full(0.15, calls))
    out = nodes.verify(_failing_state(0.9), _runtime("published"))
    assert len(calls) == 2 and not out["verify"]["screen"]  # the full evaluation: a partial fix can be kept


def test_a_screen_no_less_wrong_is_the_verdict(monkeypatch):
    calls = []
    monkeypatch.setattr(nodes, "run_evaluation", _screen_then_full(0.9, calls))
    out = nodes.verify(_failing_state(0.9), _runtime("published"))
    assert len(calls) == 1 and out["verify"]["screen"]


def test_the_loop_runs_compute_sanitizer_only_where_it_can_explain_the_failure():
    from debugger.records import ErrorSignature

    def report(status, kind, drift=None):
        r = _report(status, [CheckResult(name="seed0", kind="seed", passed=False, status=status, drift=drift)])
        r.signature = ErrorSignature(status=status, kind=kind)
        return r

    assert not nodes.sanitizer_may_help(report("mismatch", "mismatch"))  # wrong values on a clean run
    assert nodes.sanitizer_may_help(report("mismatch", "nan"))  # the poisoned output: never written
    assert nodes.sanitizer_may_help(report("runtime_error", "AcceleratorError"))
    assert nodes.sanitizer_may_help(report("mismatch", "mismatch", drift=0.5))  # run-to-run drift: a race


def test_the_screen_runs_only_the_failing_checks_the_loop_s_verdict_counts(monkeypatch):
    """Under KernelBench's semantics a strided layout the task never draws is a note, not the verdict: an
    answer that refuses it (TORCH_CHECK) must not have its fix screened, fail-fast, on it first."""
    calls = []

    def fake(case, device, **kw):
        calls.append(kw)
        return SimpleNamespace(report=_report("pass", [CheckResult(name="kb_trial0", kind="kernelbench",
                                                                   passed=True, status="pass")]))

    state = _state()
    layout = {"name": "noncontiguous", "kind": "layout", "passed": False, "status": "runtime_error",
              "spec": {"name": "noncontiguous", "kind": "layout"}}
    state["best_report"]["checks"].insert(0, layout)
    monkeypatch.setattr(nodes, "run_evaluation", fake)
    nodes.verify(state, _runtime("published"))
    assert [s["name"] for s in calls[0]["checks"]] == ["kb_trial0"]


def test_the_gate_runs_at_the_loop_s_sizes(monkeypatch):
    """A `--sizes small` repair judged at the published sizes: gemini level3/40's fix (a GRU of 512 steps,
    emulated) ran past the gate's timeout and was rejected for it."""
    from debugger.integrity import gate

    seen = {}

    def fake_check(case, device, **kw):
        seen.update(kw)
        return gate.Verdict("accept", [])

    monkeypatch.setattr(gate, "check", fake_check)
    state = {**_state(), "original_src": "OLD = 1\n"}
    nodes.integrity(state, _runtime("small"))
    assert seen["sizes"] == "small"
    nodes.integrity(state, _runtime("auto"))
    assert seen["sizes"] == "auto"  # published where they fit, as the final verdict of an auto repair
