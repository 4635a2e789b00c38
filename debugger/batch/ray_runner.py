"""Working the queue on an existing Ray cluster: one Ray task per entry, GPUs as Ray resources.

The driver (this process) claims entries from the queue under its own lease, renews the leases of
the entries in flight, submits one task per entry (num_gpus=1 when the cluster has GPUs and the
repair runs on cuda; Ray then shows the task only its GPU) and records each result into the queue
and the main ledger as it comes back. The task runs the same `run_task` a local worker runs, so a
repair on the cluster is the repair `kdebug repair` does. Nodes need kdebug installed (or the
repository on PYTHONPATH, which the driver passes along with the KDEBUG_*/OPENAI_* settings).
"""
from __future__ import annotations

import os
import threading

from debugger.errors import InvalidInput
from debugger.settings import REPO_DIR

ENV_PREFIXES = ("KDEBUG_", "OPENAI_", "HF_", "TRANSFORMERS_", "TRITON_")
WAIT_S = 0.5


def ray_repair(p: dict, flags: dict, outcome_rows: list[dict]) -> dict:
    """The Ray task: one entry through run_task on whatever node Ray chose."""
    from debugger.batch.task import run_task

    return run_task(p, flags, outcome_rows)


def _import_ray():
    try:
        import ray
    except ImportError:
        raise InvalidInput("--ray needs the ray package on this machine and the cluster "
                           "(pip install 'kdebug[ray]')") from None
    return ray


def _connect(ray, address: str) -> None:
    env = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_DIR), *filter(None, [os.environ.get("PYTHONPATH")])])
    try:
        ray.init(address=None if address == "local" else address, runtime_env={"env_vars": env},
                 log_to_driver=False, logging_level="ERROR", configure_logging=True)
    except Exception as e:  # noqa: BLE001 - ray raises several kinds for an unreachable cluster
        first = (str(e).strip().splitlines() or [e.__class__.__name__])[0]
        raise InvalidInput(f"--ray {address}: cannot connect to the cluster: {first[:200]}") from None


class LeaseKeeper(threading.Thread):
    """Renews the leases of the entries in flight (its own queue connection)."""

    def __init__(self, queue_dir, worker: str, lease_s: float, inflight: dict):
        super().__init__(daemon=True)
        self.args = (queue_dir, worker, lease_s)
        self.inflight = inflight
        self.stopped = threading.Event()

    def run(self) -> None:
        from debugger.batch.queue import Queue

        queue_dir, worker, lease_s = self.args
        queue = Queue(queue_dir)
        try:
            while not self.stopped.wait(lease_s / 3):
                for entry in list(self.inflight.values()):
                    queue.heartbeat(entry["id"], worker, lease_s)
        finally:
            queue.close()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)


def run_ray(queue, address: str, cfg: dict, only: list[str] | None, total: int, progress) -> tuple[bool, int, list]:
    """Run the queue on the cluster; (interrupted, concurrent tasks, devices)."""
    from debugger.batch.ledger_rows import outcomes
    from debugger.batch.summary import batch_size, counts_so_far
    from debugger.batch.task import payload, record, record_failure

    ray = _import_ray()
    _connect(ray, address)
    worker, lease_s, ledger = f"{cfg['run']}/ray", float(cfg["lease"]), cfg.get("ledger")
    inflight: dict = {}
    keeper = LeaseKeeper(queue.root, worker, lease_s, inflight)
    interrupted = False
    try:
        resources = ray.cluster_resources()
        gpus, cpus = int(resources.get("GPU", 0)), int(resources.get("CPU", 1))
        use_gpu = gpus > 0 and cfg["flags"].get("device") != "cpu"
        flags = {**cfg["flags"], "device": "cuda" if use_gpu else "cpu"}
        task = ray.remote(ray_repair).options(num_cpus=1, num_gpus=1 if use_gpu else 0, max_retries=0)
        window = max(1, gpus if use_gpu else cpus)
        if cfg.get("max_inflight"):
            window = min(window, int(cfg["max_inflight"]))
        devices = [f"ray:{gpus} GPU"] if use_gpu else [f"ray:{cpus} CPU"]
        rows = outcomes(ledger)
        keeper.start()
        while True:
            while len(inflight) < window:
                entry = queue.claim(worker, lease_s, only=only)
                if entry is None:
                    break
                inflight[task.remote(payload(entry), flags, rows)] = entry
            if not inflight:
                break
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=WAIT_S)
            for ref in ready:
                entry = inflight.pop(ref)
                try:
                    out = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - a task that died fails its entry only
                    first = (str(e).strip().splitlines() or [""])[-1]
                    record_failure(queue, entry["id"], worker, f"ray task failed: {e.__class__.__name__}: {first[:300]}")
                    continue
                record(queue, entry["id"], worker, out, ledger)
                progress.note(f"{entry['id']}: {out['result'].get('status')}")
            done, results, running = counts_so_far(queue, cfg["run"])
            total = batch_size(queue, only, done, running, total)
            progress.update(done, total, results, running)
        return False, window, devices
    except KeyboardInterrupt:
        interrupted = True
        for ref, entry in list(inflight.items()):
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - best effort: the entry goes back either way
                pass
            queue.release(entry["id"], worker)
        return interrupted, len(inflight), []
    finally:
        if keeper.is_alive():
            keeper.stop()
        ray.shutdown()
