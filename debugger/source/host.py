"""The host model of a candidate's Python file: ModelNew, what its forward reaches, and its launches.

One `SourceModule` per file: its imports and aliases (so `T.mm`, `mm` and `F.linear` resolve to
`torch.mm` and `torch.nn.functional.linear`), its classes and functions, its Triton kernels, the
functions `ModelNew.forward` reaches inside the file, and the kernel launches `kernel[grid](...)`.
The kernels and their launch sites are kernels.py's (the one finder the recipes and the Triton language
read too); extension calls count as launches through the file's extension bindings (bindings.py). No name
resolution beyond this: the integrity rules that read it are tripwires, the dynamic half of the gate audits.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from tree_sitter import Node

from debugger.source.imports import alias_table, import_bindings, imported_modules, resolve_with, wildcard_modules
from debugger.source.kernels import (KERNEL_DECORATORS, KernelDef, LaunchSite, decorator_name, find_kernels,
                                     find_launches, kernel_aliases)
from debugger.source.tree import call_args, line, parse_tree, string_value, text, unparen, walk

__all__ = ["KERNEL_DECORATORS", "Function", "Launch", "SourceModule"]

EXTENSION_LOADERS = {"torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load"}
# Tensor methods that keep every element in its place (a reshape, a copy, a cast): `self.bias.reshape(...)` is
# still the module's bias (integrity/compute.py, recipes/dropped_term.py).
RESHAPE_METHODS = {"reshape", "view", "view_as", "reshape_as", "squeeze", "unsqueeze", "flatten", "t", "contiguous",
                   "expand", "expand_as", "to", "float", "detach"}


@dataclass(frozen=True)
class Function:
    """A function or method defined in the file."""

    name: str
    qualname: str
    node: Node
    cls: str | None
    decorators: tuple[str, ...]

    @property
    def body(self) -> Node:
        """The function's block."""
        return self.node.child_by_field_name("body")

    @property
    def params(self) -> list[str]:
        """Parameter names, without `self`/`cls` of a method."""
        names = []
        for p in self.node.child_by_field_name("parameters").named_children:
            ident = p if p.type == "identifier" else p.child_by_field_name("name")
            if ident is None:
                ident = next((c for c in p.named_children if c.type == "identifier"), None)
            if ident is not None:
                names.append(text(ident))
        if self.cls is not None and names and names[0] in ("self", "cls"):
            names = names[1:]
        return names


@dataclass(frozen=True)
class Launch:
    """A kernel launch: `k[grid](...)`, `k.run(...)`, or a call into a load_inline extension."""

    node: Node
    kernel: str | None
    kind: str  # "triton" | "extension"

    @property
    def line(self) -> int:
        """Where the launch is."""
        return line(self.node)


class SourceModule:
    """A parsed Python file and the facts about it that the integrity rules use."""

    def __init__(self, src: str, tree=None):
        self.src = src
        self.tree = tree if tree is not None else parse_tree(src)
        self.root = self.tree.root_node

    # -- parsing -------------------------------------------------------------------------------
    @property
    def has_error(self) -> bool:
        """True when tree-sitter had to recover from a syntax error."""
        return self.root.has_error

    def first_error_line(self) -> int:
        """The line of the first ERROR or missing node."""
        for node in walk(self.root):
            if node.type == "ERROR" or node.is_missing:
                return line(node)
        return 1

    # -- imports and aliases (imports.py) ------------------------------------------------------
    @cached_property
    def imports(self) -> list[tuple[str, str, Node]]:
        """(bound name, qualified module or object, node) for every import in the file."""
        return import_bindings(self.root)

    @cached_property
    def imported_modules(self) -> list[tuple[str, Node]]:
        """Every module named by an import statement (`from a.b import c` names a.b and a.b.c)."""
        return imported_modules(self.root)

    @cached_property
    def wildcard_modules(self) -> list[str]:
        """Modules imported with `from m import *`."""
        return wildcard_modules(self.root)

    @cached_property
    def aliases(self) -> dict[str, str]:
        """Local name -> qualified name, from imports and from `F = torch.nn.functional`-style assignments."""
        return alias_table(self.root, self.imports)

    def resolve(self, node: Node | None) -> str | None:
        """The qualified dotted name an identifier or attribute chain refers to, if it is imported."""
        if node is None:
            return None
        found = resolve_with(self.aliases, node)
        if found is None and node.type == "identifier" and self.wildcard_modules:
            name = text(node)
            if name not in self.defined_names:
                return f"{self.wildcard_modules[0]}.{name}"
        return found

    @cached_property
    def defined_names(self) -> set[str]:
        """Names the file binds itself (functions, classes, assignment targets, parameters)."""
        names = set(self.classes) | {f.name for f in self.functions.values()} | set(self.aliases)
        for node in walk(self.root):
            if node.type in ("assignment", "for_statement", "augmented_assignment"):
                target = node.child_by_field_name("left")
                for ident in walk(target) if target is not None else ():
                    if ident.type == "identifier":
                        names.add(text(ident))
            elif node.type == "parameters":
                for ident in walk(node):
                    if ident.type == "identifier":
                        names.add(text(ident))
        return names

    # -- classes and functions -----------------------------------------------------------------
    @cached_property
    def classes(self) -> dict[str, Node]:
        """Class name -> class_definition node (any nesting level)."""
        return {text(n.child_by_field_name("name")): n for n in walk(self.root) if n.type == "class_definition"}

    def superclasses(self, cls: str) -> list[Node]:
        """The expressions listed as bases of a class."""
        node = self.classes.get(cls)
        bases = node.child_by_field_name("superclasses") if node is not None else None
        return [b for b in bases.named_children if b.type != "keyword_argument"] if bases else []

    @cached_property
    def functions(self) -> dict[str, Function]:
        """Qualified name ('helper', 'ModelNew.forward') -> Function, for module- and class-level defs."""
        table: dict[str, Function] = {}

        def add(defn: Node, cls: str | None, decorators: tuple[str, ...]) -> None:
            name = text(defn.child_by_field_name("name"))
            qual = f"{cls}.{name}" if cls else name
            table[qual] = Function(name, qual, defn, cls, decorators)

        def scan(block: Node, cls: str | None) -> None:
            for stmt in block.named_children:
                decorators: tuple[str, ...] = ()
                defn = stmt
                if stmt.type == "decorated_definition":
                    decorators = tuple(self._decorator_name(d) for d in stmt.children if d.type == "decorator")
                    defn = stmt.child_by_field_name("definition")
                if defn.type == "function_definition":
                    add(defn, cls, decorators)
                elif defn.type == "class_definition":
                    scan(defn.child_by_field_name("body"), text(defn.child_by_field_name("name")))
                elif defn.type in ("if_statement", "try_statement"):
                    for sub in defn.named_children:
                        if sub.type == "block":
                            scan(sub, cls)
                        for inner in sub.named_children if sub.type != "block" else ():
                            if inner.type == "block":
                                scan(inner, cls)

        scan(self.root, None)
        return table

    def _decorator_name(self, decorator: Node) -> str:
        return decorator_name(decorator, self.resolve)

    @cached_property
    def kernel_defs(self) -> list[KernelDef]:
        """The file's Triton kernels, as kernels.py finds them (at any nesting; also `k = triton.jit(fn)`)."""
        return find_kernels(self.root, self.resolve)

    @cached_property
    def launch_sites(self) -> list[LaunchSite]:
        """Every launch site of the file's kernels outside kernel bodies (kernels.py)."""
        return find_launches(self.root, self.kernel_defs)

    @cached_property
    def kernels(self) -> dict[str, Function]:
        """Triton kernels by the name launches use (`k = triton.jit(fn)`: `k`, with fn's definition)."""
        defined = {(f.node.start_byte, f.node.end_byte): f for f in self.functions.values()}
        table = {}
        for k in self.kernel_defs:
            table[k.name] = defined.get((k.fn.start_byte, k.fn.end_byte)) or Function(
                k.name, k.name, k.fn, None, tuple(self._decorator_name(d) for d in k.decorators))
        return table

    def is_kernel(self, fn: Function) -> bool:
        """True when `fn` is the definition of one of the file's kernels."""
        return any(k.fn.start_byte == fn.node.start_byte and k.fn.end_byte == fn.node.end_byte
                   for k in self.kernel_defs)

    def method(self, cls: str, name: str) -> Function | None:
        """A method of `cls`, looked up through base classes defined in the file."""
        seen = set()
        while cls and cls not in seen:
            seen.add(cls)
            if f"{cls}.{name}" in self.functions:
                return self.functions[f"{cls}.{name}"]
            bases = [text(b) for b in self.superclasses(cls)]
            cls = next((b for b in bases if b in self.classes), None)
        return None

    @cached_property
    def module_instances(self) -> dict[str, str]:
        """Module-level names bound to an instance of a class defined in the file (`_OP = TritonOp()`)."""
        table = {}
        for stmt in self.root.named_children:
            node = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_children else stmt
            if node.type == "assignment" and node.child_by_field_name("left").type == "identifier":
                right = unparen(node.child_by_field_name("right"))
                if right.type == "call" and text(right.child_by_field_name("function")) in self.classes:
                    table[text(node.child_by_field_name("left"))] = text(right.child_by_field_name("function"))
        return table

    @cached_property
    def self_attributes(self) -> dict[tuple[str, str], Node]:
        """(class, attribute) -> the right-hand side last assigned to `self.attribute` in that class."""
        table = {}
        for fn in self.functions.values():
            if fn.cls is None:
                continue
            for node in walk(fn.body):
                if node.type == "assignment":
                    left = node.child_by_field_name("left")
                    if left.type == "attribute" and text(left.child_by_field_name("object")) == "self":
                        table[(fn.cls, text(left.child_by_field_name("attribute")))] = node.child_by_field_name("right")
                elif node.type == "call" and text(node.child_by_field_name("function")) in (
                        "self.register_buffer", "self.register_parameter"):
                    positional, _ = call_args(node)
                    if len(positional) >= 2 and string_value(positional[0]):
                        table[(fn.cls, string_value(positional[0]))] = positional[1]
        return table

    @cached_property
    def extensions(self):
        """How the file binds and calls its compiled extensions (bindings.py)."""
        from debugger.source.bindings import ExtensionBindings

        return ExtensionBindings(self)

    @property
    def extension_handles(self) -> set[str]:
        """Names and `self.` attributes bound to a load_inline/load extension module."""
        return self.extensions.handles

    # -- reachability --------------------------------------------------------------------------
    def entry(self, cls: str = "ModelNew", method: str = "forward") -> Function | None:
        """`cls.method` (through in-file base classes), e.g. ModelNew.forward."""
        return self.method(cls, method) if cls in self.classes else None

    def reachable(self, start: Function) -> list[Function]:
        """Python functions reachable from `start` through calls, self-methods, file classes and callbacks."""
        order = [start]
        seen = {start.qualname}
        index = 0
        while index < len(order):
            fn = order[index]
            index += 1
            for target in self._callees(fn):
                if target.qualname not in seen and not self.is_kernel(target):
                    seen.add(target.qualname)
                    order.append(target)
        return order

    def forward_path(self, cls: str) -> list[Function]:
        """`cls.forward` and what it reaches, then the forward of every in-file submodule cls builds."""
        entry = self.entry(cls)
        if entry is None:
            return []
        path = self.reachable(entry)
        seen = {fn.qualname for fn in path}
        for sub_cls in self.submodule_classes(cls):
            sub = self.method(sub_cls, "forward")
            for fn in self.reachable(sub) if sub is not None else []:
                if fn.qualname not in seen:
                    seen.add(fn.qualname)
                    path.append(fn)
        return path

    def submodule_classes(self, cls: str) -> list[str]:
        """In-file classes whose instances `cls` builds (in __init__, a `_make_layer` helper, an
        nn.Sequential or a list of layers), transitively: their forward runs inside cls's forward."""
        found: list[str] = []
        frontier = [cls]
        while frontier:
            owner = frontier.pop()
            for fn in self.functions.values():
                if fn.cls != owner:
                    continue
                for node in walk(fn.body):
                    name = text(node) if node.type == "identifier" else None
                    if name in self.classes and name not in found and name != cls:
                        found.append(name)
                        frontier.append(name)
        return found

    def _callees(self, fn: Function) -> Iterator[Function]:
        for node in walk(fn.body):
            if node.type == "identifier":
                name = text(node)
                if name in self.functions and self.functions[name].cls is None:
                    yield self.functions[name]
                elif name in self.classes or name in self.module_instances:
                    cls = self.module_instances.get(name, name)
                    for method in ("__init__", "__call__", "forward"):
                        if (found := self.method(cls, method)) is not None:
                            yield found
            elif node.type == "attribute":
                obj, attr = node.child_by_field_name("object"), text(node.child_by_field_name("attribute"))
                owner = text(obj)
                if owner in ("self", "cls") and fn.cls:
                    if (found := self.method(fn.cls, attr)) is not None:
                        yield found
                    rhs = self.self_attributes.get((fn.cls, attr))
                    if rhs is not None and rhs.type == "call":
                        made = text(rhs.child_by_field_name("function"))
                        for method in ("forward", "__call__"):
                            if made in self.classes and (found := self.method(made, method)) is not None:
                                yield found
                elif owner in self.classes:
                    target = "forward" if attr == "apply" else attr
                    if (found := self.method(owner, target)) is not None:
                        yield found
                elif (self.resolve(node) or "").startswith("torch.ops.") and node.parent.type != "attribute":
                    yield from self._registered_ops(self.resolve(node))

    def _registered_ops(self, qualified: str) -> Iterator[Function]:
        """Functions registered as `torch.ops.ns.name` with torch.library.custom_op/triton_op("ns::name")."""
        parts = qualified.split(".")
        if len(parts) < 4:
            return
        op_name = f"{parts[2]}::{parts[3]}"
        for fn in self.functions.values():
            decorated = fn.node.parent
            if decorated is not None and decorated.type == "decorated_definition" and op_name in text(decorated)[
                    : fn.node.start_byte - decorated.start_byte]:
                yield fn

    def reachable_kernels(self, functions: list[Function]) -> set[str]:
        """Kernels named in `functions`, plus the @triton.jit helpers those kernels call."""
        names = {text(n) for fn in functions for n in walk(fn.body)
                 if n.type == "identifier" and text(n) in self.kernels}
        names |= {text(n.child_by_field_name("attribute")) for fn in functions for n in walk(fn.body)
                  if n.type == "attribute" and text(n.child_by_field_name("attribute")) in self.kernels}
        for fn in functions:
            for n in walk(fn.body):
                if n.type in ("identifier", "attribute") and text(n) in self.kernel_aliases:
                    names |= self.kernel_aliases[text(n)]
        frontier = list(names)
        while frontier:
            kernel = self.kernels[frontier.pop()]
            for n in walk(kernel.body):
                if n.type == "identifier" and text(n) in self.kernels and text(n) not in names:
                    names.add(text(n))
                    frontier.append(text(n))
        return names

    def launches(self, fn: Function) -> list[Launch]:
        """Kernel launches in a function body (any nesting): the file's launch sites there (kernels.py),
        and its calls into a compiled extension."""
        sites = {(s.call.start_byte, s.call.end_byte): s for s in self.launch_sites}
        found = []
        for node in walk(fn.body):
            if node.type != "call":
                continue
            site = sites.get((node.start_byte, node.end_byte))
            if site is not None:
                found.append(Launch(node, site.kernel, "triton"))
                continue
            callee = node.child_by_field_name("function")
            exported = self.extensions.is_call(callee) if callee.type in ("attribute", "identifier") else None
            if exported is not None:
                found.append(Launch(node, exported, "extension"))
        return found

    @cached_property
    def kernel_aliases(self) -> dict[str, set[str]]:
        """Names (and `self.x` attributes) bound to kernels or to tables of kernels, with those kernels."""
        return kernel_aliases(self.root, set(self.kernels))
