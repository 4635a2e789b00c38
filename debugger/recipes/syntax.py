"""The Triton candidate as the recipes read it: kernels, their parameters and dependencies, launches,
and the file's spelling of triton and triton.language.

Built on the Python syntax tree of debugger/source/tree.py (parse, walk, text, call arguments). The
kernels and their launches are debugger/source/kernels.py's, the finder the host model and the Triton
language read too: this view adds to each what the recipes ask (parameters, dependencies, the launch's
bound arguments and grid expressions), and holds the launches of one known kernel through a grid
(`kernel[grid](...)`, also through a variable, a table, `self.kernel` or `wrap_triton(kernel)`). There is
no other name resolution: `tl` is whatever `triton.language` was imported as. Dependencies between kernel variables are flow-insensitive (every assignment
of a name counts), which is what a recipe needs to ask "does this pointer depend on the loop variable?".
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property

from debugger.source.host import SourceModule
from debugger.source.tree import (Node, call_arg, call_args, dotted, enclosing, identifiers, inside, parse_tree,
                                  target_names, text, unparen, walk)

PID = "@pid"        # marker prefix: depends on tl.program_id(axis) -> "@pid0", "@pid1", ...
ARANGE = "@arange"  # marker: depends on tl.arange
LOAD = "@load"      # marker: depends on a tl.load
LOOP = "@loop"      # marker: a for-loop target

SIZE_NAME = re.compile(
    r"^(n|N|M|K|L|D|H|W|C|B|T|S|E|F)$|^[A-Z]{2,4}$|^(n|N|num|size|len|length|total|count)_|numel|elements|"
    r"_(size|len|length|count|rows|cols|n|N|M|K|D|dim)$|^(rows|cols|dim|hidden|features|seq)",
)
POINTER_NAME = re.compile(r"ptr|pointer|_p$|^p_")
STRIDE_NAME = re.compile(r"stride")


@dataclass
class Param:
    """One parameter of a function."""

    name: str
    node: Node
    annotation: str = ""
    default: Node | None = None

    @property
    def constexpr(self) -> bool:
        return "constexpr" in self.annotation

    @property
    def pointer_like(self) -> bool:
        return bool(POINTER_NAME.search(self.name.lower()))

    @property
    def stride_like(self) -> bool:
        return bool(STRIDE_NAME.search(self.name.lower()))

    @property
    def size_like(self) -> bool:
        return (not self.pointer_like and not self.stride_like
                and bool(SIZE_NAME.search(self.name)) and "block" not in self.name.lower())


def params(fn: Node) -> list[Param]:
    """Parameters of a function definition, in order (no `self` filtering)."""
    out = []
    ps = fn.child_by_field_name("parameters")
    for p in ps.named_children if ps is not None else []:
        if p.type == "identifier":
            out.append(Param(text(p), p))
        elif p.type in ("typed_parameter", "typed_default_parameter", "default_parameter"):
            name = p.child_by_field_name("name") or next(
                (c for c in p.named_children if c.type == "identifier"), None)
            if name is None:
                continue
            out.append(Param(text(name), p, text(p.child_by_field_name("type")),
                             p.child_by_field_name("value")))
    return out


def body_insert_point(fn: Node) -> tuple[int, str]:
    """Byte offset of the first body statement's line start (after a docstring) and its indent."""
    body = fn.child_by_field_name("body")
    stmts = [s for s in body.named_children if s.type != "comment"]
    first = stmts[0]
    if (first.type == "expression_statement" and first.named_child_count
            and first.named_children[0].type == "string" and len(stmts) > 1):
        first = stmts[1]
    return first.start_byte - first.start_point[1], " " * first.start_point[1]


class Deps:
    """Flow-insensitive dependencies between the names of one function."""

    def __init__(self, src: "Source", fn: Node):
        self.src = src
        self.direct: dict[str, set[str]] = defaultdict(set)
        self.defs: dict[str, list[tuple[Node, Node]]] = defaultdict(list)  # name -> [(stmt, rhs)]
        for n in walk(fn.child_by_field_name("body"), skip_functions=True):
            if n.type in ("assignment", "augmented_assignment"):
                rhs = n.child_by_field_name("right")
                if rhs is None:
                    continue
                refs = self.atoms(rhs)
                for t in target_names(n.child_by_field_name("left")):
                    self.direct[t] |= refs
                    self.defs[t].append((n, rhs))
            elif n.type == "for_statement":
                refs = self.atoms(n.child_by_field_name("right")) | {LOOP}
                for t in target_names(n.child_by_field_name("left")):
                    self.direct[t] |= refs

    def atoms(self, node: Node | None) -> set[str]:
        """Names and markers an expression reads directly."""
        out = identifiers(node)
        if node is None:
            return out
        for c in walk(node):
            if c.type != "call":
                continue
            name = self.src.call_name(c)
            if name == "tl.program_id":
                axis = call_arg(c, 0, "axis")
                out.add(PID + (text(axis) if axis is not None else "0"))
            elif name == "tl.arange":
                out.add(ARANGE)
            elif name == "tl.load":
                out.add(LOAD)
        return out

    def closure(self, names: set[str]) -> set[str]:
        """`names` and everything they depend on, transitively."""
        seen = set()
        todo = list(names)
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            todo.extend(self.direct.get(n, ()))
        return seen

    def of(self, node: Node | None) -> set[str]:
        """Everything an expression depends on, transitively."""
        return self.closure(self.atoms(node))

    def pid_axes(self, node: Node | None) -> set[str]:
        return {a[len(PID):] for a in self.of(node) if a.startswith(PID)}


@dataclass
class Kernel:
    """A Triton kernel: its definition, parameters and dependencies."""

    src: "Source"
    fn: Node
    decorators: list[Node] = field(default_factory=list)
    bound: str = ""  # the name launches use when it is not the def's (`k = triton.jit(fn)`)

    @property
    def name(self) -> str:
        return self.bound or text(self.fn.child_by_field_name("name"))

    @property
    def body(self) -> Node:
        return self.fn.child_by_field_name("body")

    @cached_property
    def params(self) -> list[Param]:
        return params(self.fn)

    @cached_property
    def param_names(self) -> list[str]:
        return [p.name for p in self.params]

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    @cached_property
    def deps(self) -> Deps:
        return Deps(self.src, self.fn)

    def calls(self, *names: str) -> list[Node]:
        return self.src.calls(self.body, *names)

    def is_constexpr(self, name: str) -> bool:
        p = self.param(name)
        return p is not None and (p.constexpr or "BLOCK" in name.upper())

    def nodes(self, *types: str):
        return [n for n in walk(self.body) if n.type in types]

    def launches(self) -> list["Launch"]:
        return [l for l in self.src.launches if l.kernel == self.name]


@dataclass
class Launch:
    """A `kernel[grid](args...)` call in host code."""

    src: "Source"
    call: Node
    kernel: str
    grid: Node

    @property
    def host(self) -> Node | None:
        return enclosing(self.call, "function_definition")

    def bind(self, k: Kernel) -> dict[str, Node]:
        """Kernel parameter name -> the host argument node passed for it."""
        pos, kw = call_args(self.call)
        out = {}
        for p, a in zip(k.params, pos):
            out[p.name] = a
        for name, v in kw.items():
            if name in k.param_names:
                out[name] = v
        return out

    def grid_exprs(self) -> list[Node]:
        """The expression(s) the grid is computed from: the subscript itself, a lambda's body, or
        the right-hand sides of the host variable it names."""
        g = unparen(self.grid)
        if g.type == "identifier" and self.host is not None:
            rhss = [rhs for stmt, rhs in Deps(self.src, self.host).defs.get(text(g), [])
                    if stmt.start_byte < self.call.start_byte]
            if not rhss:
                return [g]
            g = unparen(rhss[-1])
        if g.type == "lambda":
            g = unparen(g.child_by_field_name("body"))
        return [g]

    def grid_dims(self) -> list[Node]:
        """The grid's per-axis expressions when it is a literal tuple (possibly in a lambda)."""
        g = self.grid_exprs()[0]
        if g.type in ("tuple", "list"):
            return [c for c in g.named_children if c.type != "comment"]
        return [g]


class Source:
    """A parsed candidate source with the lookups recipes need."""

    def __init__(self, src: str):
        self.src = src
        self.data = src.encode()
        self.tree = parse_tree(src)
        self.root = self.tree.root_node
        self.ok = not self.root.has_error

    # Names --------------------------------------------------------------------------------------
    @cached_property
    def aliases(self) -> dict[str, str]:
        """Local alias -> canonical module prefix ("tl" for triton.language, "triton")."""
        out = {"tl": "tl", "triton": "triton"}
        for n in self.root.named_children:
            if n.type == "import_statement":
                for c in n.named_children:
                    if c.type == "aliased_import":
                        mod = text(c.child_by_field_name("name"))
                        alias = text(c.child_by_field_name("alias"))
                        if mod == "triton.language":
                            out[alias] = "tl"
                        elif mod == "triton":
                            out[alias] = "triton"
            elif n.type == "import_from_statement":
                mod = text(n.child_by_field_name("module_name"))
                for c in n.named_children[1:]:
                    name = c.child_by_field_name("name") if c.type == "aliased_import" else c
                    alias = c.child_by_field_name("alias") if c.type == "aliased_import" else c
                    if mod == "triton" and text(name) == "language":
                        out[text(alias)] = "tl"
        return out

    def canonical(self, name: str | None) -> str | None:
        """`tl.x` for any spelling of triton.language.x; `tl.math.exp` -> `tl.exp`."""
        if name is None:
            return None
        if name.startswith("triton.language."):
            name = "tl." + name[len("triton.language."):]
        head, _, rest = name.partition(".")
        if rest and head in self.aliases:
            name = f"{self.aliases[head]}.{rest}"
        if name.startswith("tl.math."):
            name = "tl." + name[len("tl.math."):]
        return name

    def call_name(self, call: Node) -> str | None:
        return self.canonical(dotted(call.child_by_field_name("function")))

    def calls(self, node: Node, *names: str) -> list[Node]:
        """Calls under `node` whose canonical function name is one of `names` (all calls if none)."""
        out = []
        for n in walk(node):
            if n.type == "call" and (not names or self.call_name(n) in names):
                out.append(n)
        return out

    @cached_property
    def tl(self) -> str:
        """How this file spells triton.language."""
        return next((a for a, m in self.aliases.items() if m == "tl" and a in self.imported_names),
                    "tl")

    @cached_property
    def imported_names(self) -> set[str]:
        names = set()
        for n in self.root.named_children:
            if n.type in ("import_statement", "import_from_statement"):
                for c in n.named_children:
                    if c.type == "aliased_import":
                        names.add(text(c.child_by_field_name("alias")))
                    elif c.type == "dotted_name":
                        names.add(text(c).split(".")[0])
        return names

    def triton_call(self, fn: str, *args: str) -> str:
        """Text of `triton.<fn>(args)` using this file's spelling of triton."""
        alias = next((a for a, m in self.aliases.items() if m == "triton" and a in self.imported_names),
                     "triton")
        return f"{alias}.{fn}({', '.join(args)})"

    # Structure ----------------------------------------------------------------------------------
    @cached_property
    def module(self) -> SourceModule:
        """The host model of this tree (debugger/source/host.py): its kernel and launch finder."""
        return SourceModule(self.src, self.tree)

    @cached_property
    def kernels(self) -> list[Kernel]:
        """The file's kernels (source/kernels.py), in source order."""
        out = []
        for k in self.module.kernel_defs:
            own = text(k.fn.child_by_field_name("name"))
            out.append(Kernel(self, k.fn, list(k.decorators), "" if k.name == own else k.name))
        return out

    def kernel(self, name: str) -> Kernel | None:
        return next((k for k in self.kernels if k.name == name), None)

    def in_kernel(self, node: Node) -> Kernel | None:
        return next((k for k in self.kernels if inside(node, k.fn)), None)

    @cached_property
    def launches(self) -> list[Launch]:
        """The launch sites (source/kernels.py) of one known kernel, through a grid."""
        return [Launch(self, site.call, site.kernel, site.grid) for site in self.module.launch_sites
                if site.kernel is not None and site.grid is not None]

    def line_start(self, node: Node) -> int:
        """Byte offset of the start of node's first line."""
        return self.data.rfind(b"\n", 0, node.start_byte) + 1

    def indent_of(self, node: Node) -> str:
        start = self.line_start(node)
        raw = self.data[start:node.start_byte]
        return raw.decode() if raw.strip() == b"" else " " * node.start_point[1]
