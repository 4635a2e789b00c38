"""Parent side of the sandbox: a warm zygote per device, and handles on the workers it forks.

A request to a worker has a wall-clock timeout and a memory watchdog; a hung or runaway worker is
killed (its whole process group) and reported as WorkerTimeout / WorkerDied, never as a crash of the
caller. The zygote itself is restarted if it dies.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from multiprocessing.reduction import send_handle
from pathlib import Path

from debugger import trace
from debugger.errors import SandboxError
from debugger.sandbox import channel
from debugger.sandbox.guard import scrubbed_env
from debugger.settings import data_dir, default_memory_limit_gb


class WorkerTimeout(Exception):
    """The worker did not answer in time and was killed."""


class WorkerDied(Exception):
    """The worker process ended (crash, segfault, memory limit) before answering."""


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Worker:
    """One forked worker (reference or candidate role) and its scratch folder."""

    def __init__(self, sandbox: "Sandbox", pid: int, conn: Connection, scratch: Path, role: str):
        self.sandbox, self.pid, self.conn, self.scratch, self.role = sandbox, pid, conn, scratch, role
        self.dead = False

    def request(self, header: dict, blob: bytes | None = None, timeout: float | None = None):
        """Send a request and wait for the reply: (header, blob)."""
        self.post(header, blob)
        return self.reply(timeout)

    def post(self, header: dict, blob: bytes | None = None) -> None:
        """Send a request without waiting (`reply` collects the answer), so that two workers can work
        side by side."""
        if self.dead:
            raise WorkerDied("worker already ended")
        self._posted = (time.perf_counter(), header, len(blob or b""))
        try:
            channel.send(self.conn, header, blob)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.kill()
            raise WorkerDied(self.death_message()) from None

    def reply(self, timeout: float | None = None):
        """The answer to the last posted request: (header, blob)."""
        timeout = self.sandbox.timeout if timeout is None else timeout
        started, header, sent = self._posted
        reply = self.wait_reply(timeout)
        if trace.enabled():
            trace.record("request", started, role=self.role, op=header.get("op"),
                         check=(header.get("spec") or {}).get("name"), sent_bytes=sent,
                         reply_bytes=len(reply[1] or b""))
        return reply

    def wait_reply(self, timeout: float):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerTimeout(f"no answer within {timeout:g} s (worker killed)")
            try:
                ready = self.conn.poll(min(0.05, left))
            except (EOFError, OSError):
                ready = True
            if ready:
                try:
                    return channel.recv(self.conn, spill_root=self.scratch)
                except (EOFError, OSError, ValueError):
                    self.kill()
                    raise WorkerDied(self.death_message()) from None
            limit = self.sandbox.memory_bytes
            if limit and _rss_bytes(self.pid) > limit:
                self.kill()
                raise WorkerDied(f"memory limit exceeded ({limit / 2**30:.1f} GiB resident; worker killed)")

    def death_message(self) -> str:
        status = None
        for _ in range(20):
            status = self.sandbox.exit_status(self.pid)
            if status:
                break
            time.sleep(0.02)
        tail = self.log_tail(600)
        msg = f"worker {status or 'ended'}"
        if tail:
            lines = [l for l in tail.strip().splitlines() if l.strip()]
            msg += f"; last output: {lines[-1][:300]}" if lines else ""
        return msg

    def log_tail(self, n: int = 2000) -> str:
        try:
            data = (self.scratch / "worker.log").read_bytes()
            return data[-n:].decode(errors="replace")
        except OSError:
            return ""

    def kill(self) -> None:
        if self.dead:
            return
        self.dead = True
        for target in (lambda: os.killpg(self.pid, signal.SIGKILL), lambda: os.kill(self.pid, signal.SIGKILL)):
            try:
                target()
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.conn.close()
        except OSError:
            pass

    def close(self) -> None:
        """Ask the worker to exit, then make sure it is gone and its scratch removed."""
        if not self.dead:
            try:
                channel.send(self.conn, {"op": "exit"})
            except OSError:
                pass
            time.sleep(0)
            self.kill()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Sandbox:
    """A warm zygote for one device, forking workers on demand."""

    launcher: tuple[str, ...] = ()  # a command the zygote runs under (a sanitizer: diagnose/sanitizer.py)

    def __init__(self, device: str = "cpu", *, timeout: float = 120.0, memory_limit_gb: float = 16.0,
                 threads: int | None = None):
        self.device = device
        self.timeout = timeout
        self.memory_bytes = int(memory_limit_gb * 2**30) if memory_limit_gb else None
        self.threads = threads or max(1, min(4, (os.cpu_count() or 2)))
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self.scratch_root = Path(tempfile.gettempdir()) / f"kdebug-sandbox-{os.getpid()}"

    def _start(self) -> None:
        parent, child = socket.socketpair()
        env = scrubbed_env(dict(os.environ))
        env["TRITON_CACHE_DIR"] = str(data_dir() / "triton-cache")
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2])] +
                                            ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
        env.setdefault("OMP_NUM_THREADS", str(self.threads))
        self.scratch_root.mkdir(parents=True, exist_ok=True)
        log = open(self.scratch_root / "zygote.log", "ab")
        self._proc = subprocess.Popen(
            [*self.launcher, sys.executable, "-m", "debugger.sandbox.zygote", str(child.fileno()), self.device],
            pass_fds=[child.fileno()], env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, cwd=str(self.scratch_root))
        child.close()
        log.close()
        self._conn = Connection(parent.detach())
        if not self._conn.poll(180):
            self._stop()
            raise SandboxError("sandbox zygote did not start within 180 s")
        try:
            channel.recv(self._conn)
        except (EOFError, OSError):
            tail = (self.scratch_root / "zygote.log").read_text(errors="replace")[-500:]
            self._stop()
            raise SandboxError(f"sandbox zygote failed to start: {tail.strip().splitlines()[-1:] or ''}")

    def _stop(self) -> None:
        if self._proc is not None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._proc.wait()
        self._proc = None
        self._conn = None

    def _ensure(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self._stop()
            self._start()

    def spawn(self, role: str, setup: dict) -> Worker:
        """Fork a fresh worker for `role` ('reference' | 'candidate') and wait for its setup reply."""
        started = time.perf_counter()
        self.scratch_root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f"{role[:3]}-", dir=self.scratch_root))
        parent, child = socket.socketpair()
        header = {"op": "spawn", "role": role, "setup": dict(setup, device=self.device),
                  "scratch": str(scratch), "memory_bytes": self.memory_bytes, "threads": self.threads}
        with self._lock:
            for attempt in range(2):
                try:
                    self._ensure()
                    channel.send(self._conn, header)
                    send_handle(self._conn, child.fileno(), self._proc.pid)
                    reply, _ = channel.recv(self._conn)
                    break
                except (EOFError, OSError):
                    self._stop()
                    if attempt:
                        raise SandboxError("sandbox zygote died while forking a worker") from None
        child.close()
        if trace.enabled():
            trace.record("spawn", started, role=role)
        return Worker(self, reply["pid"], Connection(parent.detach()), scratch, role)

    def exit_status(self, pid: int) -> str | None:
        with self._lock:
            if self._conn is None:
                return None
            try:
                channel.send(self._conn, {"op": "status", "pid": pid})
                reply, _ = channel.recv(self._conn)
                return reply.get("status")
            except (EOFError, OSError):
                return None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                try:
                    channel.send(self._conn, {"op": "exit"})
                except OSError:
                    pass
            self._stop()
        shutil.rmtree(self.scratch_root, ignore_errors=True)


_SANDBOXES: dict[tuple, Sandbox] = {}
_SANDBOXES_LOCK = threading.Lock()


def get_sandbox(device: str, timeout: float = 120.0, memory_limit_gb: float | None = None) -> Sandbox:
    """The process-wide warm sandbox for a device (created on first use). Without `memory_limit_gb`
    the limit stays what it is (settings.default_memory_limit_gb() for a new one); 0: none."""
    with _SANDBOXES_LOCK:
        sb = _SANDBOXES.get((device,))
        if sb is None:
            limit = default_memory_limit_gb() if memory_limit_gb is None else memory_limit_gb
            sb = _SANDBOXES[(device,)] = Sandbox(device, timeout=timeout, memory_limit_gb=limit)
        sb.timeout = timeout
        if memory_limit_gb is not None:
            sb.memory_bytes = int(memory_limit_gb * 2**30) if memory_limit_gb else None
        return sb


def _close_all() -> None:
    for sb in list(_SANDBOXES.values()):
        try:
            sb.close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


import atexit  # noqa: E402

atexit.register(_close_all)
