"""Reader for kdebug's own JSONL attempt log (one attempt per line; the schema is ingest/SCHEMA.md)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from ingest.attempt import Attempt, Malformed
from ingest.fields import FieldError, as_bool, as_float, as_text, as_tokens

FORMAT = "jsonl"
REQUIRED = ("problem_id", "candidate_src")
KNOWN = {"problem_id", "reference_src", "reference_path", "candidate_src", "compiled", "correct", "error",
         "max_difference", "tokens", "model", "attempt", "trace_id", "timed_out", "feedback", "level",
         "sample_id", "atol", "rtol"}


def looks_like(record: dict) -> bool:
    """A record of this schema (as opposed to a multi-turn trace)."""
    return isinstance(record, dict) and "candidate_src" in record and "problem_id" in record


def _attempt(rec: dict, path: Path, lineno: int) -> Attempt:
    missing = [k for k in REQUIRED if rec.get(k) is None]
    if missing:
        raise FieldError(f"missing required field(s): {', '.join(missing)}")
    pid = rec["problem_id"]
    if not isinstance(pid, (str, int)) or isinstance(pid, bool):
        raise FieldError("problem_id must be a string or an integer")
    candidate = as_text(rec["candidate_src"], "candidate_src")
    reference = as_text(rec.get("reference_src"), "reference_src")
    ref_path = as_text(rec.get("reference_path"), "reference_path")
    if reference is None and ref_path is not None:
        full = (path.parent / ref_path) if not Path(ref_path).is_absolute() else Path(ref_path)
        try:
            reference = full.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise FieldError(f"reference_path {ref_path}: cannot read ({e.__class__.__name__})") from None
    order = rec.get("attempt")
    if order is not None and (not isinstance(order, int) or isinstance(order, bool)):
        raise FieldError("attempt must be an integer")
    for tol in ("atol", "rtol"):
        if rec.get(tol) is not None:
            as_float(rec[tol], tol)
    trace = rec.get("trace_id")
    history = f"{path}::{trace if trace is not None else pid}"
    meta = {k: rec[k] for k in ("level", "sample_id", "atol", "rtol", "trace_id") if rec.get(k) is not None}
    if ref_path:
        meta["reference_path"] = ref_path
    return Attempt(location=f"{path}:{lineno}", source=str(path), format=FORMAT, problem_id=str(pid),
                   history=history, order=(order if order is not None else lineno,),
                   reference_src=reference, candidate_src=candidate,
                   compiled=as_bool(rec.get("compiled"), "compiled"), correct=as_bool(rec.get("correct"), "correct"),
                   error=as_text(rec.get("error"), "error"),
                   max_difference=as_float(rec.get("max_difference"), "max_difference"),
                   timed_out=as_bool(rec.get("timed_out"), "timed_out"), tokens=as_tokens(rec.get("tokens")),
                   model=as_text(rec.get("model"), "model"), feedback=as_text(rec.get("feedback"), "feedback"),
                   meta=meta)


def read(path: Path) -> Iterator[Attempt | Malformed]:
    """Every line of a JSONL file as an Attempt, or a Malformed naming file:line and the reason."""
    path = Path(path)
    try:
        handle = path.open("r", encoding="utf-8", errors="strict")
    except OSError as e:
        yield Malformed(str(path), f"cannot read: {e.strerror or e}")
        return
    with handle:
        lineno = 0
        while True:
            try:
                line = handle.readline()
            except UnicodeDecodeError:
                yield Malformed(f"{path}:{lineno + 1}", "not UTF-8 text")
                return
            if not line:
                break
            lineno += 1
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                yield Malformed(f"{path}:{lineno}", f"not valid JSON: {e.msg} (column {e.colno})")
                continue
            if not isinstance(rec, dict):
                yield Malformed(f"{path}:{lineno}", f"expected a JSON object, got {type(rec).__name__}")
                continue
            try:
                yield _attempt(rec, path, lineno)
            except FieldError as e:
                yield Malformed(f"{path}:{lineno}", str(e))
            except (ValueError, TypeError, AttributeError, RecursionError) as e:  # odd data, never fatal
                yield Malformed(f"{path}:{lineno}", f"unreadable record: {e.__class__.__name__}: {str(e)[:200]}")
