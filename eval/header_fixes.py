"""The pool's answers that use PyTorch's CUDA macros with no include declaring them: what the recipe makes of them.

For every answer of a KernelBench pool (../shared/real/kernelbench-fork or a path given) whose CUDA or C++
units use C10_CUDA_KERNEL_LAUNCH_CHECK / C10_CUDA_CHECK / AT_CUDA_CHECK with no include that declares it
(debugger/lang/cuda/emulate/headers.py), against what KernelBench recorded (compiled or not, its error):
the count, and for `--eval N` of them the answer with cuda_include_declaring_header applied, evaluated by
`kdebug eval --semantics kernelbench` (on the CPU through the emulation, or on a GPU with nvcc) - does it
build now, does it pass KernelBench's trials (the pipeline verdict, the eval's status under this semantics), and
the kernel verdict (its checks with the reference's weights mapped in)? The pool's files are read where they are, never copied.

    python eval/header_fixes.py [POOL] [--eval N] [--device cpu|cuda] [--sizes small|published] [--jobs J]
        [--deadline S] [--jsonl ROWS.jsonl]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "eval"))

from debugger.lang.cuda.emulate.headers import MACRO_USE, missing_by_unit  # noqa: E402
from debugger.lang.cuda.sources import find_sources  # noqa: E402
from debugger.recipes import RECIPES  # noqa: E402
from ingest.answers import read_pool  # noqa: E402

RECIPE = "cuda_include_declaring_header"


def missing_macros(src: str) -> list[str]:
    """The macros the answer's load_inline units use with no include declaring them (each unit as torch
    writes it: the CUDA sources joined, the C++ sources joined)."""
    found = find_sources(src)
    units = missing_by_unit([s.text for s in found if s.kind == "cpp"], [s.text for s in found if s.kind == "cuda"])
    return sorted({m for _, missing in units for m in missing})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pool", nargs="?", type=Path, default=REPO.parent / "shared" / "real" / "kernelbench-fork")
    ap.add_argument("--eval", type=int, default=0, metavar="N", help="evaluate the first N fixed answers")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--sizes", choices=["small", "published", "auto"], default="small")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--jsonl", type=Path, help="append each evaluated answer's row here as it finishes")
    ap.add_argument("--deadline", type=float, metavar="S", help="start no evaluation after S seconds")
    ap.add_argument("--skip", type=Path, nargs="*", default=[], metavar="ROWS",
                    help="leave out the answers these --jsonl files evaluated (a campaign over several commands)")
    opts = ap.parse_args(argv)
    if not opts.pool.is_dir():
        print(f"header_fixes: no such pool folder: {opts.pool}", file=sys.stderr)
        return 2
    missing_rows = [p for p in opts.skip if not p.is_file()]
    if missing_rows:
        print(f"header_fixes: no such rows file: {missing_rows[0]}", file=sys.stderr)
        return 2
    answers, _ = read_pool(opts.pool)
    rows, declared = [], Counter()
    for a in answers:
        if a.language != "cuda" or not a.candidate_src or not a.reference_src:
            continue
        missing = missing_macros(a.candidate_src)
        if not missing and MACRO_USE.search(a.candidate_src):  # the control: such answers must have built
            declared[a.recorded_class.split(" ")[0]] += 1
        if missing:
            patches = RECIPES[RECIPE].propose(a.candidate_src)
            rows.append({"id": a.id, "recorded": a.recorded, "recorded_class": a.recorded_class,
                         "reason": a.recorded_reason[:200], "missing": missing, "patched": bool(patches),
                         "answer": a, "fixed_src": patches[0].new_src if patches else None})
    if opts.eval:
        from real_pool import Kdebug  # the subprocess runner (its own session, killed at its limit)

        out = Path(tempfile.mkdtemp(prefix="header-fixes-"))
        kd = Kdebug(out / "data")

        t0 = time.time()
        lock = threading.Lock()

        def one(row):
            if opts.deadline is not None and time.time() - t0 > opts.deadline:
                return
            case = row["answer"].write(out / "cases")
            (case / "candidate.py").write_text(row["fixed_src"])
            res = kd.run(["eval", str(case), "--device", opts.device, "--sizes", opts.sizes, "--semantics",
                          "kernelbench", "--json"], timeout=opts.timeout, cwd=out)
            data = res.get("json") or {}
            verdicts = data.get("verdicts") or {}
            row["eval"] = {"status": data.get("status") or ("timeout" if res.get("timed_out") else "error"),
                           "kernelbench": (verdicts.get("kernelbench") or {}).get("status"),
                           "kernel": (verdicts.get("kernel") or {}).get("status"),
                           "kernel_failed": (verdicts.get("kernel") or {}).get("failed"),
                           "message": (data.get("message") or res.get("stderr_tail") or "")[:200],
                           "seconds": res.get("seconds")}
            print(f"  {row['id']}: kernel {row['eval']['kernel']} / kernelbench {row['eval']['kernelbench']} "
                  f"({row['eval']['seconds']} s)", file=sys.stderr, flush=True)
            if opts.jsonl is not None:
                with lock, opts.jsonl.open("a") as fh:
                    fh.write(json.dumps({k: v for k, v in row.items() if k not in ("answer", "fixed_src")}) + "\n")

        done = {json.loads(line)["id"] for path in opts.skip for line in path.read_text().splitlines() if line.strip()}
        chosen = [r for r in rows if r["patched"] and r["id"] not in done][:opts.eval]
        with ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
            list(pool.map(one, chosen))
    for r in rows:
        r.pop("answer"), r.pop("fixed_src")
    summary = {"answers": len(rows), "patched": sum(r["patched"] for r in rows),
               "recorded": dict(Counter(r["recorded_class"].split(" ")[0] for r in rows)),
               "declared_recorded": dict(declared),
               "evaluated": dict(Counter((r["eval"]["kernel"], r["eval"]["kernelbench"]) for r in rows if "eval" in r))}
    if opts.json:
        print(json.dumps({"summary": {k: (str(v) if k == "evaluated" else v) for k, v in summary.items()},
                          "rows": rows}, indent=1))
    else:
        print(f"{summary['answers']} answers use a CUDA macro no include declares; the recipe patches "
              f"{summary['patched']}. Recorded: {summary['recorded']}. Answers that use such a macro with an "
              f"include declaring it, recorded: {summary['declared_recorded']}.")
        for r in rows:
            if "eval" in r:
                print(f"| {r['id']} | {r['recorded_class']} | {', '.join(r['missing'])} | {r['eval']['kernel']} | "
                      f"{r['eval']['kernelbench']} | {r['eval']['message'][:120]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
