"""eval/integrity/gate_tally.py: an answer's verdict over several GPU runs of the gate is its last accept or reject;
rejections read as correct leave the honest denominator, unread ones count against the gate."""
from __future__ import annotations

import json

from tests.test_integrity_calibration import _load

gate_tally = _load("gate_tally")


def _rows(path, *rows):
    path.write_text("".join(json.dumps({"name": n, "kernelbench": {"verdict": v, "rejections": [{"rule": r}] if r else []}})
                            + "\n" for n, v, r in rows))
    return path


def test_the_last_judged_row_of_an_answer_counts_and_an_incomplete_one_never_overrides(tmp_path):
    first = _rows(tmp_path / "a.jsonl", ("x", "reject", "fails_evaluation"), ("y", "accept", None),
                  ("z", "timeout", "timeout"), ("w", "reject", "training_fallback"))
    later = _rows(tmp_path / "b.jsonl", ("x", "accept", None), ("y", "incomplete", None), ("v", "reject", "torch_compute"))
    judged, unjudged = gate_tally.final_rows([first, later])
    assert {n: r["verdict"] for n, r in judged.items()} == {"x": "accept", "y": "accept", "w": "reject", "v": "reject"}
    assert unjudged == {"z"}
    t = gate_tally.tally(judged, {"w": {"reading": "correct", "why": "train-mode fallback"}})
    assert t["correct_rejections"] == ["w"] and t["rejections_against_the_gate"] == ["v"]  # unread: against
    assert (t["accepted"], t["honest"], t["honest_accepted_share"]) == (2, 3, round(2 / 3, 4))
    text = gate_tally.markdown(t, judged, unjudged, {"w": {"reading": "correct", "why": "train-mode fallback"}})
    assert "| v | torch_compute | not read | b.jsonl |" in text and "never judged" in text


def test_a_missing_rows_file_is_one_line_and_changes_nothing(tmp_path, capsys):
    assert gate_tally.main([str(tmp_path / "none.jsonl")]) == 2
    assert capsys.readouterr().err.strip() == f"gate_tally: no such file: {tmp_path / 'none.jsonl'}"


def test_by_default_every_gpu_run_of_the_gate_is_read_oldest_run_first(tmp_path):
    for rel in ["h200_2026-12-05/run12_gate_rows.jsonl", "h200_2026-12-04/run5_gate_rows.jsonl",
                "h100_2026-12-07/run47_gate_g5_x.jsonl", "h100_2026-12-07/run47_agree_rows_x.jsonl",
                "cpu_2026-12-07/gate_shard6of6_x.jsonl"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert [p.name for p in gate_tally.default_rows(tmp_path)] == [
        "run5_gate_rows.jsonl", "run12_gate_rows.jsonl", "run47_gate_g5_x.jsonl"]  # GPU gate runs only
