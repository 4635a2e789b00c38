"""What a branch of the candidate's forward path means: a fallback, a mode switch, a configuration test.

The control-flow rules ask of an `if` which of its branches the task's own inputs take and whether
its condition tests the inputs' sizes and values (a special case) or only their configuration (dtype,
device, layout, rank, the module's own settings). This module answers those questions:
- `in_fallback`: the node is in one branch of an `if` whose other branch (or the code after it)
  launches the candidate's kernel;
- `is_training_test`: `if self.training:` (KernelBench's harness runs the model in train mode);
- `is_empty_guard`: `if x.numel() == 0:` and its spellings;
- `is_configuration_test` and `on_task`: whether a condition only reads configuration, and its value
  for the task's inputs where that is known (float32 or half tensors on the GPU);
- `in_dead_flag_branch`: `if training:` on a helper's parameter that defaults to False and that no
  call on the forward path passes.
"""
from __future__ import annotations

import re

from tree_sitter import Node

from debugger.source.host import Function, Launch, SourceModule
from debugger.source.tree import call_args, text, unparen, walk

_SIZE_READS = re.compile(r"\.(shape|size|numel|stride|nelement|data_ptr|storage_offset)\b|\blen\s*\(")
_CONFIG_ATTRIBUTES = {"dtype", "device", "is_cuda", "layout", "ndim", "requires_grad", "is_sparse", "is_quantized",
                      "type", "training"}
_CONFIG_METHODS = {"is_contiguous", "dim", "ndimension", "is_floating_point", "is_complex", "get_device"}
_EMPTY = re.compile(r"^\s*(not\s+)?[\w.\[\]]+\.(numel|nelement)\(\)\s*(==\s*0)?\s*$|"
                    r"^\s*[\w.\[\]]+\.(numel|nelement)\(\)\s*==\s*0\s*$|"
                    r"^\s*[\w.]+\.(shape\[\s*-?\d+\s*\]|size\(\s*-?\d*\s*\))\s*==\s*0\s*$")
_NAMED_EMPTY = re.compile(r"^\s*(?:not\s+(\w+)|(\w+)\s*==\s*0)\s*$")
_COUNT = re.compile(r"^\s*[\w.\[\]]+\.(numel|nelement)\(\)\s*$|^\s*[\w.]+\.(shape\[\s*-?\d+\s*\]|size\(\s*-?\d+\s*\))\s*$")
_FALSY_DEFAULTS = {"False", "None", "0"}


def _contains(outer: Node, inner: Node) -> bool:
    return outer.start_byte <= inner.start_byte and inner.end_byte <= outer.end_byte


def branches(node: Node) -> list[Node]:
    """The branches of an if statement (consequence, elifs, else) or of a conditional expression."""
    if node.type == "conditional_expression":
        children = node.named_children
        return [children[0], children[-1]]
    parts = [node.child_by_field_name("consequence")]
    for clause in node.children_by_field_name("alternative"):
        parts.append(clause.child_by_field_name("consequence") or clause.child_by_field_name("body"))
    return [p for p in parts if p is not None]


def condition_of(node: Node) -> Node | None:
    """The condition of an if statement or conditional expression."""
    return node.child_by_field_name("condition") if node.type == "if_statement" else node.named_children[1]


def _returns(block: Node) -> bool:
    return any(n.type in ("return_statement", "raise_statement") for n in walk(block))


def in_fallback(node: Node, fn: Function, launches: list[Launch]) -> bool:
    """The node lies in a branch whose alternative launches a kernel: one path of a kernel-or-PyTorch
    choice, judged by the control-flow rules, not a computation every call makes."""
    inside = [l for l in launches if _contains(fn.body, l.node)]
    parent = node.parent
    while parent is not None and parent != fn.body:
        if parent.type in ("if_statement", "conditional_expression"):
            parts = branches(parent)
            mine = next((b for b in parts if _contains(b, node)), None)
            if mine is not None:
                others = [b for b in parts if b is not mine]
                if any(_contains(o, l.node) for o in others for l in inside):
                    return True
                after = [l for l in inside if l.node.start_byte >= parent.end_byte]
                if parent.type == "if_statement" and _returns(mine) and after:
                    return True
        parent = parent.parent
    return False


def is_training_test(condition: Node) -> bool:
    """`self.training` (alone, negated, or in a conjunction)."""
    return bool(re.search(r"\bself\.training\b", text(condition)))


def is_empty_guard(condition: Node) -> bool:
    """`x.numel() == 0`, `not x.numel()`, `x.shape[0] == 0`: an early exit for empty tensors; also
    `n == 0` and `not n` where every assignment to `n` before the test is such a count (`n = x.numel()`)."""
    return bool(_EMPTY.match(text(condition))) or _named_count_is_zero(condition)


def _named_count_is_zero(condition: Node) -> bool:
    m = _NAMED_EMPTY.match(text(condition))
    fn = condition.parent
    while fn is not None and fn.type != "function_definition":
        fn = fn.parent
    if not m or fn is None:
        return False
    name = m.group(1) or m.group(2)
    bound = [n.child_by_field_name("right") for n in walk(fn)
             if n.type == "assignment" and n.end_byte <= condition.start_byte
             and text(n.child_by_field_name("left")) == name]
    return bool(bound) and all(rhs is not None and _COUNT.match(text(rhs)) for rhs in bound)


def is_configuration_test(condition: Node) -> bool:
    """The condition reads only dtypes, devices, layouts, ranks, module settings and None tests,
    never a size or a value of the data."""
    if _SIZE_READS.search(text(condition)):
        return False
    for node in walk(condition):
        if node.type == "call":
            callee = unparen(node.child_by_field_name("function"))
            name = text(callee.child_by_field_name("attribute")) if callee.type == "attribute" else text(callee)
            if name not in _CONFIG_METHODS and name not in ("isinstance", "is_available", "hasattr", "getattr"):
                return False
    return True


def on_task(condition: Node, task_dtype: str) -> bool | None:
    """The condition's value for the task's inputs (tensors of `task_dtype` on the GPU), None if unknown."""
    node = unparen(condition)
    if node.type == "not_operator":
        inner = on_task(node.child_by_field_name("argument"), task_dtype)
        return None if inner is None else not inner
    if node.type == "boolean_operator":
        left = on_task(node.child_by_field_name("left"), task_dtype)
        right = on_task(node.child_by_field_name("right"), task_dtype)
        if text(node.child_by_field_name("operator")) == "and":
            return False if False in (left, right) else (True if left and right else None)
        return True if True in (left, right) else (False if left is False and right is False else None)
    if node.type == "attribute" and text(node.child_by_field_name("attribute")) == "is_cuda":
        return True
    if node.type == "comparison_operator" and len(node.named_children) == 2:
        left, right = node.named_children
        operator = next((text(c) for c in node.children if not c.is_named), "")
        sides = [text(left), text(right)]
        dtype_side = next((s for s in sides if s.endswith(".dtype")), None)
        literal = next((s for s in sides if re.fullmatch(r"torch\.\w+", s)), None)
        if dtype_side and literal and operator in ("==", "!=", "is", "is not"):
            same = literal.split(".")[1] in _DTYPE_NAMES.get(task_dtype, {task_dtype})
            return same if operator in ("==", "is") else not same
    return None


_DTYPE_NAMES = {"float32": {"float32", "float"}, "float16": {"float16", "half"}, "bfloat16": {"bfloat16"}}


def in_dead_flag_branch(node: Node, fn: Function, module: SourceModule, path: list[Function]) -> bool:
    """The node is in `if flag:` where `flag` is a parameter of `fn` with a False/None/0 default that no
    call on the forward path passes: code the task never runs (a training-mode statistics update)."""
    unset = _unset_flags(fn, module, path)
    if not unset:
        return False
    parent = node.parent
    while parent is not None and parent != fn.body:
        if parent.type == "if_statement":
            consequence = parent.child_by_field_name("consequence")
            condition = unparen(parent.child_by_field_name("condition"))
            if consequence is not None and _contains(consequence, node) and condition.type == "identifier" \
                    and text(condition) in unset:
                return True
        parent = parent.parent
    return False


def _unset_flags(fn: Function, module: SourceModule, path: list[Function]) -> set[str]:
    params = fn.node.child_by_field_name("parameters")
    defaults = {}
    for p in params.named_children:
        if p.type in ("default_parameter", "typed_default_parameter"):
            value = p.child_by_field_name("value")
            if value is not None and text(value) in _FALSY_DEFAULTS:
                defaults[text(p.child_by_field_name("name"))] = True
    if not defaults or fn.cls is not None:
        return set()
    passed: set[str] = set()
    for caller in path:
        for call in walk(caller.body):
            if call.type != "call" or text(call.child_by_field_name("function")) != fn.name:
                continue
            positional, keywords = call_args(call)
            if any(a.type in ("list_splat", "dictionary_splat") for a in positional):
                return set()
            passed |= set(fn.params[:len(positional)]) | set(keywords)
    return set(defaults) - passed
