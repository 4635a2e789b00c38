"""The static integrity gate over real answers that their benchmark recorded as correct, under both policies.

    python eval/integrity/real_static.py [REAL_DIR] [--json] [--policy kernelbench|strict|both]
    python eval/integrity/real_static.py [REAL_DIR] --dynamic --device cuda --policy kernelbench --jsonl OUT.jsonl \
        [--jobs 12] [--deadline 480] [--min-left 150] [--shard K/N] [--sample N] [--sizes small|auto|published]
        # the full gate (static + the sandboxed run), `kdebug check` per answer in a subprocess, --jobs
        # side by side (real_dynamic.py), one JSON line per answer as it finishes (GPU)

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


def gate_answers(real: Path) -> list[dict]:
    """Every answer the calibration judges, in the order its shards slice: the fork's, then TritonBench's
    honest ones."""
    return kernelbench_answers(real / "kernelbench-fork") + tritonbench_answers(real / "tritonbench-t-dev" / "honest")


def judge(answer: dict, policy: str) -> dict:
    """The static gate's verdict on one answer under one policy."""
    from debugger.integrity.findings import REJECT
    from debugger.integrity.static import static_findings

    findings = static_findings(answer["candidate"].read_text(), answer["reference"].read_text(), policy=policy)
    rejecting = [f for f in findings if f.severity == REJECT]
    return {"verdict": "reject" if rejecting else "accept",
            "rejections": [{"rule": f.rule, "line": f.line, "message": f.message} for f in rejecting],
            "warnings": sorted({f.rule for f in findings if f.severity != REJECT})}


def judged_names(paths: list[Path], timed_out: bool = False) -> set[str]:
    """Names of the answers the rows of these JSONL files judged (accept or reject under some policy; with
    `timed_out`, those that ran out of time too: on the CPU they would again)."""
    verdicts = ("accept", "reject", "timeout") if timed_out else ("accept", "reject")
    names = set()
    for path in paths:
        for line in path.read_text().splitlines():
            row = json.loads(line) if line.strip() else {}
            if any(isinstance(v, dict) and v.get("verdict") in verdicts for v in row.values()):
                names.add(row["name"])
    return names


def select(answers: list[dict], *, match: str | None = None, shard: str | None = None,
           sample: int | None = None, skip: set[str] = frozenset()) -> list[dict]:
    """The answers a run judges: those matching the glob (or any of several, comma-separated), then the K-th
    of N interleaved slices (`shard` "K/N") less those in `skip` (what an earlier run of the shard judged),
    then `sample` of them spread evenly (every run, level and source represented)."""
    if match:  # several globs, comma-separated
        answers = [a for a in answers if any(fnmatch.fnmatch(a["name"], g.strip()) for g in match.split(","))]
    if shard:
        k, n = (int(v) for v in shard.split("/"))
        if not 1 <= k <= n:
            raise SystemExit(f"real_static: --shard {shard}: K must be in 1..N")
        answers = answers[k - 1::n]
    answers = [a for a in answers if a["name"] not in skip]
    if sample and sample < len(answers):
        answers = [answers[i * len(answers) // sample] for i in range(sample)]
    return answers


def run(real: Path, policies: tuple[str, ...], *, dynamic: bool = False, device: str = "cuda",
        timeout: float = 300.0, jsonl: Path | None = None, match: str | None = None, shard: str | None = None,
        sample: int | None = None, jobs: int = 1, deadline: float | None = None, sizes: str = "published",
        min_left: float = 150.0, skip: set[str] = frozenset()) -> dict:
    """Verdicts for every answer under every policy, with the counts."""
    answers = select(gate_answers(real), match=match, shard=shard, sample=sample, skip=skip)
    rows = []
    sink = jsonl.open("a") if jsonl else None
    if dynamic:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from real_dynamic import judge_all

        rows = judge_all(answers, policies, device=device, timeout=timeout, sizes=sizes, jobs=jobs,
                         deadline=deadline, min_left=min_left, sink=sink)
        answers = []
    for answer in answers:
        row = {"name": answer["name"], "source": answer["source"]}
        for policy in policies:
            try:
                row[policy] = judge(answer, policy)
            except Exception as e:  # noqa: BLE001 - one unusable answer must not stop the calibration
                row[policy] = {"verdict": "error", "rejections": [{"rule": "error", "line": None,
                                                                   "message": f"{type(e).__name__}: {e}"}],
                               "warnings": []}
        rows.append(row)
        if sink:
            sink.write(json.dumps(row) + "\n")
            sink.flush()
    return {"summary": summarise(rows, policies), "answers": rows}


def summarise(rows: list[dict], policies: tuple[str, ...]) -> dict:
    """Per policy: answers judged, accepted (per source), rejections per rule; answers the run could
    not judge (a timeout, a crash, cut by the deadline) are counted apart, never as rejections."""
    summary = {}
    for policy in policies:
        judged = [r for r in rows if r[policy]["verdict"] in ("accept", "reject")]
        per_source = {}
        for source in ("kernelbench-fork", "tritonbench-t-dev"):
            mine = [r for r in judged if r["source"] == source]
            per_source[source] = {"answers": len(mine), "accepted": sum(r[policy]["verdict"] == "accept" for r in mine)}
        rules = Counter(rule for r in judged for rule in {f["rule"] for f in r[policy]["rejections"]})
        total = len(judged)
        accepted = sum(r[policy]["verdict"] == "accept" for r in judged)
        summary[policy] = {"answers": total, "accepted": accepted,
                           "acceptance_rate": round(accepted / total, 4) if total else None,
                           "per_source": per_source, "rejections_per_rule": dict(rules.most_common()),
                           "not_judged": dict(Counter(r[policy]["verdict"] for r in rows if r not in judged))}
    return summary


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
        if s.get("not_judged"):
            lines.append("- not judged: " + ", ".join(f"{v} {n}" for v, n in s["not_judged"].items()))
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
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per sandbox request of the run")
    parser.add_argument("--jsonl", type=Path, help="append one JSON line per answer as it is judged")
    parser.add_argument("--match", help="only answers whose name matches this glob (e.g. 'gemini_level2*'; "
                                        "several, comma-separated)")
    parser.add_argument("--shard", metavar="K/N", help="only the K-th of N interleaved slices of the answers")
    parser.add_argument("--sample", type=int, help="only N answers, spread evenly over the selection")
    parser.add_argument("--skip-judged", type=Path, nargs="*", default=[], metavar="JSONL",
                        help="leave out the answers these rows (an earlier run's --jsonl) judged")
    parser.add_argument("--skip-timed-out", action="store_true",
                        help="with --skip-judged, leave out the answers those rows ran out of time on too")
    parser.add_argument("--jobs", type=int, default=1, help="answers judged side by side (with --dynamic)")
    parser.add_argument("--deadline", type=float, help="seconds the whole --dynamic run may take: each answer "
                                                       "gets what is left, none starts with under --min-left")
    parser.add_argument("--min-left", type=float, default=150.0,
                        help="seconds an answer needs at least (a CUDA answer compiles for about a minute)")
    parser.add_argument("--sizes", choices=["published", "auto", "small"], default="published",
                        help="sizes of the sandboxed run (with --dynamic; kdebug check --sizes)")
    args = parser.parse_args(argv)
    policies = POLICIES if args.policy == "both" else (args.policy,)
    result = run(args.real, policies, dynamic=args.dynamic, device=args.device, timeout=args.timeout,
                 jsonl=args.jsonl, match=args.match, shard=args.shard, sample=args.sample, jobs=args.jobs,
                 deadline=args.deadline, sizes=args.sizes, min_left=args.min_left,
                 skip=judged_names(args.skip_judged, timed_out=args.skip_timed_out))
    print(json.dumps(result, indent=2, default=str) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
