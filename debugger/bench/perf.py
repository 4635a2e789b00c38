"""Performance on a GPU: run debugger.bench.timing in a subprocess and turn its numbers into figures.

Per case: the median times of the repaired kernel, fixed.py and the PyTorch reference, their peak
memory, the speedups, and the roofline fraction: the time the operator would need at the device's
measured ceilings (bytes moved over the copy bandwidth, flops over the matmul throughput, whichever
is larger) divided by the time it took (1.0 = at the ceiling).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parents[2]  # so the runner imports this checkout's debugger

def run_timing(spec: dict, timeout: float = 600.0) -> dict:
    """`python -m debugger.bench.timing` on `spec`; its JSON line, or {"ok": False, "error"}.

    A spec with a "sandbox" runs in a worker's environment (the allow-listed variables, its own TMPDIR and
    HOME, Triton's cache in the sandbox cache) and confines itself (debugger/bench/timing.py)."""
    with tempfile.TemporaryDirectory(prefix="kdebug-timing-") as scratch:
        path = Path(scratch) / "spec.json"
        path.write_text(json.dumps(spec))
        env = dict(os.environ)
        if spec.get("sandbox"):
            from debugger.sandbox.guard import scrubbed_env

            env = scrubbed_env(env)
            env.update(TMPDIR=scratch, HOME=scratch, TRITON_CACHE_DIR=spec["sandbox"]["cache"])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_DIR), env.get("PYTHONPATH")]))
        # its own process group, so that a timeout also ends the compilers a build started (left running,
        # they held the cores the next builds needed)
        proc = subprocess.Popen([sys.executable, "-m", "debugger.bench.timing", str(path)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env, cwd=scratch, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()
            return {"ok": False, "error": f"timing did not finish within {timeout:g} s"}
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    try:
        result = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return {"ok": False, "error": f"timing process exited {proc.returncode} without a result",
                "stderr_tail": stderr[-1500:]}
    return result


def measure_ceilings(timeout: float = 600.0) -> dict:
    """The device's copy bandwidth and matmul throughput, measured once per run."""
    return run_timing({"op": "ceilings"}, timeout)


def build_extension(candidate_src: str, reference_src: str, sandbox: dict, timeout: float = 600.0) -> dict:
    """The candidate's load_inline build alone, in a confined process ("sandbox": {"deny_read", "cache"}), into
    the extensions folder under the cache that an evaluation with the same cache builds into and then loads
    from: {"ok": True} or {"error"}. The module is imported and no ModelNew built, so nothing is put on the
    device: the build (a minute of the host's cores) can run before an evaluation takes its share of the GPU."""
    out = run_timing({"op": "build", "device": "cuda", "construct": False, "reference_src": reference_src,
                      "implementations": {"candidate": candidate_src}, "sandbox": sandbox}, timeout)
    return out.get("candidate") or {"error": out.get("error", "build failed")}


def _num(v):
    return v if isinstance(v, (int, float)) else None


def case_timing(reference_src: str, implementations: dict[str, str], ceilings: dict, *, timeout: float = 600.0,
                sandbox: dict | None = None, rounds: int | None = None) -> dict:
    """Time one case's reference and implementations; derive speedups and roofline fractions.
    `sandbox` ({"deny_read", "cache"}) confines the timing process, for implementations not to be trusted."""
    extra = {**({"sandbox": sandbox} if sandbox else {}), **({"rounds": rounds} if rounds else {})}
    raw = run_timing({"op": "time", "reference_src": reference_src, "implementations": implementations, **extra},
                     timeout)
    if not raw.get("ok") and "repaired" in implementations:
        # The repaired kernel may have taken the process (or the CUDA context) down: time the rest alone.
        rest = {k: v for k, v in implementations.items() if k != "repaired"}
        raw = run_timing({"op": "time", "reference_src": reference_src, "implementations": rest, **extra}, timeout)
        if raw.get("ok"):
            raw["repaired"] = {"error": "the timing process failed while running the repaired kernel"}
    if not raw.get("ok"):
        return {"error": raw.get("error", "timing failed"), "stderr_tail": raw.get("stderr_tail", "")}
    out = {"device": raw.get("device"), "bytes_moved": raw.get("bytes_moved"), "flops": raw.get("flops"),
           "peak_bytes": {}, "max_abs_err": {}, "roofline": {}, "bandwidth_fraction": {}, "spread": {}, "errors": {}}
    copy_bw = _num(ceilings.get("copy_bytes_per_s"))
    mm = _num(ceilings.get("matmul_flops_per_s"))
    floor_s = None
    if copy_bw:
        floor_s = (raw.get("bytes_moved") or 0) / copy_bw
        if mm and raw.get("flops"):
            floor_s = max(floor_s, raw["flops"] / mm)
    for name in ("reference", *implementations):
        entry = raw.get(name) or {}
        if "error" in entry:
            out["errors"][name] = entry["error"]
            continue
        ms = _num(entry.get("ms"))
        out[f"{name}_ms"] = ms
        out["peak_bytes"][name] = entry.get("peak_bytes")
        out["spread"][name] = entry.get("spread")
        if name != "reference":
            out["max_abs_err"][name] = entry.get("max_abs_err")
        if ms:
            if floor_s is not None:
                out["roofline"][name] = floor_s / (ms / 1e3)
            if copy_bw:
                out["bandwidth_fraction"][name] = (raw.get("bytes_moved") or 0) / (ms / 1e3) / copy_bw
    ref, fixed, rep = out.get("reference_ms"), out.get("fixed_ms"), out.get("repaired_ms")
    out["speedup_vs_reference"] = ref / rep if ref and rep else None
    out["speedup_vs_fixed"] = fixed / rep if fixed and rep else None
    out["fixed_speedup_vs_reference"] = ref / fixed if ref and fixed else None
    return out
