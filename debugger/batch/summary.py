"""What a batch is doing and did: its counts from the queue, the --json object, the table at the end."""
from __future__ import annotations

from dataclasses import dataclass, field

RESULT_ORDER = ("repaired", "unrepaired", "rejected", "invalid_input", "error")


@dataclass
class BatchSummary:
    """One batch run over the queue."""

    mode: str                       # local | ray
    run: str                        # this batch's id (the prefix of its worker names)
    workers: int
    devices: list
    queue: str
    recovered: list = field(default_factory=list)
    per_entry: list = field(default_factory=list)
    remaining: dict = field(default_factory=dict)
    seconds: float = 0.0
    interrupted: bool = False
    logs: str | None = None
    message: str = ""

    def results(self) -> dict:
        out: dict[str, int] = {}
        for e in self.per_entry:
            key = e.get("result_status") or "error"
            out[key] = out.get(key, 0) + 1
        return out

    def to_dict(self) -> dict:
        results = self.results()
        return {"status": "interrupted" if self.interrupted else "ok", "mode": self.mode, "run": self.run,
                "workers": self.workers, "devices": self.devices, "queue": self.queue,
                "processed": len(self.per_entry), "results": results,
                "repaired": results.get("repaired", 0), "failed": results.get("error", 0),
                "recovered": self.recovered, "remaining": self.remaining, "seconds": round(self.seconds, 2),
                "per_entry": self.per_entry, "logs": self.logs, "message": self.message}


def counts_so_far(queue, run: str) -> tuple[int, dict, int]:
    """(finished by this batch, results so far, running now) from the queue."""
    results: dict[str, int] = {}
    done = running = 0
    for status, result, n in queue.db.execute(
            "select status, result_status, count(*) from entries where worker like ? group by status, result_status",
            [f"{run}/%"]):
        if status == "running":
            running += n
        elif status in ("done", "failed"):
            done += n
            results[result or "error"] = results.get(result or "error", 0) + n
    return done, results, running


def batch_size(queue, only: list[str] | None, done: int, running: int, total: int) -> int:
    """The batch's size: fixed by --limit, else what is done, running and still queued (entries ingested
    while the batch runs join it)."""
    if only is not None:
        return total
    return max(total, done + running + queue.counts()["queued"])


def entry_rows(queue, run: str) -> list[dict]:
    """The entries this batch finished (their worker names start with the batch id)."""
    rows = queue.db.query("select * from entries where worker like ? and status in ('done', 'failed') "
                          "order by finished", [f"{run}/%"])
    keep = ("id", "problem_id", "status", "result_status", "iterations", "prompt_tokens", "completion_tokens",
            "seconds", "bug_class", "output", "run_id", "worker", "tries", "message")
    return [{k: r.get(k) for k in keep} for r in rows]


def table(summary: BatchSummary) -> str:
    """The human summary: one row per entry, then the totals."""
    lines = []
    if summary.per_entry:
        lines.append(f"{'entry':<34} {'result':<13} {'iters':>5} {'tokens':>7} {'seconds':>8}  worker")
        for e in summary.per_entry:
            tokens = (e.get("prompt_tokens") or 0) + (e.get("completion_tokens") or 0)
            secs = f"{e['seconds']:.1f}" if isinstance(e.get("seconds"), (int, float)) else "-"
            lines.append(f"{str(e['id'])[:34]:<34} {(e.get('result_status') or 'error'):<13} "
                         f"{e.get('iterations') or 0:>5} {tokens:>7} {secs:>8}  {e.get('worker') or '-'}")
    results = summary.results()
    ordered = [k for k in RESULT_ORDER if k in results] + sorted(k for k in results if k not in RESULT_ORDER)
    totals = ", ".join(f"{k} {results[k]}" for k in ordered) or "nothing"
    minutes = summary.seconds / 60
    rate = f", {len(summary.per_entry) / minutes:.1f}/min" if minutes > 0 and summary.per_entry else ""
    lines.append(f"{'interrupted: ' if summary.interrupted else ''}{len(summary.per_entry)} entr"
                 f"{'y' if len(summary.per_entry) == 1 else 'ies'} processed ({totals}) in "
                 f"{summary.seconds:.1f}s{rate} by {summary.workers} {summary.mode} worker(s)")
    if summary.recovered:
        lines.append(f"recovered {len(summary.recovered)} entr{'y' if len(summary.recovered) == 1 else 'ies'} "
                     f"left running by an earlier batch")
    left = {k: v for k, v in summary.remaining.items() if v}
    lines.append("queue: " + (", ".join(f"{k} {v}" for k, v in left.items()) or "empty"))
    if summary.message:
        lines.append(summary.message)
    return "\n".join(lines)
