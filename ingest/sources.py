"""Python sources out of logs: code from model completions, and the KernelBench names a case needs.

Logs hold code as plain files, as fenced blocks or `<triton>` tags inside a completion, or inside the
first user message of a conversation. A case needs `class Model` in the reference and `class ModelNew`
in the candidate; pipelines that name the classes after the operator (KernelBook: `HighwayLayer`,
`HighwayLayerNew`) are renamed token by token, which changes nothing else.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize

FENCE_RE = re.compile(r"```[ \t]*(?P<lang>[A-Za-z0-9_+-]*)[^\n]*\n(?P<code>.*?)```", re.S)
TAG_RE = re.compile(r"<(?P<tag>triton|code|kernel|answer)>\s*(?P<code>.*?)\s*</(?P=tag)>", re.S)


def parses(src: str | None) -> bool:
    if not src:
        return False
    try:
        ast.parse(src)
        return True
    except (SyntaxError, ValueError):
        return False


def top_classes(src: str) -> list[ast.ClassDef]:
    try:
        return [n for n in ast.parse(src).body if isinstance(n, ast.ClassDef)]
    except (SyntaxError, ValueError):
        return []


def top_names(src: str) -> set[str]:
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return set()
    names = set()
    for n in tree.body:
        if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(n.name)
        elif isinstance(n, ast.Assign):
            names.update(t.id for t in n.targets if isinstance(t, ast.Name))
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in n.names)
    return names


def _score(code: str) -> int:
    """How much a block looks like a whole candidate module."""
    return (4 * ("ModelNew" in code) + 3 * ("@triton.jit" in code or "load_inline" in code)
            + 2 * ("import" in code) + parses(code))


def extract_code(text: str | None) -> str | None:
    """The candidate module inside a completion: tagged, fenced (the most complete block), or bare code."""
    if not text or not text.strip():
        return None
    blocks = [m.group("code") for m in TAG_RE.finditer(text)]
    inner = []
    for b in blocks:  # a tag may wrap a fenced block
        fenced = [m.group("code") for m in FENCE_RE.finditer(b)]
        inner.extend(fenced or [b])
    if not inner:
        inner = [m.group("code") for m in FENCE_RE.finditer(text)
                 if m.group("lang").lower() in ("", "python", "py", "python3")]
    if inner:
        best = max(enumerate(inner), key=lambda t: (_score(t[1]), t[0]))[1]
        return best.strip("\n") + "\n"
    return text if parses(text) and ("import" in text or "class " in text) else None


def extract_reference(text: str | None) -> str | None:
    """The PyTorch reference inside a prompt: the last fenced block defining a class and get_inputs."""
    if not text:
        return None
    if "get_inputs" in text and parses(text):
        return text
    # Prompts show an example architecture first (KernelBench's template) and the task last.
    blocks = [m.group("code") for m in FENCE_RE.finditer(text)]
    tasks = [b for b in blocks if "get_inputs" in b and "class " in b and "ModelNew" not in b]
    return tasks[-1].strip("\n") + "\n" if tasks else None


def _rename(src: str, old: str, new: str) -> str:
    """`src` with every NAME token `old` replaced by `new` (strings and comments untouched)."""
    offsets = [0]
    for line in src.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    pieces, pos = [], 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.NAME and tok.string == old:
                start = offsets[tok.start[0] - 1] + tok.start[1]
                pieces.append(src[pos:start])
                pieces.append(new)
                pos = start + len(old)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return src
    pieces.append(src[pos:])
    return "".join(pieces)


def _module_classes(src: str) -> list[str]:
    """Top-level classes that subclass something ending in Module (nn.Module, torch.nn.Module)."""
    names = []
    for c in top_classes(src):
        for b in c.bases:
            text = ast.unparse(b)
            if text.endswith("Module"):
                names.append(c.name)
                break
    return names


def as_kernelbench_reference(src: str | None) -> tuple[str | None, str | None]:
    """(source with `class Model`, the original class name if renamed) or (src, None) when nothing to do."""
    if not src or not parses(src):
        return src, None
    names = top_names(src)
    if "Model" in names:
        return src, None
    modules = _module_classes(src)
    if len(modules) != 1:
        return src, None
    return _rename(src, modules[0], "Model"), modules[0]


def as_kernelbench_candidate(src: str | None, reference_class: str | None = None) -> tuple[str | None, str | None]:
    """(source with `class ModelNew`, the original class name if renamed) or (src, None)."""
    if not src or not parses(src):
        return src, None
    if "ModelNew" in top_names(src):
        return src, None
    modules = _module_classes(src)
    wanted = [m for m in modules if reference_class and m == reference_class + "New"] or \
        [m for m in modules if m.endswith("New")]
    if len(wanted) != 1:
        return src, None
    return _rename(src, wanted[0], "ModelNew"), wanted[0]


def is_reference(src: str | None) -> bool:
    """Parses and defines Model and get_inputs (what a case needs)."""
    return bool(src) and {"Model", "get_inputs"} <= top_names(src)


def is_candidate(src: str | None) -> bool:
    """Parses and defines ModelNew."""
    return bool(src) and "ModelNew" in top_names(src)
