"""The kernelbench-fork repair tally, per diagnosed class: `python eval/real_repair_tally.py [--markdown]`.

Reads the rows the real-pool runs left in eval/: the CPU repair runs (eval/cpu_*/*repair_rows*.jsonl: emulated
CUDA at reduced sizes, a separate eval and the gate on each repair) and the GPU runs (eval/h100_*/ and
eval/h200_*/ *rows*.jsonl: `--verify-repairs` at the published sizes, and repairs made on the GPU). An answer
counts as repaired on a GPU when one GPU row of it passes KernelBench's verdict and kdebug's kernel verdict and the
gate accepts; on the CPU when a CPU row's repair is verified the same way. Its class is the diagnosis of the
repair that fixed it (else of the latest attempt); the recipes are the ones that changed the kernel. The pool's
97 are the seven runs' mismatches, the opus runs' 21 the two opus4 runs'.
"""
from __future__ import annotations

import argparse
import collections
import json
import statistics
from pathlib import Path

EVAL = Path(__file__).resolve().parent


def committed_rows(pattern: str):
    for path in sorted(EVAL.glob(pattern)):
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "/level" in row.get("id", ""):
                yield path, row


def passes(row: dict) -> bool:
    """Both verdicts pass on the row's separate eval and the gate accepts."""
    v = row.get("verify") or {}
    return ((v.get("kernelbench") or {}).get("status") == "pass" and (v.get("kernel") or {}).get("status") == "pass"
            and (row.get("check") or {}).get("verdict") == "accept")


def recipes(row: dict) -> list[str]:
    return [h["recipe"] for h in (row.get("repair") or {}).get("history") or []
            if h.get("recipe") and h.get("outcome") in ("fixed", "improved", "better")]


def tally() -> dict[str, dict]:
    """id -> {"class", "cpu", "gpu", "recipes", "cpu_seconds", "gpu_row"}."""
    out: dict[str, dict] = {}
    for _path, row in committed_rows("cpu_*/*repair_rows*.jsonl"):
        rep = row.get("repair") or {}
        good = rep.get("status") == "repaired" and passes(row)
        seen = out.get(row["id"])
        if seen and seen["cpu"] and not good:
            continue  # a later unrepaired attempt does not undo a verified repair
        out[row["id"]] = {"class": rep.get("bug_class") or "not diagnosed", "cpu": good, "gpu": False,
                          "recipes": recipes(row) if good else [],
                          "cpu_seconds": rep.get("seconds") if good else None, "gpu_row": None}
    for pattern in ("h100_*/*rows*.jsonl", "h200_*/*rows*.jsonl"):
        for path, row in committed_rows(pattern):
            entry = out.get(row["id"])
            if entry is None or not passes(row):
                continue
            entry["gpu"] = True
            entry["gpu_row"] = f"{path.parent.name}/{path.name}"
            if not entry["cpu"] and (row.get("repair") or {}).get("bug_class"):
                entry["class"] = row["repair"]["bug_class"]  # repaired on the GPU only
                entry["recipes"] = recipes(row)
    return out


def is_opus(answer_id: str) -> bool:
    return answer_id.startswith("opus4")


def table(rows: dict[str, dict]) -> str:
    by_class: dict[str, list[str]] = collections.defaultdict(list)
    for i, r in rows.items():
        by_class[r["class"]].append(i)
    lines = ["| diagnosed class | pool answers | pool repaired, CPU | pool repaired, GPU | opus answers | "
             "opus repaired, CPU | opus repaired, GPU | recipes (answers) | median CPU repair s |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    def row_of(name: str, ids: list[str]) -> str:
        pool = [i for i in ids if not is_opus(i)]
        opus = [i for i in ids if is_opus(i)]
        used = collections.Counter(x for i in ids for x in rows[i]["recipes"])
        secs = [rows[i]["cpu_seconds"] for i in ids if rows[i]["cpu_seconds"]]
        median = f"{statistics.median(secs):.0f}" if secs else ""
        return (f"| {name} | {len(pool)} | {sum(rows[i]['cpu'] for i in pool)} | {sum(rows[i]['gpu'] for i in pool)} "
                f"| {len(opus)} | {sum(rows[i]['cpu'] for i in opus)} | {sum(rows[i]['gpu'] for i in opus)} | "
                f"{', '.join(f'{k} ({v})' for k, v in used.most_common())} | {median} |")
    for name in sorted(by_class, key=lambda k: (-len(by_class[k]), k)):
        lines.append(row_of(name, by_class[name]))
    lines.append(row_of("**all**", list(rows)))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ids", action="store_true", help="list the answers repaired on a GPU, with the row that shows it")
    opts = ap.parse_args(argv)
    rows = tally()
    pool = [i for i in rows if not is_opus(i)]
    opus = [i for i in rows if is_opus(i)]
    def share(ids: list[str], key: str) -> str:
        n = sum(rows[i][key] for i in ids)
        return f"{n} of {len(ids)} ({100 * n / len(ids):.1f}%)" if ids else "0 of 0"
    print(f"pool: GPU {share(pool, 'gpu')}, CPU {share(pool, 'cpu')}; opus runs: GPU {share(opus, 'gpu')}, "
          f"CPU {share(opus, 'cpu')}\n")
    print(table(rows))
    if opts.ids:
        print()
        for i in sorted(i for i in rows if rows[i]["gpu"]):
            print(f"{i}  {rows[i]['class']}  {rows[i]['gpu_row']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
