"""Parameter initialisation of real answers, on the CPU: the host side of parameter_init, no kernel run.

    python eval/real_param_init.py PATH [--only mismatch|correct|all] [--match GLOB] [--timeout S]
                                   [--jsonl FILE] [--json]

PATH: ../shared/real/kernelbench-fork (or a KernelBench checkout with runs/). For each answer, through
debugger/host_params.py (a sandboxed subprocess: kdebug's worker guard, limits, no network, the pool
unreadable; what `kdebug diagnose --device cpu` does with a CUDA candidate), Model and
ModelNew are built as KernelBench builds them (each under seed 42, published init inputs), with
`load_inline`/`load` replaced by a stand-in whose functions cannot be called (no nvcc, no GPU: the
kernels are never built nor run). Then:
- the parameter correspondence (debugger/params.py) is made and each matched tensor's own initial value
  compared with Model's: an answer whose tensors all agree initialises as KernelBench expects; one
  with differing tensors has a parameter_init fault (whatever else is wrong with its kernels);
- where they differ, the parameter_init fix (debugger/recipes/parameter_init.py) is applied and the
  fixed ModelNew built again the same way: the fix is right on the host side when every matched
  tensor now equals Model's and nothing of Model's stayed unmatched.
What this cannot say: whether the kernels are right (that needs the GPU); an answer that builds or
calls CUDA in its constructor is reported `needs_cuda`.

On recorded-correct answers it calibrates the correspondence: KernelBench passed them, so a tensor
found differing there is either unused by forward or a fault of the correspondence; each is listed.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def run_one(answer, pool: Path, timeout: float) -> dict:
    """One answer through debugger.host_params (a sandboxed worker), as a row."""
    from debugger import host_params

    row = host_params.check(answer.reference_src, answer.candidate_src, deny_read=[str(pool.resolve())],
                            timeout=timeout)
    row.pop("fixed_src", None)
    row.pop("parameter_map", None)
    row["differing"] = [{"candidate": p["candidate"], "reference": p["reference"], "by": p.get("by"),
                         "diff": p["own_init_diff"]} for p in row.get("differing", [])]
    row.update(id=answer.id, recorded=answer.recorded, recorded_class=answer.recorded_class)
    return row


def summary(rows: list[dict]) -> str:
    lines = ["| recorded | answers | built | own init = Model's | differs | fix right | fix wrong | not proposed | "
             "a Model tensor not held | needs CUDA | too large / error / timeout |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for recorded in sorted({r["recorded_class"] for r in rows}):
        rs = [r for r in rows if r["recorded_class"] == recorded]
        ok = [r for r in rs if r["status"] == "ok"]
        differs = [r for r in ok if r["differing"]]
        fixes = Counter(r.get("fix") for r in differs)
        lines.append(f"| {recorded} | {len(rs)} | {len(ok)} | {len(ok) - len(differs)} | {len(differs)} | "
                     f"{fixes['right']} | {fixes['wrong']} | {fixes['not_proposed']} | "
                     f"{sum(bool(r['unheld']) for r in ok)} | {sum(r['status'] == 'needs_cuda' for r in rs)} | "
                     f"{sum(r['status'] == 'too_large' for r in rs)} / {sum(r['status'] == 'error' for r in rs)} / "
                     f"{sum(r['status'] == 'timeout' for r in rs)} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pool", type=Path)
    ap.add_argument("--only", choices=("mismatch", "correct", "all"), default="mismatch")
    ap.add_argument("--match", help="only answers whose id matches this glob")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--jsonl", type=Path, help="append a row per answer as it finishes")
    ap.add_argument("--json", action="store_true", help="print the rows as one JSON list")
    opts = ap.parse_args()
    if not opts.pool.is_dir():
        sys.exit(f"real_param_init: no such folder: {opts.pool}")
    from ingest.answers import read_pool

    answers, _ = read_pool(opts.pool)
    wanted = {"mismatch": ("numerical_mismatch",), "correct": ("correct",),
              "all": ("numerical_mismatch", "correct")}[opts.only]
    answers = [a for a in answers if a.recorded_class in wanted and a.reference_src and a.candidate_src
               and (not opts.match or fnmatch.fnmatch(a.id, opts.match))]
    rows = []
    for a in answers:
        row = run_one(a, opts.pool, opts.timeout)
        rows.append(row)
        if opts.jsonl:
            with opts.jsonl.open("a") as f:
                f.write(json.dumps(row) + "\n")
        print(f"{a.id}: {row['status']} {len(row.get('differing', []))} differing {row.get('fix', '')}",
              file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=1) if opts.json else summary(rows))


if __name__ == "__main__":
    main()
