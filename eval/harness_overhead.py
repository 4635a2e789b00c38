"""Harness overhead per evaluation beyond the kernel's own time (CPU interpreter, small elementwise case).

    python eval/harness_overhead.py [--runs 10] [--json]

Warm sandbox (as in a repair loop): the first evaluation starts the zygote and is not counted. For each
evaluation, overhead = wall time - time spent inside the candidate's forward calls (both runs of every
check, as measured in the worker). Reported for a one-check evaluation and for the full standard set.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from debugger.case import case_from_sources
from debugger.evaluate import run_evaluation, standard_checks

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "kernels"


def measure(case, checks, runs: int) -> dict:
    walls, kernels = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        ev = run_evaluation(case, "cpu", checks=checks)
        wall = time.perf_counter() - t0
        assert ev.report.passed, ev.report.message
        # forward time of both candidate runs per check (the worker times the first; the second is alike)
        kernel = sum(2 * (obs.get("seconds") or 0.0) for obs in ev.observations.values())
        walls.append(wall)
        kernels.append(kernel)
    over = [w - k for w, k in zip(walls, kernels)]
    return {"checks": len(checks), "runs": runs, "median_wall_s": statistics.median(walls),
            "median_kernel_s": statistics.median(kernels), "median_overhead_s": statistics.median(over),
            "median_overhead_per_check_s": statistics.median(over) / len(checks)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    case = case_from_sources((DATA / "add_reference.py").read_text(), (DATA / "add_kernel.py").read_text())
    run_evaluation(case, "cpu", checks=standard_checks()[:1])  # start the warm zygote
    result = {"one_check": measure(case, standard_checks()[:1], args.runs),
              "standard_set": measure(case, standard_checks(), max(3, args.runs // 3))}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for name, r in result.items():
            print(f"{name:<13} checks={r['checks']:<3} wall {r['median_wall_s']:.3f}s  kernel {r['median_kernel_s']:.3f}s  "
                  f"overhead {r['median_overhead_s']:.3f}s ({r['median_overhead_per_check_s']:.3f}s per check)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
