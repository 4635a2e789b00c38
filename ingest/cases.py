"""Writing a queue entry's case folder: reference.py, candidate.py and case.toml with the provenance.

The folder is an ordinary kdebug case (`kdebug repair FOLDER` works on it by hand too); case.toml
keeps where the attempt came from under `[provenance]`.
"""
from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path

from ingest.attempt import Attempt

SLUG_RE = re.compile(r"[^a-z0-9]+")


def slug(text: str, limit: int = 40) -> str:
    """Lowercase letters, digits and '-' only (for ids and folder names)."""
    s = SLUG_RE.sub("-", str(text).lower()).strip("-")
    return s[:limit].strip("-") or "problem"


def entry_id(attempt: Attempt, attempt_hash: str) -> str:
    return f"{slug(attempt.problem_id)}-{attempt_hash[:10]}"


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(str(v), ensure_ascii=False)  # a JSON string is a valid TOML basic string


def toml_text(top: dict, tables: dict[str, dict]) -> str:
    """Top-level keys then [tables], None values left out."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in top.items() if v is not None]
    for name, table in tables.items():
        lines.append(f"\n[{name}]")
        lines.extend(f"{k} = {_toml_value(v)}" for k, v in table.items() if v is not None)
    return "\n".join(lines) + "\n"


def provenance(attempt: Attempt, attempt_hash: str, klass: str, reason: str) -> dict:
    return {
        "source": attempt.source, "location": attempt.location, "format": attempt.format,
        "problem_id": attempt.problem_id, "model": attempt.model, "class": klass, "reason": reason,
        "max_difference": attempt.max_difference, "error": (attempt.error or None) and attempt.error[:2000],
        "feedback": (attempt.feedback or None) and attempt.feedback[:2000], "tokens": attempt.tokens,
        "attempt_hash": attempt_hash, "renamed": attempt.meta.get("renamed"),
        "reference_path": attempt.meta.get("reference_path"),
        "ingested": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def write_case(folder: Path, attempt: Attempt, reference_src: str, candidate_src: str, attempt_hash: str,
               klass: str, reason: str) -> Path:
    """Write the case folder (overwriting only its own three files) and return it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.py").write_text(reference_src)
    (folder / "candidate.py").write_text(candidate_src)
    top = {"description": f"{klass.replace('_', ' ')} ingested from {attempt.location}: {reason}"[:300],
           "tags": ["ingested", attempt.format],
           "atol": _number(attempt.meta.get("atol")), "rtol": _number(attempt.meta.get("rtol"))}
    (folder / "case.toml").write_text(toml_text(top, {"provenance": provenance(attempt, attempt_hash, klass,
                                                                                   reason)}))
    return folder


def _number(v) -> float | None:
    try:
        return float(v) if v is not None else None
    except (TypeError, ValueError):
        return None
