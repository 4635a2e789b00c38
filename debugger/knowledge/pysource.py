"""The knowledge base's view of a Python source (learned templates match on it): tree-sitter tokens and
statements, with identifiers marked abstractable or kept; the tree is debugger/source/tree.py's.

An identifier is *abstractable* (may become a placeholder $A in a learned template) unless it is an
attribute name (`.load`, `.shape`), a root name of the libraries kernels are written with (`tl`,
`triton`, `torch`, ...), a builtin, or an API keyword-argument name (`mask=`, `axis=`, ...).
Keywords, operators, numbers and strings are never abstractable. Comments are dropped.
"""
from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

import tree_sitter

from debugger.source.tree import parse_tree

KEPT_ROOTS = {"tl", "triton", "torch", "math", "F", "nn", "np", "numpy", "libdevice", "self", "cls",
              "tle", "tlm"}
KEPT_BUILTINS = set(dir(builtins))
API_KEYWORDS = {
    "mask", "other", "axis", "dim", "dtype", "keep_dims", "keepdim", "num_warps", "num_stages",
    "eviction_policy", "cache_modifier", "volatile", "boundary_check", "padding_option", "sem", "scope",
    "acc", "out_dtype", "input_precision", "allow_tf32", "max_num_imprecise_acc", "reverse",
    "return_indices", "return_indices_tie_break_left", "device", "out", "fp_downcast_rounding",
    "is_pure", "combine_fn", "sanitize_overflow", "layout", "shape", "strides", "offsets",
    "block_shape", "order", "base", "value", "val", "pointer", "cmp", "dim0", "dim1", "size",
    "requires_grad", "memory_format", "non_blocking", "alpha", "beta", "approximate", "inplace",
    "eps", "weight", "bias", "stride", "padding", "dilation", "groups", "reduction", "p", "training",
}
STRING_TYPES = {"string", "concatenated_string"}
SIMPLE_STATEMENTS = {
    "expression_statement", "return_statement", "pass_statement", "break_statement",
    "continue_statement", "raise_statement", "assert_statement", "delete_statement",
    "global_statement", "nonlocal_statement", "import_statement", "import_from_statement",
    "future_import_statement", "print_statement", "exec_statement", "type_alias_statement",
}


@dataclass(frozen=True)
class Token:
    """A leaf of the syntax tree: text, byte span, line, and whether it may become a placeholder."""

    text: str
    start: int
    end: int
    line: int
    abstractable: bool

    @property
    def key(self) -> str:
        """The text compared when matching (string and number literals normalised)."""
        return normalise_literal(self.text)


def normalise_literal(text: str) -> str:
    """`'inf'` and `"inf"` compare equal, `1.0` and `1.` too; other text is returned as is."""
    if text[:1].isdigit() or text[:1] in "'\"." or text[:2].lower() in ("r'", 'r"', "b'", 'b"'):
        try:
            return repr(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            return text
    return text


def user_parameters(tree: tree_sitter.Tree) -> set[str]:
    """Names of the parameters of every function defined in the source."""
    names: set[str] = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "parameters":
            for p in node.named_children:
                ident = p if p.type == "identifier" else next(
                    (c for c in p.named_children if c.type == "identifier"), None)
                if ident is not None:
                    names.add(ident.text.decode())
        stack.extend(node.children)
    return names


def _abstractable(node: tree_sitter.Node, text: str, user_params: set[str]) -> bool:
    parent = node.parent
    if parent is not None and parent.type == "attribute" and parent.child_by_field_name("attribute") == node:
        return False
    if parent is not None and parent.type == "keyword_argument" and parent.child_by_field_name("name") == node:
        return text in user_params and text not in API_KEYWORDS
    return text not in KEPT_ROOTS and (text not in KEPT_BUILTINS or text in user_params)


def tokens(src: str, tree: tree_sitter.Tree | None = None) -> list[Token]:
    """The source's tokens in order (comments dropped, strings whole)."""
    tree = tree or parse_tree(src)
    params = user_parameters(tree)
    return leaf_tokens(tree, src.encode(), STRING_TYPES,
                       lambda node, text: node.type == "identifier" and _abstractable(node, text, params))


def leaf_tokens(tree: tree_sitter.Tree, data: bytes, string_types, abstractable) -> list[Token]:
    """The leaves of any tree-sitter tree in order as Tokens (comments and zero-width nodes dropped,
    string nodes of `string_types` whole); `abstractable(node, text)` says which may become placeholders."""
    out: list[Token] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            continue
        if node.child_count == 0 or node.type in string_types:
            if node.end_byte == node.start_byte:
                continue  # zero-width nodes (MISSING, dedent markers)
            text = data[node.start_byte:node.end_byte].decode(errors="replace")
            out.append(Token(text, node.start_byte, node.end_byte, node.start_point[0], abstractable(node, text)))
            continue
        stack.extend(reversed(node.children))
    return out


@dataclass(frozen=True)
class Statement:
    """A simple statement, or the header of a compound one (`for i in range(n):`), as a byte span."""

    start: int
    end: int
    first_line: int
    last_line: int
    function: tuple[int, int] | None  # byte span of the innermost enclosing function definition


def statements(tree: tree_sitter.Tree) -> list[Statement]:
    """Every statement of the module in source order, headers of compound statements included."""
    out: list[Statement] = []

    def visit(node: tree_sitter.Node, func: tuple[int, int] | None) -> None:
        for child in node.named_children:
            if child.type in SIMPLE_STATEMENTS:
                out.append(Statement(child.start_byte, child.end_byte, child.start_point[0],
                                     child.end_point[0], func))
            elif child.type == "decorated_definition":
                for dec in child.children_by_field_name("decorator") or [
                        c for c in child.named_children if c.type == "decorator"]:
                    out.append(Statement(dec.start_byte, dec.end_byte, dec.start_point[0],
                                         dec.end_point[0], func))
                definition = child.child_by_field_name("definition")
                if definition is not None:
                    compound(definition, func)
            elif any(c.type == "block" for c in child.children):
                compound(child, func)
            elif child.type in ("block", "ERROR"):
                visit(child, func)

    def compound(node: tree_sitter.Node, func: tuple[int, int] | None) -> None:
        body = next(c for c in node.children if c.type == "block")
        header_end = max((c.end_byte for c in node.children if c.end_byte <= body.start_byte),
                         default=node.start_byte)
        header_last = max((c.end_point[0] for c in node.children if c.end_byte <= body.start_byte),
                          default=node.start_point[0])
        out.append(Statement(node.start_byte, header_end, node.start_point[0], header_last, func))
        inner = (node.start_byte, node.end_byte) if node.type == "function_definition" else func
        for c in node.children:
            if c.type == "block":
                visit(c, inner)
            elif any(g.type == "block" for g in c.children):
                compound(c, inner)

    visit(tree.root_node, None)
    return out


def jit_functions(src: str) -> list[str]:
    """Source text of every function decorated with something ending in `jit` (triton.jit, ...)."""
    tree = parse_tree(src)
    data = src.encode()
    out = []
    for node in tree.root_node.named_children:
        if node.type == "decorated_definition":
            decorators = [c for c in node.named_children if c.type == "decorator"]
            if any(b"jit" in data[d.start_byte:d.end_byte] for d in decorators):
                out.append(data[node.start_byte:node.end_byte].decode(errors="replace"))
    return out


def api_calls(src: str) -> set[str]:
    """Dotted library names used in the source (`tl.exp`, `torch.softmax`, `tl.dot`, ...)."""
    tree = parse_tree(src)
    data = src.encode()
    found: set[str] = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "attribute":
            text = data[node.start_byte:node.end_byte].decode(errors="replace")
            root = text.split(".", 1)[0]
            if root in KEPT_ROOTS - {"self", "cls"} and "(" not in text and " " not in text:
                found.add(text)
                continue
        stack.extend(node.children)
    return found


class ParsedSource:
    """A source with its tokens, statements and line offsets, parsed once (for templates). A subclass for
    another language (cudasource.CudaParsedSource) names its own grammar's three functions below."""

    language = "triton"  # the template language of a Python file (Triton kernels, host code)
    _parse = staticmethod(parse_tree)
    _tokens = staticmethod(tokens)
    _statements = staticmethod(statements)

    def __init__(self, text: str):
        self.text = text
        self.data = text.encode()
        self.tree = self._parse(text)
        self.toks = self._tokens(text, self.tree)
        self.stmts = self._statements(self.tree)
        self.line_starts = [0] + [i + 1 for i, b in enumerate(self.data) if b == 10]
        self.tok_at = {t.start: i for i, t in enumerate(self.toks)}
        self.tok_ending = {t.end: i for i, t in enumerate(self.toks)}
        self.stmt_spans = [self._span(s) for s in self.stmts]

    def _span(self, s: Statement) -> tuple[int, int]:
        first = self.tok_at.get(s.start)
        if first is None:
            first = next((i for i, t in enumerate(self.toks) if t.start >= s.start), len(self.toks))
        last = first
        while last + 1 < len(self.toks) and self.toks[last + 1].end <= s.end:
            last += 1
        return first, last

    def stmt_key(self, k: int) -> tuple[str, ...]:
        a, b = self.stmt_spans[k]
        return tuple(t.key for t in self.toks[a:b + 1])

    def line_text(self, first: int, last: int) -> str:
        end = self.line_starts[last + 1] if last + 1 < len(self.line_starts) else len(self.data)
        return self.data[self.line_starts[first]:end].decode(errors="replace").rstrip("\n")

    def identifiers(self) -> set[str]:
        return {t.text for t in self.toks if t.text.isidentifier()}

    def function_node(self, span: tuple[int, int] | None):
        if span is None:
            return None
        node = self.tree.root_node.descendant_for_byte_range(span[0], span[1])
        while node is not None and node.type != "function_definition":
            node = node.parent
        return node

    def parameters(self, span: tuple[int, int] | None) -> list[tuple[str, bool]]:
        """(name, is_constexpr) for each parameter of the function at `span`."""
        node = self.function_node(span)
        if node is None:
            return []
        out = []
        for p in node.child_by_field_name("parameters").named_children:
            ident = p if p.type == "identifier" else next(
                (c for c in p.named_children if c.type == "identifier"), None)
            if ident is not None:
                text = self.data[p.start_byte:p.end_byte].decode(errors="replace")
                out.append((ident.text.decode(), "constexpr" in text))
        return out

    def uses(self, name: str, span: tuple[int, int] | None) -> set[str]:
        """The tokens right next to each use of `name` in the body of the function at `span`."""
        node = self.function_node(span)
        if node is None:
            return set()
        body = node.child_by_field_name("body")
        out = set()
        for i, t in enumerate(self.toks):
            if t.text == name and body.start_byte <= t.start < body.end_byte:
                out.update(x.text for x in self.toks[max(i - 1, 0):i + 2:2] if x is not t)
        return out
