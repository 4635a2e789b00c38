"""The repair graph end to end on real kernels: kb backend, openai backend over loopback, guards, gate."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from debugger.case import case_from_sources, load_case
from debugger.ledger import Ledger
from debugger.repair import repair
from debugger.settings import resolve
from debugger.repair.graph import MERMAID_PATH, mermaid
from tests.replay_server import ReplayServer

REPO = Path(__file__).resolve().parents[1]

SCALE_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 3.0 + 1.0


n = 1500


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
'''

SCALE_KERNEL = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def affine_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = x * 2.0 + 1.0
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        affine_kernel[(triton.cdiv(n, 512),)](x, out, n, BLOCK=512)
        return out
'''

GOOD_EDIT = "<<<<<<< SEARCH\n    y = x * 2.0 + 1.0\n=======\n    y = x * 3.0 + 1.0\n>>>>>>> REPLACE\n"
CHEAT_EDIT = ("<<<<<<< SEARCH\n        return out\n=======\n        return x * 3.0 + 1.0\n>>>>>>> REPLACE\n")
TAMPER_EDIT = ("<<<<<<< SEARCH\n        return out\n=======\n        return out\n\n\ndef get_inputs():\n"
               "    return []\n>>>>>>> REPLACE\n")
USELESS_EDIT = "<<<<<<< SEARCH\n    y = x * 2.0 + 1.0\n=======\n    y = x * 2.5 + 1.0\n>>>>>>> REPLACE\n"


def settings(**kw):
    base = dict(device="cpu", backend="kb", max_iters=6, timeout=120)
    base.update(kw)
    return resolve(**base)


def test_graph_diagram_is_rendered_from_the_graph():
    assert MERMAID_PATH.read_text() == mermaid(), "run `python -m debugger.repair.graph` to refresh debugger/repair/graph.mmd"


def test_kb_backend_repairs_the_example(tmp_path):
    shutil.copytree(REPO / "examples" / "softmax", tmp_path / "case")
    (tmp_path / "case" / "fixed.py").unlink()
    case = load_case(tmp_path / "case")
    ledger = Ledger(tmp_path / "ledger.db")
    result = repair(case, settings=settings(), ledger=ledger, write_back=False)
    assert result.status == "repaired", result.message
    assert result.bug_class == "numerical_overflow"
    out = Path(result.output)
    assert out.name == "candidate.repaired.py" and out.exists()
    assert (tmp_path / "case" / "candidate.py").read_text() == case.candidate_src  # never overwritten
    assert "tl.max" in result.diff and result.tokens == {"prompt": 0, "completion": 0}
    assert result.verdict["verdict"] == "accept"
    runs = ledger.runs()
    assert runs[0]["status"] == "repaired" and ledger.iterations(result.run_id)[-1]["outcome"] == "fixed"
    assert ledger.outcomes() and ledger.outcomes()[-1]["recipe"] == "subtract_rowmax"


def test_openai_backend_repairs_what_no_recipe_fixes(tmp_path):
    case = case_from_sources(SCALE_REF, SCALE_KERNEL, name="affine")
    with ReplayServer([{"status": 503}, {"content": "Fix the slope.\n" + GOOD_EDIT, "prompt_tokens": 900,
                                          "completion_tokens": 40}]) as server:
        result = repair(case, settings=settings(backend="auto", base_url=server.base_url, api_key="k", model="m"),
                        ledger=Ledger(tmp_path / "l.db"), write_files=False, write_back=False)
        prompt = server.requests[-1]["body"]["messages"][1]["content"]
    assert result.status == "repaired", result.history
    assert result.tokens == {"prompt": 900, "completion": 40}
    assert "x * 3.0 + 1.0" in result.repaired_src
    assert "## Diagnosis" in prompt and "## Current kernel" in prompt and "SCALE" not in prompt
    assert len(server.requests) == 2  # one retry after the 503
    kb_tries = [h for h in result.history if h["origin"] == "recipe"]
    assert all(h["outcome"] != "fixed" for h in kb_tries)


def test_cheating_fix_is_rejected_by_the_gate(tmp_path):
    case = case_from_sources(SCALE_REF, SCALE_KERNEL, name="affine")
    with ReplayServer([{"content": CHEAT_EDIT}]) as server:
        result = repair(case, settings=settings(backend="openai", base_url=server.base_url, model="m", max_iters=2),
                        ledger=Ledger(tmp_path / "l.db"), write_files=False, write_back=False)
    assert result.status == "rejected"
    assert any(h.get("verdict") == "reject" for h in result.history)


def test_guards_fire_and_say_which(tmp_path):
    case = case_from_sources(SCALE_REF, SCALE_KERNEL, name="affine")
    with ReplayServer([{"content": TAMPER_EDIT}, {"content": USELESS_EDIT}, {"content": USELESS_EDIT}]) as server:
        result = repair(case, settings=settings(backend="openai", base_url=server.base_url, model="m", max_iters=3),
                        ledger=Ledger(tmp_path / "l.db"), write_files=False, write_back=False)
    assert result.status == "unrepaired"
    assert result.guard == "max_iterations"
    messages = [h["message"] or "" for h in result.history]
    assert any("get_inputs" in m for m in messages)  # harness edit refused
    assert any("already tried" in m for m in messages)  # duplicate patch caught


def test_authentication_error_is_one_clear_line(tmp_path):
    case_dir = tmp_path / "c"
    case_dir.mkdir()
    (case_dir / "reference.py").write_text(SCALE_REF)
    (case_dir / "candidate.py").write_text(SCALE_KERNEL)
    with ReplayServer([{"status": 401}]) as server:
        env = {"PATH": "/usr/bin:/bin", "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bad",
               "KDEBUG_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1"}
        proc = subprocess.run([sys.executable, "-m", "debugger.cli", "repair", str(case_dir), "--device", "cpu",
                               "--backend", "openai", "--model", "m", "--json", "--no-retrieval", "--no-write-back"],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    data = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert data["status"] == "unrepaired" and data["guard"] == "backend_error"
    assert "authentication failed" in proc.stderr and "Traceback" not in proc.stderr


def test_a_patch_the_diagnosis_already_proved_is_not_screened_again(tmp_path, monkeypatch):
    import debugger.repair.nodes as nodes

    calls = []
    real = nodes.run_evaluation

    def counting(case, device, **kw):
        calls.append(len(kw.get("checks") or []))
        return real(case, device, **kw)

    monkeypatch.setattr(nodes, "run_evaluation", counting)
    case = load_case(REPO / "examples" / "softmax" / "candidate.py", REPO / "examples" / "softmax" / "reference.py")
    result = repair(case, settings=settings(), ledger=Ledger(tmp_path / "ledger.db"), write_back=False,
                    write_files=False, retrieval=False)
    assert result.status == "repaired" and result.iterations == 1
    # evaluate (full), then verify (full) of the experiment-proved patch: no screen on the failing checks
    assert len(calls) == 2, calls


def test_stopping_sooner_is_not_progress():
    """The tie-break on failing checks: an evaluation the reference stopped, or one whose later checks went
    unrun after the candidate crashed, does not count as failing fewer checks (seen on the H100: a recipe
    'better' because the reference stopped the evaluation after one check)."""
    from debugger.repair.nodes import _fewer_failing

    def report(status, failing, unrun=0, message="not run: the candidate crashed or lost its CUDA context 3 times"):
        checks = [{"passed": False, "status": "runtime_error"}] * failing
        return {"status": status, "checks": checks + [{"passed": False, "status": "skipped", "message": message}] * unrun}

    best = {"best_report": report("runtime_error", 11)}
    assert _fewer_failing(best, {"report": report("mismatch", 4)})
    assert not _fewer_failing(best, {"report": report("invalid_input", 0, 1, "reference failed: CUDA error")})
    assert not _fewer_failing(best, {"report": report("runtime_error", 3, 8)})
    assert _fewer_failing(best, {"report": report("runtime_error", 3, 8, "not applicable")})


def test_a_proposal_whose_reference_fails_on_a_gpu_is_evaluated_again(monkeypatch):
    """The reference ran these inputs in the loop's first evaluation: failing on a proposal's evaluation, on a
    GPU, is the device's doing (run24 on the H100: crowded out by the other jobs), so the evaluation runs once
    more before the proposal is judged; on the CPU the first answer stands."""
    from types import SimpleNamespace

    import debugger.repair.nodes as nodes

    answers = []

    def evaluation(case, device, **kw):
        answers.append(device)
        status = "invalid_input" if len(answers) == 1 else "mismatch"
        return SimpleNamespace(report=SimpleNamespace(status=status, message="reference fails on its own inputs"))

    monkeypatch.setattr(nodes, "run_evaluation", evaluation)
    monkeypatch.setattr(nodes.time, "sleep", lambda s: None)
    said = []
    gpu = SimpleNamespace(device="cuda", say=said.append)
    assert nodes._proposal_evaluation(gpu, None, checks=[]).report.status == "mismatch" and len(answers) == 2
    assert "evaluating again" in said[0]
    answers.clear()
    assert nodes._proposal_evaluation(SimpleNamespace(device="cpu", say=said.append), None).report.status == "invalid_input"
    assert len(answers) == 1
