"""The static integrity gate over real answers that their benchmark recorded as correct, under both policies.

    python eval/integrity/real_static.py [REAL_DIR] [--json] [--policy kernelbench|strict|both]
    python eval/integrity/real_static.py --dynamic --device cuda --policy kernelbench --jsonl OUT.jsonl
        # the full gate (static + the sandboxed run), one JSON line per answer as it finishes (GPU)

REAL_DIR (default ../shared/real beside the repository) holds
- kernelbench-fork/runs/<run>/: CUDA answers with eval_results.json (or, for the opus runs,
  detailed_results.json); an answer counts when its recorded "correctness" is true. References:
  kernelbench-fork/KernelBench/level<L>/<P>_*.py.
- tritonbench-t-dev/honest/<case>/: honest Triton answers (reference.py, candidate.py).
The files are read where they are; nothing is copied. REAL.md beside this script reads the
rejections by hand.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

POLICIES = ("kernelbench", "strict")
_KERNEL = re.compile(r"(?:level_(?P<level>\d+)_)?problem_(?P<problem>\d+)(?:_sample_0)?_kernel\.py$")


def _recorded_correct(run: Path) -> dict[int, bool]:
    """problem id -> recorded correctness, from eval_results.json or detailed_results.json."""
    if (run / "eval_results.json").exists():
        data = json.loads((run / "eval_results.json").read_text())
        out = {}
        for pid, r in data.items():
            r = r[0] if isinstance(r, list) and r else r
            if isinstance(r, dict) and "correctness" not in r and r:
                r = next(iter(r.values()))
            out[int(pid)] = bool(isinstance(r, dict) and r.get("correctness"))
        return out
    if (run / "detailed_results.json").exists():
        data = json.loads((run / "detailed_results.json").read_text())
        return {int(r["problem_id"]): bool((r.get("eval_result") or {}).get("correctness"))
                for r in data.get("results", [])}
    return {}


def _run_level(run: Path) -> int | None:
    m = re.search(r"level_?(\d)", run.name)
    return int(m.group(1)) if m else None


def kernelbench_answers(fork: Path) -> list[dict]:
    """Every recorded-correct answer of the fork's runs: name, candidate and reference paths."""
    answers = []
    for run in sorted((fork / "runs").iterdir()):
        correct = _recorded_correct(run)
        for path in sorted(run.glob("*kernel.py")):
            m = _KERNEL.search(path.name)
            if not m:
                continue
            level = int(m.group("level") or _run_level(run) or 0)
            problem = int(m.group("problem"))
            if not correct.get(problem):
                continue
            refs = sorted((fork / "KernelBench" / f"level{level}").glob(f"{problem}_*.py"))
            if refs:
                answers.append({"name": f"{run.name}/L{level}P{problem}", "source": "kernelbench-fork",
                                "candidate": path, "reference": refs[0]})
    return answers


def tritonbench_answers(folder: Path) -> list[dict]:
    """The honest Triton answers: one case folder each."""
    return [{"name": f"tritonbench/{case.name}", "source": "tritonbench-t-dev", "candidate": case / "candidate.py",
             "reference": case / "reference.py"}
            for case in sorted(folder.iterdir()) if (case / "candidate.py").exists()]


def judge(answer: dict, policy: str) -> dict:
    """The static gate's verdict on one answer under one policy."""
    from debugger.integrity.findings import REJECT
    from debugger.integrity.static import static_findings

    findings = static_findings(answer["candidate"].read_text(), answer["reference"].read_text(), policy=policy)
    rejecting = [f for f in findings if f.severity == REJECT]
    return {"verdict": "reject" if rejecting else "accept",
            "rejections": [{"rule": f.rule, "line": f.line, "message": f.message} for f in rejecting],
            "warnings": sorted({f.rule for f in findings if f.severity != REJECT})}


def judge_full(answer: dict, policy: str, device: str, timeout: float) -> dict:
    """The full gate's verdict (static + dynamic) on one answer under one policy."""
    from debugger.case import case_from_sources
    from debugger.integrity.findings import REJECT
    from debugger.integrity.gate import check

    case = case_from_sources(answer["reference"].read_text(), answer["candidate"].read_text(), name=answer["name"])
    verdict = check(case, device, timeout=timeout, policy=policy)
    return {"verdict": verdict.verdict,
            "rejections": [{"rule": f.rule, "line": f.line, "message": f.message}
                           for f in verdict.findings if f.severity == REJECT],
            "warnings": sorted({f.rule for f in verdict.findings if f.severity != REJECT})}


def run(real: Path, policies: tuple[str, ...], *, dynamic: bool = False, device: str = "cuda",
        timeout: float = 300.0, jsonl: Path | None = None, match: str | None = None) -> dict:
    """Verdicts for every answer under every policy, with the counts."""
    answers = kernelbench_answers(real / "kernelbench-fork") + tritonbench_answers(real / "tritonbench-t-dev" / "honest")
    if match:
        answers = [a for a in answers if fnmatch.fnmatch(a["name"], match)]
    rows = []
    sink = jsonl.open("a") if jsonl else None
    for answer in answers:
        row = {"name": answer["name"], "source": answer["source"]}
        for policy in policies:
            try:
                row[policy] = judge_full(answer, policy, device, timeout) if dynamic else judge(answer, policy)
            except Exception as e:  # noqa: BLE001 - one unusable answer must not stop the calibration
                row[policy] = {"verdict": "error", "rejections": [{"rule": "error", "line": None,
                                                                   "message": f"{type(e).__name__}: {e}"}],
                               "warnings": []}
        rows.append(row)
        if sink:
            sink.write(json.dumps(row) + "\n")
            sink.flush()
    summary = {}
    for policy in policies:
        per_source = {}
        for source in ("kernelbench-fork", "tritonbench-t-dev"):
            mine = [r for r in rows if r["source"] == source]
            per_source[source] = {"answers": len(mine), "accepted": sum(r[policy]["verdict"] == "accept" for r in mine)}
        rules = Counter(rule for r in rows for rule in {f["rule"] for f in r[policy]["rejections"]})
        total = len(rows)
        accepted = sum(r[policy]["verdict"] == "accept" for r in rows)
        summary[policy] = {"answers": total, "accepted": accepted,
                           "acceptance_rate": round(accepted / total, 4) if total else None,
                           "per_source": per_source, "rejections_per_rule": dict(rules.most_common())}
    return {"summary": summary, "answers": rows}


def markdown(result: dict) -> str:
    """Counts per policy, then every rejection with its findings."""
    lines = ["| policy | accepted | kernelbench-fork | tritonbench honest |", "| --- | --- | --- | --- |"]
    for policy, s in result["summary"].items():
        fork, tb = s["per_source"]["kernelbench-fork"], s["per_source"]["tritonbench-t-dev"]
        lines.append(f"| {policy} | {s['accepted']}/{s['answers']} ({100 * (s['acceptance_rate'] or 0):.1f}%) "
                     f"| {fork['accepted']}/{fork['answers']} | {tb['accepted']}/{tb['answers']} |")
    for policy, s in result["summary"].items():
        lines += ["", f"## Rejected under {policy}", ""]
        lines += [f"- rule {rule}: {n}" for rule, n in s["rejections_per_rule"].items()]
        for row in result["answers"]:
            verdict = row[policy]
            if verdict["verdict"] == "reject":
                first = verdict["rejections"][0]
                lines.append(f"- {row['name']}: {first['rule']} (line {first['line']}): {first['message']}"
                             + (f" (+{len(verdict['rejections']) - 1} more)" if len(verdict["rejections"]) > 1 else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("real", nargs="?", type=Path, default=REPO.parent / "shared" / "real",
                        help="folder holding kernelbench-fork/ and tritonbench-t-dev/")
    parser.add_argument("--policy", choices=[*POLICIES, "both"], default="both")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of Markdown")
    parser.add_argument("--dynamic", action="store_true", help="the full gate, static and the sandboxed run")
    parser.add_argument("--device", default="cuda", help="device of the sandboxed run (with --dynamic)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per answer for the sandboxed run")
    parser.add_argument("--jsonl", type=Path, help="append one JSON line per answer as it is judged")
    parser.add_argument("--match", help="only answers whose name matches this glob (e.g. 'gemini_level2*')")
    args = parser.parse_args(argv)
    policies = POLICIES if args.policy == "both" else (args.policy,)
    result = run(args.real, policies, dynamic=args.dynamic, device=args.device, timeout=args.timeout,
                 jsonl=args.jsonl, match=args.match)
    print(json.dumps(result, indent=2, default=str) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
