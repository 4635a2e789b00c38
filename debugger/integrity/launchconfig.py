"""Host code that only sizes a launch: `max_len = int((ptr[1:] - ptr[:-1]).max().item())` feeding
`BLOCK=triton.next_power_of_2(max_len)` reads the inputs, but what it computes is a launch
configuration, not the operator's result.

A statement qualifies when its value leaves PyTorch as a host scalar (`.item()`, `.tolist()`,
`int(...)`, `float(...)`) and is bound to a name whose every use, followed through further simple
assignments, is a launch's grid or a launch keyword that the kernel declares `tl.constexpr` (or an
upper-case meta-parameter). A scalar that reaches a kernel as an ordinary argument, a tensor, a
branch or the return value does not qualify: that is how a host-computed result would be smuggled in.
"""
from __future__ import annotations

from tree_sitter import Node

from debugger.source.host import Function
from debugger.source.tree import text, walk

_SCALAR_METHODS = {"item", "tolist"}
_SCALAR_BUILTINS = {"int", "float"}


def _statement(node: Node) -> Node | None:
    while node is not None and node.type not in ("expression_statement", "return_statement", "if_statement",
                                                 "for_statement", "while_statement"):
        node = node.parent
    return node


def _leaves_as_host_scalar(node: Node, stmt: Node) -> bool:
    """`node` sits inside `.item()`/`.tolist()`/`int()`/`float()` within its statement."""
    n = node
    while n is not None and n != stmt:
        if n.type == "call":
            fn = n.child_by_field_name("function")
            if fn is not None and fn.type == "attribute" and text(fn.child_by_field_name("attribute")) in _SCALAR_METHODS:
                return True
            if fn is not None and fn.type == "identifier" and text(fn) in _SCALAR_BUILTINS:
                return True
        n = n.parent
    return False


def _assigned_name(stmt: Node) -> str | None:
    if stmt.type != "expression_statement" or not stmt.named_children:
        return None
    a = stmt.named_children[0]
    if a.type != "assignment":
        return None
    left = a.child_by_field_name("left")
    return text(left) if left is not None and left.type == "identifier" else None


def _launch_role(node: Node, meta_params: set[str]) -> str | None:
    """'grid' or 'meta' when `node` is inside a launch's grid or a meta-parameter keyword; else None."""
    n = node
    while n is not None:
        if n.type == "keyword_argument":
            key = text(n.child_by_field_name("name"))
            call = n.parent.parent if n.parent is not None else None
            if call is not None and call.type == "call" and \
                    (call.child_by_field_name("function") or n).type == "subscript":
                return "meta" if key in meta_params or key.isupper() else None
        if n.type == "subscript" and n.parent is not None and n.parent.type == "call" and \
                n.parent.child_by_field_name("function") == n:
            index = n.child_by_field_name("subscript")
            if index is not None and index.start_byte <= node.start_byte and node.end_byte <= index.end_byte:
                return "grid"
        n = n.parent
    return None


def _only_configures(fn: Function, name: str, meta_params: set[str], seen: set[str]) -> bool:
    if name in seen:
        return True
    seen.add(name)
    for node in walk(fn.body):
        if node.type != "identifier" or text(node) != name:
            continue
        parent = node.parent
        if parent is not None and parent.type == "assignment" and parent.child_by_field_name("left") == node:
            continue  # its own binding
        if parent is not None and parent.type == "keyword_argument" and parent.child_by_field_name("name") == node:
            continue  # a keyword's name, not a use
        if _launch_role(node, meta_params):
            continue
        stmt = _statement(node)
        target = _assigned_name(stmt) if stmt is not None else None
        if target is not None and _only_configures(fn, target, meta_params, seen):
            continue
        return False
    return True


def only_sizes_a_launch(node: Node, fn: Function, meta_params: set[str]) -> bool:
    """True when the computation at `node` becomes a host scalar that only sizes kernel launches."""
    stmt = _statement(node)
    if stmt is None or not _leaves_as_host_scalar(node, stmt):
        return False
    name = _assigned_name(stmt)
    return name is not None and _only_configures(fn, name, meta_params, set())


def meta_parameters(kernels: dict[str, Function]) -> set[str]:
    """Parameters the candidate's kernels declare `tl.constexpr` (compile-time launch configuration)."""
    names = set()
    for fn in kernels.values():
        for p in fn.node.child_by_field_name("parameters").named_children:
            annotation = p.child_by_field_name("type")
            if annotation is not None and text(annotation).endswith("constexpr"):
                name = p.named_children[0] if p.named_children else None
                if name is not None and name.type == "identifier":
                    names.add(text(name))
    return names


def value_only_sizes_a_launch(node: Node, fn: Function, meta_params: set[str]) -> bool:
    """An expression (`int(x.max().item()) if n else 1`) whose every method call ends as a host scalar,
    bound to a name that only sizes kernel launches."""
    stmt = _statement(node)
    name = _assigned_name(stmt) if stmt is not None else None
    if name is None or not _only_configures(fn, name, meta_params, set()):
        return False
    values = [c for i, c in enumerate(node.named_children) if i != 1] \
        if node.type == "conditional_expression" else [node]  # the condition may read metadata freely
    for value in values:
        for n in walk(value):
            if n.type == "call" and (f := n.child_by_field_name("function")) is not None and \
                    f.type == "attribute" and not _leaves_as_host_scalar(n, stmt):
                return False
    return True
