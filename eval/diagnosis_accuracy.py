"""Diagnosis accuracy over benchmark cases: is the true class (case.toml) the first hypothesis, or in the top 3?

    python eval/diagnosis_accuracy.py eval/cases [--json] [--limit N] [--no-experiments]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from pathlib import Path

from debugger.case import load_case
from debugger.diagnose import diagnose


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", type=Path)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-experiments", action="store_true")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    folders = sorted(p for p in args.cases.iterdir() if (p / "candidate.py").exists() and (p / "case.toml").exists())
    rows = []
    for folder in folders[: args.limit]:
        truth = tomllib.loads((folder / "case.toml").read_text()).get("bug_class")
        t0 = time.time()
        d = diagnose(load_case(folder), args.device, experiments=not args.no_experiments)
        ranked = [h["bug_class"] for h in d.hypotheses]
        rows.append({"case": folder.name, "true": truth, "ranked": ranked[:3], "top1": ranked[:1] == [truth],
                     "top3": truth in ranked[:3], "seconds": round(time.time() - t0, 1), "status": d.status})
        print(f"{folder.name:<48} true={truth:<26} got={ranked[:3]} {rows[-1]['seconds']}s", file=sys.stderr)
    n = max(1, len(rows))
    result = {"cases": len(rows), "top1": sum(r["top1"] for r in rows) / n, "top3": sum(r["top3"] for r in rows) / n,
              "rows": rows}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"top-1 {result['top1']:.1%}  top-3 {result['top3']:.1%}  over {len(rows)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
