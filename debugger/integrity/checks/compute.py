"""Rules about PyTorch doing the operator's work instead of the candidate's kernels."""
from __future__ import annotations

from collections import Counter

from debugger.integrity import ops
from debugger.integrity import extension, launchconfig
from debugger.integrity.compute import ComputeSite
from debugger.integrity.context import Context
from debugger.integrity.findings import REJECT, WARN, Finding, rule
from debugger.integrity.policy import KERNELBENCH, STRICT
from debugger.integrity.reference import ReferenceProfile
from debugger.integrity.values import Kind
from debugger.source.bindings import looks_like_extension_source
from debugger.source.tree import call_args, line, string_value, text, walk

COMPILERS = ("torch.compile", "torch.jit.", "torch._dynamo", "torch.export", "torch._inductor",
             "torch.fx.", "torch.cuda.graphs.make_graphed_callables")

_OPERAND = {Kind.INPUT: "the forward input", Kind.FULL: "an input-sized tensor",
            Kind.PART: "an intermediate tensor", Kind.OTHER: "a value", Kind.META: "metadata"}


def judge(site: ComputeSite, reference: ReferenceProfile, *, on_kernel_output: bool = False,
          policy: str = STRICT) -> tuple[str, str] | None:
    """(severity, reason) for one PyTorch computation, or None when it is harmless glue.

    `on_kernel_output`: the op reads a tensor a kernel launch wrote earlier in the same function.
    Under the kernelbench policy a whole sub-operation of the reference (the conv of a conv+ReLU task)
    and elementwise work may stay in PyTorch; what still rejects is PyTorch computing a substantial
    piece of an operation the candidate claims (a norm's statistics, a loss's log_softmax) and, in
    `every_op_in_torch`, PyTorch doing all of the reference. The control-flow rules ask the strict
    question (is this real work?), whatever the policy.
    """
    family = site.family
    if family == "movement":
        return None
    if policy == KERNELBENCH:
        if site.key in reference.keys:
            return WARN, "a sub-operation of the reference kept in PyTorch (allowed by --policy kernelbench)"
        if ops.FAMILY_WEIGHT[family] < 2:
            return WARN, "elementwise PyTorch work next to the candidate's kernels"
    if family in ops.HEAVY:
        return REJECT, "a heavy op PyTorch must not compute for the candidate"
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


def every_op_in_torch(sites: list[ComputeSite], reference: ReferenceProfile, extra_keys: list[str] = ()) -> bool:
    """PyTorch itself computes every sub-operation of the reference, each at least as often as the
    reference's source writes it: whatever the kernels do, it is not a real part of the work (a decoy
    launch next to torch.relu(x), a kernel path that only runs in eval mode)."""
    if not reference.key_counts:
        return False
    mine = Counter(key for site in sites if not site.mixed for key in site.all_keys) + Counter(extra_keys)
    return all(mine[key] >= n for key, n in reference.key_counts)


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


def _finishes_kernel_work(ctx: Context, site: ComputeSite) -> bool:
    """A reduction or arithmetic over what a kernel wrote (a sum of per-block partials): the last step
    of work the kernel did, not PyTorch doing the reference's op."""
    if site.family not in ops.FINISHING:
        return False
    return not site.operand.is_full_size or (_reads_kernel_output(ctx, site) and _reduces_last(ctx.reference))


def extension_op_key(op: str) -> str:
    """The sub-operation an ATen or vendor call of extension host code computes (as ComputeSite.key)."""
    name = op.lstrip("_")
    family = ops.OP_FAMILY.get(name) or ("conv" if name.startswith("conv") else "other")
    return family if ops.FAMILY_WEIGHT[family] >= 2 else ops.canonical_op(name)


def judge_extension(found: extension.ExtensionFinding, reference: ReferenceProfile, policy: str) -> tuple[str, str]:
    """(severity, message) for one finding of the extension scan, under the policy."""
    if found.op is None:
        return found.severity, found.message
    if found.fallback and policy == KERNELBENCH:
        return WARN, found.message + " in a branch of the host code that also launches the kernel (a fallback; " \
                                     "the dynamic run shows which path the task's inputs take)"
    if found.finishing:
        if _reduces_last(reference):
            return WARN, found.message
        return REJECT, found.message + ", but the reference does not end in a reduction of what it computed"
    key = extension_op_key(found.op)
    if policy == KERNELBENCH and key in reference.keys:
        return WARN, found.message + " (a sub-operation of the reference, allowed by --policy kernelbench)"
    if policy == KERNELBENCH and ops.FAMILY_WEIGHT[ops.OP_FAMILY.get(found.op.lstrip("_"), "other")] < 2 \
            and key != "other":
        return WARN, found.message + " (elementwise, allowed by --policy kernelbench)"
    return REJECT, found.message


def extension_findings(ctx: Context) -> list[tuple[int, extension.ExtensionFinding]]:
    """(file line, finding) for every extension source of the candidate."""
    if "load_inline" not in ctx.candidate.src and "cpp_extension" not in ctx.candidate.src:
        return []
    sources = [(node, value) for node in ctx.file_nodes("string")
               if (value := string_value(node)) and looks_like_extension_source(value)]
    located = [(node, f) for node, value in sources for f in extension.scan(value)]
    located += [(sources[i][0], f) for i, f in extension.kernel_findings([v for _, v in sources])]
    return [(node.start_point[0] + 1 + f.line_offset, f) for node, f in located]


@rule("torch_compute", REJECT,
      rationale="PyTorch may allocate, view, cast and launch, but not compute the operator's heavy part "
                "(--policy strict) or, under --policy kernelbench, do all of the reference's work or a "
                "substantial piece of an operation the candidate claims; light finishing of kernel results "
                "(a mean of per-row partials) is only reported.")
def torch_compute(ctx: Context) -> list[Finding]:
    findings: dict[tuple[int, str], Finding] = {}
    in_extensions = extension_findings(ctx)
    counted = [site for site in ctx.main_path_sites if not _finishes_kernel_work(ctx, site)
               and not launchconfig.only_sizes_a_launch(site.node, site.function, ctx.meta_parameters)]
    extension_ops = [(where, extension_op_key(f.op)) for where, f in in_extensions
                     if f.op and not f.finishing and not f.fallback]
    # Launches inside the candidate's own submodules (a Block class replacing the reference's) do work the
    # op count cannot place; the dynamic run measures their share instead.
    own_layers = any(fn.cls not in (None, "ModelNew") for fn in (ctx.function_at(l.node) for l in ctx.launches)
                     if fn is not None)
    if ctx.launches and not own_layers and every_op_in_torch(counted, ctx.reference, [k for _, k in extension_ops]):
        keys = ", ".join(sorted(ctx.reference.keys))
        where = min([s.line for s in counted if set(s.all_keys) & ctx.reference.keys] +
                    [w for w, k in extension_ops if k in ctx.reference.keys])
        family = next((s.family for s in counted if s.line == where), "extension")
        findings[(where, family)] = Finding(
            "torch_compute", REJECT, f"PyTorch (or a library the extension calls) computes every operation of the "
                                     f"reference ({keys}) itself: the candidate's kernels do no real part of the work",
            where)
    for site in ctx.sites:
        verdict = judge(site, ctx.reference, on_kernel_output=_reads_kernel_output(ctx, site), policy=ctx.policy)
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
    if ctx.measured is not None:
        _defer_to_measurement(findings, bool(extension_ops))
    for where, found in in_extensions:
        severity, message = judge_extension(found, ctx.reference, ctx.policy)
        if (where, "extension") in findings and severity != REJECT:
            continue  # the coverage finding stands on this line
        findings[(where, "extension:" + found.message)] = Finding("torch_compute", severity, message, where)
    return sorted(findings.values(), key=lambda f: f.line or 0)


_MEASURED = " (measured on the run instead: PyTorch's share of the work is judged by the dynamic findings)"


def _defer_to_measurement(findings: dict, extension_ops: bool) -> None:
    """With the run's measurement at hand, the PyTorch compute the run can see (Python call sites, which
    reach ATen) is judged by its measured share (debugger/integrity/work.py), not by the source: these
    findings become warnings. What the run cannot see stays: vendor libraries called from extension host
    code (a coverage finding that counted extension calls, and the extension findings themselves)."""
    for key, finding in list(findings.items()):
        if finding.severity != REJECT or (extension_ops and "every operation of the reference" in finding.message):
            continue
        findings[key] = Finding(finding.rule, WARN, finding.message + _MEASURED, finding.line)


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
