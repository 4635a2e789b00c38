"""Reader for multi-turn trace files: per problem, the PyTorch reference and a list of turns.

As published multi-turn kernel SFT trace sets are laid out, a file is a JSON list of records (or an
object holding the list under `traces`/`data`/`records`/..., or JSONL, one record per line). A record
names its problem (`problem_id`, `sample_key`, `instance_id`, ... with `level`), holds the reference
(`pytorch_code`, `reference_src`, ... or the first user message of `messages`), and its turns
(`turns`, `turn_history`, `history`, `attempts`), each with the generated source (`triton_code`,
`kernel_code`, `code`, ... or the code inside the completion / the n-th assistant message), the
evaluation result (`result`/`eval_result`/... or the turn itself: compiled, correctness, error,
max_difference, metadata) and the feedback given to the model (`feedback_given`/`feedback`, or the
next user message). A record without turns but with a single result is one attempt.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator

from ingest.attempt import Attempt, Malformed
from ingest.fields import FieldError, as_bool, as_float, as_tokens, first, first_key, metadata_errors
from ingest.sources import extract_code, extract_reference

FORMAT = "traces"
LIST_KEYS = ("traces", "data", "records", "items", "samples", "conversations", "results")
ID_KEYS = ("problem_id", "sample_key", "instance_id", "task_id", "problem_name", "name", "id", "uid")
REFERENCE_KEYS = ("pytorch_code", "reference_src", "reference_code", "reference", "ref_arch_src", "original_code",
                  "original_model_src", "torch_code", "pytorch_src", "problem_code", "ref_code")
TURN_KEYS = ("turns", "turn_history", "history", "attempts", "trajectory", "steps")
MESSAGE_KEYS = ("messages", "full_messages", "conversation", "conversations", "chat")
CODE_KEYS = ("triton_code", "kernel_code", "generated_code", "candidate_src", "kernel_src", "custom_code",
             "code", "kernel", "solution", "generated_kernel")
COMPLETION_KEYS = ("full_completion", "completion", "response", "raw_response", "output", "content", "assistant")
RESULT_KEYS = ("result", "eval_result", "evaluation", "eval", "eval_results", "metrics", "feedback_result")
FEEDBACK_KEYS = ("feedback_given", "feedback", "user_feedback")
MODEL_KEYS = ("model", "model_name", "generator", "policy")
TOKEN_KEYS = ("tokens", "num_tokens", "token_count", "usage", "total_tokens", "completion_tokens")
ERROR_KEYS = ("error", "error_message", "compilation_error", "compile_error", "runtime_error", "cuda_error",
              "other_error", "exception", "stderr")

# What a feedback message says about the turn before it, when the turn has no result of its own.
FEEDBACK_VERDICTS = [
    (re.compile(r"compil\w* (?:failed|error)|compilation/runtime error|syntax ?error", re.I), {"compiled": False}),
    (re.compile(r"runtime error|illegal memory|cuda error|exception", re.I), {"compiled": True, "correct": False}),
    (re.compile(r"incorrect|mismatch|correctness check failed|wrong (?:output|result)", re.I),
     {"compiled": True, "correct": False}),
    (re.compile(r"time ?out|timed out", re.I), {"timed_out": True}),
    (re.compile(r"correct(?:ness check passed| but slow|ly)|great work|passed", re.I), {"compiled": True, "correct": True}),
]


def looks_like(record) -> bool:
    """A trace record (has turns or a conversation), as opposed to one of our JSONL attempts."""
    return isinstance(record, dict) and (first_key(record, TURN_KEYS) is not None
                                         or first_key(record, MESSAGE_KEYS) is not None)


def _records(path: Path) -> Iterator[tuple[str, object] | Malformed]:
    """(location, record) for every record of a .json or .jsonl trace file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        yield Malformed(str(path), f"cannot read: {e.__class__.__name__}")
        return
    if path.suffix == ".jsonl":
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                yield f"{path}:{lineno}", json.loads(line)
            except json.JSONDecodeError as e:
                yield Malformed(f"{path}:{lineno}", f"not valid JSON: {e.msg} (column {e.colno})")
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        yield Malformed(f"{path}:{e.lineno}", f"not valid JSON: {e.msg}")
        return
    if isinstance(data, dict):
        key = first_key(data, LIST_KEYS)
        if key is not None and isinstance(data[key], list):
            data = data[key]
        elif looks_like(data):
            data = [data]
        else:
            yield Malformed(str(path), "expected a list of trace records")
            return
    if not isinstance(data, list):
        yield Malformed(str(path), f"expected a list of trace records, got {type(data).__name__}")
        return
    for i, rec in enumerate(data):
        yield f"{path}#{i}", rec


def _messages(rec: dict) -> list[dict]:
    msgs = first(rec, MESSAGE_KEYS) or []
    return [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []


def _content(message: dict) -> str | None:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else None


def _reference(rec: dict, messages: list[dict]) -> str | None:
    ref = first(rec, REFERENCE_KEYS)
    if isinstance(ref, dict):
        ref = first(ref, ("code", "src", "source"))
    if ref is not None and not isinstance(ref, str):
        raise FieldError("the reference must be a string")
    if ref:
        return ref
    for m in messages:
        if m.get("role") == "user":
            found = extract_reference(_content(m))
            if found:
                return found
    return None


def _verdict_from_feedback(text: str | None) -> dict:
    if not text:
        return {}
    for pattern, verdict in FEEDBACK_VERDICTS:
        if pattern.search(text):
            return dict(verdict)
    return {}


def _error(result: dict) -> str | None:
    parts = []
    for key in ERROR_KEYS:
        v = result.get(key)
        if v not in (None, "", False):
            parts.append(v if isinstance(v, str) else json.dumps(v, default=str)[:2000])
    metadata = result.get("metadata")
    if isinstance(metadata, dict):
        parts.extend(metadata_errors(metadata, ERROR_KEYS))
    return "\n".join(str(p) for p in parts) or None


def _flag(value) -> bool | None:
    """A yes/no flag; a number here is a configured limit (seconds), not a verdict."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return as_bool(value, "timed_out")
        except FieldError:
            return None
    return None


def _result_fields(turn: dict) -> dict:
    """compiled / correct / error / max_difference / timed_out of one turn (None where not recorded)."""
    result = first(turn, RESULT_KEYS)
    if result is not None and not isinstance(result, dict):
        raise FieldError(f"{first_key(turn, RESULT_KEYS)} must be an object")
    result = result or turn
    metadata = result.get("metadata") if isinstance(result.get("metadata"), dict) else {}
    fields = {
        "compiled": as_bool(first(result, ("compiled", "compile_success", "compiles", "compiled_ok")), "compiled"),
        "correct": as_bool(first(result, ("correctness", "correct", "is_correct", "passed", "pass")), "correctness"),
        "error": _error(result) or (_error(turn) if result is not turn else None),
        "max_difference": as_float(first(result, ("max_difference", "max_diff", "max_abs_err"))
                                   or first(metadata, ("max_difference", "max_diff")), "max_difference"),
        "timed_out": _flag(first(result, ("timed_out", "timeout"))),
    }
    return fields


def _turn_code(turn: dict, assistant_text: str | None) -> str | None:
    code = first(turn, CODE_KEYS)
    if code is not None and not isinstance(code, str):
        raise FieldError(f"{first_key(turn, CODE_KEYS)} must be a string")
    if code and code.strip():
        return extract_code(code) if "```" in code or "<triton>" in code else code
    completion = first(turn, COMPLETION_KEYS)
    if isinstance(completion, str):
        return extract_code(completion)
    return extract_code(assistant_text)


def _record_attempts(rec: dict, where: str, path: Path) -> Iterator[Attempt | Malformed]:
    messages = _messages(rec)
    reference = _reference(rec, messages)
    pid = first(rec, ID_KEYS)
    if isinstance(pid, (dict, list)):
        raise FieldError("the problem id must be a string or a number")
    level = rec.get("level")
    problem_id = str(pid) if pid is not None else where.rsplit("/", 1)[-1]
    if level is not None and pid is not None and not str(pid).startswith("level"):
        problem_id = f"level{level}/{pid}"
    model = first(rec, MODEL_KEYS)
    model = model if isinstance(model, str) else None
    assistants = [_content(m) for m in messages if m.get("role") == "assistant"]
    users_after = []  # the user message after each assistant message: the feedback on that turn
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            nxt = next((x for x in messages[i + 1:] if x.get("role") in ("user", "assistant")), None)
            users_after.append(_content(nxt) if nxt is not None and nxt.get("role") == "user" else None)
    turn_key = first_key(rec, TURN_KEYS)
    turns = rec.get(turn_key) if turn_key else None
    if turns is not None and not isinstance(turns, list):
        raise FieldError(f"{turn_key} must be a list")
    if not turns:
        if any(k in rec for k in CODE_KEYS + ("final_triton_code", "final_code") + RESULT_KEYS):
            single = dict(rec)
            single.setdefault("code", first(rec, ("final_triton_code", "final_code")))
            if "final_result" in rec and not first_key(rec, RESULT_KEYS):
                single["result"] = rec["final_result"]
            turns = [single]
        else:
            turns = [{} for _ in assistants]
        if not turns:
            raise FieldError("no turns, messages or code in the record")
    last = len(turns) - 1
    for j, turn in enumerate(turns):
        loc = f"{where}.turns[{j}]"
        if not isinstance(turn, dict):
            yield Malformed(loc, f"expected a turn object, got {type(turn).__name__}")
            continue
        try:
            assistant = assistants[j] if j < len(assistants) else None
            code = _turn_code(turn, assistant)
            fields = _result_fields(turn)
            feedback = first(turn, FEEDBACK_KEYS)
            feedback = feedback if isinstance(feedback, str) and feedback.strip() else None
            if feedback is None and j < len(users_after):
                feedback = users_after[j]
            if fields["compiled"] is None and fields["correct"] is None and not fields["error"]:
                if j == last and isinstance(rec.get("final_result"), dict):
                    fields = _result_fields({"result": rec["final_result"]})
                elif j == last and any(k in rec for k in ("final_correct", "final_compiled")):
                    fields["correct"] = as_bool(rec.get("final_correct"), "final_correct")
                    fields["compiled"] = as_bool(rec.get("final_compiled"), "final_compiled")
                else:
                    fields.update(_verdict_from_feedback(feedback))
            tokens = as_tokens(first(turn, TOKEN_KEYS))
        except FieldError as e:
            yield Malformed(loc, str(e))
            continue
        number = turn.get("turn")
        order = number if isinstance(number, int) and not isinstance(number, bool) else j
        yield Attempt(location=loc, source=str(path), format=FORMAT, problem_id=problem_id,
                      history=f"{where}", order=(order, j), reference_src=reference, candidate_src=code,
                      tokens=tokens, model=first(turn, MODEL_KEYS) if isinstance(first(turn, MODEL_KEYS), str)
                      else model, feedback=feedback,
                      meta={k: v for k, v in (("level", level), ("turn", order), ("record", where))
                            if v is not None}, **fields)


def read(path: Path) -> Iterator[Attempt | Malformed]:
    """Every turn of every record of a trace file as an Attempt (Malformed for what cannot be read)."""
    path = Path(path)
    for item in _records(path):
        if isinstance(item, Malformed):
            yield item
            continue
        where, rec = item
        if not isinstance(rec, dict):
            yield Malformed(where, f"expected a trace record object, got {type(rec).__name__}")
            continue
        try:
            yield from _record_attempts(rec, where, path)
        except FieldError as e:
            yield Malformed(where, str(e))
        except (ValueError, TypeError, AttributeError, RecursionError) as e:  # odd data, never fatal
            yield Malformed(where, f"unreadable record: {e.__class__.__name__}: {str(e)[:200]}")
