"""The CUDA/C++ texts a candidate hands to `load_inline`/`load`, with every line mapped to the Python file.

Arguments are followed as real answers write them: string literals (escapes decoded, raw strings
kept), implicit and `+` concatenations, f-strings (`{{`/`}}` unescaped, a substitution replaced by the
module-level string or number it names, else by nothing), names bound by an assignment in the file,
`cuda_sources=[...]`/`cpp_sources` lists and tuples, `"\\n".join([...])`, `textwrap.dedent(...)`
and `.strip()`. A string literal that holds a `__global__` kernel but reaches no loader (a source
written to a file for `load(sources=[path])`, a loader behind a helper's parameter) is taken as a
CUDA source of its own. Each C++ line knows the Python line where it starts (`ExtensionSource.pyline`).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cached_property

from tree_sitter import Node

from debugger.source.tree import call_args, parse_tree, text, unparen, walk

LOADERS = ("load_inline", "load")
_KERNELISH = re.compile(r"__global__|<<<")
_MAX_DEPTH = 12


@dataclass
class _Segment:
    text: str
    row: int        # 0-based Python row of the segment's first character
    literal: bool   # its newlines are newlines of the Python file (not escapes or joins)


@dataclass
class _Text:
    segments: list[_Segment] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)  # the string literals it was built from

    def __add__(self, other: "_Text") -> "_Text":
        return _Text(self.segments + other.segments, self.nodes + other.nodes)

    def lstrip(self) -> "_Text":
        segs = list(self.segments)
        while segs:
            s = segs[0]
            stripped = s.text.lstrip()
            if stripped:
                gone = s.text[:len(s.text) - len(stripped)]
                row = s.row + (gone.count("\n") if s.literal else 0)
                segs[0] = _Segment(stripped, row, s.literal)
                break
            segs.pop(0)
        return _Text(segs, self.nodes)


@dataclass(frozen=True)
class ExtensionSource:
    """One C++/CUDA translation unit of the candidate: `kind` cuda (cuda_sources) or cpp (cpp_sources)."""

    text: str
    rows: tuple[int, ...]       # C++ line (0-based) -> Python line (1-based)
    kind: str
    loader_line: int | None     # the load_inline call's line (None: a kernel string no loader reaches)
    functions: tuple[str, ...]  # the loader's functions=[...]

    def pyline(self, row: int) -> int | None:
        """The Python line of a 0-based C++ row."""
        if not self.rows:
            return self.loader_line
        return self.rows[min(max(row, 0), len(self.rows) - 1)]


def _build(t: _Text) -> tuple[str, tuple[int, ...]]:
    """The text and its C++-row -> Python-line table."""
    rows: list[int] = []
    pending = True  # the current C++ line has no character yet
    for seg in t.segments:
        for i, part in enumerate(seg.text.split("\n")):
            row = seg.row + i if seg.literal else seg.row
            if i > 0:
                if pending:  # an empty C++ line: where its newline is
                    rows.append((row - 1 if seg.literal else row) + 1)
                pending = True
            if part and pending:
                rows.append(row + 1)
                pending = False
    if pending and t.segments:
        last = t.segments[-1]
        rows.append(last.row + (last.text.count("\n") if last.literal else 0) + 1)
    return "".join(s.text for s in t.segments), tuple(rows)


class PythonFile:
    """The candidate's Python tree, and the string values its loader arguments evaluate to."""

    def __init__(self, src: str):
        self.src = src
        self.tree = parse_tree(src)
        self.root = self.tree.root_node
        self._bytes = src.encode()

    @cached_property
    def assignments(self) -> dict[str, list[Node]]:
        """name -> the values assigned to it, in file order."""
        out: dict[str, list[Node]] = {}
        for n in walk(self.root):
            if n.type == "assignment":
                left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
                if left is not None and right is not None and left.type == "identifier":
                    out.setdefault(text(left), []).append(right)
        return out

    @cached_property
    def loader_calls(self) -> list[Node]:
        """`load_inline(...)`, `cpp_extension.load_inline(...)`, `load(...)` when imported from cpp_extension."""
        imports_load = bool(re.search(r"cpp_extension\s+import[^\n]*\bload\b", self.src))
        calls = []
        for n in walk(self.root):
            if n.type != "call":
                continue
            name = text(n.child_by_field_name("function"))
            last = name.rsplit(".", 1)[-1]
            if last == "load_inline" or (last == "load" and ("cpp_extension." in name or
                                                            (name == "load" and imports_load))):
                calls.append(n)
        return calls

    # -- values ----------------------------------------------------------------------------------
    def value(self, node: Node | None, depth: int = 0) -> _Text | None:
        """The string an expression evaluates to, as segments with Python rows; None when unknown."""
        if node is None or depth > _MAX_DEPTH:
            return None
        node = unparen(node)
        if node.type == "string":
            return self._string(node, depth)
        if node.type == "concatenated_string":
            parts = [self.value(c, depth + 1) for c in node.named_children if c.type == "string"]
            return _join(parts, "")
        if node.type == "binary_operator" and text(node.child_by_field_name("operator")) == "+":
            return _join([self.value(node.child_by_field_name("left"), depth + 1),
                          self.value(node.child_by_field_name("right"), depth + 1)], "")
        if node.type == "identifier":
            bound = [v for v in self.assignments.get(text(node), []) if v.start_byte != node.start_byte]
            return self.value(bound[-1], depth + 1) if bound else None
        if node.type in ("list", "tuple"):
            return _join([self.value(c, depth + 1) for c in node.named_children], "\n")
        if node.type == "call":
            return self._call_value(node, depth)
        return None

    def _call_value(self, node: Node, depth: int) -> _Text | None:
        fn = node.child_by_field_name("function")
        pos, _ = call_args(node)
        name = text(fn)
        if name.rsplit(".", 1)[-1] == "dedent" and pos:
            return self.value(pos[0], depth + 1)  # columns move, lines do not
        if fn.type == "attribute":
            attr = text(fn.child_by_field_name("attribute"))
            obj = fn.child_by_field_name("object")
            if attr in ("strip", "lstrip") and not pos:
                inner = self.value(obj, depth + 1)
                return inner.lstrip() if inner is not None else None
            if attr == "rstrip" and not pos:
                return self.value(obj, depth + 1)
            if attr == "join" and len(pos) == 1:
                sep = self.value(obj, depth + 1)
                items = unparen(pos[0])
                if sep is None or items.type not in ("list", "tuple"):
                    return None
                sep_text = "".join(s.text for s in sep.segments)
                return _join([self.value(c, depth + 1) for c in items.named_children], sep_text)
        return None

    def _string(self, node: Node, depth: int) -> _Text | None:
        start = node.children[0] if node.children else None
        prefix = text(start).rstrip("'\"").lower() if start is not None else ""
        if "b" in prefix:
            return None
        raw, fstring = "r" in prefix, "f" in prefix
        segs: list[_Segment] = []
        for c in node.children:
            if c.type == "string_content":
                pos, row = c.start_byte, c.start_point[0]
                for e in c.children:
                    if e.start_byte > pos:
                        segs.append(_Segment(self._bytes[pos:e.start_byte].decode(errors="replace"), row, True))
                    segs.append(self._escape(e, raw, fstring))
                    pos, row = e.end_byte, e.end_point[0]
                if c.end_byte > pos:
                    segs.append(_Segment(self._bytes[pos:c.end_byte].decode(errors="replace"), row, True))
            elif c.type == "interpolation":
                segs.append(_Segment(self._substitution(c, depth), c.start_point[0], False))
        return _Text(segs, [node])

    def _escape(self, e: Node, raw: bool, fstring: bool) -> _Segment:
        t = text(e)
        row = e.start_point[0]
        if e.type == "escape_interpolation":
            return _Segment(t[0] if fstring else t, row, False)
        if raw:
            return _Segment(t, row, True)
        try:
            return _Segment(ast.literal_eval('"' + t + '"'), row, False)
        except (SyntaxError, ValueError):
            return _Segment(t, row, False)

    def _substitution(self, node: Node, depth: int) -> str:
        expr = next((c for c in node.named_children if c.type not in ("format_specifier", "type_conversion")), None)
        if expr is None or expr.type != "identifier":
            return ""
        bound = self.assignments.get(text(expr), [])
        if not bound:
            return ""
        value = unparen(bound[-1])
        if value.type in ("integer", "float"):
            return text(value)
        inner = self.value(value, depth + 1)
        return "".join(s.text for s in inner.segments) if inner is not None else ""


def _join(parts: list[_Text | None], sep: str) -> _Text | None:
    known = [p for p in parts if p is not None]
    if not known:
        return None
    out = known[0]
    for p in known[1:]:
        if sep:
            row = p.segments[0].row if p.segments else (out.segments[-1].row if out.segments else 0)
            out = out + _Text([_Segment(sep, row, False)])
        out = out + p
    return out


def _names(pf: PythonFile, node: Node | None) -> tuple[str, ...]:
    """The strings of a functions=[...] argument (a list, a tuple, a name bound to one, a lone string)."""
    if node is None:
        return ()
    node = unparen(node)
    if node.type == "identifier":
        bound = pf.assignments.get(text(node), [])
        return _names(pf, bound[-1]) if bound else ()
    items = node.named_children if node.type in ("list", "tuple") else [node]
    out = []
    for item in items:
        v = pf.value(item)
        if v is not None and item.type == "string":
            out.append("".join(s.text for s in v.segments))
    return tuple(out)


def python_code(src: str) -> str:
    """The Python file without its string literals and comments (the extension sources removed)."""
    import io
    import tokenize

    try:
        skip = {tokenize.COMMENT, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1)}
        return " ".join(t.string for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type not in skip)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return src


def find_sources(src: str) -> list[ExtensionSource]:
    """Every CUDA/C++ unit the candidate compiles, cuda_sources first per loader call."""
    pf = PythonFile(src)
    if pf.root.has_error and not pf.loader_calls:
        return []
    found: list[ExtensionSource] = []
    used: set[int] = set()
    seen: set[tuple[str, str]] = set()
    for call in pf.loader_calls:
        pos, kw = call_args(call)
        name = text(call.child_by_field_name("function")).rsplit(".", 1)[-1]
        if name != "load_inline":
            continue
        functions = _names(pf, kw.get("functions", pos[3] if len(pos) > 3 else None))
        for kind, key, index in (("cuda", "cuda_sources", 2), ("cpp", "cpp_sources", 1)):
            arg = kw.get(key, pos[index] if len(pos) > index else None)
            value = pf.value(arg)
            if value is None:
                continue
            used.update(n.start_byte for n in value.nodes)
            body, rows = _build(value)
            if not body.strip() or (kind, body) in seen:
                continue
            seen.add((kind, body))
            found.append(ExtensionSource(body, rows, kind, call.start_point[0] + 1, functions))
    for n in walk(pf.root):
        if n.type == "string" and n.start_byte not in used:
            value = pf.value(n)
            if value is None:
                continue
            body, rows = _build(value)
            if _KERNELISH.search(body) and ("cuda", body) not in seen:
                seen.add(("cuda", body))
                found.append(ExtensionSource(body, rows, "cuda", None, ()))
    return found


def build_key(src: str) -> str | None:
    """What decides the candidate's extension builds: its C++/CUDA units, the functions bound and the
    loader calls' other arguments (name, flags). Two candidates with the same key compile to the same
    extensions, so a host-side repair (parameters, wrappers) reuses the build. None: no unit found."""
    import hashlib

    units = find_sources(src)
    if not units:
        return None
    h = hashlib.sha256()
    for u in units:
        h.update(f"{u.kind}\0{u.text}\0{','.join(u.functions)}\0".encode())
    pf = PythonFile(src)
    for call in pf.loader_calls:
        _, kw = call_args(call)
        for key in sorted(kw):
            if key not in ("cuda_sources", "cpp_sources"):
                h.update(f"{key}={text(kw[key])}\0".encode())
    return h.hexdigest()[:16]
