"""Working the queue on this machine: one worker process per slot, watched until the work is done.

Workers are separate processes (`python -m debugger.batch.worker`): each repair has its own sandbox
and CUDA context, a crash takes down one worker and not the batch, and a GPU worker sees only its GPU.
The driver only watches: it draws the progress bar from the queue, restarts a worker that died while
work remains (its entry goes back to the queue first, or fails after MAX_TRIES), and on Ctrl-C stops
the workers, which give their entries back.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from debugger.batch.summary import batch_size, counts_so_far
from debugger.settings import REPO_DIR

POLL_S = 0.5
STOP_GRACE_S = 20.0
MAX_RESTARTS = 3


def _env(slot) -> dict:
    env = dict(os.environ)
    env.update(slot.env())
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_DIR), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _start(slot, cfg: dict, logs: Path) -> subprocess.Popen:
    stem = logs / cfg["worker"].replace("/", "-")
    config = stem.with_suffix(".json")  # a file, not argv: the entry list of a large --limit is long
    config.write_text(json.dumps(cfg))
    log = stem.with_suffix(".log").open("a")
    try:
        return subprocess.Popen([sys.executable, "-m", "debugger.batch.worker", str(config)], env=_env(slot),
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=str(REPO_DIR))
    finally:
        log.close()


def _work_left(queue, only: list[str] | None) -> bool:
    if only is None:
        return queue.counts()["queued"] > 0
    return any(e["status"] == "queued" for e in map(queue.entry, only) if e)


def _stop(procs: dict, progress) -> None:
    alive = [p for p in procs.values() if p.poll() is None]
    if alive:
        progress.note(f"stopping {len(alive)} worker(s); their entries go back to the queue ...")
    for p in alive:
        p.send_signal(signal.SIGTERM)
    deadline = time.time() + STOP_GRACE_S
    for p in alive:
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def run_local(queue, slots, cfg_base: dict, only: list[str] | None, total: int, progress, max_tries: int) -> bool:
    """Run the workers until the work is done; True if interrupted (Ctrl-C)."""
    logs = queue.root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    run = cfg_base["run"]
    configs = {s.name: {**cfg_base, "worker": f"{run}/{s.name}", "flags": {**cfg_base["flags"], "device": s.device},
                        "parent": os.getpid()} for s in slots}
    procs = {s.name: _start(s, configs[s.name], logs) for s in slots}
    restarts = {s.name: 0 for s in slots}
    by_name = {s.name: s for s in slots}
    try:
        while True:
            done, results, running = counts_so_far(queue, run)
            total = batch_size(queue, only, done, running, total)
            progress.update(done, total, results, running)
            for name, p in list(procs.items()):
                code = p.poll()
                if code is None or code == 0:
                    continue
                del procs[name]
                queue.recover(max_tries=max_tries)
                progress.note(f"worker {name} exited with status {code} (log: {logs})")
                if restarts[name] < MAX_RESTARTS and _work_left(queue, only):
                    restarts[name] += 1
                    procs[name] = _start(by_name[name], configs[name], logs)
            if all(p.poll() is not None for p in procs.values()):
                done, results, running = counts_so_far(queue, run)
                progress.update(done, batch_size(queue, only, done, running, total), results, running)
                return False
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        _stop(procs, progress)
        queue.recover(max_tries=None)
        return True
