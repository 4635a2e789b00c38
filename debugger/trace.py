"""Opt-in timing trace: with KDEBUG_TRACE=FILE, each sandbox request and each evaluation appends one
JSON line (what, where from, seconds, bytes) to FILE, so a slow run can be attributed to its phases
(`python eval/trace_summary.py FILE`). Off by default; costs nothing when off."""
from __future__ import annotations

import json
import os
import sys
import time


def enabled() -> bool:
    return bool(os.environ.get("KDEBUG_TRACE"))


def caller(depth: int = 2) -> str:
    """module:function of the first caller outside the sandbox and evaluation plumbing."""
    f = sys._getframe(depth)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not mod.startswith(("debugger.sandbox", "debugger.evaluate", "debugger.trace")):
            return f"{mod}:{f.f_code.co_name}"
        f = f.f_back
    return "?"


def record(event: str, started: float, **fields) -> None:
    """Append one event that began at time.perf_counter() `started`."""
    path = os.environ.get("KDEBUG_TRACE")
    if not path:
        return
    line = {"event": event, "pid": os.getpid(), "at": time.time(),
            "seconds": round(time.perf_counter() - started, 4), "caller": caller(), **fields}
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")
