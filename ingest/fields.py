"""Reading loosely typed log fields: first present key, booleans, numbers, token counts, error text.

Published logs spell the same thing many ways (`correct`, `correctness`, `is_correct`; a max difference
as a number, a string or a list of per-trial strings). These helpers accept the spellings and raise
`FieldError` (a one-line reason) for a value of the wrong kind, which readers report as malformed.
"""
from __future__ import annotations

import ast
import math


class FieldError(ValueError):
    """A field holds a value of the wrong kind (message: field and what was expected)."""



def first(d: dict, keys, default=None):
    """The value of the first key of `keys` present in `d` with a non-None value."""
    for k in keys:
        if k in d and d[k] is not None:
            return d[k]
    return default


def first_key(d: dict, keys) -> str | None:
    """The first key of `keys` present in `d` with a non-None value."""
    return next((k for k in keys if k in d and d[k] is not None), None)


def as_bool(value, name: str) -> bool | None:
    """True/False from a bool, 0/1, or 'true'/'false'/'yes'/'no'/'pass'/'fail'; None stays None."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("true", "yes", "1", "pass", "passed", "ok"):
            return True
        if v in ("false", "no", "0", "fail", "failed"):
            return False
        if v in ("", "none", "null", "unknown"):
            return None
    raise FieldError(f"{name} must be true, false or null, not {value!r:.40}")


def as_float(value, name: str) -> float | None:
    """A number from a number, a numeric string, or a list of them, also written as a string (the
    largest: KernelBench per trial)."""
    if value is None or isinstance(value, bool):
        if isinstance(value, bool):
            raise FieldError(f"{name} must be a number, not a boolean")
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        v = value.strip()
        if not v:
            return None
        if v.startswith("[") and v.endswith("]"):  # a list written as its Python repr ("['1.02', '0.9']")
            try:
                items = ast.literal_eval(v)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise FieldError(f"{name} must be a number, not {value!r:.40}") from None
            if isinstance(items, (list, tuple)):
                return as_float(list(items), name)
        try:
            return float(v)
        except ValueError:
            raise FieldError(f"{name} must be a number, not {value!r:.40}") from None
    if isinstance(value, (list, tuple)):
        numbers = [x for x in (as_float(v, name) for v in value) if x is not None]
        if not numbers:
            return None
        finite = [x for x in numbers if not math.isnan(x)]
        return max(finite) if finite else float("nan")
    raise FieldError(f"{name} must be a number, not {type(value).__name__}")


def as_tokens(value, name: str = "tokens") -> int | None:
    """A token count from an int or a usage mapping (total, or prompt + completion)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise FieldError(f"{name} must be an integer or a usage object")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, dict):
        total = first(value, ("total", "total_tokens"))
        if total is not None:
            return as_tokens(total, name)
        parts = [first(value, keys) for keys in (("prompt", "prompt_tokens", "input", "input_tokens"),
                                                 ("completion", "completion_tokens", "output", "output_tokens"))]
        parts = [as_tokens(p, name) for p in parts if p is not None]
        return sum(parts) if parts else None
    raise FieldError(f"{name} must be an integer or a usage object, not {type(value).__name__}")


def as_text(value, name: str) -> str | None:
    """A string (None and empty strings are None); anything else is an error."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise FieldError(f"{name} must be a string, not {type(value).__name__}")
    return value if value.strip() else None



def metadata_errors(metadata: dict, keys) -> list[str]:
    """`key: value` for each error field of an eval-result metadata object, plus a correctness issue
    other than the plain 'Output mismatch'."""
    parts = [f"{key}: {metadata[key]}" for key in keys if metadata.get(key) not in (None, "", False)]
    issue = metadata.get("correctness_issue")
    if issue and issue != "Output mismatch":
        parts.append(f"correctness_issue: {issue}")
    return parts
