"""The pieces of the dynamic calibration on real answers that run without a GPU: which answers a run
takes (shards, an even sample), what a row says when `kdebug check` gave no verdict, and hidden shapes
around the reduced sizes of a --sizes small run."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from debugger.integrity.dynamic import shape_variants
from tests.test_integrity_real_forms import ref

EVAL = Path(__file__).resolve().parents[1] / "eval" / "integrity"


def _load(name: str):
    sys.path.insert(0, str(EVAL))
    spec = importlib.util.spec_from_file_location(name, EVAL / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shards_interleave_and_a_sample_spreads_over_the_selection():
    real_static = _load("real_static")
    answers = [{"name": f"run{i // 10}/L1P{i}"} for i in range(40)]
    shards = [real_static.select(answers, shard=f"{k}/4") for k in range(1, 5)]
    assert sorted(a["name"] for s in shards for a in s) == sorted(a["name"] for a in answers)
    assert [a["name"] for a in shards[0][:3]] == ["run0/L1P0", "run0/L1P4", "run0/L1P8"]
    sample = real_static.select(answers, sample=8)
    assert len(sample) == 8 and {a["name"].split("/")[0] for a in sample} == {"run0", "run1", "run2", "run3"}
    assert real_static.select(answers, match="run2/*", sample=100) == answers[20:30]
    assert real_static.select(answers, match="run1/L1P12, run3/*") == [answers[12], *answers[30:]]  # re-judging a few


def test_answers_an_earlier_run_judged_are_left_out(tmp_path):
    real_static = _load("real_static")
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"name": "a", "kernelbench": {"verdict": "reject"}}\n'
                    '{"name": "b", "kernelbench": {"verdict": "timeout"}}\n')
    assert real_static.judged_names([rows]) == {"a"}
    assert real_static.judged_names([rows], timed_out=True) == {"a", "b"}  # the CPU would run out of time again
    answers = [{"name": n} for n in "abc"]
    assert [a["name"] for a in real_static.select(answers, skip={"a"})] == ["b", "c"]


def test_a_check_that_gave_no_verdict_is_not_judged_and_says_why():
    real_dynamic = _load("real_dynamic")
    timed_out = real_dynamic.verdict_of({"json": None, "timed_out": True, "seconds": 300, "stderr_tail": "nvcc"})
    assert timed_out["verdict"] == "timeout" and timed_out["rejections"][0]["rule"] == "timeout"
    judged = real_dynamic.verdict_of({"json": {"verdict": "reject", "findings": [
        {"rule": "torch_does_every_op", "severity": "reject", "message": "m", "line": None},
        {"rule": "robustness", "severity": "warn", "message": "n", "line": None}],
        "torch_work": {"share": 1.0, "ops": [{"op": "mm.default", "weight": "heavy"}]}}, "seconds": 9})
    assert judged["verdict"] == "reject" and judged["warnings"] == ["robustness"]
    assert judged["torch_work"]["ops"][0]["op"] == "mm.default"
    real_static = _load("real_static")
    rows = [{"name": "a", "source": "kernelbench-fork", "kernelbench": judged},
            {"name": "b", "source": "kernelbench-fork", "kernelbench": timed_out}]
    summary = real_static.summarise(rows, ("kernelbench",))["kernelbench"]
    assert summary["answers"] == 1 and summary["not_judged"] == {"timeout": 1}


def test_both_policies_come_from_one_check_and_split_into_the_row():
    """real_dynamic runs `kdebug check --policy both` once per answer for both policies (one sandboxed run)."""
    real_dynamic = _load("real_dynamic")
    both = {"kernelbench": {"verdict": "accept", "findings": []},
            "strict": {"verdict": "reject", "findings": [{"rule": "fails_evaluation", "severity": "reject",
                                                          "message": "transposed", "line": None}]}}
    rows = real_dynamic.verdicts_of({"json": both, "seconds": 9}, ("kernelbench", "strict"))
    assert rows["kernelbench"]["verdict"] == "accept" and rows["strict"]["verdict"] == "reject"
    assert rows["strict"]["rejections"][0]["rule"] == "fails_evaluation" and rows["strict"]["seconds"] == 9
    lost = real_dynamic.verdicts_of({"json": None, "timed_out": True, "seconds": 300}, ("kernelbench", "strict"))
    assert {r["verdict"] for r in lost.values()} == {"timeout"}


def test_an_answer_out_of_gpu_memory_beside_others_is_judged_again_alone(monkeypatch):
    """On the H100, ten gates side by side: four honest answers were rejected for CUDA's out-of-memory error and
    accepted when run alone (2026-12-07, runs 43-45). A verdict memory decided is judged again with no other
    answer running; an accept whose checks were crowded out is incomplete, never an accept."""
    import threading
    import time

    real_dynamic = _load("real_dynamic")
    real_pool = real_dynamic._real_pool()
    running, seen, lock = [0], [], threading.Lock()
    oom = {"verdict": "reject", "findings": [{"rule": "fails_evaluation", "severity": "reject", "line": None,
                                               "message": "runtime_error on 3/17 checks (first: seed0: candidate "
                                                          "raised AcceleratorError: CUDA error: out of memory)"}]}

    class Runner:
        calls: dict = {}

        def __init__(self, data_dir):
            pass

        def run(self, args, timeout, cwd):
            name = Path(args[1]).name
            with lock:
                running[0] += 1
                seen.append((name, running[0]))
                n = Runner.calls[name] = Runner.calls.get(name, 0) + 1
            time.sleep(0.2)
            with lock:
                running[0] -= 1
            if name == "a" and n == 1:
                return {"json": oom, "seconds": 1}
            if name == "c":
                return {"json": {"verdict": "accept", "findings": [],
                                 "dynamic_not_run": "1 of 17 dynamic checks could not run for GPU memory (first: "
                                                    "seed0: candidate: out of GPU memory while other processes "
                                                    "held 50.2 of 79.2 GiB)"}, "seconds": 1}
            return {"json": {"verdict": "accept", "findings": []}, "seconds": 1}

    monkeypatch.setattr(real_dynamic, "_real_pool", lambda: type("M", (), {
        "Kdebug": Runner, "DeviceMemory": real_pool.DeviceMemory, "GATE": real_pool.GATE, "ALONE": real_pool.ALONE,
        "out_of_memory": staticmethod(real_pool.out_of_memory)}))
    answers = [{"name": n, "source": "kernelbench-fork", "candidate": n, "reference": "ref"} for n in "abcd"]
    rows = {r["name"]: r["kernelbench"] for r in real_dynamic.judge_all(
        answers, ("kernelbench",), device="cuda", timeout=60, sizes="small", jobs=4, deadline=None, min_left=0)}
    assert Runner.calls["a"] == 2 and rows["a"]["verdict"] == "accept"
    assert rows["a"]["alone_after"] == {"verdict": "reject", "rules": ["fails_evaluation"]}
    assert [depth for name, depth in seen if name == "a"][1] == 1  # the second run had the GPU to itself
    # an accept with checks crowded out is incomplete (and judged again alone, here incomplete again)
    assert rows["c"]["verdict"] == "incomplete" and Runner.calls["c"] == 2
    assert Runner.calls["b"] == Runner.calls["d"] == 1 and rows["b"]["verdict"] == "accept"


def test_hidden_shapes_grow_and_shrink_around_the_reduced_sizes():
    reference = ref("x * 2", inputs="torch.randn(batch, dim)").replace("def get_inputs", "batch = 4096\ndim = 64\n\n\n"
                                                                                         "def get_inputs")
    published = shape_variants(reference)
    assert published[0]["batch"] > 4096 > published[1]["batch"]
    reduced = shape_variants(reference, {"batch": 256})
    assert reduced[0]["batch"] > 256 > reduced[1]["batch"] and reduced[0]["dim"] == published[0]["dim"]
