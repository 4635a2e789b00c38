"""Which answers the agreement campaign still has to judge (issue 15) that a gate shard judges too
(issue 16): their ids, comma-separated, for gate_agree.jobs' AG_MATCH, so one load_inline build serves both jobs.

    python eval/h200_next/shard_overlap.py POOL_DIR K/N ROWS...   # POOL_DIR holds kernelbench-fork/ and tritonbench-t-dev/

ROWS: every agreement rows file so far (as AG_SKIP). Several shards: K1,K2/N.
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "eval"), str(REPO / "eval" / "integrity")]

import real_pool  # noqa: E402
import real_static  # noqa: E402

EARLIER = ["eval/real_pool_h200_2026-12-02/fork_correct_rows.json",
           "eval/real_pool_h200_2026-12-02/fork_mismatch_rows.json"]


def overlap(pool: Path, shards: list[int], n: int, rows: list[Path]) -> list[str]:
    answers, _ = real_pool.read_pool(pool / "kernelbench-fork", None)
    judged = real_pool.judged_ids([REPO / p for p in EARLIER] + rows, "kernelbench")
    left = {str(Path(a.location).resolve()): a.id for a in real_pool.select(answers, "judged", None)
            if a.id not in judged}
    gate = real_static.gate_answers(pool)
    ids = []
    for k in shards:
        shard = real_static.select(gate, shard=f"{k}/{n}")
        ids += [left[p] for p in (str(Path(g["candidate"]).resolve()) for g in shard) if p in left]
    return ids


def main(argv: list[str]) -> int:
    if len(argv) < 2 or "/" not in argv[1]:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    ks, n = argv[1].split("/")
    print(",".join(overlap(Path(argv[0]), [int(k) for k in ks.split(",")], int(n), [Path(p) for p in argv[2:]])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
