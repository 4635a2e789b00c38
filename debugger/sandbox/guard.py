"""Limits and guards applied inside a sandbox worker before it runs candidate code.

- resource limits: address space (CPU device only: CUDA maps huge virtual ranges), file size (runaway
  output), core dumps off;
- a private network namespace where the OS allows it (root or user namespaces), and in any case an
  audit hook that refuses sockets to the outside world;
- an audit hook that refuses fork/exec (except the compiler tools Triton itself runs on a GPU),
  reading the case folders, and writing outside the scratch folder and the compiler cache.

Audit hooks cannot be removed once installed; ctypes can still reach libc, which the integrity gate's
static rules reject separately.
"""
from __future__ import annotations

import ctypes
import os
import re
import resource
import signal
import sys

CREDENTIAL_RE = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|^AWS_|^GCP_|^AZURE_|^OPENAI|^ANTHROPIC|^HF_TOKEN|^GITHUB|^GH_", re.I)
KEEP_ENV = {"PATH", "LANG", "LC_ALL", "TERM", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "TRITON_CACHE_DIR",
            "TRITON_INTERPRET", "PYTHONPATH", "VIRTUAL_ENV", "CUDA_HOME", "CUDA_PATH", "TRITON_PTXAS_PATH",
            "TRITON_LIBCUDA_PATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TMPDIR", "HOME", "USER",
            "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
            "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "CC", "CXX", "TORCH_CUDA_ARCH_LIST", "TORCH_EXTENSIONS_DIR"}
# Tools Triton and load_inline start themselves when compiling on a GPU.
ALLOWED_EXECUTABLES = {"ptxas", "cuobjdump", "nvdisasm", "gcc", "cc", "c++", "g++", "clang", "clang++", "ld",
                       "nvcc", "ninja", "ldconfig", "which", "uname", "cicc", "fatbinary", "nvlink"}
CLONE_NEWNET = 0x40000000


def scrubbed_env(base: dict[str, str]) -> dict[str, str]:
    """The environment a worker gets: a short allow-list, never anything that looks like a credential."""
    env = {k: v for k, v in base.items() if k in KEEP_ENV and not CREDENTIAL_RE.search(k)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


def apply_limits(memory_bytes: int | None, device: str, max_file_bytes: int = 64 << 20) -> None:
    """Resource limits for this process (inherited by anything it starts)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # oversize writes fail with EFBIG instead of killing us
    if memory_bytes and device == "cpu":
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))


def isolate_network() -> bool:
    """Move this process into an empty network namespace; False where the OS refuses."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare(CLONE_NEWNET) == 0
    except (OSError, AttributeError):
        return False


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _real(path) -> str | None:
    if isinstance(path, int):
        return None
    try:
        p = os.fsdecode(path)
    except TypeError:
        return None
    return os.path.realpath(p)


def _is_write(mode, flags) -> bool:
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    if isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND):
        return True
    return False


def install_audit_hook(*, deny_read: list[str], allow_write: list[str]) -> None:
    """Refuse the dangerous operations for the rest of this process's life."""
    deny_read = [os.path.realpath(p) for p in deny_read if p]
    allow_write = [os.path.realpath(p) for p in allow_write if p] + ["/dev/null", "/dev/shm", "/proc/self"]
    own_pid = os.getpid()

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path = _real(args[0])
            if path is None:
                return
            if _inside(path, deny_read):
                raise PermissionError(f"kdebug sandbox: reading {path} is not allowed")
            if _is_write(args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else None) \
                    and not _inside(path, allow_write):
                raise PermissionError(f"kdebug sandbox: writing {path} is not allowed")
        elif event in ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.truncate",
                       "os.link", "os.symlink", "shutil.rmtree", "os.replace", "os.utime"):
            for a in args[:2]:
                path = _real(a) if isinstance(a, (str, bytes, os.PathLike)) else None
                if path and not _inside(path, allow_write):
                    raise PermissionError(f"kdebug sandbox: {event} on {path} is not allowed")
        elif event in ("os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                       "os.kill", "os.killpg", "pty.spawn"):
            if event in ("os.kill", "os.killpg") and args and args[0] in (own_pid, 0):
                return
            # subprocess.Popen (already vetted above) execs through posix_spawn/exec on some Pythons
            target = args[1] if event == "os.spawn" and len(args) > 1 else (args[0] if args else None)
            if event in ("os.exec", "os.posix_spawn", "os.spawn") and isinstance(target, (str, bytes, os.PathLike)) \
                    and os.path.basename(os.fsdecode(target)) in ALLOWED_EXECUTABLES:
                return
            raise PermissionError(f"kdebug sandbox: {event} is not allowed")
        elif event == "subprocess.Popen":
            exe = os.path.basename(os.fsdecode(args[0])) if args and args[0] else ""
            if exe not in ALLOWED_EXECUTABLES:
                raise PermissionError(f"kdebug sandbox: starting {exe or 'a process'} is not allowed")
        elif event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
            sock = args[0]
            family = getattr(sock, "family", None)
            if family is not None and int(family) not in (1,):  # AF_UNIX stays allowed
                raise PermissionError("kdebug sandbox: network access is not allowed")
        elif event == "socket.getaddrinfo":
            raise PermissionError("kdebug sandbox: network access is not allowed")

    sys.addaudithook(hook)
