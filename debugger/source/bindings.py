"""How a candidate binds and calls its own compiled extensions, as real answers write it.

KernelBench's CUDA answers build the extension with `load_inline`/`load` at module level, in
`__init__` or lazily (a cached factory, `global _mod; if _mod is None: _mod = load_inline(...)`),
then bind it to a global or to `self` (`self.mod = mod`, `self.fn = mod.f_cuda`) and call it in
forward (`self.mod.f_cuda(x)`). `ExtensionBindings` follows those bindings through assignments and
knows the names the extension exports (`functions=[...]`, `m.def("name", ...)` in a PYBIND11_MODULE
source) and the `torch.ops` libraries its C++ registers (`TORCH_LIBRARY(ns, m)`), so a call through
any of them counts as a launch of the candidate's own code.
"""
from __future__ import annotations

import re
from functools import cached_property
from typing import TYPE_CHECKING

from tree_sitter import Node

from debugger.source.host import EXTENSION_LOADERS
from debugger.source.tree import call_args, string_value, text, unparen, walk

if TYPE_CHECKING:
    from debugger.source.host import SourceModule

_PYBIND_DEF = re.compile(r"\b\w+\s*\.\s*def\s*\(\s*\"(\w+)\"")
_TORCH_LIBRARY = re.compile(r"\bTORCH_LIBRARY(?:_FRAGMENT|_IMPL)?\s*\(\s*(\w+)\s*,")
_LIBRARY_DEF = re.compile(r"\"(?:(\w+)::)?(\w+)\s*\(")


def looks_like_extension_source(code: str) -> bool:
    """C++/CUDA text of the kind load_inline compiles."""
    return bool(re.search(r"__global__|torch::|at::Tensor|#include\s*<|<<<|PYBIND11_MODULE|TORCH_LIBRARY", code))


class ExtensionBindings:
    """The names, `self.` attributes and exported functions through which a file reaches its extensions."""

    def __init__(self, module: SourceModule):
        self.module = module

    def is_loader_call(self, node: Node | None) -> bool:
        """`load_inline(...)` / `cpp_extension.load(...)`, however imported."""
        node = unparen(node) if node is not None else None
        return node is not None and node.type == "call" and \
            self.module.resolve(node.child_by_field_name("function")) in EXTENSION_LOADERS

    @cached_property
    def loader_calls(self) -> list[Node]:
        """Every load_inline/load call in the file."""
        return [n for n in walk(self.module.root) if n.type == "call" and self.is_loader_call(n)]

    @cached_property
    def factories(self) -> set[str]:
        """In-file functions that build or return an extension module (`def get_ext(): ... load_inline(...)`)."""
        names: set[str] = set()
        changed = True
        while changed:
            changed = False
            for fn in self.module.functions.values():
                if fn.cls is not None or fn.name in names:
                    continue
                if any(self.is_loader_call(n) or self._is_factory_call(n, names) for n in walk(fn.body)):
                    names.add(fn.name)
                    changed = True
        return names

    def _is_factory_call(self, node: Node, factories: set[str]) -> bool:
        if node.type != "call":
            return False
        callee = unparen(node.child_by_field_name("function"))
        return callee.type == "identifier" and text(callee) in factories

    @cached_property
    def handles(self) -> set[str]:
        """Names and `self.x` attributes bound to an extension module, directly or through other bindings."""
        handles: set[str] = set()
        assignments = self._assignments()
        changed = True
        while changed:
            changed = False
            for left, right in assignments:
                if left not in handles and self._is_handle_value(right, handles):
                    handles.add(left)
                    changed = True
        return handles

    @cached_property
    def callables(self) -> set[str]:
        """Names and `self.x` attributes bound to one exported function (`self.fn = mod.f_cuda`)."""
        found: set[str] = set()
        for left, right in self._assignments():
            value = unparen(right)
            if value.type == "attribute" and self._is_handle_value(value.child_by_field_name("object"), self.handles):
                found.add(left)
            elif value.type == "call" and text(value.child_by_field_name("function")) == "getattr":
                positional, _ = call_args(value)
                if positional and self._is_handle_value(positional[0], self.handles):
                    found.add(left)
        return found

    def _assignments(self) -> list[tuple[str, Node]]:
        pairs = []
        for node in walk(self.module.root):
            if node.type != "assignment":
                continue
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and right is not None and left.type in ("identifier", "attribute"):
                pairs.append((text(left), right))
        return pairs

    def _is_handle_value(self, node: Node | None, handles: set[str]) -> bool:
        """An expression that evaluates to an extension module."""
        if node is None:
            return False
        node = unparen(node)
        if self.is_loader_call(node) or self._is_factory_call(node, self.factories):
            return True
        if node.type in ("identifier", "attribute"):
            return text(node) in handles
        if node.type == "conditional_expression":
            return any(self._is_handle_value(c, handles) for c in node.named_children[::2])
        if node.type == "boolean_operator":
            return any(self._is_handle_value(node.child_by_field_name(side), handles) for side in ("left", "right"))
        if node.type == "subscript":  # a table of extensions: EXTS["relu"]
            return self._is_handle_value(node.child_by_field_name("value"), handles)
        return False

    @cached_property
    def sources(self) -> list[str]:
        """The C++/CUDA texts of the file: every plain string literal that looks like extension source."""
        return [v for n in walk(self.module.root) if n.type == "string"
                and (v := string_value(n)) and looks_like_extension_source(v)]

    @cached_property
    def exported(self) -> set[str]:
        """Function names the extensions export: `functions=[...]` of the loaders and pybind11 `m.def("name")`."""
        names: set[str] = set()
        for call in self.loader_calls:
            _, keywords = call_args(call)
            listed = keywords.get("functions")
            for node in self._literal_items(listed):
                if (value := string_value(node)) is not None:
                    names.add(value)
        for src in self.sources:
            if "PYBIND11_MODULE" in src:
                names |= set(_PYBIND_DEF.findall(src))
        return names

    def _literal_items(self, node: Node | None) -> list[Node]:
        """The items of a list/tuple literal, or of one bound to a module-level name; a lone string is one item."""
        if node is None:
            return []
        node = unparen(node)
        if node.type == "identifier":
            bound = [right for left, right in self._assignments() if left == text(node)]
            return self._literal_items(bound[-1]) if bound and bound[-1] is not node else []
        if node.type in ("list", "tuple"):
            return list(node.named_children)
        return [node] if node.type == "string" else []

    @cached_property
    def libraries(self) -> set[str]:
        """`torch.ops` namespaces the candidate's own C++ registers (TORCH_LIBRARY(ns, m) { m.def(...) })."""
        found = set()
        for src in self.sources:
            found |= set(_TORCH_LIBRARY.findall(src))
            if "TORCH_LIBRARY" in src:
                found |= {ns for ns, _ in _LIBRARY_DEF.findall(src) if ns}
        return found

    def is_call(self, callee: Node) -> str | None:
        """The exported function a call's callee reaches, or None when it is not a call into an extension."""
        callee = unparen(callee)
        if text(callee) in self.callables:
            return text(callee).split(".")[-1]
        if callee.type != "attribute":
            return None
        obj, attr = callee.child_by_field_name("object"), text(callee.child_by_field_name("attribute"))
        if self._is_handle_value(obj, self.handles):
            return attr
        qualified = self.module.resolve(callee) or ""
        if qualified.startswith("torch.ops."):
            parts = qualified.split(".")
            return parts[3] if len(parts) >= 4 and parts[2] in self.libraries else None
        if attr in self.exported and not qualified and text(obj) not in ("torch", "self"):
            return attr  # `self._ext().f_cuda(x)`, `_EXTS[key].f_cuda(x)`: the name is the extension's own
        return None
