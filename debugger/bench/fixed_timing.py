"""fixed.py (and, with --repairs, the repaired kernels) against the PyTorch reference on the GPU.

    python -m debugger.bench.fixed_timing eval/cases [--scale gpu] [--out DIR] [--cases NAME...]
        [--repairs BENCH_OUT/repairs] [--warm-jobs N]

Writes DIR/fixed_vs_reference.json and .md and prints one JSON object. Needs only torch and triton
(each case is timed by `python -m debugger.bench.timing` in its own process, one case at a time, so
no two measurements share the GPU). --repairs adds each case's repaired source (NAME.py, as `kdebug
bench --no-timing` saves them) to its timing. --warm-jobs first runs every case's timing once in N
parallel processes, results discarded, so that Triton's compile cache is filled before the
one-at-a-time measurement.
"""
from __future__ import annotations

import argparse
import json
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from debugger.bench.cases import discover, scale_reference
from debugger.bench.perf import case_timing, measure_ceilings, run_timing
from debugger.bench.scores import geomean
from debugger.errors import InvalidInput


def _specs(cases_dir: str, scale: str | None, names: list[str] | None, repairs: str | None) -> list[tuple]:
    specs = []
    for folder in discover(cases_dir, names):
        if not (folder / "fixed.py").exists():
            continue
        meta = tomllib.loads((folder / "case.toml").read_text()) if (folder / "case.toml").exists() else {}
        ref = (folder / "reference.py").read_text()
        if scale and isinstance(meta.get(scale), dict):
            ref = scale_reference(ref, meta[scale])
        impls = {"fixed": (folder / "fixed.py").read_text()}
        repaired = Path(repairs) / f"{folder.name}.py" if repairs else None
        if repaired is not None and repaired.is_file():
            impls["repaired"] = repaired.read_text()
        specs.append((folder, meta, ref, impls))
    return specs


def _warm(specs: list[tuple], jobs: int) -> None:
    """Compile every implementation once, in parallel, so the measured pass finds Triton's cache full."""
    def one(spec):
        run_timing({"op": "time", "reference_src": spec[2], "implementations": spec[3],
                    "warmup_ms": 1, "rep_ms": 1})
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, specs))


def time_fixed(cases_dir: str, scale: str | None, names: list[str] | None = None, repairs: str | None = None,
               warm_jobs: int = 0, on_progress=None) -> dict:
    """Time every case; `on_progress(result_so_far)` after each one (so a cut-off run keeps its rows)."""
    specs = _specs(cases_dir, scale, names, repairs)
    if warm_jobs > 1:
        print(f"warming Triton's cache: {len(specs)} cases in {warm_jobs} processes", file=sys.stderr)
        _warm(specs, warm_jobs)
    ceilings = measure_ceilings()
    rows = []
    result = _result(ceilings, scale, rows)
    for folder, meta, ref, impls in specs:
        t = case_timing(ref, impls, ceilings)
        rows.append({"name": folder.name, "bug_class": meta.get("bug_class"), "operator": meta.get("operator"), **t})
        print(f"{folder.name}: fixed {t.get('fixed_ms')} ms, repaired {t.get('repaired_ms')} ms, reference "
              f"{t.get('reference_ms')} ms {t.get('errors') or t.get('error') or ''}", file=sys.stderr)
        result = _result(ceilings, scale, rows)
        if on_progress is not None:
            on_progress(result)
    return result


def _result(ceilings: dict, scale: str | None, rows: list[dict]) -> dict:
    timed = [r for r in rows if r.get("repaired_ms")]
    return {"ceilings": ceilings, "scale": scale, "cases": len(rows),
            "fixed_speedup_vs_reference": geomean([r.get("fixed_speedup_vs_reference") for r in rows]),
            "fixed_roofline": geomean([(r.get("roofline") or {}).get("fixed") for r in rows]),
            "repaired_cases": len(timed),
            "repaired_speedup_vs_fixed": geomean([r.get("speedup_vs_fixed") for r in timed]),
            "repaired_speedup_vs_reference": geomean([r.get("speedup_vs_reference") for r in timed]),
            "repaired_within_10pct_of_fixed": sum(1 for r in timed if (r.get("speedup_vs_fixed") or 0) >= 0.9),
            "repaired_slower_beyond_noise": [r["name"] for r in timed if _slower_beyond_noise(r)],
            "per_case": rows}


def timing_noise(row: dict) -> float | None:
    """The larger of fixed.py's and the repair's round-to-round spread (a fraction of their time)."""
    spreads = [v for k, v in (row.get("spread") or {}).items() if k in ("fixed", "repaired") and isinstance(v, (int, float))]
    return max(spreads) if spreads else None


def _slower_beyond_noise(row: dict) -> bool:
    """Slower than fixed.py by more than 10% and by more than the two timings' own spread."""
    speed = row.get("speedup_vs_fixed") or 0
    return speed < 0.9 and (1 / speed - 1 if speed else float("inf")) > (timing_noise(row) or 0)


def markdown(result: dict) -> str:
    lines = ["# fixed.py vs the PyTorch reference", "",
             f"{result['cases']} cases, scale {result['scale'] or 'case sizes'}, device "
             f"{(result['ceilings'] or {}).get('device')}; geometric-mean speedup of fixed.py over the reference: "
             f"{result['fixed_speedup_vs_reference'] or 0:.2f}x.", ""]
    if result.get("repaired_cases"):
        lines += [f"Repaired kernels timed: {result['repaired_cases']}; geometric-mean speed against fixed.py "
                  f"{result['repaired_speedup_vs_fixed'] or 0:.2f}x (1.00x = as fast as the hand fix), against the "
                  f"reference {result['repaired_speedup_vs_reference'] or 0:.2f}x; within 10% of fixed.py: "
                  f"{result['repaired_within_10pct_of_fixed']}/{result['repaired_cases']}; slower than 10% by more "
                  f"than the rounds' spread: {', '.join(result.get('repaired_slower_beyond_noise') or []) or 'none'}.", ""]
    lines += ["| case | operator | reference ms | fixed ms | repaired ms | fixed speedup | repaired vs fixed "
              "| spread | fixed roofline | max abs err (fixed / repaired) |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in result["per_case"]:
        def f(v, spec=".3f"):
            return format(v, spec) if isinstance(v, (int, float)) else "-"
        errs = r.get("max_abs_err") or {}
        cells = [r["name"], r.get("operator") or "-", f(r.get("reference_ms"), ".4f"), f(r.get("fixed_ms"), ".4f"),
                 f(r.get("repaired_ms"), ".4f"), f(r.get("fixed_speedup_vs_reference"), ".2f"),
                 f(r.get("speedup_vs_fixed"), ".2f"), f(timing_noise(r), ".0%"), f((r.get("roofline") or {}).get("fixed"), ".2f"),
                 f"{f(errs.get('fixed'), '.1e')} / {f(errs.get('repaired'), '.1e')}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from debugger.output import jsonable

    p = argparse.ArgumentParser(prog="python -m debugger.bench.fixed_timing", description=__doc__.splitlines()[0])
    p.add_argument("cases_dir")
    p.add_argument("--scale", choices=["gpu"])
    p.add_argument("--cases", nargs="+")
    p.add_argument("--out", default="bench-out")
    p.add_argument("--repairs", metavar="DIR", help="repaired sources NAME.py (kdebug bench's OUT/repairs)")
    p.add_argument("--warm-jobs", type=int, default=0, metavar="N", help="compile everything first in N processes")
    args = p.parse_args(argv)
    out = Path(args.out)

    def write(result: dict) -> None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "fixed_vs_reference.json").write_text(json.dumps(jsonable(result), indent=2) + "\n")
        (out / "fixed_vs_reference.md").write_text(markdown(result))

    try:
        result = time_fixed(args.cases_dir, args.scale, args.cases, args.repairs, args.warm_jobs, on_progress=write)
    except InvalidInput as e:
        print(f"kdebug: {e}", file=sys.stderr)
        return 2
    write(result)
    print(json.dumps(jsonable(result), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
