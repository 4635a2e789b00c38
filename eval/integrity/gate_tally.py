"""The integrity gate on real honest answers, over every GPU run: one verdict per answer, and the share accepted.

Each run of `eval/integrity/gpu_real_dynamic.sh` leaves rows (`dynamic.jsonl`, one per answer: accept, reject,
incomplete, timeout, not_started). Answers were judged over many device commands, some again after a fix, so an
answer's last accept or reject (rows read in the order given) is its verdict; incomplete, timed-out or unstarted
rows never override one. Rejections are then split by the reading of each (READINGS, written by hand after reading
the answer, eval/integrity/REAL.md): `correct` (the answer is not an honest kernel answer on the task - its own
kernel never runs there, or a library does the operator - so the gate is right to reject it) or `kdebug` (kdebug's
fault). An unread rejection counts against the gate. The criterion (issue 16): at least 97% of the honest answers
judged on a GPU accepted, honest = accepted + rejections not read as correct.

    python eval/integrity/gate_tally.py [--readings eval/integrity/gpu_rejections_read.toml] [ROWS.jsonl ...]

Without ROWS: every committed GPU run of the gate, `eval/h*/run<N>_*gate*.jsonl`, in the order of N.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
JUDGED = ("accept", "reject")


def default_rows(eval_dir: Path = HERE.parent) -> list[Path]:
    """The gate rows of every committed GPU run (eval/h100_*, eval/h200_*), oldest run first."""
    runs = [(int(m.group(1)), p) for p in eval_dir.glob("h*_*/run*gate*.jsonl")
            if (m := re.match(r"run(\d+)", p.name))]
    return [p for _, p in sorted(runs)]


def final_rows(paths: list[Path], policy: str = "kernelbench") -> tuple[dict[str, dict], set[str]]:
    """Each answer's last judged row (under `policy`), and the answers with rows but no judged one."""
    judged: dict[str, dict] = {}
    seen: set[str] = set()
    for path in paths:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            name, result = row["name"], row.get(policy) or {}
            seen.add(name)
            if result.get("verdict") in JUDGED:
                judged[name] = dict(result, rows=str(path))
    return judged, seen - set(judged)


def tally(judged: dict[str, dict], readings: dict[str, dict]) -> dict:
    accepted = sorted(n for n, r in judged.items() if r["verdict"] == "accept")
    rejected = sorted(n for n, r in judged.items() if r["verdict"] == "reject")
    correct = [n for n in rejected if readings.get(n, {}).get("reading") == "correct"]
    against = [n for n in rejected if n not in correct]
    honest = len(accepted) + len(against)
    return {"judged": len(judged), "accepted": len(accepted), "rejected": len(rejected),
            "correct_rejections": correct, "rejections_against_the_gate": against,
            "honest": honest, "honest_accepted_share": round(len(accepted) / honest, 4) if honest else None}


def markdown(t: dict, judged: dict[str, dict], unjudged: set[str], readings: dict[str, dict]) -> str:
    share = t["honest_accepted_share"]
    lines = [f"{t['judged']} answers judged on a GPU: {t['accepted']} accepted, {t['rejected']} rejected "
             f"({len(t['correct_rejections'])} read as correct). **Honest answers accepted: {t['accepted']} of "
             f"{t['honest']} ({share:.1%})**." if share is not None else "nothing judged", "",
             "| rejected answer | rules | reading | rows |", "| --- | --- | --- | --- |"]
    for name in sorted(t["correct_rejections"] + t["rejections_against_the_gate"]):
        rules = ", ".join(sorted({r["rule"] for r in judged[name].get("rejections", [])}))
        reading = readings.get(name)
        said = f"{reading['reading']}: {reading['why']}" if reading else "not read"
        lines.append(f"| {name} | {rules} | {said} | {Path(judged[name]['rows']).name} |")
    if unjudged:
        lines += ["", f"With rows but never judged (incomplete, timed out, not started): {', '.join(sorted(unjudged))}"]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="*", type=Path, help="gate rows (dynamic.jsonl), oldest first (default: every GPU run's)")
    ap.add_argument("--readings", type=Path, default=HERE / "gpu_rejections_read.toml")
    ap.add_argument("--policy", default="kernelbench")
    ap.add_argument("--json", action="store_true")
    opts = ap.parse_args(argv)
    opts.rows = opts.rows or default_rows()
    for path in [*opts.rows, opts.readings]:
        if not path.is_file():
            print(f"gate_tally: no such file: {path}", file=sys.stderr)
            return 2
    readings = tomllib.loads(opts.readings.read_text())
    judged, unjudged = final_rows(opts.rows, opts.policy)
    t = tally(judged, readings)
    print(json.dumps(dict(t, never_judged=sorted(unjudged)), indent=1) if opts.json
          else markdown(t, judged, unjudged, readings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
