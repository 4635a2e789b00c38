"""Rules about computing at a lower precision than the reference's float32."""
from __future__ import annotations

from tree_sitter import Node

from debugger.integrity.context import Context
from debugger.integrity.findings import REJECT, Finding, rule
from debugger.source.tree import call_args, line, string_value, text, walk

LOW_DTYPES = {"float16", "half", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8e4nv", "float8e5", "fp8e4nv",
              "fp8e5", "float8e4b15"}
LOW_METHODS = {"half", "bfloat16"}
AUTOCAST = ("torch.autocast", "torch.cuda.amp", "torch.amp", "torch.cpu.amp")
TF32_FREE = {"ieee", "tf32x3", "bf16x3", "bf16x6"}


def _is_low_dtype(ctx: Context, node: Node | None) -> bool:
    if node is None:
        return False
    name = ctx.resolve(node)
    if name.startswith(("torch.", "triton.language.", "triton.")) and name.split(".")[-1] in LOW_DTYPES:
        return True
    return string_value(node) in LOW_DTYPES | {"fp16", "bf16"}


@rule("precision_downgrade", REJECT,
      rationale="Casting a float32 task's operands, intermediates or outputs to fp16/bf16/fp8 trades accuracy for "
                "speed the reference did not allow; tolerances then hide the error.")
def precision_downgrade(ctx: Context) -> list[Finding]:
    if ctx.reference.low_precision or ctx.forward is None:
        return []
    found = []
    kernels = [ctx.candidate.kernels[name] for name in sorted(ctx.reachable_kernels)]
    scopes = [fn.body for fn in ctx.forward_path] + [k.body for k in kernels]
    for scope in scopes:
        for node in walk(scope):
            if node.type == "call":
                found += _low_precision_call(ctx, node)
            elif node.type == "with_item" and ctx.resolve(_callee(node.named_children[0])).startswith(AUTOCAST):
                found.append(Finding("precision_downgrade", REJECT, f"runs under {text(node)}", line(node)))
    return found


def _callee(node: Node) -> Node | None:
    return node.child_by_field_name("function") if node.type == "call" else node


def _low_precision_call(ctx: Context, node: Node) -> list[Finding]:
    callee = node.child_by_field_name("function")
    positional, keywords = call_args(node)
    method = text(callee.child_by_field_name("attribute")) if callee.type == "attribute" else ""
    name = ctx.resolve(callee)
    if not name and method in LOW_METHODS:
        return [Finding("precision_downgrade", REJECT, f"{ctx.source(node)} casts to {method}", line(node))]
    if method in ("to", "cast") or name in ("triton.language.cast",):
        dtype_args = positional[1:] if name else positional
        if any(_is_low_dtype(ctx, a) for a in [*dtype_args, keywords.get("dtype")]):
            return [Finding("precision_downgrade", REJECT, f"{ctx.source(node)} casts to a 16-bit type", line(node))]
    if name.startswith(AUTOCAST):
        return [Finding("precision_downgrade", REJECT, f"uses {name}", line(node))]
    for key in ("dtype", "out_dtype"):
        if _is_low_dtype(ctx, keywords.get(key)):
            return [Finding("precision_downgrade", REJECT, f"{ctx.source(node)} produces a 16-bit tensor",
                            line(node))]
    return []


@rule("tf32_dot", REJECT,
      rationale="tl.dot on float32 defaults to TF32 on NVIDIA (10-bit mantissa). Accepted by default, as "
                "KernelBench-Verified's baseline is; forbidden under --strict-precision.")
def tf32_dot(ctx: Context) -> list[Finding]:
    if not ctx.strict_precision or ctx.reference.low_precision:
        return []
    found = []
    for name in sorted(ctx.reachable_kernels):
        for node in walk(ctx.candidate.kernels[name].body):
            if node.type != "call" or ctx.resolve(node.child_by_field_name("function")) != "triton.language.dot":
                continue
            positional, keywords = call_args(node)
            precision = string_value(keywords.get("input_precision"))
            allow = text(keywords.get("allow_tf32")) if "allow_tf32" in keywords else None
            if precision in TF32_FREE or (precision is None and allow == "False"):
                continue
            found.append(Finding("tf32_dot", REJECT,
                                 f"tl.dot in {name} may use TF32 (set input_precision=\"ieee\")", line(node)))
    return found


RULES = [precision_downgrade, tf32_dot]
