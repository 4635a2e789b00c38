"""Where a traced run spent its time: `python eval/trace_summary.py TRACE.jsonl [...]`.

TRACE files come from KDEBUG_TRACE=FILE (debugger/trace.py). Prints, per file, the evaluations by
caller (count, seconds) and the sandbox requests by caller, role and op (count, seconds, MB moved).
Request time is part of its evaluation's time; spawns are listed on their own.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict


def summarise(path: str) -> str:
    rows = [json.loads(l) for l in open(path) if l.strip()]
    if not rows:
        return f"{path}: empty"
    span = max(r["at"] for r in rows) - min(r["at"] - r["seconds"] for r in rows)
    out = [f"{path}: {len(rows)} events over {span:.1f} s"]
    groups: dict[tuple, list] = defaultdict(lambda: [0, 0.0, 0])
    for r in rows:
        key = (r["event"], r.get("caller", "?"), r.get("role", ""), r.get("op", ""))
        g = groups[key]
        g[0] += 1
        g[1] += r["seconds"]
        g[2] += r.get("sent_bytes", 0) + r.get("reply_bytes", 0)
    out.append(f"{'event':<11}{'caller':<48}{'role':<10}{'op':<10}{'n':>5}{'seconds':>10}{'MB':>9}")
    for (event, where, role, op), (n, secs, nbytes) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        out.append(f"{event:<11}{where[-47:]:<48}{role:<10}{op or '':<10}{n:>5}{secs:>10.1f}{nbytes / 1e6:>9.0f}")
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python eval/trace_summary.py TRACE.jsonl [...]")
    print("\n\n".join(summarise(p) for p in sys.argv[1:]))
