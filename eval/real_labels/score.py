"""Score against the hand labels of real answers: the CUDA static facts, or kdebug diagnose's rows.

    python eval/real_labels/score.py [--pool ../shared/real/kernelbench-fork] [--json]
    python eval/real_labels/score.py --rows OUT/rows.json [--json]     # eval/real_pool.py --diagnose rows

Static (default): each labelled answer's CUDA facts (debugger.lang), ranked by the diagnosis ranking
on those tags alone (no run evidence); reports, per answer, the top fact's class and line against the
label, and the totals: top-1 class, class in the top 3, and a fact on the labelled line (+-2 lines).
Rows: kdebug diagnose's top hypothesis and top 3 (the `diagnose` field of real_pool rows) against the
labels: top-1 / top-3 accuracy, the GPU figure issue 17 asks for.
"""
from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

LABELS = Path(__file__).with_name("kernelbench_fork_mismatch.toml")
NEAR = 2  # lines


def load_labels(path: Path = LABELS) -> dict[str, dict]:
    return {lab["id"]: lab for lab in tomllib.loads(path.read_text())["label"]}


def static_rows(labels: dict[str, dict], pool: Path) -> list[dict]:
    from debugger import lang
    from debugger.diagnose import ranking
    from ingest.answers import read_pool

    answers = {a.id: a for a in read_pool(pool)[0] if a.id in labels}
    rows = []
    for aid, lab in labels.items():
        answer = answers.get(aid)
        facts = lang.static_facts(answer.candidate_src) if answer is not None and answer.candidate_src else []
        tags = {f["tag"] for f in facts}
        weight = {t: (c, w) for c, ws in ranking.WEIGHTS.items() for t, w in ws.items()}
        weighted = sorted((f for f in facts if f["tag"] in weight), key=lambda f: -weight[f["tag"]][1])
        top = weighted[0] if weighted else None
        ranked = [h["bug_class"] for h in ranking.rank(tags, [], [])] if weighted else []
        rows.append({"id": aid, "label": lab["class"], "label_line": lab["line"],
                     "top_fact": top["tag"] if top else None, "top_class": weight[top["tag"]][0] if top else None,
                     "top_line": top["line"] if top else None, "ranked": ranked[:3],
                     "fact_on_line": any(f["line"] is not None and abs(f["line"] - lab["line"]) <= NEAR
                                         for f in weighted),
                     "found": answer is not None})
    return rows


def diagnose_rows(labels: dict[str, dict], rows_path: Path) -> list[dict]:
    data = json.loads(rows_path.read_text())
    by_id = {r["id"]: r for r in (data["rows"] if isinstance(data, dict) else data)}
    out = []
    for aid, lab in labels.items():
        d = (by_id.get(aid) or {}).get("diagnose") or {}
        out.append({"id": aid, "label": lab["class"], "label_line": lab["line"], "top_class": d.get("top"),
                    "ranked": d.get("ranked") or [], "found": bool(d), "evidence": _run_evidence(d)})
    return out


def _run_evidence(d: dict) -> str | None:
    """What backs the top class beyond its prior: a counterfactual run, a sanitizer finding or a line of
    the source (None for rows written before real_pool kept the evidence)."""
    if "top_evidence" not in d:
        return None
    said = d["top_evidence"]
    if any(e.startswith("experiment:") for e in said):  # a run that fixed or shrank the failure
        return "counterfactual run"
    if any("compute-sanitizer" in e for e in said):
        return "sanitizer finding"
    if d.get("top_lines"):
        return "source line"
    return "run symptoms only" if said else "none"


def summary(rows: list[dict]) -> dict:
    n = len(rows)
    top1 = sum(r["top_class"] == r["label"] for r in rows)
    top3 = sum(r["label"] in (r["ranked"] or [r["top_class"]]) for r in rows)
    out = {"labelled": n, "answered": sum(r["top_class"] is not None for r in rows), "top1": top1, "top3": top3,
           "top1_rate": round(top1 / n, 3) if n else 0.0}
    right = [r for r in rows if r["top_class"] == r["label"] and r.get("evidence") is not None]
    if right:
        out["top1_evidence"] = {kind: sum(r["evidence"] == kind for r in right)
                                for kind in sorted({r["evidence"] for r in right})}
    if rows and "fact_on_line" in rows[0]:
        out["fact_on_labelled_line"] = sum(r["fact_on_line"] for r in rows)
        answered = [r for r in rows if r["top_class"] is not None]
        out["top1_when_a_fact_fires"] = f"{sum(r['top_class'] == r['label'] for r in answered)}/{len(answered)}"
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool", type=Path, default=REPO.parent / "shared" / "real" / "kernelbench-fork")
    ap.add_argument("--rows", type=Path, help="real_pool rows.json with --diagnose results")
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    labels = load_labels(args.labels)
    rows = diagnose_rows(labels, args.rows) if args.rows else static_rows(labels, args.pool)
    result = {"source": "diagnose rows" if args.rows else "CUDA static facts", "summary": summary(rows),
              "rows": rows}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    for r in rows:
        mark = "ok " if r["top_class"] == r["label"] else "   "
        where = f" line {r.get('top_line')} vs {r['label_line']}" if "top_line" in r else ""
        backed = f" [{r['evidence']}]" if r.get("evidence") else ""
        print(f"{mark}{r['id']}: label {r['label']}; top {r['top_class']} ({r.get('top_fact', '')}){where}{backed}")
    print(json.dumps(result["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
