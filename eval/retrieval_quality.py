"""Retrieval quality: for each benchmark case, is a pattern of the true class among the top 3 retrieved
from its diagnosis? (issue 5's target: 90%)

    python eval/retrieval_quality.py eval/cases [--limit N] [--json] [--experiments]

The diagnosis runs without counterfactual experiments by default (they would name the class outright);
the query is what the repair loop's retrieve node sends: KnowledgeBase.for_diagnosis(diagnosis, code).
"""
from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

from debugger.case import load_case
from debugger.diagnose import diagnose
from debugger.knowledge import KnowledgeBase


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", type=Path)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--experiments", action="store_true")
    args = ap.parse_args(argv)
    kb = KnowledgeBase()
    folders = sorted(p for p in args.cases.iterdir() if (p / "case.toml").exists())[: args.limit]
    rows = []
    for folder in folders:
        truth = tomllib.loads((folder / "case.toml").read_text()).get("bug_class")
        case = load_case(folder)
        d = diagnose(case, "cpu", experiments=args.experiments, probes=False)
        hits = [h for h in kb.for_diagnosis(d.to_dict(), case.candidate_src, k=10) if h.kind == "pattern"][:3]
        classes = [h.bug_class for h in hits]
        rows.append({"case": folder.name, "true": truth, "top3": classes, "hit": truth in classes})
        print(f"{folder.name:<48} {truth:<26} {classes} {'ok' if truth in classes else 'MISS'}", file=sys.stderr)
    rate = sum(r["hit"] for r in rows) / max(1, len(rows))
    if args.json:
        print(json.dumps({"cases": len(rows), "top3_rate": rate, "rows": rows}, indent=1))
    else:
        print(f"true class among the top 3 retrieved patterns: {rate:.1%} over {len(rows)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
