"""Loading the knowledge base's files into validated records, and linting them.

`load_pattern(path)` and `load_reference_kernel(folder)` raise KnowledgeError (one line) on the first
problem; `load_all(kb_dir, ...)` returns what is valid plus the problems; `lint(kb_dir, ...)` lists
every problem, including the ones that span files (duplicate ids). Several roots are layers, the
first one first: the curated files, then the user's (learned patterns, `kb add`). An id or kernel
name that an earlier layer has already is shadowed there (a promoted pattern's learned original),
not a problem; within one layer it is.
"""
from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from debugger.knowledge.markdown import MarkdownError, fenced_blocks, sections, split_front_matter
from debugger.knowledge.schema import (REQUIRED_SECTIONS, Example, KernelToml, KnowledgeError,
                                       Pattern, ReferenceKernel, check_kernelbench, one_line)

EXAMPLE_BLOCKS = {"python reference": "reference", "python before": "before", "python after": "after"}
KERNEL_FILES = ("reference.py", "kernel.py", "kernel.toml")


def content_hash(*parts: bytes) -> str:
    """sha256 of the given byte strings, separated, as hex."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
        h.update(b"\0")
    return h.hexdigest()


def pattern_files(kb_dir: Path) -> list[Path]:
    """Every pattern file under kb/patterns (learned ones included), sorted."""
    root = Path(kb_dir) / "patterns"
    return sorted(p for p in root.rglob("*.md") if p.is_file() and p.name != "README.md") if root.is_dir() else []


def kernel_folders(kb_dir: Path) -> list[Path]:
    """Every folder under kb/reference_kernels that holds a kernel.toml or kernel.py, sorted."""
    root = Path(kb_dir) / "reference_kernels"
    if not root.is_dir():
        return []
    return sorted(d for d in root.iterdir()
                  if d.is_dir() and ((d / "kernel.toml").exists() or (d / "kernel.py").exists()))


def parse_example(section_text: str) -> Example:
    """The `python reference` / `python before` / `python after` blocks of an Example section."""
    found: dict[str, str] = {}
    for info, code in fenced_blocks(section_text):
        key = EXAMPLE_BLOCKS.get(" ".join(info.split()))
        if key is None:
            continue
        if key in found:
            raise ValueError(f"Example: two '{info}' blocks")
        found[key] = code
    missing = [info for info, key in EXAMPLE_BLOCKS.items() if key in ("before", "after") and key not in found]
    if missing:
        raise ValueError(f"Example: no {' / '.join(repr(m) for m in missing)} fenced block")
    return Example(**found)


def parse_pattern(text: str, *, stem: str | None = None) -> Pattern:
    """Validate pattern text; raise ValueError (one line, no file name) on the first problem."""
    try:
        meta, body = split_front_matter(text)
    except MarkdownError as e:
        raise ValueError(str(e)) from None
    if stem is not None and meta.get("id") != stem:
        raise ValueError(f"id: {meta.get('id')!r} differs from the file name {stem!r}")
    secs = sections(body)
    missing = [s for s in REQUIRED_SECTIONS if s not in secs]
    if missing:
        raise ValueError(f"body: missing section(s) {', '.join('## ' + s for s in missing)}")
    example = parse_example(secs["Example"])
    try:
        pattern = Pattern(**meta, sections=secs, example=example)
    except ValidationError as e:
        raise ValueError(f"front matter: {one_line(e)}") from None
    if example.reference is None and pattern.status != "learned":
        raise ValueError("Example: no 'python reference' fenced block")
    if example.reference is not None:
        check_kernelbench(example.reference, "Example reference", ("Model", "get_inputs", "get_init_inputs"))
    check_kernelbench(example.before, "Example before", ("ModelNew",))
    check_kernelbench(example.after, "Example after", ("ModelNew",))
    if example.before.strip() == example.after.strip():
        raise ValueError("Example: the before and after blocks are identical")
    return pattern


def load_pattern(path: Path) -> Pattern:
    """Load and validate one pattern file."""
    path = Path(path)
    try:
        data = path.read_bytes()
        pattern = parse_pattern(data.decode(), stem=path.stem)
    except (OSError, UnicodeDecodeError) as e:
        raise KnowledgeError(f"{path}: cannot read: {e}") from None
    except ValueError as e:
        raise KnowledgeError(f"{path}: {e}") from None
    return pattern.model_copy(update={"path": path, "content_hash": content_hash(data)})


def load_reference_kernel(folder: Path) -> ReferenceKernel:
    """Load and validate one reference kernel folder."""
    folder = Path(folder)
    missing = [f for f in KERNEL_FILES if not (folder / f).is_file()]
    if missing:
        raise KnowledgeError(f"{folder}: missing {', '.join(missing)}")
    try:
        raw = {f: (folder / f).read_bytes() for f in KERNEL_FILES}
        toml = tomllib.loads(raw["kernel.toml"].decode())
        meta = KernelToml(**toml)
        reference, kernel = raw["reference.py"].decode(), raw["kernel.py"].decode()
        check_kernelbench(reference, "reference.py", ("Model", "get_inputs", "get_init_inputs"))
        check_kernelbench(kernel, "kernel.py", ("ModelNew",))
        marker = {"triton": "triton", "cuda": "load_inline"}.get(meta.language, meta.language)
        if marker not in kernel:
            raise ValueError(f"kernel.py: does not use {marker} (language {meta.language})")
    except tomllib.TOMLDecodeError as e:
        raise KnowledgeError(f"{folder}/kernel.toml: not valid TOML: {e}") from None
    except ValidationError as e:
        raise KnowledgeError(f"{folder}/kernel.toml: {one_line(e)}") from None
    except (ValueError, OSError) as e:
        raise KnowledgeError(f"{folder}: {e}") from None
    return ReferenceKernel(**meta.model_dump(), name=folder.name, reference_src=reference,
                           kernel_src=kernel, path=folder,
                           content_hash=content_hash(*(raw[f] for f in KERNEL_FILES)))


@dataclass
class Loaded:
    """What `load_all` found: the valid records, one line per invalid file, and shadowed files."""

    patterns: list[Pattern] = field(default_factory=list)
    kernels: list[ReferenceKernel] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    shadowed: list[Path] = field(default_factory=list)  # a later layer's files an earlier layer overrides


def load_all(*roots: Path) -> Loaded:
    """Load every pattern and reference kernel under the roots (layers); invalid files become problems.

    Of two patterns with the same id in one root, the first (in path order) is kept and the second is
    a problem; a later root's pattern or kernel whose id an earlier root has is left out (shadowed).
    """
    out = Loaded()
    seen: dict[str, Path] = {}
    kernels: set[str] = set()
    for root in roots:
        earlier = dict(seen)
        for path in pattern_files(root):
            try:
                p = load_pattern(path)
            except KnowledgeError as e:
                out.problems.append(str(e))
                continue
            if p.id in earlier:
                out.shadowed.append(path)
                continue
            if p.id in seen:
                out.problems.append(f"{path}: id {p.id!r} is already used by {seen[p.id]}")
                continue
            seen[p.id] = path
            out.patterns.append(p)
        layer: set[str] = set()
        for folder in kernel_folders(root):
            if folder.name in kernels:
                out.shadowed.append(folder)
                continue
            try:
                out.kernels.append(load_reference_kernel(folder))
            except KnowledgeError as e:
                out.problems.append(str(e))
            layer.add(folder.name)
        kernels |= layer
    return out


def lint(*roots: Path) -> list[str]:
    """Every problem in the knowledge base's files, one line each (empty: all is well)."""
    loaded = load_all(*roots)
    problems = list(loaded.problems)
    known = known_recipes()
    if known:
        for p in loaded.patterns:
            if p.fix_recipe and p.fix_recipe not in known:
                problems.append(f"{p.path}: fix_recipe: {p.fix_recipe!r} is not a recipe in debugger/recipes")
    return problems


def known_recipes() -> set[str]:
    """Recipe ids from debugger.recipes where it exposes a registry (empty set: cannot check)."""
    try:
        import debugger.lang  # noqa: F401 - the languages register their recipes (CUDA's) as they load
        import debugger.recipes as recipes
    except Exception:  # the recipes package is optional here; its own tests cover it
        return set()
    for attr in ("RECIPES", "REGISTRY", "recipes"):
        reg = getattr(recipes, attr, None)
        if isinstance(reg, dict):
            return set(reg)
    fn = getattr(recipes, "recipe_ids", None) or getattr(recipes, "all_recipes", None)
    if callable(fn):
        ids = fn()
        return set(ids if not isinstance(ids, dict) else ids.keys())
    return set()
