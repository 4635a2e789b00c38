"""fixed.py against the PyTorch reference on the GPU, for every case: no repair involved.

    python -m debugger.bench.fixed_timing eval/cases [--scale gpu] [--out DIR] [--cases NAME...]

Writes DIR/fixed_vs_reference.json and .md and prints one JSON object. Needs only torch and triton
(each case is timed by `python -m debugger.bench.timing` in its own process).
"""
from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

from debugger.bench.cases import discover, scale_reference
from debugger.bench.perf import case_timing, measure_ceilings
from debugger.bench.scores import geomean
from debugger.errors import InvalidInput


def time_fixed(cases_dir: str, scale: str | None, names: list[str] | None = None) -> dict:
    ceilings = measure_ceilings()
    rows = []
    for folder in discover(cases_dir, names):
        if not (folder / "fixed.py").exists():
            continue
        meta = tomllib.loads((folder / "case.toml").read_text()) if (folder / "case.toml").exists() else {}
        ref = (folder / "reference.py").read_text()
        if scale and isinstance(meta.get(scale), dict):
            ref = scale_reference(ref, meta[scale])
        t = case_timing(ref, {"fixed": (folder / "fixed.py").read_text()}, ceilings)
        rows.append({"name": folder.name, "bug_class": meta.get("bug_class"), "operator": meta.get("operator"), **t})
        print(f"{folder.name}: fixed {t.get('fixed_ms')} ms, reference {t.get('reference_ms')} ms "
              f"{t.get('errors') or t.get('error') or ''}", file=sys.stderr)
    return {"ceilings": ceilings, "scale": scale, "cases": len(rows),
            "fixed_speedup_vs_reference": geomean([r.get("fixed_speedup_vs_reference") for r in rows]),
            "fixed_roofline": geomean([(r.get("roofline") or {}).get("fixed") for r in rows]),
            "per_case": rows}


def markdown(result: dict) -> str:
    lines = ["# fixed.py vs the PyTorch reference", "",
             f"{result['cases']} cases, scale {result['scale'] or 'case sizes'}, device "
             f"{(result['ceilings'] or {}).get('device')}; geometric-mean speedup of fixed.py over the reference: "
             f"{result['fixed_speedup_vs_reference'] or 0:.2f}x.", "",
             "| case | operator | reference ms | fixed ms | speedup | fixed roofline | max abs err |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in result["per_case"]:
        def f(v, spec=".3f"):
            return format(v, spec) if isinstance(v, (int, float)) else "-"
        cells = [r["name"], r.get("operator") or "-", f(r.get("reference_ms")), f(r.get("fixed_ms")),
                 f(r.get("fixed_speedup_vs_reference"), ".2f"), f((r.get("roofline") or {}).get("fixed"), ".2f"),
                 f((r.get("max_abs_err") or {}).get("fixed"), ".2e")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from debugger.output import jsonable

    p = argparse.ArgumentParser(prog="python -m debugger.bench.fixed_timing", description=__doc__.splitlines()[0])
    p.add_argument("cases_dir")
    p.add_argument("--scale", choices=["gpu"])
    p.add_argument("--cases", nargs="+")
    p.add_argument("--out", default="bench-out")
    args = p.parse_args(argv)
    try:
        result = time_fixed(args.cases_dir, args.scale, args.cases)
    except InvalidInput as e:
        print(f"kdebug: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "fixed_vs_reference.json").write_text(json.dumps(jsonable(result), indent=2) + "\n")
    (out / "fixed_vs_reference.md").write_text(markdown(result))
    print(json.dumps(jsonable(result), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
