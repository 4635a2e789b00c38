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


def test_hidden_shapes_grow_and_shrink_around_the_reduced_sizes():
    reference = ref("x * 2", inputs="torch.randn(batch, dim)").replace("def get_inputs", "batch = 4096\ndim = 64\n\n\n"
                                                                                         "def get_inputs")
    published = shape_variants(reference)
    assert published[0]["batch"] > 4096 > published[1]["batch"]
    reduced = shape_variants(reference, {"batch": 256})
    assert reduced[0]["batch"] > 256 > reduced[1]["batch"] and reduced[0]["dim"] == published[0]["dim"]
