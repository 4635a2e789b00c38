"""CUDA/C++ text (a load_inline unit) as tokens and statements, the counterpart of pysource for templates.

`CudaParsedSource` offers what distil.py and templates.py read from a `ParsedSource` (tokens, statement
spans, lines, the enclosing function's parameters and their uses), over the tree-sitter CUDA grammar.
A statement is a simple statement (declaration, expression, return, ...) or the header of a compound
one (`for (...)`, `if (...)`, a function's signature); each brace of a block is a statement of its own,
so a rule's text (whole lines) never takes in a brace its statements do not hold. An identifier is
abstractable (may become a placeholder $A) unless it is CUDA's or C's own: the thread and block
builtins, intrinsics (`__syncthreads`, `__shfl_down_sync`, ...), atomics, math functions, `std`,
`torch`, `at`, `c10`, `TORCH_CHECK`, names qualified by a namespace (`torch::empty`). Field names (`threadIdx.x`'s `x`), types and literals never are.
"""
from __future__ import annotations

import tree_sitter

from debugger.knowledge.pysource import ParsedSource, Statement, Token, leaf_tokens
from debugger.source.tree import walk

LANGUAGE = "cuda"
KEPT = {
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "std", "torch", "at", "c10", "TORCH_CHECK",
    "AT_DISPATCH_FLOATING_TYPES", "AT_DISPATCH_FLOATING_TYPES_AND_HALF", "C10_CUDA_KERNEL_LAUNCH_CHECK",
    "min", "max", "abs", "exp", "log", "sqrt", "rsqrt", "pow", "tanh", "erf", "floor", "ceil", "round",
    "fmax", "fmin", "fabs", "sin", "cos", "INFINITY", "NAN", "FLT_MAX", "FLT_MIN", "nullptr", "size_t",
    "printf", "assert", "sizeof",
}
STRINGS = {"string_literal", "char_literal", "raw_string_literal", "system_lib_string", "preproc_arg"}
SIMPLE = {"expression_statement", "declaration", "return_statement", "break_statement", "continue_statement",
          "goto_statement", "preproc_def", "preproc_include", "preproc_function_def", "type_definition",
          "using_declaration", "alias_declaration", "field_declaration"}
COMPOUND = {"function_definition", "if_statement", "for_statement", "for_range_loop", "while_statement",
            "do_statement", "switch_statement", "case_statement", "else_clause", "namespace_definition",
            "linkage_specification", "template_declaration"}
CONTAINERS = {"translation_unit", "compound_statement", "declaration_list", "ERROR", "preproc_if",
              "preproc_ifdef", "preproc_else"}
BODY_FIELDS = ("body", "consequence")


def parse(text: str) -> tree_sitter.Tree:
    """The tree-sitter CUDA tree of `text` (never raises; syntax errors become ERROR nodes)."""
    from debugger.lang.cuda.unit import parse_tree  # on first use: loading the languages is not free

    return parse_tree(text)


def kept(name: str) -> bool:
    """CUDA's and C's own names: builtins, intrinsics, atomics, math functions (`expf`, `fmaxf`, ...)."""
    if name in KEPT or name.startswith("__") or name.startswith("atomic"):
        return True
    return name.endswith("f") and name[:-1] in KEPT


def _parameters(fn: tree_sitter.Node) -> list[str]:
    declarator = fn.child_by_field_name("declarator")
    while declarator is not None and declarator.type not in ("function_declarator",):
        declarator = declarator.child_by_field_name("declarator")
    params = declarator.child_by_field_name("parameters") if declarator is not None else None
    out = []
    for p in params.named_children if params is not None else []:
        d = p.child_by_field_name("declarator")
        while d is not None and d.type != "identifier":
            d = d.child_by_field_name("declarator") or next(
                (c for c in d.named_children if c.type == "identifier"), None)
        if d is not None:
            out.append(d.text.decode(errors="replace"))
    return out


def tokens(text: str, tree: tree_sitter.Tree | None = None) -> list[Token]:
    """The text's tokens in order (comments dropped, string literals and #define values whole)."""
    tree = tree or parse(text)
    data = text.encode()
    params = set()
    for node in walk(tree.root_node):
        if node.type == "function_definition":
            params.update(_parameters(node))

    def abstractable(node, tok: str) -> bool:
        qualified = node.parent is not None and node.parent.type == "qualified_identifier"  # torch::empty
        return node.type == "identifier" and not qualified and (tok in params or not kept(tok))

    return leaf_tokens(tree, data, STRINGS, abstractable)


def statements(tree: tree_sitter.Tree) -> list[Statement]:
    """Every statement in source order, headers of compound statements (and function signatures) included."""
    out: list[Statement] = []

    def handle(node: tree_sitter.Node, func) -> None:
        if node.type in SIMPLE:
            out.append(Statement(node.start_byte, node.end_byte, node.start_point[0], node.end_point[0], func))
        elif node.type in COMPOUND:
            body = next((b for f in BODY_FIELDS if (b := node.child_by_field_name(f)) is not None), None)
            if node.type == "else_clause":
                body = node.named_children[0] if node.named_children else None
            head = [c for c in node.children if body is None or c.end_byte <= body.start_byte]
            if head:
                out.append(Statement(node.start_byte, max(c.end_byte for c in head), node.start_point[0],
                                     max(c.end_point[0] for c in head), func))
            inner = (node.start_byte, node.end_byte) if node.type == "function_definition" else func
            for c in node.named_children:
                if body is None or c.start_byte >= body.start_byte:
                    handle(c, inner)
        elif node.type in CONTAINERS:
            braces = [c for c in node.children if c.type in ("{", "}")] if node.type == "compound_statement" else []
            for c in sorted(node.named_children + braces, key=lambda n: n.start_byte):
                if c.type in ("{", "}"):  # a brace is a statement of its own: a rule never spans one
                    out.append(Statement(c.start_byte, c.end_byte, c.start_point[0], c.end_point[0], func))
                else:
                    handle(c, func)

    handle(tree.root_node, None)
    return out


class CudaParsedSource(ParsedSource):
    """A CUDA unit's text with its tokens, statements and line offsets, parsed once (for templates): the
    bookkeeping of pysource.ParsedSource over the CUDA grammar."""

    language = LANGUAGE
    _parse = staticmethod(parse)
    _tokens = staticmethod(tokens)
    _statements = staticmethod(statements)

    def parameters(self, span: tuple[int, int] | None) -> list[tuple[str, bool]]:
        """(name, False) for each parameter of the function at `span` (CUDA has no constexpr parameters)."""
        node = self.function_node(span)
        return [(p, False) for p in _parameters(node)] if node is not None else []

    def uses(self, name: str, span: tuple[int, int] | None) -> set[str]:
        """The tokens right next to each use of `name` in the body of the function at `span`."""
        node = self.function_node(span)
        body = node.child_by_field_name("body") if node is not None else None
        if body is None:
            return set()
        out = set()
        for i, t in enumerate(self.toks):
            if t.text == name and body.start_byte <= t.start < body.end_byte:
                out.update(x.text for x in self.toks[max(i - 1, 0):i + 2:2] if x is not t)
        return out
