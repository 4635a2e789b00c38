"""compute-sanitizer on one failing check of the candidate, inside the sandbox (a CUDA GPU only).

Each tool (memcheck, initcheck, racecheck, synccheck) gets a sandbox of its own whose zygote runs
under `compute-sanitizer --tool T --target-processes all` (Sandbox.launcher): the candidate worker it
forks is the evaluation's own (same guards, same roles), and runs the first failing check once. Its
environment adds what the tools need: PyTorch's caching allocator off (memcheck sees only the
driver's allocations: an access past a tensor inside a cached block is invisible otherwise), nvcc's
`-lineinfo` for load_inline builds (into a build folder of their own, keyed like the evaluation's),
and Triton keeps the line information it emits by default. Initcheck runs without the poison fill
(a fill writes every element, so nothing would be uninitialised).

The log is parsed (sanitizer_report.py) and every finding placed: `in_candidate` when it is in one
of the candidate's kernels, `pyline` its line in the candidate's Python file (a Triton kernel's lines
are the file's own; a CUDA line of `cuda.cu` is mapped back through the load_inline strings,
lang/cuda/build_lines.py). sanitizer_evidence.py turns findings into evidence. Where the sanitizer is
absent (a CPU, CI) or the device is not CUDA, the result says why it was skipped.
"""
from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path, PurePath

from debugger.diagnose.sanitizer_report import parse
from debugger.errors import SandboxError
from debugger.sandbox import channel
from debugger.sandbox.pool import Sandbox, WorkerDied, WorkerTimeout

TOOLS = ("memcheck", "initcheck", "racecheck", "synccheck")
PRINT_LIMIT = 200
TOOL_FLAGS = {"racecheck": ("--racecheck-report", "analysis")}
CANDIDATE_FILE = "candidate.py"  # the name the worker imports the candidate under (inputs.load_module)
MIN_TIMEOUT = 300.0  # a load_inline build with -lineinfo, and a run slowed by the instrumentation
GRACE = 30.0  # seconds for the worker and the sanitizer to exit and write their logs


def find_compute_sanitizer() -> str | None:
    """The compute-sanitizer executable: PATH, then the CUDA toolkit's usual places."""
    exe = shutil.which("compute-sanitizer")
    if exe:
        return exe
    roots = [os.environ.get(k) for k in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")]
    try:  # the toolkit load_inline compiles with
        from torch.utils.cpp_extension import CUDA_HOME
        roots.append(CUDA_HOME)
    except Exception:  # noqa: BLE001 - torch without its extension tools
        pass
    places = [Path(r) / sub for r in roots if r for sub in ("bin", "compute-sanitizer")]
    places += [Path("/usr/local/cuda/bin"), Path("/usr/local/cuda/compute-sanitizer"), Path("/opt/cuda/bin")]
    places += sorted(Path("/usr/local").glob("cuda-*/bin"), reverse=True)
    for folder in places:
        exe = folder / "compute-sanitizer"
        if exe.is_file() and os.access(exe, os.X_OK):
            return str(exe)
    return None


def tools_for(src: str, report) -> list[str]:
    """The tools worth their time on this candidate: memcheck and initcheck always; racecheck where
    shared memory is declared or the outputs drifted between runs; synccheck where barriers are."""
    tools = ["memcheck", "initcheck"]
    drift = any(c.drift is not None and math.isfinite(c.drift) and c.drift > 0 for c in report.checks)
    if "__shared__" in src or drift:
        tools.append("racecheck")
    if re.search(r"__syncthreads|__syncwarp|\.sync\(\)|bar\.sync", src):
        tools.append("synccheck")
    return tools


class SanitizedSandbox(Sandbox):
    """A sandbox whose zygote (and so every worker it forks) runs under one compute-sanitizer tool."""

    def __init__(self, exe: str, tool: str, log_dir: Path, build_base: Path, timeout: float,
                 device: str = "cuda"):
        super().__init__(device, timeout=timeout)
        self.scratch_root = Path(tempfile.mkdtemp(prefix=f"kdebug-sanitizer-{tool}-"))
        # KDEBUG_UNDER_SANITIZER keeps the candidate worker in this network namespace: the tool's library
        # in the worker reports to its front end over a local TCP connection, which the empty namespace
        # a candidate normally gets cuts off, and the run then never finishes.
        env = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "NVCC_APPEND_FLAGS": "-lineinfo",
               "KDEBUG_TORCH_EXTENSIONS_BASE": str(build_base), "KDEBUG_UNDER_SANITIZER": tool}
        self.launcher = (exe, "--tool", tool, "--target-processes", "all", "--launch-timeout", "0",
                         "--print-limit", str(PRINT_LIMIT), "--log-file", str(log_dir / f"{tool}.%p.log"),
                         *TOOL_FLAGS.get(tool, ()), shutil.which("env") or "/usr/bin/env",
                         *(f"{k}={v}" for k, v in env.items()))

    def close(self) -> None:
        """Let the zygote exit by itself so that the sanitizer ends normally and writes its summary."""
        with self._lock:
            if self._conn is not None and self._proc is not None:
                try:
                    channel.send(self._conn, {"op": "exit"})
                    self._proc.wait(timeout=GRACE)
                except (OSError, subprocess.TimeoutExpired):
                    pass
        super().close()


def _stop_worker(sandbox: Sandbox, worker) -> None:
    """Ask the worker to exit and wait for it (its findings reach the sanitizer), then make sure."""
    try:
        channel.send(worker.conn, {"op": "exit"})
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline and sandbox.exit_status(worker.pid) is None:
            time.sleep(0.2)
    except OSError:
        pass
    worker.close()


def _tail(path: Path, n: int = 600) -> str:
    try:
        return path.read_bytes()[-n:].decode(errors="replace").strip()
    except OSError:
        return ""


def _under(path: str, root: Path) -> bool:
    try:
        return Path(path).resolve().is_relative_to(root.resolve())
    except (OSError, ValueError):
        return False


def _file_text(path: str, root: Path) -> str | None:
    """The compiled file's text when it lies in the sanitizer's build folder (for the line check)."""
    p = Path(path)
    try:
        if _under(path, root) and p.is_file() and p.stat().st_size < (4 << 20):
            return p.read_text(errors="replace")
    except OSError:
        pass
    return None


def place(finding: dict, src: str, kernels: set[str], build_base: Path | None = None) -> dict:
    """Set `pyline` (the candidate's Python line) and `in_candidate` on a finding and its accesses."""
    from debugger.lang.cuda.build_lines import python_line

    def line_of(kernel, file, line):
        if not file or not line:
            return None
        if PurePath(file).name == CANDIDATE_FILE:  # a Triton kernel: the candidate file's own lines
            return line
        built = build_base is not None and _under(file, build_base)  # compiled from the candidate's strings
        if kernel in kernels or built:
            return python_line(src, file, line, kernel, _file_text(file, build_base) if built else None)
        return None

    finding["pyline"] = line_of(finding.get("kernel"), finding.get("file"), finding.get("line"))
    for a in finding.get("accesses") or []:
        a["pyline"] = line_of(a.get("kernel"), a.get("file"), a.get("line"))
    finding["in_candidate"] = bool(finding.get("kernel") in kernels or finding["pyline"] is not None)
    return finding


def run_tool(case, spec: dict, tool: str, exe: str, timeout: float = MIN_TIMEOUT, device: str = "cuda") -> dict:
    """One tool on one check: {tool, status, message, errors, complete, findings, seconds}.
    (`device` other than cuda only runs the plumbing, under a stand-in for the sanitizer: tests.)"""
    from debugger import lang
    from debugger.evaluate import sandbox_cache_dir

    t0 = time.monotonic()
    timeout = max(timeout, MIN_TIMEOUT)
    log_dir = Path(tempfile.mkdtemp(prefix=f"kdebug-{tool}-log-"))
    build_base = sandbox_cache_dir() / "torch_extensions_lineinfo"
    deny = [str(p) for p in {case.reference_path.parent if case.reference_path else None,
                             case.candidate_path.parent if case.candidate_path else None} if p]
    setup = {"reference_src": case.reference_src, "candidate_src": case.candidate_src, "deny_read": deny,
             "allow_write": [str(sandbox_cache_dir())]}
    run_spec = dict(spec, call=1, localise=False, capture=False, probes=False)
    if tool == "initcheck":
        run_spec["poison"] = None
    status, message, pid = "ran", "", None
    sandbox = SanitizedSandbox(exe, tool, log_dir, build_base, timeout, device)
    try:
        worker = sandbox.spawn("candidate", setup)
        pid = worker.pid
        try:
            hello, _ = worker.wait_reply(timeout)
            if not hello.get("ok"):
                status, message = "import_failed", str(hello.get("error", ""))
            else:
                header, _ = worker.request({"op": "run", "spec": run_spec}, timeout=timeout)
                if not header.get("ok"):
                    status, message = "raised", str(header.get("error", ""))
        except WorkerTimeout as e:
            status, message = "timeout", str(e)
        except WorkerDied as e:
            status, message = "crashed", str(e)
        finally:
            _stop_worker(sandbox, worker)
    except SandboxError as e:
        status, message = "not_started", f"{e}: {_tail(sandbox.scratch_root / 'zygote.log')}"
    finally:
        sandbox.close()
    logs = sorted(log_dir.glob("*.log"))
    text = "\n".join(p.read_text(errors="replace") for p in logs)
    shutil.rmtree(log_dir, ignore_errors=True)
    report = parse(text, tool)
    kernels = {k.name for language in lang.used_by(case.candidate_src) for k in language.kernels(case.candidate_src)}
    findings = [place(f.to_dict(), case.candidate_src, kernels, build_base) for f in report.findings]
    if not text.strip() and status == "ran":
        status, message = "no_log", "compute-sanitizer wrote no log"
    # one log per process (--log-file NAME.%p.log): whether the worker's own was written
    seen = any(f".{pid}." in p.name for p in logs) if pid is not None and len(logs) > 1 else None
    return {"tool": tool, "status": status, "message": message[:400], "errors": report.errors,
            "complete": report.complete, "findings": findings, "worker_logged": seen,
            "log_tail": text[-2000:], "seconds": round(time.monotonic() - t0, 1)}


def run_sanitizer(case, report, device: str, timeout: float = 120.0, seconds: float | None = None,
                  tools: list[str] | None = None) -> dict:
    """The tools on the first failing check: {executable, check, tools: [run_tool results]}, or
    {skipped: reason} off a CUDA GPU, without compute-sanitizer, or without a failing check.
    `seconds` bounds the time: no further tool starts once it has gone (the first always runs)."""
    from debugger.diagnose.experiments import failing_specs

    if device != "cuda":
        return {"skipped": "compute-sanitizer runs on a CUDA GPU (--device cuda)"}
    exe = find_compute_sanitizer()
    if exe is None:
        return {"skipped": "compute-sanitizer not found (PATH, CUDA_HOME, /usr/local/cuda/bin)"}
    specs = failing_specs(report)
    specs = [s for s in specs if s.get("kind") != "kernelbench"] or specs
    if not specs:
        return {"skipped": "no failing check to run"}
    chosen = list(tools or tools_for(case.candidate_src, report))
    out = {"executable": exe, "check": specs[0]["name"], "tools": []}
    t0 = time.monotonic()
    for i, tool in enumerate(chosen):
        if seconds is not None and out["tools"] and time.monotonic() - t0 > seconds:
            out["not_run"] = chosen[i:]
            break
        out["tools"].append(run_tool(case, specs[0], tool, exe, timeout))
    return out


def summary(result: dict) -> str:
    """One line: what each tool found, or why none ran."""
    if result.get("skipped"):
        return f"compute-sanitizer skipped: {result['skipped']}"
    parts = []
    for t in result.get("tools", []):
        own = [f for f in t["findings"] if f.get("in_candidate")]
        parts.append(f"{t['tool']}: {len(own)} finding(s) in the candidate's kernels"
                     + (f" ({t['status']}: {t['message'][:80]})" if t["status"] != "ran" else ""))
    return "; ".join(parts)
