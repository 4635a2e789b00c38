"""Did what each evaluation held on the GPU fit what it is admitted by now?

For rows of an agreement run (`eval/real_pool.py ... --checks kernelbench`, whose `eval.peak_bytes` holds both
workers' peaks): each row's summed peak against `DeviceMemory.need(reference, trials_only=True)` at the current
factors (debugger/sizes.py, eval/real_pool.py), the reference read from the pool the rows came from. Rows whose
task cannot be sized on the meta device (admitted by the whole budget) are counted apart.

    python eval/memory_fit.py POOL ROWS.jsonl [ROWS.jsonl ...] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "eval"))

import real_pool  # noqa: E402

GIB = 1 << 30


def reference_of(row: dict, pool: Path) -> Path:
    """The task's reference in a KernelBench pool: `problem` is "level2/15 15_ConvTranspose3d_..."."""
    level, name = row["problem"].split(" ", 1)
    return pool / "KernelBench" / level.split("/")[0] / f"{name}.py"


def fit(rows: list[dict], pool: Path) -> dict:
    """{"rows": per row (id, peak, need, recorded estimate), "short": those that held more than their need,
    "over_recorded": those that held more than the estimate they ran under, "unsized": ids of rows whose task could
    not be sized}."""
    memory = real_pool.DeviceMemory(budget=1 << 62)  # never the cap: the need itself
    out, unsized = [], []
    for row in rows:
        peaks = (row.get("eval") or {}).get("peak_bytes") or {}
        peak = sum(v for v in peaks.values() if isinstance(v, (int, float)))
        if not peak:
            continue
        reference = reference_of(row, pool)
        if real_pool.task_bytes(reference) is None:
            unsized.append(row["id"])
            continue
        out.append({"id": row["id"], "peak": peak, "need": memory.need(reference, trials_only=True),
                    "recorded": row.get("memory_estimate_bytes")})
    return {"rows": out, "short": [r for r in out if r["peak"] > r["need"]],
            "over_recorded": [r for r in out if r["recorded"] and r["peak"] > r["recorded"]], "unsized": unsized}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pool", type=Path, help="the KernelBench pool the rows were run on (holds KernelBench/)")
    ap.add_argument("rows", type=Path, nargs="+", help="agreement rows (.jsonl)")
    ap.add_argument("--json", action="store_true")
    opts = ap.parse_args(argv)
    if not (opts.pool / "KernelBench").is_dir():
        print(f"memory_fit: no KernelBench/ in {opts.pool}", file=sys.stderr)
        return 2
    missing = [p for p in opts.rows if not p.is_file()]
    if missing:
        print(f"memory_fit: no such rows file: {missing[0]}", file=sys.stderr)
        return 2
    rows = [json.loads(line) for p in opts.rows for line in p.read_text().splitlines() if line.strip()]
    result = fit(rows, opts.pool)
    if opts.json:
        print(json.dumps(result, indent=1))
        return 0
    sized = result["rows"]
    print(f"{len(sized)} sized rows with peaks ({len(result['unsized'])} unsized); {len(result['short'])} held more than "
          f"they are admitted by now; needs {sum(r['need'] for r in sized) / GIB:.0f} GiB in all, the recorded "
          f"estimates {sum(r['recorded'] or 0 for r in sized) / GIB:.0f} GiB, which {len(result['over_recorded'])} rows "
          f"held more than")
    for r in result["short"]:
        print(f"  {r['id']}: held {r['peak'] / GIB:.2f} GiB, admitted by {r['need'] / GIB:.2f} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
