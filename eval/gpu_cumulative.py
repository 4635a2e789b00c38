"""One table from several GPU batches: `python eval/gpu_cumulative.py DIR > DIR/cumulative.md`.

DIR holds the batches' outputs as eval/gpu_parallel.sh writes them, renamed runN_repairs*.md (its
merged.md) and runN_timing.json (its fixed_vs_reference.json). For each case the latest batch that
ran it wins: its repair status on the GPU, and its repaired kernel's time against fixed.py and the
PyTorch reference (with the round-to-round spread where the batch timed in interleaved rounds).
Cases never run on the GPU are listed as such.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from debugger.bench.fixed_timing import timing_noise

REPO = Path(__file__).resolve().parents[1]


def _run_number(path: Path) -> int:
    return int(re.match(r"run(\d+)_", path.name).group(1))


def repair_rows(folder: Path) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    for md in sorted(folder.glob("run*_repairs*.md"), key=_run_number):
        for line in md.read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 5 or cells[0] in ("case", "---") or not (REPO / "eval/cases" / cells[0]).is_dir():
                continue
            rows[cells[0]] = {"status": cells[2], "iterations": cells[3], "seconds": cells[4], "run": md.name}
    return rows


def timing_rows(folder: Path) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    for js in sorted(folder.glob("run*_timing.json"), key=_run_number):
        for r in json.loads(js.read_text()).get("per_case", []):
            if r.get("repaired_ms") is not None or rows.get(r["name"], {}).get("repaired_ms") is None:
                rows[r["name"]] = dict(r, run=js.name)
    return rows


def _ms(v) -> str:
    return "-" if v is None else f"{v:.4f}"


def table(folder: Path) -> str:
    cases = sorted(p.name for p in (REPO / "eval/cases").iterdir() if (p / "case.toml").exists())
    reps, times = repair_rows(folder), timing_rows(folder)
    repaired = [c for c in cases if reps.get(c, {}).get("status") == "repaired"]
    timed = [c for c in cases if times.get(c, {}).get("repaired_ms") is not None]
    within = [c for c in timed if times[c]["fixed_ms"] / times[c]["repaired_ms"] >= 0.9]
    out = [f"# GPU batches, cumulative ({folder.name})", "",
           f"- cases: {len(cases)}; run on the GPU: {len(reps)}; repaired there (verified on fresh inputs, "
           f"integrity gate passed): {len(repaired)}",
           f"- repaired kernels timed: {len(timed)}; within 10% of fixed.py's speed (or faster): {len(within)}",
           "", "| case | GPU repair | iterations | seconds | repaired ms | fixed ms | reference ms | "
               "repaired vs fixed | spread | from |", "|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        r, t = reps.get(c), times.get(c, {})
        rel = (f"{t['fixed_ms'] / t['repaired_ms']:.2f}" if t.get("repaired_ms") else "-")
        noise = timing_noise(t)
        spread = "-" if noise is None else f"{noise:.0%}"
        src = ", ".join(x for x in ((r or {}).get("run"), t.get("run")) if x)
        out.append(f"| {c} | {r['status'] if r else 'not run'} | {r['iterations'] if r else '-'} | "
                   f"{r['seconds'] if r else '-'} | {_ms(t.get('repaired_ms'))} | {_ms(t.get('fixed_ms'))} | "
                   f"{_ms(t.get('reference_ms'))} | {rel} | {spread} | {src} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python eval/gpu_cumulative.py DIR  (a folder of runN_repairs*.md / runN_timing.json)")
    print(table(Path(sys.argv[1])), end="")
