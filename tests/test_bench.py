"""kdebug bench: scoring, the --scale rewrite, the kb run end to end, and the regenerate baseline."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from debugger.bench.cases import discover, scale_reference
from debugger.bench.regenerate import extract_code
from debugger.bench.scores import pass_at_k, percentile, summarize
from debugger.errors import InvalidInput
from tests.replay_server import ReplayServer

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "eval" / "cases"
KB_CASES = ["grid_undercount__vector_mul"]  # one case: each costs about 25 s of the suite's 15 minutes
REGEN_CASE = "grid_undercount__vector_mul"

REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


M = 100  # rows
K: int = 72
N = 90
BLOCK = (M, N)
scale = 2.5


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
'''


def bench(args: list[str], env: dict | None = None, timeout: int = 3000) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "debugger.cli", "bench", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=timeout, env={**os.environ, **(env or {})})


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()
            and "__pycache__" not in p.parts}


# -- unit: the --scale gpu text rewrite, the estimators, code extraction -------------------------

def test_scale_rewrites_only_the_named_top_level_int_constants():
    out = scale_reference(REFERENCE, {"M": 4099, "K": 4095})
    assert "M = 4099  # rows\n" in out and "K: int = 4095\n" in out and "N = 90\n" in out
    assert "BLOCK = (M, N)" in out and "scale = 2.5" in out and "torch.randn(M, K)" in out
    assert out.count("\n") == REFERENCE.count("\n")
    assert scale_reference(REFERENCE, {}) == REFERENCE


def test_scale_refuses_names_that_are_not_int_constants():
    for bad in ({"scale": 3}, {"BLOCK": 3}, {"missing": 3}):
        with pytest.raises(InvalidInput):
            scale_reference(REFERENCE, bad)
    with pytest.raises(InvalidInput):
        scale_reference(REFERENCE, {"M": 2.5})


def test_every_case_gpu_table_names_reference_constants():
    import tomllib

    for folder in discover(CASES):
        gpu = tomllib.loads((folder / "case.toml").read_text()).get("gpu") if (folder / "case.toml").exists() else None
        if gpu:
            scale_reference((folder / "reference.py").read_text(), gpu)  # raises on a bad [gpu] table


def test_pass_at_k_is_the_unbiased_estimator():
    assert pass_at_k(2, 1, 1) == 0.5 and pass_at_k(2, 1, 2) == 1.0
    assert pass_at_k(10, 0, 5) == 0.0 and pass_at_k(5, 5, 1) == 1.0
    assert abs(pass_at_k(10, 3, 2) - (1 - 21 / 45)) < 1e-12
    assert percentile([1, 2, 3, 4], 0.5) == 2.5 and percentile([], 0.9) is None


def test_summary_counts_rejections_and_diagnosis_per_class():
    recs = [{"name": "a", "status": "repaired", "true_class": "x", "diagnosed_class": "x", "tokens": 10, "seconds": 1.0,
             "axes": {"compiles": True, "correct": True}},
            {"name": "b", "status": "rejected", "true_class": "x", "diagnosed_class": "y", "tokens": 30, "seconds": 3.0,
             "integrity_rejections": 1, "axes": {"compiles": True, "correct": False}},
            {"name": "c", "status": "unrepaired", "true_class": "z", "diagnosed_class": None, "tokens": 0,
             "seconds": 2.0}]
    s = summarize(recs)
    assert (s["cases"], s["repaired"], s["integrity_rejections"]) == (3, 1, 1)
    assert abs(s["pass_at_1"] - 1 / 3) < 1e-3 and s["tokens_per_success"] == 40.0 and s["median_seconds"] == 2.0
    assert abs(s["diagnosis_accuracy"] - 1 / 3) < 1e-3
    assert s["per_class"]["x"]["pass_at_1"] == 0.5 and s["per_class"]["z"]["tokens_per_success"] is None


def test_workspace_isolates_the_data_dir_and_forgets_learned_patterns_between_cases():
    from debugger import settings
    from debugger.bench.workspace import Workspace

    outer, kb_env = os.environ.get("KDEBUG_DATA_DIR"), os.environ.get("KDEBUG_KB_DIR")
    with Workspace() as ws:
        assert settings.data_dir() == ws.data_dir and settings.user_kb_dir() == ws.learned_dir
        assert os.environ.get("KDEBUG_KB_DIR") == kb_env  # the curated kb is only read: no copy
        assert not ws.reset_knowledge()
        learned = ws.learned_dir / "patterns" / "learned" / "learned-x.md"  # where the write-back puts one
        learned.parent.mkdir(parents=True)
        learned.write_text("---\nid: learned-x\n---\n")
        assert ws.learned_patterns() == [learned]
        assert ws.reset_knowledge() and ws.learned_patterns() == [] and not learned.exists()
        root = ws.root
    assert os.environ.get("KDEBUG_DATA_DIR") == outer and not root.exists()
    with Workspace(across_run=True) as ws:
        learned = ws.learned_dir / "patterns" / "learned" / "learned-x.md"
        learned.parent.mkdir(parents=True)
        learned.write_text("---\nid: learned-x\n---\n")
        assert not ws.reset_knowledge() and ws.learned_patterns() == [learned]


def test_extract_code_takes_the_block_defining_model_new():
    text = "Here:\n```python\nimport torch\n```\nand\n```python\nclass ModelNew:\n    pass\n```\n"
    assert extract_code(text) == "class ModelNew:\n    pass\n"
    assert extract_code("no code at all") is None


def test_loop_accepted_repairs_that_fail_verification_count_as_integrity_rejections(tmp_path, monkeypatch):
    """The glue only: repair and verification are stubbed, so this runs in a second."""
    import debugger.bench.runner as runner
    import debugger.repair as repair_pkg
    from debugger.bench import BenchOptions, run_bench
    from debugger.bench.verify import Verification
    from debugger.repair.run import RepairResult

    outcomes = {"grid_undercount__vector_mul": ("repaired", True), "activation_formula__gelu_tanh": ("repaired", False),
                "mask_missing__sum_rows": ("rejected", None)}

    def fake_repair(case, **kw):
        assert kw["write_files"] is False
        status, _ = outcomes[case.name]
        return RepairResult(status=status, output=None, iterations=2, tokens={"prompt": 7, "completion": 3},
                            bug_class=case.bug_class, history=[{"origin": "recipe", "recipe": "r", "outcome": "fixed"}],
                            diff="--- a\n+++ b\n-x\n+y\n", seconds=1.5,
                            repaired_src="fixed" if status == "repaired" else None)

    def fake_verify(case, src, device, **kw):
        ok = outcomes[case.name][1]
        return Verification(compiles=True, correct=bool(ok) if src == "fixed" else False, eval_status="pass",
                            gate="accept" if ok else ("reject" if src == "fixed" else None),
                            gate_reasons=[] if ok else ["rule: cheat"])

    monkeypatch.setattr(repair_pkg, "repair", fake_repair)
    monkeypatch.setattr(runner, "verify_source", fake_verify)
    s = run_bench(BenchOptions(cases_dir=CASES, backend="kb", device="cpu", names=sorted(outcomes), out=tmp_path,
                               progress=None, retrieval=False, write_back=False))
    status = {r["name"]: r["status"] for r in s["per_case"]}
    assert status == {"grid_undercount__vector_mul": "repaired", "activation_formula__gelu_tanh": "rejected",
                      "mask_missing__sum_rows": "rejected"}
    assert s["integrity_rejections"] == 2 and s["repaired"] == 1 and s["tokens_per_success"] == 30.0
    assert s["diagnosis_accuracy"] == 1.0 and all(r["diff_lines"] == 2 for r in s["per_case"])
    assert (tmp_path / "bench.png").exists() and "**overall**" in (tmp_path / "bench.md").read_text()


# -- command line --------------------------------------------------------------------------------

def test_unusable_cases_folder_is_one_line(tmp_path):
    proc = bench([str(tmp_path / "nope"), "--json", "--out", str(tmp_path / "out")])
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["status"] == "invalid_input"
    assert proc.stderr.strip().count("\n") == 0 and "not found" in proc.stderr


def test_timing_runner_prints_one_json_line_even_when_it_fails():
    proc = subprocess.run([sys.executable, "-m", "debugger.bench.timing", '{"op": "time", "reference_src": "x = ("}'],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert proc.returncode == 1 and len(lines) == 1 and json.loads(lines[0])["ok"] is False


def test_kb_bench_end_to_end(tmp_path):
    kb_before, cases_before = snapshot(REPO / "kb"), {c: snapshot(CASES / c) for c in KB_CASES}
    out = tmp_path / "out"
    proc = bench([str(CASES), "--backend", "kb", "--device", "cpu", "--cases", *KB_CASES, "--json", "--out", str(out)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    s = json.loads(proc.stdout)
    for key in ("cases", "repaired", "pass_at_1", "tokens_per_success", "integrity_rejections", "median_seconds",
                "p90_seconds", "per_case", "per_class", "diagnosis_accuracy"):
        assert key in s, key
    assert s["cases"] == 1 and [r["name"] for r in s["per_case"]] == sorted(KB_CASES)
    for r in s["per_case"]:
        assert r["status"] in ("repaired", "unrepaired", "rejected"), r
        for key in ("bug_class", "true_class", "iterations", "tokens", "seconds", "diagnosed_class", "diff_lines"):
            assert key in r, key
        assert r["true_class"] == r["name"].split("__")[0]
        assert r["tokens"] == 0  # the kb backend spends no tokens
    vector = next(r for r in s["per_case"] if r["name"] == "grid_undercount__vector_mul")
    assert vector["status"] == "repaired" and vector["verification"]["verified"] and vector["diff_lines"] > 0
    assert s["pass_at_1"] == s["repaired"] / s["cases"]
    md = (out / "bench.md").read_text()
    assert "| class |" in md and "**overall**" in md and "grid_undercount__vector_mul" in md
    assert (out / "bench.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((out / "bench.json").read_text())["cases"] == 1
    assert (out / "repairs" / "grid_undercount__vector_mul.py").exists()
    # Neither the repository's knowledge base nor the case folders were written.
    assert snapshot(REPO / "kb") == kb_before
    assert {c: snapshot(CASES / c) for c in KB_CASES} == cases_before


def test_regenerate_baseline_through_the_replay_server(tmp_path):
    folder = CASES / REGEN_CASE
    good = "Here is the kernel.\n```python\n" + (folder / "fixed.py").read_text() + "```\n"
    wrong = "```python\n" + (folder / "candidate.py").read_text() + "```\n"
    replies = [{"content": good, "prompt_tokens": 1000, "completion_tokens": 300},
               {"content": wrong, "prompt_tokens": 1000, "completion_tokens": 280}]
    with ReplayServer(replies, repeat_last=False) as server:
        proc = bench([str(CASES), "--mode", "regenerate", "--samples", "2", "--cases", REGEN_CASE, "--model", "m",
                      "--device", "cpu", "--json", "--out", str(tmp_path / "out")],
                     env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k"})
        prompts = [r["body"]["messages"][1]["content"] for r in server.requests]
    assert proc.returncode == 0, proc.stderr[-3000:]
    s = json.loads(proc.stdout)
    assert s["mode"] == "regenerate" and s["cases"] == 1 and s["samples"] == 2
    assert s["pass_at_1"] == 0.5 and s["pass_at_2"] == 1.0 and s["repaired"] == 1
    assert s["tokens_per_success"] == 2580.0 and s["integrity_rejections"] == 0
    case = s["per_case"][0]
    assert [x["status"] for x in case["sample_results"]] == ["verified", "mismatch"]
    assert len(prompts) == 2 and "class Model" in prompts[0] and "mul_kernel" not in prompts[0]  # reference only


def test_ptx_diff_tells_the_hand_fixs_code_from_a_longer_equivalent(tmp_path):
    # No GPU needed: both versions compile to sm_90 PTX. The embedding bag's fix against the same kernel
    # with the mask written `start + offs_j < end` (equivalent values, more 64-bit arithmetic).
    fixed = REPO / "eval/cases/mask_missing__embedding_bag_sum__c/fixed.py"
    longer = tmp_path / "longer.py"
    longer.write_text(fixed.read_text().replace("j_mask = offs_j < end - start", "j_mask = start + offs_j < end"))
    assert longer.read_text() != fixed.read_text()
    args = ["--kernel", "embedding_bag_sum_kernel", "--types", "idx_ptr=*i64,bounds_ptr=*i64",
            "--const", "BLOCK_BAG=64", "--const", "BLOCK_D=64"]

    def run(b):
        out = subprocess.run([sys.executable, "eval/ptx_diff.py", str(fixed), str(b), *args], cwd=REPO,
                             capture_output=True, text=True, timeout=300,
                             env={**os.environ, "TRITON_DEFAULT_FP_FUSION": "1"})
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout

    assert run(fixed).strip().endswith("lines that differ: 0")
    lines = run(longer).splitlines()
    differ = int(lines[-1].rsplit(" ", 1)[1])
    counts = [int(l.split(": ")[1].split()[0]) for l in lines[:2]]
    assert differ > 100 and counts[1] > counts[0]


def test_timing_rounds_interleave_in_rotating_order_and_report_their_spread(monkeypatch):
    from debugger.bench import fixed_timing, timing

    order = []
    fake_ms = {"reference": [2.0, 2.0, 2.0], "fixed": [1.0, 1.2, 1.0], "repaired": [1.0, 1.0, 1.5]}

    def bench(fn, warmup_ms, rep_ms):
        name = fn()
        order.append(name)
        return fake_ms[name][sum(1 for n in order if n == name) - 1]

    monkeypatch.setattr(timing, "_bench_ms", bench)
    calls = {n: (lambda n=n: n) for n in fake_ms}
    times, errors = timing._time_rounds(calls, 3, 1, 1)
    assert not errors
    assert order == ["reference", "fixed", "repaired", "fixed", "repaired", "reference", "repaired", "reference", "fixed"]
    entry = {}
    timing._summarise(entry, times["repaired"])
    assert entry["ms"] == 1.0 and entry["ms_rounds"] == [1.0, 1.0, 1.5] and entry["spread"] == pytest.approx(0.5)

    def crash():
        raise RuntimeError("illegal memory access")
    monkeypatch.setattr(timing, "_bench_ms", lambda fn, warmup_ms, rep_ms: (fn(), 1.0)[1])
    times, errors = timing._time_rounds({"fixed": lambda: "fixed", "repaired": crash}, 3, 1, 1)
    assert list(times) == ["fixed"] and "illegal memory access" in errors["repaired"]

    # 0.84x with 20% round-to-round spread is noise; 0.84x with 5% is a slower kernel.
    noisy = {"name": "a", "speedup_vs_fixed": 0.84, "spread": {"fixed": 0.2, "repaired": 0.03}}
    steady = {"name": "b", "speedup_vs_fixed": 0.84, "spread": {"fixed": 0.05, "repaired": 0.03}}
    assert not fixed_timing._slower_beyond_noise(noisy)
    assert fixed_timing._slower_beyond_noise(steady)
    result = fixed_timing._result({}, "gpu", [{**noisy, "repaired_ms": 1.0}, {**steady, "repaired_ms": 1.0}])
    assert result["repaired_slower_beyond_noise"] == ["b"]
    assert "| 20% |" in fixed_timing.markdown(result)
