"""Classifying a logged attempt by what its log says happened (no kernel is run).

Classes: compile_error (the module or a kernel did not build), runtime_error (it built but raised or
crashed), interface_error (it ran but does not fit the task: no ModelNew, wrong arguments, wrong output
shape, no code at all), numerical_mismatch (it ran and returned wrong values: the near misses kdebug
repairs), timeout, correct, unverifiable (the log records no verdict). The log's own flags come first;
the error text decides between the failure classes where the flags cannot (pipelines file CUDA faults
under "compiled: false", or record only "correctness: false" with the exception text).
"""
from __future__ import annotations

import re

from ingest.attempt import Attempt

CLASSES = ("compile_error", "runtime_error", "interface_error", "numerical_mismatch", "timeout", "correct",
           "unverifiable")

TIMEOUT_RE = re.compile(r"time[d ]?\s?out|timeouterror|deadline exceeded", re.I)
INTERFACE_RE = re.compile(
    r"shape mismatch|output shape|expected shape|size mismatch between|"
    r"takes \d+ positional arguments? but \d+|missing \d+ required positional|unexpected keyword argument|"
    r"positional arguments? but \d+ (?:were|was) given|"
    r"modelnew not found|no attribute 'modelnew'|has no attribute \"modelnew\"|name 'modelnew' is not defined|"
    r"does not define modelnew|no code (?:was )?(?:extracted|found)|"
    r"not enough values to unpack|too many values to unpack|dtype mismatch|expected (?:a )?tuple|"
    r"output (?:count|number) mismatch", re.I)
COMPILE_RE = re.compile(
    r"compilationerror|compilation_error|compile error|failed to compile|syntaxerror|indentationerror|"
    r"triton\.compiler|unsupported ast node|error building extension|ninja: build stopped|nvcc|"
    r"error: identifier|error: expected|incompatible types|unsupported tensor index|"
    r"cannot (?:be )?(?:found|import)|no module named|importerror|modulenotfounderror", re.I)
RUNTIME_RE = re.compile(
    r"illegal memory access|cuda error|device-side assert|out of memory|segmentation fault|"
    r"runtimeerror|indexerror|valueerror|typeerror|zerodivisionerror|nameerror|attributeerror|"
    r"exception|traceback|assertionerror|killed|signal", re.I)
MISMATCH_RE = re.compile(r"output mismatch|mismatch with (?:the )?(?:pytorch )?reference|incorrect output|"
                         r"not (?:all)?close|max[_ ]diff|wrong (?:values|output|result)", re.I)


def classify(a: Attempt) -> tuple[str, str]:
    """(class, one-line reason) for an attempt."""
    if a.candidate_src is None:
        return "interface_error", "no code in the response"
    if a.correct is True:
        return "correct", "the log records a pass"
    error = a.error or ""
    head = error[:4000]
    if a.timed_out or (head and TIMEOUT_RE.search(head) and not COMPILE_RE.search(head[:200])):
        return "timeout", "the evaluation timed out"
    if head and INTERFACE_RE.search(head):
        return "interface_error", "does not fit the task's interface: " + _first_line(head)
    if a.compiled is False:
        if head and RUNTIME_RE.search(head) and not COMPILE_RE.search(head):
            return "runtime_error", "filed as a build failure, but the error is a runtime fault: " + _first_line(head)
        return "compile_error", _first_line(head) or "the log records a build failure"
    if head and not MISMATCH_RE.fullmatch(head.strip()) and not _only_mismatch(head):
        if COMPILE_RE.search(head) and a.compiled is not True:
            return "compile_error", _first_line(head)
        return "runtime_error", _first_line(head)
    if a.correct is False:
        detail = f"max difference {a.max_difference:.3g}" if a.max_difference is not None else "wrong values"
        return "numerical_mismatch", detail
    if a.max_difference is not None:
        return "numerical_mismatch", f"max difference {a.max_difference:.3g}"
    if head:
        return "numerical_mismatch", _first_line(head)
    harness = a.meta.get("harness_error")
    if harness:
        return "unverifiable", "the evaluation itself failed, no verdict: " + _first_line(str(harness))
    return "unverifiable", "the log records no evaluation result"


def _only_mismatch(text: str) -> bool:
    """The error text only reports wrong values (no exception)."""
    return bool(MISMATCH_RE.search(text)) and not RUNTIME_RE.search(text) and not COMPILE_RE.search(text)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("Traceback"):
            return line if len(line) <= 200 else line[:197] + "..."
    return ""
