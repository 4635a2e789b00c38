"""The Python syntax tree every part of kdebug reads: tree-sitter's parse of a source, and the basic
questions asked of its nodes (text, line, walk, enclosing, call arguments, literals, names).

The recipes' Triton kernel model (recipes/syntax.py), the host model of ModelNew the integrity gate reads
(source/host.py) and the knowledge base's token view (knowledge/pysource.py) all stand on these; nothing
here knows about Triton, CUDA or ModelNew. Nodes are tree-sitter `Node`s; text, walk, ancestors and
unparen know no grammar, so the CUDA trees (lang/cuda, knowledge/cudasource.py) use them too.
"""
from __future__ import annotations

import tree_sitter_python
from tree_sitter import Language, Node, Parser

LANGUAGE = Language(tree_sitter_python.language())
_PARSER = Parser(LANGUAGE)


def parse_tree(src: str):
    """The tree-sitter tree of `src`."""
    return _PARSER.parse(src.encode())


def parses(src: str) -> bool:
    """True when `src` parses without error (tree-sitter and Python's own compiler agree)."""
    if parse_tree(src).root_node.has_error:
        return False
    try:
        compile(src, "<candidate>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def text(node: Node | None) -> str:
    """The source text of a node ('' for None)."""
    return node.text.decode(errors="replace") if node is not None else ""


def line(node: Node) -> int:
    """1-based line of a node's start."""
    return node.start_point[0] + 1


def same(a: Node | None, b: Node | None) -> bool:
    """True when a and b are the same node of the tree."""
    return a is not None and b is not None and (a.start_byte, a.end_byte, a.type) == (
        b.start_byte, b.end_byte, b.type)


def walk(node: Node, skip_functions: bool = False):
    """Pre-order walk of `node` and its descendants (optionally not entering nested defs)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        kids = n.children
        if skip_functions and n is not node:
            if n.type in ("function_definition", "lambda", "class_definition"):
                continue
        stack.extend(reversed(kids))


def ancestors(node: Node):
    """The parents of a node, innermost first."""
    p = node.parent
    while p is not None:
        yield p
        p = p.parent


def enclosing(node: Node, *types: str) -> Node | None:
    """The innermost ancestor of one of `types`."""
    for p in ancestors(node):
        if p.type in types:
            return p
    return None


def inside(node: Node, outer: Node) -> bool:
    """True when node lies within outer's byte range."""
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def unparen(node: Node) -> Node:
    """Strip parentheses."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def dotted(node: Node | None) -> str | None:
    """`a.b.c` for an identifier/attribute chain, else None."""
    if node is None:
        return None
    if node.type == "identifier":
        return text(node)
    if node.type == "attribute":
        base = dotted(node.child_by_field_name("object"))
        attr = node.child_by_field_name("attribute")
        return f"{base}.{text(attr)}" if base and attr is not None else None
    return None


def identifiers(node: Node | None) -> set[str]:
    """Names read in an expression (not attribute names, not keyword-argument names)."""
    out: set[str] = set()
    if node is None:
        return out
    for n in walk(node):
        if n.type != "identifier":
            continue
        p = n.parent
        if p is not None and p.type == "attribute" and same(p.child_by_field_name("attribute"), n):
            continue
        if p is not None and p.type == "keyword_argument" and same(p.child_by_field_name("name"), n):
            continue
        out.add(text(n))
    return out


def target_names(node: Node | None) -> list[str]:
    """Names bound by an assignment target (`a`, `a, b`, `(a, b)`); attributes and subscripts bind none."""
    if node is None:
        return []
    if node.type == "identifier":
        return [text(node)]
    if node.type in ("pattern_list", "tuple_pattern", "tuple", "list_pattern", "list"):
        return [name for c in node.named_children for name in target_names(c)]
    return []


def call_args(call: Node) -> tuple[list[Node], dict[str, Node]]:
    """Positional argument nodes and keyword argument values of a call."""
    pos: list[Node] = []
    kw: dict[str, Node] = {}
    args = call.child_by_field_name("arguments")
    if args is None or args.type != "argument_list":  # f(x for x in y) has no argument list
        return pos, kw
    for a in args.named_children:
        if a.type == "keyword_argument":
            kw[text(a.child_by_field_name("name"))] = a.child_by_field_name("value")
        elif a.type != "comment":
            pos.append(a)
    return pos, kw


def call_arg(call: Node, index: int, name: str) -> Node | None:
    """An argument given by position `index` or keyword `name`."""
    pos, kw = call_args(call)
    if name in kw:
        return kw[name]
    return pos[index] if index < len(pos) else None


def last_arg_end(call: Node) -> int | None:
    """Byte offset just after the last argument of a call (where to append `, kw=...`)."""
    args = call.child_by_field_name("arguments")
    if args is None:
        return None
    named = [a for a in args.named_children if a.type != "comment"]
    return named[-1].end_byte if named else None


def statement_of(node: Node) -> Node:
    """The simple or compound statement holding `node` whose parent is a block or the module."""
    n = node
    while n.parent is not None and n.parent.type not in ("block", "module"):
        n = n.parent
    return n


def flatten(node: Node, op: str) -> list[Node]:
    """Operands of a chain of one binary operator: `a + b + c` -> [a, b, c] (parentheses kept)."""
    node = unparen(node)
    if node.type == "binary_operator" and text(node.child_by_field_name("operator")) == op:
        return flatten(node.child_by_field_name("left"), op) + [node.child_by_field_name("right")]
    return [node]


def number(node: Node | None) -> float | None:
    """The value of a numeric literal (with unary minus), else None."""
    if node is None:
        return None
    node = unparen(node)
    if node.type in ("integer", "float"):
        try:
            return float(text(node).replace("_", ""))
        except ValueError:
            return None
    if node.type == "unary_operator" and text(node).startswith("-"):
        v = number(node.named_children[0])
        return -v if v is not None else None
    return None


def enclosing_class(node: Node) -> str | None:
    c = enclosing(node, "class_definition")
    return text(c.child_by_field_name("name")) if c is not None else None


def string_value(node: Node | None) -> str | None:
    """The value of a plain string literal, None for anything else (f-strings included)."""
    if node is None or node.type != "string":
        return None
    if any(c.type == "interpolation" for c in node.children):
        return None
    return "".join(text(c) for c in node.children if c.type == "string_content")
