"""Fault containment: whatever a candidate does, the caller survives and the next evaluation works."""
import os
import socket
import threading
from pathlib import Path

import pytest

from debugger.case import case_from_sources, load_case
from debugger.evaluate import evaluate, run_evaluation
from debugger.sandbox import Sandbox
from debugger.sandbox.guard import scrubbed_env

DATA = Path(__file__).parent / "data" / "kernels"
REFERENCE = (DATA / "add_reference.py").read_text()
HONEST = (DATA / "add_kernel.py").read_text()
ONE_CHECK = [{"name": "seed0", "kind": "seed", "seed": 0}]


def candidate_doing(code: str, imports: str = "") -> str:
    """The honest add kernel whose forward first runs `code` (indented into forward)."""
    body = "\n".join("        " + line for line in code.strip().splitlines())
    src = HONEST.replace("    def forward(self, a, b):\n", "    def forward(self, a, b):\n" + body + "\n", 1)
    return imports + "\n" + src


def run(candidate: str, timeout: float = 60.0, **kw):
    return evaluate(case_from_sources(REFERENCE, candidate), "cpu", timeout=timeout, checks=ONE_CHECK, **kw)


def still_works():
    report = run(HONEST)
    assert report.status == "pass", report.message


def test_hung_kernel_times_out_and_worker_is_replaced():
    report = run(candidate_doing("while True:\n    pass"), timeout=3)
    assert report.status == "timeout"
    assert "killed" in report.message
    still_works()


def test_segfault_is_contained():
    report = run(candidate_doing("ctypes.string_at(0)", imports="import ctypes"))
    assert report.status == "runtime_error"
    assert "SIGSEGV" in report.message
    still_works()


def test_huge_allocation_is_refused():
    report = run(candidate_doing("big = torch.empty(10**12, dtype=torch.float32)"))
    assert report.status == "runtime_error"
    still_works()


def test_runaway_output_is_cut():
    report = run(candidate_doing("line = 'x' * 1_000_000\nfor _ in range(200):\n    print(line, flush=True)"))
    assert report.status == "runtime_error"
    assert "File too large" in report.message or "Errno 27" in report.message
    still_works()


def test_fork_is_refused():
    report = run(candidate_doing("os.fork()", imports="import os"))
    assert report.status == "runtime_error"
    assert "os.fork is not allowed" in report.message
    still_works()


def test_subprocess_is_refused():
    report = run(candidate_doing("subprocess.run(['ls'])", imports="import subprocess"))
    assert report.status == "runtime_error"
    assert "not allowed" in report.message


def test_reading_beside_the_reference_is_refused(tmp_path):
    folder = tmp_path / "case"
    folder.mkdir()
    (folder / "reference.py").write_text(REFERENCE)
    (folder / "fixed.py").write_text(HONEST)
    (folder / "candidate.py").write_text(candidate_doing(
        "src = open(__import__('pathlib').Path(" + repr(str(folder)) + ") / 'fixed.py').read()"))
    report = evaluate(load_case(folder), "cpu", checks=ONE_CHECK)
    assert report.status == "runtime_error"
    assert "reading" in report.message and "not allowed" in report.message


def test_writing_outside_scratch_is_refused(tmp_path):
    target = tmp_path / "escaped.txt"
    report = run(candidate_doing(f"open({str(target)!r}, 'w').write('x')"))
    assert report.status == "runtime_error"
    assert "writing" in report.message
    assert not target.exists()


def test_network_connection_is_blocked():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(3)
    port = server.getsockname()[1]
    got = []

    def accept():
        try:
            conn, _ = server.accept()
            got.append(conn)
        except OSError:
            pass

    t = threading.Thread(target=accept)
    t.start()
    report = run(candidate_doing(
        f"s = socket.socket()\ns.settimeout(2)\ns.connect(('127.0.0.1', {port}))", imports="import socket"))
    t.join()
    server.close()
    assert report.status == "runtime_error"
    assert not got, "the candidate reached a socket on the host"


def test_environment_is_scrubbed_of_credentials():
    env = scrubbed_env({"PATH": "/bin", "OPENAI_API_KEY": "sk-x", "MY_TOKEN": "t", "HOME": "/root",
                        "AWS_SECRET_ACCESS_KEY": "a"})
    assert env == {"PATH": "/bin", "HOME": "/root"}
    os.environ["KDEBUG_TEST_SECRET_TOKEN"] = "leak"
    sandbox = Sandbox("cpu", timeout=60)
    try:
        src = candidate_doing("if any('SECRET' in k or 'TOKEN' in k for k in os.environ):\n"
                              "    raise RuntimeError('credential visible')", imports="import os")
        ev = run_evaluation(case_from_sources(REFERENCE, src), "cpu", checks=ONE_CHECK, sandbox=sandbox)
        assert ev.report.status == "pass", ev.report.message
    finally:
        sandbox.close()
        del os.environ["KDEBUG_TEST_SECRET_TOKEN"]


def test_after_a_crash_the_next_checks_run_in_a_fresh_worker():
    """A candidate that crashes on one check (here: non-contiguous inputs) does not take the later checks
    with it: they run in a fresh worker (a cache cheat crashing on a layout check had its hidden checks
    skipped, and the gate accepted it on the rest)."""
    crashy = candidate_doing("if not a.is_contiguous():\n    ctypes.string_at(0)", imports="import ctypes")
    checks = [{"name": "noncontiguous", "kind": "layout", "seed": 20, "transform": "noncontig"},
              {"name": "seed0", "kind": "seed", "seed": 0}]
    report = evaluate(case_from_sources(REFERENCE, crashy), "cpu", checks=checks)
    crashed, after = report.checks
    assert crashed.status == "runtime_error" and "crashed" in crashed.message
    assert after.status == "pass" and after.passed, after.message


def test_an_evaluation_that_names_no_memory_limit_keeps_the_one_the_command_set(monkeypatch):
    """KDEBUG_MEMORY_LIMIT_GB sets a new sandbox's limit; an evaluation that names none (the gate's,
    inside a repair or `kdebug check`) keeps the sandbox's limit instead of putting back 16 GiB (a 32768 x
    32768 Linear's hidden-shape checks were killed at 16 GiB on a GPU under KDEBUG_MEMORY_LIMIT_GB=48)."""
    from debugger.sandbox import pool

    monkeypatch.setattr(pool, "_SANDBOXES", {})
    monkeypatch.setenv("KDEBUG_MEMORY_LIMIT_GB", "48")
    sb = pool.get_sandbox("cpu")
    assert sb.memory_bytes == 48 << 30
    assert pool.get_sandbox("cpu", memory_limit_gb=20).memory_bytes == 20 << 30
    assert pool.get_sandbox("cpu").memory_bytes == 20 << 30 and pool.get_sandbox("cpu") is sb
    assert pool.get_sandbox("cpu", memory_limit_gb=0).memory_bytes is None


def test_kernelbench_trials_run_candidate_and_reference_side_by_side(monkeypatch, tmp_path):
    """On a GPU a KernelBench trial's two runs go at once (each draws the trial's inputs on the CPU, seconds
    per GiB at the published sizes); a candidate failing on some trials leaves the others judged right."""
    import json

    from debugger import evaluate as evaluate_module
    from debugger.evaluate import kernelbench_checks

    monkeypatch.setattr(evaluate_module, "_trials_side_by_side", lambda device: True)
    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("KDEBUG_TRACE", str(trace))
    slow_draw = REFERENCE.replace("def get_inputs():\n", "def get_inputs():\n    import time; time.sleep(0.5)\n")
    picky = candidate_doing("if float(a[0]) > 0:\n    raise ValueError('positive first element')")
    report = evaluate(case_from_sources(slow_draw, picky), "cpu", checks=kernelbench_checks())
    statuses = {c.name: c.status for c in report.checks}
    assert set(statuses.values()) == {"pass", "runtime_error"}, statuses
    for c in report.checks:
        assert c.passed == (c.status == "pass") and ("positive first element" in c.message) == (not c.passed)
    runs = [json.loads(line) for line in trace.read_text().splitlines()]
    runs = {(r["role"], r["check"]): (r["at"] - r["seconds"], r["at"]) for r in runs
            if r["event"] == "request" and r["op"] == "run"}
    for name in statuses:
        (cand_start, cand_end), (ref_start, _) = runs["candidate", name], runs["reference", name]
        assert cand_start - 0.01 <= ref_start < cand_end - 0.3, name  # the reference began before the candidate ended


# The add-one task (tests/test_evaluate.py and the CUDA tests use it too).
ADD_ONE_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x + 1


def get_inputs():
    return [torch.randn(64)]


def get_init_inputs():
    return []
'''

# Busy for good once called: as an emulated kernel hours from its end would be.
ORPHAN_CAND = """
import os
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        with open("busy.pid", "w") as f:
            f.write(str(os.getpid()))
        while True:
            pass
"""

ORPHAN_RUN = f"""
from debugger.case import case_from_sources
from debugger.evaluate import evaluate, standard_checks
evaluate(case_from_sources({ADD_ONE_REF!r}, {ORPHAN_CAND!r}), "cpu", checks=[standard_checks()[0]], timeout=600)
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_killed_kdebug_leaves_no_worker_running(tmp_path):
    """A caller's timeout kills kdebug mid-check: its zygote sees the socket close and exits, and the worker,
    in a session of its own and busy in the candidate's code, must go with it rather than run on."""
    import signal
    import subprocess
    import sys
    import time

    env = dict(os.environ, TMPDIR=str(tmp_path), KDEBUG_DATA_DIR=str(tmp_path / "data"),
               PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.Popen([sys.executable, "-c", ORPHAN_RUN], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        found = []
        while not found and time.time() < deadline and proc.poll() is None:
            found = [p for p in tmp_path.glob("kdebug-sandbox-*/can-*/busy.pid") if p.read_text().strip()]
            time.sleep(0.2)
        assert found, "the candidate never started its forward"
        worker = int(found[0].read_text())
        assert _running(worker)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.time() + 20
    while _running(worker) and time.time() < deadline:
        time.sleep(0.2)
    alive = _running(worker)
    if alive:
        os.kill(worker, signal.SIGKILL)
    assert not alive, "the candidate's worker ran on after kdebug was killed"
