"""Why compute-sanitizer stalls on the GPU machine: time it on a bare torch process, on a forked child
(the sandbox's zygote forks its workers), and through kdebug's own run_tool, each variant in a process
of its own under a time limit, side by side. Prints one line per variant (seconds, exit, output tail).

    PYTHONPATH="$PWD:/tmp/site" python3 eval/sanitizer_probe.py [--limit 200]
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

TORCH_OP = "import torch; x = torch.ones(1 << 10, device='cuda'); print('sum', float(x.sum()))"
FORKED = """
import os, torch
pid = os.fork()
if pid == 0:
    x = torch.ones(1 << 10, device='cuda'); print('child sum', float(x.sum()), flush=True); os._exit(0)
print('parent waited', os.waitpid(pid, 0)[1])
"""
# The forked child first moves into an empty network namespace, as the sandbox's candidate worker did
# before a7bb1ff: whether that alone stalls the tool.
FORKED_NETNS = FORKED.replace("if pid == 0:\n", "if pid == 0:\n    import ctypes; print('unshare', "
                              "ctypes.CDLL(None).unshare(0x40000000), flush=True)\n")
KDEBUG = """
import sys, time, json
sys.path.insert(0, 'tests')
from test_sanitizer import Case, SCALE_REFERENCE, SCALE_CANDIDATE
from debugger.diagnose.sanitizer import run_tool, find_compute_sanitizer
t = time.monotonic()
r = run_tool(Case('oob', SCALE_REFERENCE, SCALE_CANDIDATE), {'name': 'seed0', 'kind': 'seed', 'seed': 0},
             'memcheck', find_compute_sanitizer(), timeout=float(sys.argv[1]))
print(json.dumps({k: r.get(k) for k in ('status', 'message', 'seconds', 'complete', 'worker_logged')}))
print('findings', [(f.get('kernel'), f.get('kind'), f.get('pyline')) for f in r.get('findings') or []][:5])
print('log tail:', (r.get('log_tail') or '')[-1200:])
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=float, default=200)
    a = ap.parse_args()
    from debugger.diagnose.sanitizer import find_compute_sanitizer

    san = find_compute_sanitizer() or "compute-sanitizer"
    py = sys.executable
    variants = {
        "bare_torch": [py, "-c", TORCH_OP],
        "memcheck_torch_app_only": [san, "--tool", "memcheck", "--target-processes", "application-only", py, "-c", TORCH_OP],
        "memcheck_torch_all": [san, "--tool", "memcheck", "--target-processes", "all", py, "-c", TORCH_OP],
        "memcheck_fork_all": [san, "--tool", "memcheck", "--target-processes", "all", py, "-c", FORKED],
        "memcheck_fork_app_only": [san, "--tool", "memcheck", "--target-processes", "application-only", py, "-c", FORKED],
        "memcheck_fork_netns_all": [san, "--tool", "memcheck", "--target-processes", "all", py, "-c", FORKED_NETNS],
        "kdebug_run_tool": [py, "-c", KDEBUG, str(a.limit - 20)],
    }
    procs = {}
    for name, cmd in variants.items():
        procs[name] = (time.monotonic(), subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                          text=True, start_new_session=True))
    for name, (t0, p) in procs.items():
        try:
            out, _ = p.communicate(timeout=max(1.0, a.limit - (time.monotonic() - t0)))
            rc = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # the whole group: a child left holding the pipe would block
            out, _ = p.communicate()
            rc = "timeout"
        print(f"== {name}: {time.monotonic() - t0:.1f} s, exit {rc}\n{(out or '')[-1500:]}\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
