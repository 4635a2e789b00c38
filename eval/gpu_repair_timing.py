"""One case on a GPU: repair at the case.toml [gpu] sizes (kb backend), then time repaired vs fixed.py vs
the PyTorch reference. Prints one JSON line. Used by eval/gpu_parallel_repair.sh, one process per case.

    python eval/gpu_repair_timing.py eval/cases/NAME [--device cuda] [--max-iters 6]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from debugger.bench.cases import load_bench_case
from debugger.repair import repair
from debugger.settings import resolve


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", type=Path)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--max-iters", type=int, default=6)
    args = ap.parse_args(argv)
    case, scaled = load_bench_case(args.case, "gpu" if args.device == "cuda" else None)
    t0 = time.time()
    result = repair(case, settings=resolve(device=args.device, backend="kb", max_iters=args.max_iters),
                    write_files=False, retrieval=False, write_back=False)
    row = {"case": args.case.name, "scaled": scaled, "status": result.status, "iterations": result.iterations,
           "guard": result.guard, "seconds": round(time.time() - t0, 1), "bug_class": result.bug_class,
           "diff_lines": sum(1 for l in result.diff.splitlines() if l[:1] in "+-" and l[:3] not in ("+++", "---"))}
    if args.device == "cuda" and result.repaired_src:
        from debugger.bench.perf import case_timing

        fixed = (args.case / "fixed.py").read_text()
        t = case_timing(case.reference_src, {"fixed": fixed, "repaired": result.repaired_src}, {})
        row.update({k: t.get(k) for k in ("reference_ms", "fixed_ms", "repaired_ms", "speedup_vs_fixed",
                                          "speedup_vs_reference")})
        row["timing_errors"] = t.get("errors") or t.get("error")
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
