"""One CUDA/C++ translation unit parsed with the tree-sitter CUDA grammar: functions, kernels, launches.

`Unit` wraps an `ExtensionSource` (so every node has a Python-file line), and knows its `__global__`
kernels, `__device__` helpers and host functions, the launches `k<<<grid, block, smem>>>(...)` in
host code, the host functions the extension exports (the loader's `functions=[...]`, pybind11
`m.def("name", &fn)`), and `#define` constants. `Function.deps` is flow-insensitive, like the Triton
layer's: every assignment of a name counts, which is what "is this index thread-derived?" needs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser

from debugger.lang.cuda.sources import ExtensionSource
from debugger.source.tree import ancestors, text, unparen, walk

LANGUAGE = Language(tree_sitter_cuda.language())
_PARSER = Parser(LANGUAGE)

THREAD = "threadIdx"
BLOCK = "blockIdx"
BUILTINS = {"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"}
SYNC = re.compile(r"^(__syncthreads\w*|__syncwarp|__threadfence_block|sync|barrier\w*|\w*arrive_and_wait)$")


def parse_tree(code: str):
    """The tree-sitter CUDA tree of `code` (never raises; syntax errors become ERROR nodes)."""
    return _PARSER.parse(code.encode())


def identifiers(node: Node | None) -> set[str]:
    """Names read in an expression: identifiers, not field names (`threadIdx.x` reads threadIdx)."""
    if node is None:
        return set()
    return {text(n) for n in walk(node) if n.type == "identifier"}


def tested(condition: Node) -> Node:
    """The expression an `if`/`while` tests: C++'s condition clause unwrapped, parentheses stripped."""
    if condition.type == "condition_clause" and condition.named_child_count == 1:
        condition = condition.named_children[0]
    return unparen(condition)


def statements(block: Node) -> list[Node]:
    """The statements of a compound statement (comments and braces left out)."""
    return [c for c in block.named_children if c.type != "comment"]


def syncs_in(fn: "Function", nodes: list[Node]) -> bool:
    """A barrier call (`__syncthreads()` and the like) inside any of `nodes`."""
    for root in nodes:
        for n in walk(root):
            if n.type == "call_expression" and SYNC.match(text(n.child_by_field_name("function")).split("::")[-1]):
                return True
    return False


INT_TYPE = re.compile(r"^(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:int|long|long\s+long|short|size_t|"
                      r"u?int(?:8|16|32|64)_t|int64_t|index_t|unsigned)$")


def int_params(fn: "Function") -> list[str]:
    """The function's integer scalar parameters, in order."""
    return [p.name for p in fn.params if not p.pointer and INT_TYPE.match(re.sub(r"\s+", " ", p.type.strip()))]


def call_args(call: Node) -> list[Node]:
    """The argument expressions of a call (none for a call without an argument list)."""
    args = call.child_by_field_name("arguments")
    return [a for a in args.named_children if a.type != "comment"] if args is not None else []


def _declared_name(decl: Node | None) -> tuple[str | None, bool]:
    """(name, is a pointer or array) of a declarator chain."""
    pointer = False
    while decl is not None:
        if decl.type in ("identifier", "field_identifier"):
            return text(decl), pointer
        if decl.type in ("pointer_declarator", "array_declarator"):
            pointer = True
        if decl.type in ("qualified_identifier", "destructor_name", "operator_name", "template_function"):
            return text(decl), pointer
        nxt = decl.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in decl.named_children if c.type.endswith("declarator") or c.type == "identifier"),
                       None)
        decl = nxt
    return None, pointer


def _scope(node: Node) -> Node:
    """The block (or for statement) a declaration belongs to."""
    for a in ancestors(node):
        if a.type in ("compound_statement", "for_statement"):
            return a
    return node


@dataclass(frozen=True)
class Param:
    """A parameter of a CUDA/C++ function."""

    name: str
    type: str
    pointer: bool
    node: Node


class Function:
    """A function definition of the unit: a kernel (`__global__`), a `__device__` helper, or host code."""

    def __init__(self, unit: "Unit", node: Node):
        self.unit = unit
        self.node = node

    @cached_property
    def declarator(self) -> Node | None:
        d = self.node.child_by_field_name("declarator")
        while d is not None and d.type != "function_declarator":
            d = d.child_by_field_name("declarator")
        return d

    @cached_property
    def name(self) -> str:
        if self.declarator is None:
            return ""
        return text(self.declarator.child_by_field_name("declarator")).split("::")[-1]

    @cached_property
    def qualifiers(self) -> set[str]:
        return {c.type for c in self.node.children if c.type in ("__global__", "__device__", "__host__")}

    @property
    def kind(self) -> str:
        if "__global__" in self.qualifiers:
            return "kernel"
        if "__device__" in self.qualifiers and "__host__" not in self.qualifiers:
            return "device"
        return "host"

    @property
    def body(self) -> Node | None:
        return self.node.child_by_field_name("body")

    @property
    def line(self) -> int | None:
        return self.unit.pyline(self.node)

    @cached_property
    def params(self) -> list[Param]:
        out = []
        plist = self.declarator.child_by_field_name("parameters") if self.declarator is not None else None
        for p in plist.named_children if plist is not None else []:
            if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
                continue
            name, pointer = _declared_name(p.child_by_field_name("declarator"))
            if name is not None:
                out.append(Param(name, text(p.child_by_field_name("type")), pointer, p))
        return out

    def nodes(self, *types: str) -> list[Node]:
        return [n for n in walk(self.body) if n.type in types] if self.body is not None else []

    def calls(self, *names: str) -> list[Node]:
        """Calls in the body whose callee's last name is one of `names` (all calls when none given)."""
        out = []
        for n in self.nodes("call_expression"):
            callee = text(n.child_by_field_name("function")).split("::")[-1].split(".")[-1]
            if not names or callee in names:
                out.append(n)
        return out

    # -- declarations and dependencies ---------------------------------------------------------------
    @cached_property
    def declared(self) -> dict[str, Node]:
        """Local name -> its declaration node."""
        out = {}
        for d in self.nodes("declaration"):
            for child in d.children_by_field_name("declarator"):
                name, _ = _declared_name(child)
                if name:
                    out.setdefault(name, d)
        return out

    @cached_property
    def defs(self) -> dict[str, list[Node]]:
        """name -> expressions assigned to it (initialisers, `=` and compound assignments, `++`)."""
        out: dict[str, list[Node]] = {}
        for d in self.nodes("init_declarator"):
            name, _ = _declared_name(d.child_by_field_name("declarator"))
            value = d.child_by_field_name("value")
            if name and value is not None:
                out.setdefault(name, []).append(value)
        for a in self.nodes("assignment_expression"):
            left = unparen(a.child_by_field_name("left"))
            if left.type == "identifier":
                out.setdefault(text(left), []).append(a.child_by_field_name("right"))
        for d in self.nodes("declaration"):  # `dim3 block(TILE, TILE);` parses as a function declaration
            for child in d.children_by_field_name("declarator"):
                if child.type == "function_declarator" and child.child_by_field_name("parameters") is not None:
                    out.setdefault(text(child.child_by_field_name("declarator")), []).append(
                        child.child_by_field_name("parameters"))
        return out

    def closure(self, names: set[str]) -> set[str]:
        """`names` and every name (builtins included) their definitions read, transitively."""
        seen, todo = set(), list(names)
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            for value in self.defs.get(n, []):
                todo.extend(identifiers(value) - seen)
        return seen

    def deps(self, node: Node | None) -> set[str]:
        """Every name an expression depends on, transitively."""
        return self.closure(identifiers(node))

    def thread_derived(self, name: str, at: Node | None = None) -> bool:
        """The name depends on threadIdx. With `at`, a name declared in several scopes (`int idx` in a
        loop and again after it) is read through the declarations whose scope holds `at`."""
        if at is None or name == THREAD:
            return THREAD in self.closure({name})
        values = self.scoped_defs(name, at)
        return any(THREAD in self.deps(v) for v in values)

    def scoped_defs(self, name: str, at: Node) -> list[Node]:
        """The definitions of `name` visible at `at`: assignments, and initialisers of the declarations
        whose enclosing block contains `at` (all of them when none does)."""
        inits, others = [], []
        for d in self.nodes("init_declarator"):
            if _declared_name(d.child_by_field_name("declarator"))[0] == name and d.child_by_field_name("value"):
                inits.append(d)
        scoped = [d for d in inits if _scope(d).start_byte <= at.start_byte < _scope(d).end_byte]
        for a in self.nodes("assignment_expression"):
            left = unparen(a.child_by_field_name("left"))
            if left.type == "identifier" and text(left) == name:
                others.append(a.child_by_field_name("right"))
        return [d.child_by_field_name("value") for d in (scoped or inits)] + others

    @cached_property
    def shared(self) -> set[str]:
        """Names declared `__shared__` (and `extern __shared__` buffers)."""
        return {name for name, d in self.declared.items()
                if any(c.type == "type_qualifier" and "__shared__" in text(c) for c in d.children)
                or "__shared__" in text(d).split("=")[0]}

    @cached_property
    def global_pointers(self) -> set[str]:
        """Pointer parameters, and local pointers initialised from them (`const float* row = x + r * n`)."""
        return self.pointers_from({p.name for p in self.params if p.pointer}, exclude=self.shared)

    def pointers_from(self, roots: set[str], exclude: set[str] = frozenset()) -> set[str]:
        """`roots` and the local pointers initialised from them, through other such pointers; `exclude` left out."""
        names = set(roots)
        changed = True
        while changed:
            changed = False
            for name, d in self.declared.items():
                if name in names or name in exclude or "*" not in text(d).split("=")[0]:
                    continue
                if any(identifiers(v) & names for v in self.defs.get(name, [])):
                    names.add(name)
                    changed = True
        return names


@dataclass(frozen=True)
class KernelLaunch:
    """`kernel<<<config>>>(args)` in a host function."""

    node: Node
    kernel: str
    config: tuple[Node, ...]
    args: tuple[Node, ...]
    host: Function

    @property
    def grid(self) -> Node | None:
        return self.config[0] if self.config else None

    @property
    def block(self) -> Node | None:
        return self.config[1] if len(self.config) > 1 else None


class Unit:
    """A parsed CUDA/C++ source of the candidate."""

    def __init__(self, source: ExtensionSource):
        self.source = source
        self.tree = parse_tree(source.text)
        self.root = self.tree.root_node

    def pyline(self, node: Node) -> int | None:
        """The Python-file line of a node."""
        return self.source.pyline(node.start_point[0])

    @cached_property
    def functions(self) -> list[Function]:
        fns = [Function(self, n) for n in walk(self.root) if n.type == "function_definition"]
        return [f for f in fns if f.name and f.body is not None and not f.name.startswith(("PYBIND11_", "TORCH_"))]

    @property
    def kernels(self) -> list[Function]:
        return [f for f in self.functions if f.kind == "kernel"]

    @property
    def hosts(self) -> list[Function]:
        return [f for f in self.functions if f.kind == "host"]

    def function(self, name: str) -> Function | None:
        return next((f for f in self.functions if f.name == name), None)

    @cached_property
    def launches(self) -> list[KernelLaunch]:
        out = []
        for host in self.hosts:
            for call in host.nodes("call_expression"):
                syntax = next((c for c in call.children if c.type == "kernel_call_syntax"), None)
                if syntax is None:
                    continue
                fn = call.child_by_field_name("function")
                if fn is not None and fn.type == "template_function":
                    fn = fn.child_by_field_name("name")
                args = call.child_by_field_name("arguments")
                out.append(KernelLaunch(call, text(fn).split("::")[-1], tuple(syntax.named_children),
                                        tuple(args.named_children) if args is not None else (), host))
        return out

    @cached_property
    def macros(self) -> dict[str, str]:
        """`#define NAME value` constants."""
        return {text(n.child_by_field_name("name")): text(n.child_by_field_name("value")).strip()
                for n in walk(self.root) if n.type == "preproc_def" and n.child_by_field_name("value") is not None}

    @cached_property
    def initialisers(self) -> dict[str, list[Node]]:
        """name -> the values it is initialised with anywhere in the unit (namespace constants included)."""
        out: dict[str, list[Node]] = {}
        for d in walk(self.root):
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            if value is not None:
                out.setdefault(text(d.child_by_field_name("declarator")).split()[-1], []).append(value)
        return out

    @cached_property
    def pybind_exports(self) -> dict[str, str]:
        """pybind11 `m.def("name", &fn)`: exported name -> host function name."""
        out = {}
        for n in walk(self.root):
            if n.type != "call_expression" or not text(n.child_by_field_name("function")).endswith(".def"):
                continue
            args = call_args(n)
            if len(args) >= 2 and args[0].type == "string_literal":
                name = text(args[0]).strip('"')
                targets = [text(i) for i in walk(args[1]) if i.type == "identifier"]
                defined = [t for t in targets if self.function(t) is not None]
                out[name] = (defined or targets or [name])[-1]
        return out
