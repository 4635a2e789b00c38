"""Finding the benchmark's case folders and loading them, optionally at GPU-sized shapes.

A case folder holds reference.py and candidate.py (plus fixed.py and case.toml for benchmark cases).
`--scale gpu` rewrites the reference's module-level integer constants to the values of case.toml's
[gpu] table before the case is built, so every process that loads the reference sees those sizes.
"""
from __future__ import annotations

import ast
import fnmatch
from dataclasses import replace
from pathlib import Path

from debugger.case import Case, load_case
from debugger.errors import InvalidInput


def is_case_folder(path: Path) -> bool:
    """A folder with reference.py and candidate.py."""
    return path.is_dir() and (path / "reference.py").is_file() and (path / "candidate.py").is_file()


def discover(cases_dir: str | Path, names: list[str] | None = None, limit: int | None = None) -> list[Path]:
    """The case folders under `cases_dir` (or `cases_dir` itself), sorted, filtered by name patterns, limited."""
    root = Path(cases_dir)
    if not root.exists():
        raise InvalidInput(f"cases folder not found: {root}")
    if not root.is_dir():
        raise InvalidInput(f"not a folder: {root}")
    folders = [root] if is_case_folder(root) else sorted(p for p in root.iterdir() if is_case_folder(p))
    if names:
        unknown = [n for n in names if not any(fnmatch.fnmatchcase(f.name, n) for f in folders)]
        if unknown:
            raise InvalidInput(f"no case folder named {', '.join(unknown)} under {root}")
        folders = [f for f in folders if any(fnmatch.fnmatchcase(f.name, n) for n in names)]
    if limit is not None:
        if limit < 1:
            raise InvalidInput(f"--limit must be at least 1 (got {limit})")
        folders = folders[:limit]
    if not folders:
        raise InvalidInput(f"no case folders (reference.py + candidate.py) under {root}")
    return folders


def _int_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Top-level `name = <int>` (and `name: int = <int>`) assignments: name -> the value node."""
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        else:
            continue
        if isinstance(value, ast.Constant) and type(value.value) is int:
            found[target] = value
    return found


def scale_reference(src: str, values: dict) -> str:
    """The reference source with each named top-level integer constant set to its new value.

    Only `name = <int literal>` at module level is rewritten; anything else is left as written.
    Raises InvalidInput for a name that is not such a constant or a value that is not an integer.
    """
    if not values:
        return src
    for name, value in values.items():
        if type(value) is not int:
            raise InvalidInput(f"[gpu] value of {name} must be an integer (got {value!r})")
    try:
        tree = ast.parse(src)
    except SyntaxError as e:
        raise InvalidInput(f"syntax error in reference line {e.lineno}: {e.msg}") from None
    consts = _int_constants(tree)
    missing = sorted(set(values) - set(consts))
    if missing:
        raise InvalidInput(f"[gpu] names {', '.join(missing)} are not top-level integer constants of the reference")
    lines = src.splitlines(keepends=True)
    # ast offsets are UTF-8 byte columns; edit the affected lines as bytes, last first.
    for name in sorted(values, key=lambda n: (consts[n].lineno, consts[n].col_offset), reverse=True):
        node = consts[name]
        if node.lineno != node.end_lineno:
            raise InvalidInput(f"reference constant {name} spans several lines; cannot rescale it")
        raw = lines[node.lineno - 1].encode()
        raw = raw[:node.col_offset] + str(values[name]).encode() + raw[node.end_col_offset:]
        lines[node.lineno - 1] = raw.decode()
    return "".join(lines)


def skip_reason(case: Case, device: str) -> str | None:
    """Why a case cannot run on `device` (case.toml's `needs`: a fault only that device shows), or None.
    A case whose fault only a GPU shows passes on the interpreter: run there it would test nothing."""
    needs = case.meta.get("needs")
    if needs is None or needs == device:
        return None
    if needs not in ("cuda", "cpu"):
        raise InvalidInput(f"case.toml of {case.name}: needs must be \"cuda\" or \"cpu\" (got {needs!r})")
    return f"needs {needs}: its fault shows only there (this run is on {device})"


def load_bench_case(folder: Path, scale: str | None = None) -> tuple[Case, bool]:
    """Load one case folder; with scale="gpu", at its [gpu] sizes. Returns (case, scaled)."""
    case = load_case(folder)
    if scale is None:
        return case, False
    if scale != "gpu":
        raise InvalidInput(f"unknown --scale {scale!r}: only 'gpu' is defined")
    values = case.meta.get(scale)
    if not isinstance(values, dict) or not values:
        return case, False
    return replace(case, reference_src=scale_reference(case.reference_src, values)), True
