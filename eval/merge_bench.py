"""Merge the JSON outputs of several `kdebug bench --json` runs (e.g. eval/gpu_parallel.sh) into one table.

    python eval/merge_bench.py OUT/g*.json > merged.md
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main(paths: list[str]) -> int:
    per_case, missing = [], []
    for p in paths:
        try:
            data = json.loads(Path(p).read_text())
        except (OSError, json.JSONDecodeError):
            missing.append(Path(p).name)
            continue
        per_case.extend(data.get("per_case", []))
    n = len(per_case)
    ok = [c for c in per_case if c.get("status") == "repaired"]
    secs = sorted(c.get("seconds") or 0 for c in per_case)
    print(f"cases: {n}, repaired (verified): {len(ok)}, pass@1: {len(ok) / max(1, n):.3f}")
    if secs:
        print(f"median seconds: {statistics.median(secs):.1f}, p90: {secs[int(0.9 * (len(secs) - 1))]:.1f}")
    if missing:
        print(f"groups without a result (timed out or failed): {', '.join(missing)}")
    print()
    print("| case | class | status | iterations | seconds | repaired ms | fixed ms | reference ms |")
    print("|---|---|---|---|---|---|---|---|")
    for c in sorted(per_case, key=lambda c: c.get("name", "")):
        t = c.get("timing") or {}

        def ms(key):
            v = (t.get(key) or {}).get("ms") if isinstance(t.get(key), dict) else t.get(f"{key}_ms")
            return f"{v:.3f}" if isinstance(v, (int, float)) else "-"

        print(f"| {c.get('name')} | {c.get('true_class') or c.get('bug_class')} | {c.get('status')} | "
              f"{c.get('iterations')} | {c.get('seconds') or 0:.1f} | {ms('repaired')} | {ms('fixed')} | {ms('reference')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
