"""Loading a case (reference + candidate + tolerances): the one place that reads case files.

A case is either a folder (reference.py, candidate.py, optional fixed.py and case.toml) or a
candidate file with `--ref REFERENCE`. Unusable input raises InvalidInput with a one-line message;
a candidate that does not compile is *not* invalid input (it is a failing candidate, reported later).
"""
from __future__ import annotations

import ast
import hashlib
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from debugger.errors import InvalidInput

CASE_TOML_KEYS = {"atol", "rtol", "bug_class", "operator", "description", "dtype", "tags", "device"}


@dataclass(frozen=True)
class Case:
    """A reference and a candidate, as source text, with where they came from and the tolerances."""

    name: str
    reference_src: str
    candidate_src: str
    reference_path: Path | None = None
    candidate_path: Path | None = None
    fixed_path: Path | None = None
    atol: float | None = None
    rtol: float | None = None
    bug_class: str | None = None
    meta: dict = field(default_factory=dict)

    @property
    def folder(self) -> Path | None:
        """The folder holding the candidate (the case folder), if it came from disk."""
        return self.candidate_path.parent if self.candidate_path else None

    def with_candidate(self, candidate_src: str) -> "Case":
        """The same task with another candidate source (tolerances and reference frozen)."""
        return replace(self, candidate_src=candidate_src)

    def digest(self) -> str:
        """A short content hash of reference + candidate, for ledgers and caches."""
        h = hashlib.sha256(self.reference_src.encode() + b"\0" + self.candidate_src.encode())
        return h.hexdigest()[:16]


def _read(path: Path, what: str) -> str:
    if not path.exists():
        raise InvalidInput(f"{what} not found: {path}")
    if not path.is_file():
        raise InvalidInput(f"{what} is not a file: {path}")
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInput(f"cannot read {what} {path}: {e}") from None


def top_level_names(src: str) -> set[str]:
    """Names bound at module level (classes, functions, assignments, imports)."""
    names: set[str] = set()
    for node in ast.parse(src).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names.add(t.id)
        elif isinstance(node, (ast.AnnAssign,)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                names.add((a.asname or a.name).split(".")[0])
    return names


def validate_reference(src: str, label: str = "reference") -> None:
    """Raise InvalidInput unless the reference parses and defines Model and get_inputs."""
    try:
        names = top_level_names(src)
    except SyntaxError as e:
        raise InvalidInput(f"syntax error in {label} line {e.lineno}: {e.msg}") from None
    missing = [n for n in ("Model", "get_inputs") if n not in names]
    if missing:
        raise InvalidInput(f"{label} does not define {' and '.join(missing)} (KernelBench format)")


def validate_candidate(src: str, label: str = "candidate") -> None:
    """Raise InvalidInput if a parseable candidate lacks ModelNew; syntax errors pass through.

    A candidate with a syntax error is a failing candidate (compile_error), not unusable input.
    """
    try:
        names = top_level_names(src)
    except SyntaxError:
        return
    if "ModelNew" not in names:
        raise InvalidInput(f"{label} does not define ModelNew (KernelBench format)")


def _read_case_toml(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise InvalidInput(f"bad case.toml {path}: {e}") from None
    for key in ("atol", "rtol"):
        if key in data and not isinstance(data[key], (int, float)):
            raise InvalidInput(f"bad case.toml {path}: {key} must be a number")
    return data


def load_case(candidate: str | Path, ref: str | Path | None = None, *,
              atol: float | None = None, rtol: float | None = None) -> Case:
    """Load a case from a folder, or from a candidate file and a reference file.

    Flags (`atol`, `rtol`) override case.toml, which overrides the per-dtype defaults.
    """
    cand_path = Path(candidate)
    meta: dict = {}
    fixed = None
    if cand_path.is_dir():
        folder = cand_path
        cand_path = folder / "candidate.py"
        ref_path = Path(ref) if ref else folder / "reference.py"
        meta = _read_case_toml(folder / "case.toml")
        fixed = folder / "fixed.py" if (folder / "fixed.py").exists() else None
        name = folder.name
    else:
        if ref is None:
            sibling = cand_path.parent / "reference.py"
            if not sibling.exists():
                raise InvalidInput("no reference given: pass --ref REFERENCE or a case folder")
            ref_path = sibling
        else:
            ref_path = Path(ref)
        if cand_path.parent == ref_path.parent:
            meta = _read_case_toml(cand_path.parent / "case.toml")
        name = cand_path.stem
    ref_src = _read(ref_path, "reference")
    cand_src = _read(cand_path, "candidate")
    validate_reference(ref_src, f"reference {ref_path}")
    validate_candidate(cand_src, f"candidate {cand_path}")
    return Case(
        name=name,
        reference_src=ref_src,
        candidate_src=cand_src,
        reference_path=ref_path.resolve(),
        candidate_path=cand_path.resolve(),
        fixed_path=fixed.resolve() if fixed else None,
        atol=atol if atol is not None else meta.get("atol"),
        rtol=rtol if rtol is not None else meta.get("rtol"),
        bug_class=meta.get("bug_class"),
        meta=meta,
    )


def case_from_sources(reference_src: str, candidate_src: str, *, name: str = "inline",
                      atol: float | None = None, rtol: float | None = None) -> Case:
    """Build a case from source text (the MCP tools and remote agents need no shared files)."""
    validate_reference(reference_src)
    validate_candidate(candidate_src)
    return Case(name=name, reference_src=reference_src, candidate_src=candidate_src,
                atol=atol, rtol=rtol)
