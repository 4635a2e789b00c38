"""Rules about PyTorch doing the operator's work instead of the candidate's kernels."""
from __future__ import annotations


from debugger.integrity import ops
from debugger.integrity.compute import ComputeSite
from debugger.integrity.context import Context
from debugger.integrity.findings import REJECT, WARN, Finding, rule
from debugger.integrity import extension, launchconfig
from debugger.integrity.reference import ReferenceProfile
from debugger.integrity.syntax import call_args, string_value, text, walk
from debugger.integrity.values import Kind

COMPILERS = ("torch.compile", "torch.jit.", "torch._dynamo", "torch.export", "torch._inductor",
             "torch.fx.", "torch.cuda.graphs.make_graphed_callables")

_OPERAND = {Kind.INPUT: "the forward input", Kind.FULL: "an input-sized tensor",
            Kind.PART: "an intermediate tensor", Kind.OTHER: "a value", Kind.META: "metadata"}


def judge(site: ComputeSite, reference: ReferenceProfile, *, on_kernel_output: bool = False) -> tuple[str, str] | None:
    """(severity, reason) for one PyTorch computation, or None when it is harmless glue.

    `on_kernel_output`: the op reads a tensor a kernel launch wrote earlier in the same function.
    """
    family = site.family
    if family in ops.HEAVY:
        return REJECT, "a heavy op PyTorch must not compute for the candidate"
    if family == "movement":
        return None
    if on_kernel_output and site.operand == Kind.FULL and family in ops.FINISHING and _reduces_last(reference):
        return WARN, "a final reduction of per-element results a kernel produced"
    if site.operand.is_full_size:
        if family in reference.main:
            return REJECT, "the reference's main computation, applied to the full data"
        if ops.FAMILY_WEIGHT[family] >= 2:
            return REJECT, "a substantial computation over the full data"
        # Without a matmul or conv in the reference, elementwise work over the full data is a large
        # share of the operator (softmax's exp, a norm's scaling, MSE's differences).
        main_weight = reference.main_weight
        if main_weight is not None and main_weight < 3:
            return REJECT, "a large share of the operator's work, over the full data"
        return WARN, "elementwise PyTorch work on the full data (an epilogue next to the heavy op)"
    if family in ops.FINISHING:
        return WARN, "light post-processing of kernel results"
    if family in reference.main:
        return REJECT, "the reference's main computation"
    if ops.FAMILY_WEIGHT[family] >= 2 and family in reference.families:
        return REJECT, "part of the reference's computation, done by PyTorch"
    return WARN, "light PyTorch work on kernel results"


def _reduces_last(reference: ReferenceProfile) -> bool:
    """The reference ends in a loss, or in a reduction of something it computed first (MSE's mean of
    squared differences), so a kernel can do the rest and leave the final reduction to PyTorch."""
    if "loss" in reference.final:
        return True
    return "reduction" in reference.final and bool(reference.families - {"reduction", "movement"})


def _reads_kernel_output(ctx: Context, site: ComputeSite) -> bool:
    """The op's tensor operand was passed to a kernel launch earlier in the same function."""
    node = site.node
    if node.type == "call":
        callee = node.child_by_field_name("function")
        positional, _ = call_args(node)
        operands = [callee.child_by_field_name("object")] if callee.type == "attribute" and \
            not ctx.resolve(callee) else positional[:1]
    else:
        operands = [node.child_by_field_name("left"), node.child_by_field_name("right")]
    names = {text(o) for o in operands if o is not None and o.type == "identifier"}
    fn_body = site.function.body
    for launch in ctx.launches:
        inside = fn_body.start_byte <= launch.node.start_byte and launch.node.end_byte <= node.start_byte
        if inside and names & {text(n) for n in walk(launch.node.child_by_field_name("arguments"))
                               if n.type == "identifier"}:
            return True
    return False


@rule("torch_compute", REJECT,
      rationale="PyTorch may allocate, view, cast and launch, but not compute the operator's heavy part; "
                "light finishing of kernel results (a mean of per-row partials) is only reported.")
def torch_compute(ctx: Context) -> list[Finding]:
    findings: dict[tuple[int, str], Finding] = {}
    for site in ctx.sites:
        verdict = judge(site, ctx.reference, on_kernel_output=_reads_kernel_output(ctx, site))
        if verdict is None:
            continue
        severity, reason = verdict
        if severity == REJECT and launchconfig.only_sizes_a_launch(site.node, site.function, ctx.meta_parameters):
            severity, reason = WARN, "reads the inputs only to size a kernel launch (a host scalar for the grid " \
                                     "or a constexpr meta-parameter)"
        key = (site.line, site.family)
        if key in findings and findings[key].severity == REJECT:
            continue
        findings[key] = Finding("torch_compute", severity,
                                f"{site.op} ({site.family}) on {_OPERAND[site.operand]} in "
                                f"{site.function.qualname}: {reason}", site.line)
    if "load_inline" in ctx.candidate.src or "cpp_extension" in ctx.candidate.src:
        sources = [(node, value) for node in ctx.file_nodes("string")
                   if (value := string_value(node)) and extension.looks_like_extension_source(value)]
        located = [(node, f) for node, value in sources for f in extension.scan(value)]
        located += [(sources[i][0], f) for i, f in extension.kernel_findings([v for _, v in sources])]
        for node, f in located:
            where = node.start_point[0] + 1 + f.line_offset
            findings[(where, "extension:" + f.message)] = Finding("torch_compute", f.severity, f.message, where)
    return sorted(findings.values(), key=lambda f: f.line or 0)


@rule("torch_compile", REJECT,
      rationale="torch.compile, TorchScript and graph capture hand the operator to PyTorch's own code generator.")
def torch_compile(ctx: Context) -> list[Finding]:
    found = []
    for node in ctx.file_nodes("attribute", "identifier"):
        if node.parent is not None and node.parent.type == "attribute" and node.parent.child_by_field_name("object") == node:
            continue  # judge the longest chain only
        name = ctx.resolve(node)
        if name.startswith(COMPILERS) or name in ("torch.compile",):
            found.append(Finding("torch_compile", REJECT, f"uses {name}", node.start_point[0] + 1))
    return _one_per_line(found)


def _one_per_line(findings: list[Finding]) -> list[Finding]:
    seen, unique = set(), []
    for finding in findings:
        if (finding.line, finding.rule) not in seen:
            seen.add((finding.line, finding.rule))
            unique.append(finding)
    return unique


RULES = [torch_compute, torch_compile]
