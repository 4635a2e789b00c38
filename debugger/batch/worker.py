"""A local batch worker process: claim an entry, repair it under a lease, record it, repeat.

Started by the batch driver as `python -m debugger.batch.worker CONFIG.json` with its device chosen
through CUDA_VISIBLE_DEVICES. Ctrl-C or SIGTERM mid-repair gives the entry back (queued) before the
process exits; if the driver dies, the kernel sends this process SIGTERM too (PR_SET_PDEATHSIG), so no
orphan keeps claiming work. Anything harder (SIGKILL, a crash) leaves the entry `running` with this
pid, and the next batch's `recover` puts it back.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import traceback


class Lease(threading.Thread):
    """Renews one entry's lease every lease/3 seconds until stopped (its own queue connection)."""

    def __init__(self, queue_dir: str, entry_id: str, worker: str, lease_s: float):
        super().__init__(daemon=True)
        self.args = (queue_dir, entry_id, worker, lease_s)
        self.stopped = threading.Event()
        self.lost = False

    def run(self) -> None:
        from debugger.batch.queue import Queue

        queue_dir, entry_id, worker, lease_s = self.args
        queue = Queue(queue_dir)
        try:
            while not self.stopped.wait(lease_s / 3):
                if not queue.heartbeat(entry_id, worker, lease_s):
                    self.lost = True
                    return
        finally:
            queue.close()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)


def _terminate(signum, frame):  # noqa: ARG001 - signal handler signature
    raise SystemExit(128 + signum)


def _die_with_parent(parent_pid: int) -> None:
    """SIGTERM this process when the driver dies (Linux); exit now if it is already gone."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:
        raise SystemExit(1)


def _say(msg: str) -> None:
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def work(cfg: dict) -> int:
    """The claim-repair-record loop; returns the number of entries this worker finished."""
    from debugger.batch.ledger_rows import outcomes
    from debugger.batch.task import payload, record, record_failure, run_task
    from debugger.batch.queue import Queue

    queue = Queue(cfg["queue"])
    worker, lease_s, only = cfg["worker"], float(cfg["lease"]), cfg.get("only")
    finished = 0
    try:
        while True:
            entry = queue.claim(worker, lease_s, only=only)
            if entry is None:
                return finished
            _say(f"[{worker}] {entry['id']}: repairing ...")
            lease = Lease(cfg["queue"], entry["id"], worker, lease_s)
            lease.start()
            try:
                out = run_task(payload(entry), cfg["flags"], outcomes(cfg.get("ledger")),
                               progress=lambda m, e=entry["id"]: _say(f"[{worker}] {e}: {m}"))
            except (KeyboardInterrupt, SystemExit):
                lease.stop()
                queue.release(entry["id"], worker)
                _say(f"[{worker}] {entry['id']}: interrupted, given back to the queue")
                raise
            except Exception as e:  # noqa: BLE001 - a crash of the repair machinery fails this entry only
                lease.stop()
                _say(traceback.format_exc())
                record_failure(queue, entry["id"], worker, f"{e.__class__.__name__}: {e}")
                finished += 1
                continue
            lease.stop()
            if record(queue, entry["id"], worker, out, cfg.get("ledger")):
                finished += 1
                _say(f"[{worker}] {entry['id']}: {out['result'].get('status')}")
            else:
                _say(f"[{worker}] {entry['id']}: lease lost before the result landed; result dropped")
    finally:
        queue.close()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as fh:
        cfg = json.load(fh)
    signal.signal(signal.SIGTERM, _terminate)
    _die_with_parent(int(cfg["parent"]))
    try:
        work(cfg)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
