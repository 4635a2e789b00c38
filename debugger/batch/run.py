"""One batch over the repair queue: recover what an earlier batch left, pick the work, run it, sum up.

Locally (debugger/batch/local.py) or on a Ray cluster (ray_runner.py); either way each entry goes
through debugger.batch.task.run_task, i.e. `repair()` as `kdebug repair` runs it.
"""
from __future__ import annotations

import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from debugger.batch.summary import BatchSummary, entry_rows
from debugger.output import log

MAX_TRIES = 3
DEFAULT_LEASE_S = 90.0


@dataclass
class BatchOptions:
    """What `kdebug repair-batch` was asked to do."""

    queue_dir: str | Path | None = None
    workers: int | None = None
    devices: str | None = None
    limit: int | None = None
    ray: str | None = None
    lease_s: float = DEFAULT_LEASE_S
    flags: dict = field(default_factory=dict)  # settings for repair(): backend, model, max_iters, timeout ...
    warm_index: bool = True


def _wal(path: Path) -> None:
    """Readers and one writer at a time without 'database is locked' (persistent in the file)."""
    conn = sqlite3.connect(path, timeout=30)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
    finally:
        conn.close()


def _prepare_shared_state(warm_index: bool) -> Path:
    """Ledger and checkpoint databases in WAL mode, the knowledge index built once: the main ledger path."""
    from debugger.ledger import Ledger
    from debugger.settings import data_dir

    ledger = Ledger()
    ledger.db.conn.close()
    _wal(ledger.path)
    _wal(data_dir() / "checkpoints.db")
    if warm_index:
        try:
            from debugger.knowledge import KnowledgeBase

            KnowledgeBase().reindex()
        except Exception as e:  # noqa: BLE001 - each repair can still open the knowledge base itself
            log(f"knowledge index not warmed ({e.__class__.__name__}); each worker will open it")
    return ledger.path


def run_batch(opts: BatchOptions, progress=None) -> BatchSummary:
    """Work the queue; returns the summary (interrupted=True after Ctrl-C)."""
    from debugger.batch.devices import parse_devices, slots
    from debugger.batch.progress import Progress
    from debugger.batch.queue import Queue

    if opts.limit is not None and opts.limit < 1:
        from debugger.errors import InvalidInput

        raise InvalidInput("--limit must be at least 1")
    t0 = time.time()
    progress = progress or Progress()
    queue = Queue(opts.queue_dir)
    run = uuid.uuid4().hex[:8]
    try:
        recovered = queue.recover(max_tries=MAX_TRIES)
        if recovered:
            progress.note(f"recovered {len(recovered)} entr{'y' if len(recovered) == 1 else 'ies'} left running "
                          f"by an earlier batch: {', '.join(recovered[:5])}{' ...' if len(recovered) > 5 else ''}")
        queued = [e["id"] for e in queue.entries("queued")]
        only = queued[:opts.limit] if opts.limit and opts.limit < len(queued) else None  # None: all queued
        total = len(only) if only is not None else len(queued)
        if opts.ray:
            devices, n_workers = [f"ray:{opts.ray}"], 0
        else:
            devices = parse_devices(opts.devices)
            plan = slots(devices, opts.workers, log=progress.note)
            n_workers = min(len(plan), max(total, 1))
            plan = plan[:n_workers]
        summary = BatchSummary(mode="ray" if opts.ray else "local", run=run, workers=n_workers, devices=devices,
                               queue=str(queue.root), recovered=recovered, logs=str(queue.root / "logs"))
        if total == 0:
            summary.message = "nothing queued: run `kdebug ingest` first"
            summary.remaining = queue.counts()
            return summary
        ledger_path = _prepare_shared_state(opts.warm_index and (opts.ray is not None or n_workers > 1))
        flags = dict(opts.flags)
        if opts.ray and opts.devices == "cpu":
            flags["device"] = "cpu"
        cfg = {"run": run, "queue": str(queue.root), "lease": opts.lease_s, "only": only, "flags": flags,
               "ledger": str(ledger_path), "max_inflight": opts.workers}
        where = f"Ray cluster {opts.ray}" if opts.ray else f"{n_workers} worker(s) on {', '.join(devices)}"
        progress.note(f"batch {run}: {total} entr{'y' if total == 1 else 'ies'} on {where}")
        if opts.ray:
            from debugger.batch.ray_runner import run_ray

            summary.interrupted, summary.workers, ray_devices = run_ray(queue, opts.ray, cfg, only, total, progress)
            summary.devices = ray_devices or summary.devices
        else:
            from debugger.batch.local import run_local

            summary.interrupted = run_local(queue, plan, cfg, only, total, progress, MAX_TRIES)
        progress.close()
        summary.per_entry = entry_rows(queue, run)
        summary.remaining = queue.counts()
        summary.seconds = time.time() - t0
        return summary
    finally:
        queue.close()
