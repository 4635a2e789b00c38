"""Rules about the candidate's own kernels: launched at all, launched for real, and writing the output."""
from __future__ import annotations

from tree_sitter import Node

from debugger.integrity import branches, ops
from debugger.integrity.context import Context
from debugger.integrity.findings import REJECT, WARN, Finding, rule
from debugger.integrity.values import Kind
from debugger.source.tree import call_args, enclosing, line, text, unparen, walk


@rule("model_structure", REJECT,
      rationale="A KernelBench candidate must define ModelNew with a forward method; without it nothing can be judged.")
def model_structure(ctx: Context) -> list[Finding]:
    if ctx.forward is None:
        return [Finding("model_structure", REJECT, "no ModelNew.forward in the candidate", 1)]
    return []


@rule("no_kernel_launch", REJECT,
      rationale="A candidate whose forward path launches no Triton kernel (or load_inline function) computes "
                "nothing itself, whatever else it does.")
def no_kernel_launch(ctx: Context) -> list[Finding]:
    if ctx.forward is None or ctx.launches:
        return []
    return [Finding("no_kernel_launch", REJECT,
                    "ModelNew.forward reaches no Triton launch `kernel[grid](...)` and no extension call",
                    line(ctx.forward.node))]


@rule("decoy_kernel", WARN,
      rationale="A kernel defined but never launched from forward is a decoy: it makes the file look like "
                "Triton while something else computes (KernelGYM's 'decoy kernel').")
def decoy_kernel(ctx: Context) -> list[Finding]:
    if ctx.forward is None:
        return []
    return [Finding("decoy_kernel", WARN, f"Triton kernel {name} is never launched on the forward path",
                    line(kernel.node))
            for name, kernel in ctx.candidate.kernels.items() if name not in ctx.reachable_kernels]


def _guarded_by_empty_check(node: Node) -> bool:
    """True inside `if x.numel() == 0:`-style guards, where returning the input or an empty tensor is fine."""
    branch = enclosing(node, "if_statement")
    cond = branch.child_by_field_name("condition") if branch is not None else None
    condition = text(cond) if cond is not None else ""
    return ("numel()" in condition or "shape" in condition or "size(" in condition) and "0" in condition \
        or (cond is not None and branches.is_empty_guard(cond))


def _forward_returns(ctx: Context) -> list[Node]:
    returns = []
    for node in walk(ctx.forward.body):
        if node.type == "return_statement" and node.named_children:
            if enclosing(node, "function_definition", "lambda") == ctx.forward.node:
                returns.append(unparen(node.named_children[0]))
    return returns


@rule("returns_input", REJECT,
      rationale="Returning a forward argument (or a view of it) makes the output alias the input: an identity "
                "shortcut, or a kernel that overwrote its input.")
def returns_input(ctx: Context) -> list[Finding]:
    if ctx.forward is None or ctx.reference.returns_view:
        return []  # the reference itself returns a view of its input (broadcast_tensors, expand)
    found = []
    for value in _forward_returns(ctx):
        items = value.named_children if value.type in ("tuple", "expression_list") else [value]
        for item in items:
            if _guarded_by_empty_check(item):
                continue
            if ctx.kinds.kind(item, ctx.forward) == Kind.INPUT:
                found.append(Finding("returns_input", REJECT,
                                     f"forward returns {ctx.source(item)}, which is (a view of) its input",
                                     line(item)))
            elif _is_copy_of_input(ctx, item):
                found.append(Finding("returns_input", REJECT,
                                     f"forward returns {ctx.source(item)}, an untouched copy of its input",
                                     line(item)))
    return found


def _is_copy_of_input(ctx: Context, node: Node) -> bool:
    """`x.clone()` or `torch.clone(x)` of a forward argument, returned as it is."""
    if node.type != "call":
        return False
    callee = node.child_by_field_name("function")
    positional, _ = call_args(node)
    if ctx.resolve(callee) == "torch.clone" and positional:
        return ctx.kinds.kind(positional[0], ctx.forward) == Kind.INPUT
    return callee.type == "attribute" and text(callee.child_by_field_name("attribute")) == "clone" \
        and ctx.kinds.kind(callee.child_by_field_name("object"), ctx.forward) == Kind.INPUT


@rule("constant_output", REJECT,
      rationale="An output that is a constant allocation, or a buffer no kernel or op ever receives, is not computed.")
def constant_output(ctx: Context) -> list[Finding]:
    if ctx.forward is None:
        return []
    found = []
    for value in _forward_returns(ctx):
        if _guarded_by_empty_check(value):
            continue
        allocator = _allocator(ctx, value)
        if allocator is not None:
            found.append(Finding("constant_output", REJECT,
                                 f"forward returns a fresh {allocator}(...) that nothing computed", line(value)))
        elif value.type == "identifier" and _never_written(ctx, value):
            found.append(Finding("constant_output", REJECT,
                                 f"forward returns {text(value)}, allocated and never passed to a kernel or op",
                                 line(value)))
    return found


def _allocator(ctx: Context, node: Node) -> str | None:
    node = unparen(node)
    if node.type != "call":
        return None
    callee = node.child_by_field_name("function")
    name = ctx.resolve(callee)
    if name.startswith("torch.") and name.split(".")[-1] in ops.ALLOCATORS and name.count(".") == 1:
        return name
    if callee.type == "attribute" and text(callee.child_by_field_name("attribute")) in (
            "new_empty", "new_zeros", "new_ones", "new_full"):
        return text(callee.child_by_field_name("attribute"))
    return None


def _never_written(ctx: Context, returned: Node) -> bool:
    """The returned name was last bound to an allocation and is not mentioned between that and the return."""
    name = text(returned)
    last = None
    for node in walk(ctx.forward.body):
        if node.type == "assignment" and node.end_byte <= returned.start_byte \
                and text(node.child_by_field_name("left")) == name:
            last = node
    if last is None or _allocator(ctx, last.child_by_field_name("right")) is None:
        return False
    for node in walk(ctx.forward.body):
        if node.type == "identifier" and text(node) == name and last.end_byte <= node.start_byte < returned.start_byte:
            return False
    return True


RULES = [model_structure, no_kernel_launch, decoy_kernel, returns_input, constant_output]
