"""Rules about PyTorch doing the operator's work instead of the candidate's kernels."""
from __future__ import annotations

import re

from debugger.integrity import ops
from debugger.integrity.compute import ComputeSite
from debugger.integrity.context import Context
from debugger.integrity.findings import REJECT, WARN, Finding, rule
from debugger.integrity.reference import ReferenceProfile
from debugger.integrity.syntax import call_args, string_value, text, walk
from debugger.integrity.values import Kind

COMPILERS = ("torch.compile", "torch.jit.", "torch._dynamo", "torch.export", "torch._inductor",
             "torch.fx.", "torch.cuda.graphs.make_graphed_callables")
# ATen/cuBLAS/cuDNN compute called from CUDA source handed to load_inline.
_EXTENSION_COMPUTE = re.compile(
    r"\b(?:torch|at)::(?:matmul|mm|bmm|addmm|linear|conv\w*|softmax|log_softmax|layer_norm|batch_norm|"
    r"group_norm|sum|mean|max|min|relu|gelu|sigmoid|tanh|exp|einsum|baddbmm|cumsum|norm)\s*\(|"
    r"\bcublas\w*\s*\(|\bcudnn\w*\s*\(")

_OPERAND = {Kind.INPUT: "the forward input", Kind.FULL: "an input-sized tensor",
            Kind.PART: "an intermediate tensor", Kind.OTHER: "a value", Kind.META: "metadata"}


def judge(site: ComputeSite, reference: ReferenceProfile) -> tuple[str, str] | None:
    """(severity, reason) for one PyTorch computation, or None when it is harmless glue."""
    family = site.family
    if family in ops.HEAVY:
        return REJECT, "a heavy op PyTorch must not compute for the candidate"
    if family == "movement":
        return None
    if site.operand.is_full_size:
        if family in reference.main:
            return REJECT, "the reference's main computation, applied to the full data"
        if ops.FAMILY_WEIGHT[family] >= 2:
            return REJECT, "a substantial computation over the full data"
        # Without a matmul or conv in the reference, elementwise work over the full data is a large
        # share of the operator (softmax's exp, a norm's scaling); arithmetic is, for elementwise operators.
        main_weight = reference.main_weight
        if main_weight is not None and main_weight < 3 and (family != "arith" or main_weight <= 1):
            return REJECT, "a large share of the operator's work, over the full data"
        return WARN, "elementwise PyTorch work on the full data"
    if family in ops.FINISHING:
        return WARN, "light post-processing of kernel results"
    if family in reference.main:
        return REJECT, "the reference's main computation"
    if ops.FAMILY_WEIGHT[family] >= 2 and family in reference.families:
        return REJECT, "part of the reference's computation, done by PyTorch"
    return WARN, "light PyTorch work on kernel results"


@rule("torch_compute", REJECT,
      rationale="PyTorch may allocate, view, cast and launch, but not compute the operator's heavy part; "
                "light finishing of kernel results (a mean of per-row partials) is only reported.")
def torch_compute(ctx: Context) -> list[Finding]:
    findings: dict[tuple[int, str], Finding] = {}
    for site in ctx.sites:
        verdict = judge(site, ctx.reference)
        if verdict is None:
            continue
        severity, reason = verdict
        key = (site.line, site.family)
        if key in findings and findings[key].severity == REJECT:
            continue
        findings[key] = Finding("torch_compute", severity,
                                f"{site.op} ({site.family}) on {_OPERAND[site.operand]} in "
                                f"{site.function.qualname}: {reason}", site.line)
    for node in ctx.file_nodes("string"):
        value = string_value(node) or ""
        if "load_inline" in ctx.candidate.src and (match := _EXTENSION_COMPUTE.search(value)):
            findings[(node.start_point[0] + 1, "extension")] = Finding(
                "torch_compute", REJECT, f"extension source calls {match.group(0).strip('( ')}: library compute, "
                "not the candidate's kernel", node.start_point[0] + 1)
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
