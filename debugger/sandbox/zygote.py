"""The warm zygote: a process with torch and triton already imported that forks one worker per role.

Started by the parent (pool.py) as `python -m debugger.sandbox.zygote FD DEVICE`. It never runs
kernels itself (so CUDA is never initialised before a fork); each forked worker gets its own
socket, scratch folder, limits and guards, and dies with its evaluation. Forking keeps the cost of a
fresh, clean process per evaluation far below a cold Python + torch start.
"""
from __future__ import annotations

import faulthandler
import os
import signal
import sys
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle

_statuses: dict[int, int] = {}


def _reap(signum, frame) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _statuses[pid] = status
        if len(_statuses) > 4096:
            _statuses.pop(next(iter(_statuses)))


def _describe(status: int | None) -> str | None:
    if status is None:
        return None
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"killed by signal {signal.Signals(sig).name}"
        except ValueError:
            return f"killed by signal {sig}"
    return f"exited with status {os.WEXITSTATUS(status)}"


PR_SET_PDEATHSIG = 1


def _die_with_zygote(zygote: int) -> None:
    """The worker is killed when the zygote goes: a worker is in a session of its own (out of reach of the
    zygote's process group), and a kdebug killed mid-check (a caller's timeout) closes the zygote's socket, so
    the zygote exits while its worker may be hours into an emulated kernel (one ran on for 80 minutes)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the worker ends when its next reply finds the socket closed
        return
    if os.getppid() != zygote:  # the zygote went between the fork and the prctl
        os._exit(1)


def _child(fd: int, header: dict, zygote: int) -> None:
    """Runs in the forked worker: isolate, limit, then serve requests."""
    from pathlib import Path
    import tempfile

    from debugger.sandbox import guard, roles

    os.setsid()
    _die_with_zygote(zygote)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    scratch = header["scratch"]
    os.chdir(scratch)
    log = os.open(os.path.join(scratch, "worker.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    faulthandler.enable(file=sys.stderr)
    os.environ["HOME"] = scratch
    os.environ["TMPDIR"] = scratch
    tempfile.tempdir = scratch
    role = header["role"]
    setup = header["setup"]
    if role == "candidate" and not os.environ.get("KDEBUG_UNDER_SANITIZER"):  # set by the parent only
        guard.isolate_network()  # (the Python audit hook refuses outside sockets either way)
    guard.apply_limits(header.get("memory_bytes"), setup["device"])
    import torch

    torch.set_num_threads(max(1, int(header.get("threads", 1))))
    conn = Connection(fd)
    roles.serve(conn, role, setup, Path(scratch))
    os._exit(0)


WARMUP_KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def _warm(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.exp(x - tl.max(x, axis=0)) + tl.sum(x, axis=0), mask=mask)
    acc = tl.zeros((16, 16), dtype=tl.float32)
    a = tl.load(x_ptr + tl.arange(0, 16)[:, None] * 0 + tl.arange(0, 16)[None, :])
    acc += tl.dot(a, a)
    tl.atomic_add(y_ptr + offs, 0.0, mask=mask)


def run():
    x = torch.zeros(300)
    y = torch.empty_like(x)
    _warm[(triton.cdiv(300, 128),)](x, y, 300, BLOCK=128)
"""


def _warm_dispatch_mode() -> None:
    """The first TorchDispatchMode use imports a lot (seconds); do it once, before any fork."""
    import torch

    from debugger.sandbox.hooks import PoisonAndRecord

    from debugger import compare
    from debugger.sandbox import channel

    with PoisonAndRecord():
        (torch.empty(4) + 1).sum()
    ref = torch.randn(3, 5, dtype=torch.float64)
    out = channel.blob_to_tensors(channel.tensors_to_blob([ref.float()]))[0]
    compare.output_stats(0, out + 1, ref, torch.float32, 1e-4, 1e-4)
    compare.max_difference([out], [out])


def _warm_interpreter() -> None:
    """Run one tiny kernel so every forked worker inherits a warmed-up interpreter."""
    import importlib.util
    import tempfile

    folder = tempfile.mkdtemp(prefix="kdebug-warm-")
    path = os.path.join(folder, "kdebug_warmup.py")
    with open(path, "w") as f:
        f.write(WARMUP_KERNEL)
    try:
        spec = importlib.util.spec_from_file_location("kdebug_warmup", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.run()
    except Exception:  # noqa: BLE001 - warm-up is an optimisation only
        pass


def main() -> None:
    fd, device = int(sys.argv[1]), sys.argv[2]
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    import torch  # noqa: F401  - warm imports shared by every forked worker
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    from debugger import compare, inputs  # noqa: F401
    from debugger.sandbox import channel, guard, hooks, roles  # noqa: F401

    _warm_dispatch_mode()
    if device == "cpu":
        from debugger.sandbox.gpu_compile import snapshot_language
        snapshot_language()  # before the warm-up kernel patches triton.language (gpu_compile.py)
        _warm_interpreter()
    conn = Connection(fd)
    signal.signal(signal.SIGCHLD, _reap)
    channel.send(conn, {"ok": True, "pid": os.getpid()})
    while True:
        try:
            header, _ = channel.recv(conn)
        except (EOFError, OSError):
            return
        op = header.get("op")
        if op == "spawn":
            child_fd = recv_handle(conn)
            zygote = os.getpid()
            pid = os.fork()
            if pid == 0:
                try:
                    conn.close()
                    _child(child_fd, header, zygote)
                finally:
                    os._exit(1)
            os.close(child_fd)
            channel.send(conn, {"ok": True, "pid": pid})
        elif op == "status":
            channel.send(conn, {"ok": True, "status": _describe(_statuses.get(header["pid"]))})
        elif op == "exit":
            return


if __name__ == "__main__":
    main()
