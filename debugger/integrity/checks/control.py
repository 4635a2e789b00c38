"""Rules about control flow and state that let a candidate pick a different computation than its kernels."""
from __future__ import annotations

import re

from tree_sitter import Node

from debugger.integrity import branches, launchconfig, ops
from debugger.integrity.checks.compute import judge
from debugger.integrity.context import Context
from debugger.integrity.findings import REJECT, WARN, Finding, rule
from debugger.integrity.policy import KERNELBENCH
from debugger.integrity.values import Kind
from debugger.source.host import Function
from debugger.source.tree import call_args, line, text, unparen, walk

_METADATA = re.compile(r"\.(shape|dtype|device|is_cuda|ndim|layout)\b|\.(size|numel|dim|stride|is_contiguous|"
                       r"data_ptr|element_size)\s*\(")


def _contains(outer: Node, inner: Node) -> bool:
    return outer.start_byte <= inner.start_byte and inner.end_byte <= outer.end_byte


def _compute_in(ctx: Context, region: Node, *, light_ok: bool, every: bool = False) -> list:
    """Compute sites in `region` that do real work: not glue, not light finishing of kernel results,
    and with light_ok not any work the compute rule only warns about; with `every`, any PyTorch compute the
    compute rule judges at all, light or not."""
    found = []
    for site in ctx.sites:
        if not _contains(region, site.node):
            continue
        verdict = judge(site, ctx.reference)
        if verdict is None or (not every and verdict[0] == WARN and (light_ok or not site.operand.is_full_size)):
            continue
        found.append(site)
    return found


def _calls_reference_model(ctx: Context, region: Node) -> bool:
    return any(n.type == "identifier" and text(n) in ctx.reference_classes for n in walk(region))


@rule("try_except_fallback", REJECT,
      rationale="An exception handler that computes with PyTorch (or the reference) passes whenever the kernel "
                "fails: the kernel is then optional (Kevin's try/except bypass).")
def try_except_fallback(ctx: Context) -> list[Finding]:
    found = []
    for _, node in ctx.forward_nodes("try_statement"):
        for handler in node.named_children:
            if handler.type not in ("except_clause", "except_group_clause", "else_clause", "finally_clause"):
                continue
            computing = _compute_in(ctx, handler, light_ok=False)
            if computing or _calls_reference_model(ctx, handler):
                what = computing[0].op if computing else "the reference model"
                found.append(Finding("try_except_fallback", REJECT,
                                     f"the {handler.type.replace('_clause', '')} branch of a try falls back to {what}",
                                     line(handler)))
    return found


def _input_dependent(ctx: Context, fn: Function, condition: Node) -> bool:
    """The condition reads an input's shape, dtype, device, layout or values."""
    if _METADATA.search(text(condition)) or _reads_input_values(ctx, fn, condition):
        return True
    for node in walk(condition):
        if node.type == "identifier" and not _is_none_test(node):
            if ctx.kinds.kind(node, fn).is_tensor:
                return True
            if _bound_from_metadata(fn, text(node), condition):
                return True
    return False


def _is_none_test(node: Node) -> bool:
    """`bias is None` / `bias is not None`: whether an optional argument was given, not its shape or values."""
    parent = node.parent
    return parent is not None and parent.type == "comparison_operator" and any(
        not c.is_named and text(c) in ("is", "is not") for c in parent.children)


def _bindings(fn: Function, name: str, before: Node) -> list[Node]:
    """Right-hand sides of the assignments to `name` that come before `before`."""
    found = []
    for node in walk(fn.body):
        if node.type == "assignment" and node.end_byte <= before.start_byte:
            left = node.child_by_field_name("left")
            if any(n.type == "identifier" and text(n) == name for n in walk(left)):
                found.append(node.child_by_field_name("right"))
    return found


def _bound_from_metadata(fn: Function, name: str, before: Node) -> bool:
    return any(_METADATA.search(text(rhs)) for rhs in _bindings(fn, name, before))


def _branches(node: Node) -> list[Node]:
    if node.type == "conditional_expression":
        children = node.named_children
        return [children[0], children[-1]]
    parts = [node.child_by_field_name("consequence")]
    for clause in node.children_by_field_name("alternative"):
        parts.append(clause.child_by_field_name("consequence") or clause.child_by_field_name("body"))
    return [p for p in parts if p is not None]


def _shortcut(ctx: Context, fn: Function, branch: Node, returned: bool) -> str | None:
    """Why a branch computes differently: PyTorch compute, returning the input, or returning a constant."""
    computing = _compute_in(ctx, branch, light_ok=True)
    if computing:
        return f"computes {computing[0].op} with PyTorch"
    if _calls_reference_model(ctx, branch):
        return "calls the reference model"
    if branch.type != "block" and not returned:
        return None  # a conditional expression that is not returned: only its compute counts
    returns = [branch] if branch.type != "block" else [
        unparen(r.named_children[0]) for r in walk(branch)
        if r.type == "return_statement" and r.named_children]
    for value in returns:
        if ctx.kinds.kind(value, fn) == Kind.INPUT:
            return f"returns its input {ctx.source(value)}"
        if value.type == "call" and (ctx.resolve(value.child_by_field_name("function")).split(".")[-1]
                                     in ops.CONSTANT_ALLOCATORS):
            return f"returns a constant {ctx.source(value)}"
    return None


@rule("shape_special_case", REJECT,
      rationale="A branch on input shapes, dtypes or values that leads to PyTorch compute, the input itself or a "
                "constant makes the kernel optional for the tested inputs; choosing between Triton kernels or "
                "block sizes is fine, and so is an early exit for empty tensors. Under --policy kernelbench a "
                "fallback on configuration only (dtype, device, rank, a module setting) that the task's inputs do "
                "not take is reported, not rejected (the dynamic run shows the kernel path ran).")
def shape_special_case(ctx: Context) -> list[Finding]:
    found = []
    for fn, node in ctx.forward_nodes("if_statement", "conditional_expression"):
        condition = branches.condition_of(node)
        if condition is None or not _input_dependent(ctx, fn, condition) or branches.is_empty_guard(condition):
            continue
        if branches.is_training_test(condition):
            continue  # training_fallback judges mode switches
        returned = node.parent is not None and node.parent.type == "return_statement"
        if node.type == "conditional_expression" and \
                launchconfig.value_only_sizes_a_launch(node, fn, ctx.meta_parameters):
            continue  # `n = int(x.max().item()) if len(x) else 1` choosing a block size
        parts = _branches(node)
        for index, branch in enumerate(parts):
            reason = _shortcut(ctx, fn, branch, returned)
            if not reason:
                continue
            severity, note = _fallback_severity(ctx, node, condition, index, len(parts))
            found.append(Finding("shape_special_case", severity,
                                 f"branch on `{ctx.source(condition)}` {reason}{note}", line(branch)))
            break
    return found


def _fallback_severity(ctx: Context, node: Node, condition: Node, index: int, count: int) -> tuple[str, str]:
    """Reject a shortcut branch unless, under kernelbench, the condition only tests configuration and the
    task's inputs do not (or may not: the dynamic run decides) take that branch."""
    if ctx.policy != KERNELBENCH or not branches.is_configuration_test(condition) or _reads_sizes(ctx, condition):
        return REJECT, ""
    value = branches.on_task(condition, ctx.task_dtype)
    simple = node.type == "conditional_expression" or not node.children_by_field_name("alternative") or count == 2
    if simple and value is not None:
        taken = (index == 0) == value
        if taken:
            return REJECT, " (the task's own inputs take this branch)"
        return WARN, " (a fallback for a configuration the task's inputs never take)"
    return WARN, " (a fallback on configuration; the dynamic run shows which path the task's inputs take)"


def _reads_sizes(ctx: Context, condition: Node) -> bool:
    """The condition names a value bound from a shape or size (`n_cols, _ = x.shape; if n_cols == 1000:`)."""
    fn = ctx.function_at(condition)
    return fn is not None and any(
        n.type == "identifier" and any(re.search(r"\.(shape|size|numel)\b", text(rhs))
                                       for rhs in _bindings(fn, text(n), condition))
        for n in walk(condition))


@rule("training_fallback", REJECT,
      rationale="KernelBench's harness runs ModelNew as built, in train mode: a forward that computes with PyTorch "
                "when self.training and launches its kernel only in eval mode is PyTorch under the harness.")
def training_fallback(ctx: Context) -> list[Finding]:
    found = []
    for fn, node in ctx.forward_nodes("if_statement", "conditional_expression"):
        condition = branches.condition_of(node)
        if condition is None or not branches.is_training_test(condition):
            continue
        parts = _branches(node)
        negated = text(condition).lstrip("( ").startswith("not ")
        training = parts[1:] if negated else parts[:1]
        other = parts[:1] if negated else parts[1:]
        launches_elsewhere = any(_contains(b, l.node) for b in other for l in ctx.launches) or \
            any(l.node.start_byte >= node.end_byte and _contains(fn.body, l.node) for l in ctx.launches)
        launches_here = any(_contains(b, l.node) for b in training for l in ctx.launches)
        # a branch that returns before the kernel makes the train-mode result: whatever PyTorch computes there
        # counts, light or not, whatever the value it starts from (a helper module's argument is of no known kind)
        returns = any(n.type == "return_statement" for b in training for n in walk(b))
        computing = [site for b in training for site in _compute_in(ctx, b, light_ok=True, every=returns)]
        if computing and launches_elsewhere and not launches_here:
            found.append(Finding("training_fallback", REJECT,
                                 f"in train mode (`{ctx.source(condition)}`, as KernelBench's harness runs it) forward "
                                 f"computes {computing[0].op} with PyTorch; the kernel runs only in eval mode",
                                 line(training[0])))
    return found


_VALUE_METHODS = {"item", "all", "any", "sum", "mean", "max", "min", "tolist", "equal", "allclose", "isnan",
                  "isinf", "isfinite", "abs", "norm", "nonzero", "count_nonzero", "prod"}


def _reads_input_values(ctx: Context, fn: Function, condition: Node, depth: int = 0) -> bool:
    """The condition looks at the input's data, not just its metadata (also through `s = float(x.sum())`)."""
    for node in walk(condition):
        if node.type == "identifier" and depth < 2 and node.parent is not None and node.parent.type != "attribute":
            if any(_reads_input_values(ctx, fn, rhs, depth + 1) for rhs in _bindings(fn, text(node), condition)):
                return True
        elif node.type == "call":
            callee = node.child_by_field_name("function")
            positional, _ = call_args(node)
            qualified = ctx.resolve(callee)
            if qualified.startswith("torch.") and qualified.split(".")[-1] in _VALUE_METHODS:
                operands = positional
            elif callee.type == "attribute" and not qualified \
                    and text(callee.child_by_field_name("attribute")) in _VALUE_METHODS:
                operands = [callee.child_by_field_name("object")]
            elif text(callee) in ("hash", "bool"):
                operands = positional
            else:
                continue
            if any(ctx.kinds.kind(o, fn) == Kind.INPUT for o in operands):
                return True
        elif node.type == "comparison_operator":
            operators = {text(c) for c in node.children if not c.is_named}
            if operators & {"is", "in", "not", "is not", "not in"} or _compares_metadata(ctx, node):
                continue
            if any(ctx.kinds.kind(o, fn) == Kind.INPUT for o in node.named_children):
                return True
    return False


def _compares_metadata(ctx: Context, comparison: Node) -> bool:
    """`out.dtype != dtype`, `x.device == y.device`: a dtype or device test, whatever the other side is."""
    return any(o.type == "attribute" and text(o.child_by_field_name("attribute")) in ("dtype", "device", "layout")
               or ctx.resolve(o).startswith("torch.") and ctx.resolve(o).split(".")[-1] in _DTYPE_NAMES
               for o in comparison.named_children)


_DTYPE_NAMES = {"float32", "float16", "bfloat16", "float64", "float", "half", "double", "int32", "int64", "int8",
                "uint8", "int16", "bool", "long", "int", "complex64", "complex128"}


@rule("value_dependent_branch", REJECT,
      rationale="Branching on the values of the input data (checksums, sign checks, equality with a stored "
                "tensor) recognises test inputs instead of computing on them.")
def value_dependent_branch(ctx: Context) -> list[Finding]:
    found = []
    for fn, node in ctx.forward_nodes("if_statement", "conditional_expression", "while_statement"):
        condition = node.child_by_field_name("condition") if node.type != "conditional_expression" \
            else node.named_children[1]
        if condition is not None and _reads_input_values(ctx, fn, condition):
            found.append(Finding("value_dependent_branch", REJECT,
                                 f"condition `{ctx.source(condition)}` reads the input's values", line(condition)))
    return found


_STORING_METHODS = {"append", "setdefault", "update", "insert", "extend", "add", "put"}


def _launched_names_before(ctx: Context, fn: Function, position: int) -> set[str]:
    names = set()
    for launch in ctx.launches:
        if _contains(fn.body, launch.node) and launch.node.end_byte <= position:
            names |= {text(n) for n in walk(launch.node.child_by_field_name("arguments")) if n.type == "identifier"}
    return names


def _is_result(ctx: Context, fn: Function, value: Node, position: int) -> bool:
    """The value is an output: a kernel-written tensor, a computed tensor, or the input itself."""
    value = unparen(value)
    kind = ctx.kinds.kind(value, fn)
    if kind == Kind.INPUT:
        return True
    if value.type == "identifier":
        return text(value) in _launched_names_before(ctx, fn, position)
    if value.type in ("tuple", "list"):
        return any(_is_result(ctx, fn, v, position) for v in value.named_children)
    if value.type == "call" and any(_contains(value, s.node) for s in ctx.sites):
        return True
    return value.type == "call" and kind.is_tensor and not _is_allocation(ctx, value)


def _persistent(fn: Function, container: Node) -> bool:
    """A container that outlives the call: an attribute of self, or a module-level name."""
    container = unparen(container)
    while container.type == "subscript":
        container = container.child_by_field_name("value")
    if container.type == "attribute":
        return text(container).startswith("self.")
    if container.type != "identifier":
        return False
    name = text(container)
    local = any(node.type == "assignment" and text(node.child_by_field_name("left")) == name
                for node in walk(fn.body))
    return not local and name not in fn.params


def _is_allocation(ctx: Context, value: Node) -> bool:
    callee = value.child_by_field_name("function")
    if ctx.resolve(callee):
        return ctx.resolve(callee).split(".")[-1] in ops.ALLOCATORS
    return callee.type == "attribute" and text(callee.child_by_field_name("attribute")) in ops.ALLOCATORS


@rule("result_cache", REJECT,
      rationale="Storing computed outputs keyed on the input (data_ptr, id, hash, shape) replays old answers "
                "instead of computing; caches of launch configs or empty workspaces are fine.")
def result_cache(ctx: Context) -> list[Finding]:
    found = []
    for fn, node in ctx.forward_nodes("assignment"):
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None or left.type != "subscript":
            continue
        container = left.child_by_field_name("value")
        if ctx.kinds.kind(container, fn).is_tensor or not _persistent(fn, container):
            continue  # writing into a tensor or a local collection, not a cache
        if _is_result(ctx, fn, right, node.start_byte):
            key = text(left)[len(text(container)):]
            found.append(Finding("result_cache", REJECT,
                                 f"stores a computed tensor in {text(container)}{key}: later calls can replay it",
                                 line(node)))
    for fn, node in ctx.forward_nodes("call"):
        callee = node.child_by_field_name("function")
        if callee.type != "attribute" or text(callee.child_by_field_name("attribute")) not in _STORING_METHODS:
            continue
        container = callee.child_by_field_name("object")
        positional, keywords = call_args(node)
        if not ctx.kinds.kind(container, fn).is_tensor and _persistent(fn, container) and any(
                _is_result(ctx, fn, value, node.start_byte) for value in [*positional, *keywords.values()]):
            found.append(Finding("result_cache", REJECT,
                                 f"stores a computed tensor with {ctx.source(node)}: later calls can replay it",
                                 line(node)))
    for fn in ctx.forward_path:
        decorated = fn.node.parent
        if decorated is None or decorated.type != "decorated_definition":
            continue
        names = [ctx.resolve(d.named_children[0]) or text(d.named_children[0]) for d in decorated.children
                 if d.type == "decorator"]
        if any(n.split("(")[0].endswith(("lru_cache", "functools.cache", "cache")) for n in names):
            if any(ctx.kinds.param_kind(fn, p).is_tensor for p in fn.params):
                found.append(Finding("result_cache", REJECT,
                                     f"{fn.qualname} memoises on tensor arguments", line(fn.node)))
    return found


@rule("state_across_calls", REJECT,
      rationale="Keeping a computed output on the module and returning it later makes a second call depend "
                "on the first instead of on its inputs.")
def state_across_calls(ctx: Context) -> list[Finding]:
    stored: dict[str, Node] = {}
    for fn, node in ctx.forward_nodes("assignment"):
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None:
            continue
        pairs = [(left, right)]
        if left.type in ("pattern_list", "tuple_pattern") and right.type in ("expression_list", "tuple") \
                and left.named_child_count == right.named_child_count:
            pairs = list(zip(left.named_children, right.named_children))
        for target, value in pairs:
            if target.type == "attribute" and text(target.child_by_field_name("object")) == "self" \
                    and _is_result(ctx, fn, value, node.start_byte):
                stored[text(target)] = node
    found = []
    for fn, node in ctx.forward_nodes("return_statement"):
        for ref in walk(node):
            if ref.type == "attribute" and text(ref) in stored:
                found.append(Finding("state_across_calls", REJECT,
                                     f"returns {text(ref)}, an output stored by an earlier call", line(node)))
                break
    return found


@rule("input_mutation", REJECT,
      rationale="Writing into the forward's inputs can change what the reference sees (zeroed inputs, zero "
                "output) and makes outputs alias inputs; allowed only where the reference works in place.")
def input_mutation(ctx: Context) -> list[Finding]:
    if ctx.reference.mutates_inputs:
        return []
    found = []
    for fn, node in ctx.forward_nodes("call", "assignment", "augmented_assignment"):
        target = None
        if node.type == "call":
            callee = node.child_by_field_name("function")
            if callee.type == "attribute":
                method = text(callee.child_by_field_name("attribute"))
                if method.endswith("_") and not method.startswith("_") and method not in ("requires_grad_",):
                    target = callee.child_by_field_name("object")
            _, keywords = call_args(node)
            if target is None and "out" in keywords:
                target = keywords["out"]
        else:
            left = node.child_by_field_name("left")
            if left is not None and left.type == "subscript":
                target = left.child_by_field_name("value")
            elif left is not None and left.type == "attribute" and text(left.child_by_field_name("attribute")) == "data":
                target = left.child_by_field_name("object")
            elif node.type == "augmented_assignment" and left is not None and left.type == "identifier":
                target = left
        if target is not None and ctx.kinds.kind(target, fn) == Kind.INPUT \
                and not text(target).startswith("self."):
            found.append(Finding("input_mutation", REJECT, f"writes into the input {ctx.source(target)} in place",
                                 line(node)))
    return found


RULES = [try_except_fallback, shape_special_case, training_fallback, value_dependent_branch, result_cache, state_across_calls,
         input_mutation]
