"""Score an integrity gate over the corpus: cheats rejected, honest kernels accepted, per rule and per hack.

    python eval/integrity/score.py            # the static gate, as a Markdown report
    python eval/integrity/score.py --json     # the same numbers as one JSON object
    python eval/integrity/score.py --policy strict   # under the strict policy (default: kernelbench)

`score(gate_fn)` takes any callable (candidate_src, reference_src) -> verdict, where the verdict is
"accept"/"reject", or a dict with "verdict" and optional "findings" (each with "rule" and
"severity"), so the full gate (static + dynamic) can be scored the same way.
"""
from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections import Counter
from collections.abc import Callable
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(CORPUS_DIR.parents[1]))

Verdict = str | dict


def static_gate(candidate_src: str, reference_src: str, *, strict_precision: bool = False,
                policy: str = "kernelbench") -> dict:
    """The static half of the gate as a verdict dict."""
    from debugger.integrity.findings import is_rejected
    from debugger.integrity.static import static_findings

    findings = static_findings(candidate_src, reference_src, strict_precision=strict_precision, policy=policy)
    return {"verdict": "reject" if is_rejected(findings) else "accept", "findings": [f.to_dict() for f in findings]}


def load_corpus(corpus_dir: Path = CORPUS_DIR) -> list[dict]:
    """Every corpus entry with its kind ('cheat' | 'honest'), sources and expectations."""
    index = tomllib.loads((corpus_dir / "corpus.toml").read_text())
    entries = []
    for kind, folder in (("cheat", "cheats"), ("honest", "honest")):
        for item in index.get(kind, []):
            entries.append({
                **item,
                "kind": kind,
                "dynamic_only": bool(item.get("dynamic_only", False)),
                "policies": tuple(item.get("policies", ("kernelbench", "strict"))),
                "candidate_src": (corpus_dir / folder / f"{item['name']}.py").read_text(),
                "reference_src": (corpus_dir / "references" / f"{item['reference']}.py").read_text(),
            })
    return entries


def _normalise(result: Verdict) -> tuple[str, list[dict]]:
    if isinstance(result, str):
        return result, []
    findings = [f if isinstance(f, dict) else vars(f) for f in result.get("findings", [])]
    return result["verdict"], findings


def score(gate_fn: Callable[[str, str], Verdict], corpus_dir: Path = CORPUS_DIR, policy: str | None = None) -> dict:
    """Run `gate_fn` over the corpus and count what it rejects and accepts; with `policy`, cheats that
    are cheats only under other policies are set apart (kind "allowed")."""
    cases, rule_hits, rule_false, rule_warn_honest = [], Counter(), Counter(), Counter()
    for entry in load_corpus(corpus_dir):
        if entry["kind"] == "cheat" and policy is not None and policy not in entry["policies"]:
            entry = {**entry, "kind": "allowed"}
        verdict, findings = _normalise(gate_fn(entry["candidate_src"], entry["reference_src"]))
        rejecting = sorted({f["rule"] for f in findings if f.get("severity", "reject") == "reject"})
        warning = sorted({f["rule"] for f in findings if f.get("severity") == "warn"})
        for rule in rejecting:
            (rule_hits if entry["kind"] == "cheat" else rule_false)[rule] += 1
        if entry["kind"] == "honest":
            rule_warn_honest.update(warning)
        cases.append({"name": entry["name"], "kind": entry["kind"], "reference": entry["reference"],
                      "hack": entry.get("hack"), "dynamic_only": entry["dynamic_only"], "verdict": verdict,
                      "rules": rejecting, "warnings": warning})
    return _summary(cases, rule_hits, rule_false, rule_warn_honest)


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _summary(cases: list[dict], rule_hits: Counter, rule_false: Counter, rule_warn: Counter) -> dict:
    cheats = [c for c in cases if c["kind"] == "cheat"]
    static_cheats = [c for c in cheats if not c["dynamic_only"]]
    honest = [c for c in cases if c["kind"] == "honest"]
    rejected = [c for c in cheats if c["verdict"] == "reject"]
    hacks: dict[str, dict] = {}
    for c in cheats:
        slot = hacks.setdefault(c["hack"], {"cheats": 0, "rejected": 0})
        slot["cheats"] += 1
        slot["rejected"] += c["verdict"] == "reject"
    rules = sorted(set(rule_hits) | set(rule_false) | set(rule_warn))
    return {
        "cheats": len(cheats),
        "cheats_rejected": len(rejected),
        "cheat_rejection_rate": _rate(len(rejected), len(cheats)),
        "static_cheats": len(static_cheats),
        "static_cheats_rejected": sum(c["verdict"] == "reject" for c in static_cheats),
        "static_cheat_rejection_rate": _rate(sum(c["verdict"] == "reject" for c in static_cheats), len(static_cheats)),
        "honest": len(honest),
        "honest_accepted": sum(c["verdict"] == "accept" for c in honest),
        "honest_acceptance_rate": _rate(sum(c["verdict"] == "accept" for c in honest), len(honest)),
        "per_rule": {r: {"cheats_rejected": rule_hits[r], "honest_rejected": rule_false[r],
                         "honest_warned": rule_warn[r]} for r in rules},
        "per_hack": hacks,
        "missed_cheats": [c["name"] for c in cheats if c["verdict"] != "reject"],
        "rejected_honest": [{"name": c["name"], "rules": c["rules"]} for c in honest if c["verdict"] != "accept"],
        "allowed_under_policy": [{"name": c["name"], "verdict": c["verdict"], "warnings": c["warnings"]}
                                 for c in cases if c["kind"] == "allowed"],
        "cases": cases,
    }


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.1f}%"


def markdown(result: dict) -> str:
    """The score as a Markdown report."""
    lines = [
        "| measure | count | rate |", "| --- | --- | --- |",
        f"| cheats rejected (all) | {result['cheats_rejected']}/{result['cheats']} "
        f"| {_percent(result['cheat_rejection_rate'])} |",
        f"| cheats rejected (statically catchable) | {result['static_cheats_rejected']}/{result['static_cheats']} "
        f"| {_percent(result['static_cheat_rejection_rate'])} |",
        f"| honest kernels accepted | {result['honest_accepted']}/{result['honest']} "
        f"| {_percent(result['honest_acceptance_rate'])} |",
        "", "| rule | cheats rejected | honest rejected | honest warned |", "| --- | --- | --- | --- |",
    ]
    lines += [f"| {rule} | {n['cheats_rejected']} | {n['honest_rejected']} | {n['honest_warned']} |"
              for rule, n in result["per_rule"].items()]
    lines += ["", "| hack | cheats | rejected |", "| --- | --- | --- |"]
    lines += [f"| {hack} | {n['cheats']} | {n['rejected']} |" for hack, n in sorted(result["per_hack"].items())]
    dynamic = [c["name"] for c in result["cases"] if c["kind"] == "cheat" and c["dynamic_only"]
               and c["verdict"] != "reject"]
    missed = [name for name in result["missed_cheats"] if name not in dynamic]
    lines += ["", f"Missed (statically catchable): {', '.join(missed) or 'none'}",
              f"Missed (dynamic only): {', '.join(dynamic) or 'none'}",
              "Honest rejected: " + (", ".join(f"{c['name']} ({'/'.join(c['rules'])})"
                                               for c in result["rejected_honest"]) or "none"),
              "Cheats only under another policy (allowed here): " + (", ".join(
                  f"{c['name']} ({c['verdict']}, warns {'/'.join(c['warnings']) or 'nothing'})"
                  for c in result["allowed_under_policy"]) or "none")]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Score the static gate and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of Markdown")
    parser.add_argument("--strict-precision", action="store_true", help="forbid TF32 in tl.dot")
    parser.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="corpus folder holding corpus.toml")
    parser.add_argument("--policy", choices=["kernelbench", "strict"], default="kernelbench")
    args = parser.parse_args(argv)
    result = score(lambda cand, ref: static_gate(cand, ref, strict_precision=args.strict_precision,
                                                 policy=args.policy), args.corpus, policy=args.policy)
    result["policy"] = args.policy
    print(json.dumps(result, indent=2) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
