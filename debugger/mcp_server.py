"""kdebug's tools over the Model Context Protocol: an MCPServer named "kdebug".

Each tool is a thin wrapper over the library (evaluate, diagnose, the integrity gate, the knowledge
base, the repair graph) with a typed, structured result. Every tool takes the reference and the
candidate as source text or as paths on the server's machine, so a remote agent needs no shared file
system. Library calls block for seconds to minutes, so they run in worker threads and the server keeps
answering; candidate code only ever runs in the library's sandbox. Errors we anticipate (unusable
input, a backend that fails) come back as tool errors with the library's one-line message.

All MCP SDK imports live in this file; `debugger.mcp_command` only calls `serve`.
"""
from __future__ import annotations

import functools
import itertools
import logging
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from debugger.errors import InvalidInput, KdebugError
from debugger.output import jsonable

logger = logging.getLogger(__name__)

INSTRUCTIONS = """\
kdebug checks and repairs near-miss GPU kernels (Triton, KernelBench format): a reference.py defining
Model, get_inputs() and get_init_inputs(), and a candidate defining ModelNew. Pass both as source text
(reference_src, candidate_src) or as paths on the server (reference_path, candidate_path, or case_dir).
evaluate_kernel says whether the candidate matches; diagnose_kernel says where and why it does not;
check_integrity says whether it really computes the operator itself; repair_kernel fixes it;
search_knowledge looks up known failure patterns; record_fix contributes a fix you found yourself."""

mcp = MCPServer("kdebug", instructions=INSTRUCTIONS)

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES_KB = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

# -- inputs shared by every tool that takes a case

ReferenceSrc = Annotated[str | None, Field(
    description="The reference module's source (KernelBench: Model, get_inputs, get_init_inputs).")]
CandidateSrc = Annotated[str | None, Field(description="The candidate module's source (defines ModelNew).")]
ReferencePath = Annotated[str | None, Field(
    description="Path of reference.py on the server (instead of reference_src).")]
CandidatePath = Annotated[str | None, Field(
    description="Path of the candidate file on the server (instead of candidate_src); its folder's "
                "reference.py and case.toml are used when no reference is given.")]
CaseDir = Annotated[str | None, Field(
    description="A case folder on the server holding reference.py, candidate.py and optionally case.toml.")]
Device = Annotated[Literal["cpu", "cuda"] | None, Field(
    description="cuda compiles with Triton on the GPU; cpu runs Triton's interpreter. "
                "Default: cuda when the server sees a GPU, else cpu.")]
Atol = Annotated[float | None, Field(ge=0, description="Absolute tolerance (overrides case.toml and dtype defaults).")]
Rtol = Annotated[float | None, Field(ge=0, description="Relative tolerance (overrides case.toml and dtype defaults).")]

# -- options of single tools

Experiments = Annotated[bool, Field(description="try counterfactual fixes to confirm hypotheses (slower, sharper)")]
Probes = Annotated[bool, Field(description="run an instrumented copy (cpu only): program ownership, out-of-bounds "
                                           "accesses, reduction values")]
StrictPrecision = Annotated[bool, Field(description="also reject tf32 in tl.dot for float32 tasks")]
StaticOnly = Annotated[bool, Field(description="only the static rules: no sandboxed run, no hidden inputs")]
Policy = Annotated[Literal["kernelbench", "strict"], Field(
    description="kernelbench: own kernels for a real part of the work and no cheat (PyTorch may keep "
                "sub-operations); strict: the operator's heavy part in own kernels, any layout")]
Query = Annotated[str | None, Field(description="free text: a symptom, an error message, an operator")]
Symptoms = Annotated[list[str] | None, Field(
    description="symptom tags as diagnose_kernel reports them (nan_in_output, fails_large_magnitude, ...)")]
BugClassFilter = Annotated[str | None, Field(description="only this bug class")]
Operator = Annotated[str | None, Field(description="the operator: softmax, matmul, layernorm, ...")]
Code = Annotated[str | None, Field(description="kernel source whose code to match")]
Kind = Annotated[Literal["pattern", "reference_kernel"] | None, Field(
    description="only failure patterns, or only reference kernels")]
K = Annotated[int, Field(ge=1, le=50, description="how many hits")]
Backend = Annotated[Literal["auto", "kb", "openai"] | None, Field(
    description="kb: knowledge-base recipes only, no language model; openai: the server's OpenAI-compatible "
                "endpoint; auto (the default when one is configured): kb first, then the model")]
ModelName = Annotated[str | None, Field(description="model name for the openai backend")]
MaxIters = Annotated[int | None, Field(ge=1, description="iteration budget (default 8)")]
TokenBudget = Annotated[int | None, Field(ge=1, description="token budget for model calls (default 200000)")]
WallBudget = Annotated[float | None, Field(gt=0, description="wall-clock budget in seconds (default 600)")]
FixedSrc = Annotated[str | None, Field(description="your fixed kernel's source (defines ModelNew)")]
FixedPath = Annotated[str | None, Field(description="path of your fixed kernel on the server (instead of fixed_src)")]
BugClass = Annotated[str | None, Field(
    description="the root cause the fix addresses, a class id from bug-classes.toml; omitted: kdebug diagnoses "
                "the original candidate")]
Agent = Annotated[str, Field(description="who found the fix (kept in the pattern's provenance)")]


def _read(path: str, what: str) -> str:
    p = Path(path).expanduser()
    if not p.is_file():
        raise InvalidInput(f"{what} not found: {p}")
    return p.read_text()


def load_tool_case(reference_src=None, candidate_src=None, reference_path=None, candidate_path=None,
                   case_dir=None, atol=None, rtol=None, *, name: str = "inline"):
    """The Case a tool call describes: text or paths for each of reference and candidate."""
    from debugger.case import case_from_sources, load_case, validate_candidate, validate_reference

    if reference_src is not None and reference_path:
        raise InvalidInput("give reference_src or reference_path, not both")
    if candidate_src is not None and candidate_path:
        raise InvalidInput("give candidate_src or candidate_path, not both")
    if case_dir and candidate_path:
        raise InvalidInput("give case_dir or candidate_path, not both")
    if case_dir or (candidate_path and reference_src is None):
        case = load_case(case_dir or candidate_path, reference_path, atol=atol, rtol=rtol)
        if reference_src is not None:
            validate_reference(reference_src)
            case = replace(case, reference_src=reference_src, reference_path=None)
        if candidate_src is not None:
            validate_candidate(candidate_src)
            case = replace(case, candidate_src=candidate_src, candidate_path=None)
        return case
    if candidate_src is None and not candidate_path:
        raise InvalidInput("no candidate: give candidate_src, candidate_path or case_dir")
    if reference_src is None and not reference_path:
        raise InvalidInput("no reference: give reference_src, reference_path or case_dir")
    ref = reference_src if reference_src is not None else _read(reference_path, "reference")
    cand = candidate_src if candidate_src is not None else _read(candidate_path, "candidate")
    return case_from_sources(ref, cand, name=name, atol=atol, rtol=rtol)


def _settings(device: str | None, **flags):
    from debugger.settings import resolve

    settings = resolve(device=device, **flags)
    if settings.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise InvalidInput("device cuda asked for, but the server sees no CUDA GPU")
    return settings


async def _run(fn, *args, **kwargs):
    """Run a blocking library call in a worker thread; our errors become tool errors."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
    except KdebugError as e:
        raise ToolError(str(e)) from None
    except Exception as e:
        logger.exception("kdebug tool failed")
        raise ToolError(f"kdebug failed: {type(e).__name__}: {e}") from e


# -- results

Number = float | str | None  # non-finite values come back as "inf", "-inf" or "nan"


class CheckOut(BaseModel):
    """One input set of the evaluation."""

    name: str = Field(description="seed0, x100, noncontiguous, hidden_seed1009, ...")
    kind: str = Field(description="seed | distribution | layout | params | hidden | kernelbench")
    passed: bool
    status: str = Field(description="pass | mismatch | runtime_error | timeout | skipped")
    max_abs_err: Number = None
    max_rel_err: Number = None
    frac_wrong: Number = Field(None, description="fraction of output elements out of tolerance")
    first_wrong: list[int] | None = Field(None, description="index of the first wrong element of the first bad output")
    message: str = ""


class EvaluationOut(BaseModel):
    """Does the candidate compute the same function as the reference?"""

    status: Literal["pass", "mismatch", "compile_error", "runtime_error", "timeout", "invalid_input"]
    passed: bool
    message: str = Field(description="one line: what failed, on how many checks, where first")
    device: str
    atol: float | None = None
    rtol: float | None = None
    checks: list[CheckOut] = Field(default_factory=list)
    signature: str | None = Field(None, description="a fingerprint of the failure, equal for failures that look alike")
    reference_warnings: list[str] = Field(default_factory=list)
    log_tail: str = Field("", description="the end of the candidate's output (compiler errors, tracebacks)")
    seconds: float = 0.0
    semantics: str = Field("kernel", description="the verdict that set `status`: kernel or kernelbench")
    verdicts: dict[str, Any] = Field(default_factory=dict, description="kernel (Model's weights mapped in) and "
                                     "kernelbench (KernelBench's trials): each {status, checks, failed, skipped}")
    verdict_note: str = Field("", description="why the two verdicts differ (parameter_init: which tensors)")
    parameter_map: dict[str, Any] | None = Field(None, description="ModelNew <- Model tensor correspondence")
    sizes: dict[str, Any] = Field(default_factory=dict, description="the reduced sizes the checks ran at, if any")
    emulation: str = Field("", description="set when CUDA kernels ran on the CPU through kdebug's emulation "
                           "(values as on a GPU; races and timing do not show)")


def evaluation_out(d: dict) -> EvaluationOut:
    """An EvalReport.to_dict() as the tool result."""
    d = jsonable(d)
    checks = []
    for c in d.get("checks", []):
        bad = next((o for o in c.get("outputs", []) if not o.get("passed")), None)
        checks.append(CheckOut(name=c["name"], kind=c["kind"], passed=c["passed"], status=c["status"],
                               max_abs_err=c.get("max_abs_err"), max_rel_err=c.get("max_rel_err"),
                               frac_wrong=c.get("frac_wrong"), first_wrong=bad.get("first_wrong") if bad else None,
                               message=c.get("message", "")))
    sig = d.get("signature") or {}
    return EvaluationOut(status=d["status"], passed=d["status"] == "pass", message=d.get("message", ""),
                         device=d.get("device", ""), atol=_finite(d.get("atol")), rtol=_finite(d.get("rtol")),
                         checks=checks, signature=sig.get("key"), reference_warnings=d.get("reference_warnings", []),
                         log_tail=d.get("log_tail", ""), seconds=d.get("seconds", 0.0),
                         semantics=d.get("semantics", "kernel"), verdicts=d.get("verdicts") or {},
                         verdict_note=d.get("verdict_note", ""), parameter_map=d.get("parameter_map"),
                         sizes=d.get("sizes") or {}, emulation=d.get("emulation") or "")


def _finite(v):
    return v if isinstance(v, (int, float)) else None


class HypothesisOut(BaseModel):
    """One root-cause hypothesis."""

    bug_class: str = Field(description="a class id from bug-classes.toml")
    confidence: float = Field(description="0..1; the hypotheses' confidences sum to at most 1")
    evidence: list[str]
    lines: list[int] = Field(default_factory=list, description="candidate source lines implicated")
    recipes: list[str] = Field(default_factory=list, description="fix recipes that apply here")


class DiagnosisOut(BaseModel):
    """Where and why the candidate is wrong, most likely cause first."""

    status: str = Field(description="diagnosed | passes | invalid_input | the evaluation status when nothing "
                                    "could be captured")
    summary: str
    bug_class: str | None = Field(None, description="the most likely class (the first hypothesis)")
    hypotheses: list[HypothesisOut] = Field(default_factory=list)
    symptoms: list[str] = Field(default_factory=list)
    static: list[dict[str, Any]] = Field(default_factory=list, description="facts read from the source, with lines")
    recipe_sites: list[dict[str, Any]] = Field(default_factory=list)
    experiments: list[dict[str, Any]] = Field(default_factory=list,
                                              description="counterfactual fixes tried and their effect")
    probes: dict[str, Any] = Field(default_factory=dict, description="what the instrumented copy observed (cpu only)")
    error_maps: dict[str, Any] = Field(default_factory=dict, description="per failing check: where the errors are")
    evaluation: EvaluationOut | None = None


class FindingOut(BaseModel):
    rule: str
    severity: Literal["reject", "warn"]
    message: str
    line: int | None = None


class VerdictOut(BaseModel):
    """The integrity gate's answer: does the candidate really compute the operator with its own kernels?"""

    verdict: Literal["accept", "reject"]
    accepted: bool
    reasons: list[str] = Field(default_factory=list, description="the reject findings as 'rule: message'")
    findings: list[FindingOut] = Field(default_factory=list)
    evaluation: EvaluationOut | None = Field(None, description="the sandboxed run with hidden inputs "
                                                               "(absent when static_only)")
    policy: str | None = Field(None, description="the integrity policy the verdict was reached under")
    dynamic_not_run: str | None = Field(None, description="why the sandboxed run did not happen (a CUDA candidate "
                                                          "on a machine without a GPU) or is incomplete (checks "
                                                          "crowded out of GPU memory by other processes): an accept "
                                                          "is then incomplete")


def verdict_out(verdict) -> VerdictOut:
    return VerdictOut(verdict=verdict.verdict, accepted=verdict.accepted, reasons=verdict.reasons(),
                      findings=[FindingOut(**f.to_dict()) for f in verdict.findings],
                      evaluation=evaluation_out(verdict.evaluation) if verdict.evaluation else None,
                      policy=getattr(verdict, "policy", None), dynamic_not_run=getattr(verdict, "dynamic_not_run", None))


class HitOut(BaseModel):
    """A failure pattern or a reference kernel from the knowledge base."""

    id: str
    kind: Literal["pattern", "reference_kernel"]
    score: float = Field(description="0..1, higher is closer")
    title: str
    bug_class: str | None = None
    fix_recipe: str | None = None
    signals: dict[str, float] = Field(default_factory=dict, description="the per-signal scores behind `score`")
    path: str = Field(description="where it lives on the server")
    text: str = Field("", description="the pattern's markdown (symptom, cause, fix, example), or the reference "
                                      "kernel's source")


class SearchOut(BaseModel):
    hits: list[HitOut]


class TokensOut(BaseModel):
    prompt: int = 0
    completion: int = 0


class RepairOut(BaseModel):
    """What the repair graph did."""

    status: Literal["repaired", "unrepaired", "rejected", "invalid_input"]
    message: str
    repaired_src: str | None = Field(None, description="the verified, integrity-accepted kernel (when repaired)")
    diff: str = Field("", description="unified diff from the candidate to the repaired kernel")
    guard: str | None = Field(None, description="the guard that stopped an unrepaired run (max_iterations, "
                                                "token_budget, wall_clock_budget, same_error_signature, "
                                                "no_progress, exhausted)")
    iterations: int
    tokens: TokensOut
    bug_class: str | None = None
    diagnosis_summary: str = ""
    history: list[dict[str, Any]] = Field(default_factory=list, description="one entry per iteration")
    verdict: dict[str, Any] | None = Field(None, description="the integrity gate's verdict on the last repair")
    distilled: dict[str, Any] | None = Field(None, description="the knowledge-base pattern the fix was written back to")
    run_id: str | None = Field(None, description="the run's id in the server's ledger")
    seconds: float = 0.0


class RecordFixOut(BaseModel):
    """Whether a fix reported by an agent entered the knowledge base, and why not if it did not."""

    status: Literal["recorded", "refused"]
    reason: str = Field(description="what was recorded, or why the fix was refused")
    bug_class: str | None = None
    action: Literal["added", "merged"] | None = Field(None, description="a new learned pattern, or merged into "
                                                                       "its twin")
    pattern_id: str | None = None
    path: str | None = None
    evaluation: EvaluationOut | None = Field(None, description="the fixed kernel's evaluation")
    verdict: VerdictOut | None = Field(None, description="the integrity gate on the fixed kernel")


# -- tools

@mcp.tool(annotations=READ_ONLY)
async def evaluate_kernel(reference_src: ReferenceSrc = None, candidate_src: CandidateSrc = None,
                          reference_path: ReferencePath = None, candidate_path: CandidatePath = None,
                          case_dir: CaseDir = None, device: Device = None, atol: Atol = None,
                          rtol: Rtol = None,
                          semantics: Annotated[Literal["kernel", "kernelbench"], Field(
                              description="which verdict sets status: kernel (Model's weights mapped into "
                                          "ModelNew) or kernelbench (KernelBench's trials, own init)")] = "kernel",
                          sizes: Annotated[Literal["published", "small", "auto"], Field(
                              description="published sizes, reduced ones, or published where they fit")] = "published",
                          ) -> EvaluationOut:
    """Full-coverage correctness check of a candidate kernel against its reference.

    Runs the candidate in a sandbox on several seeds, value distributions, non-contiguous layouts and
    re-drawn parameters, twice each on poisoned outputs, and compares in float64; and KernelBench's own
    five trials (each model's own initialisation). Both verdicts are reported.
    """
    def work():
        from debugger.evaluate import evaluate

        case = load_tool_case(reference_src, candidate_src, reference_path, candidate_path, case_dir, atol, rtol)
        s = _settings(device)
        return evaluation_out(evaluate(case, s.device, timeout=s.timeout, memory_limit_gb=s.memory_limit_gb,
                                       semantics=semantics, sizes=sizes).to_dict())
    return await _run(work)


@mcp.tool(annotations=READ_ONLY)
async def diagnose_kernel(reference_src: ReferenceSrc = None, candidate_src: CandidateSrc = None,
                          reference_path: ReferencePath = None, candidate_path: CandidatePath = None,
                          case_dir: CaseDir = None, device: Device = None, atol: Atol = None, rtol: Rtol = None,
                          experiments: Experiments = True, probes: Probes = True) -> DiagnosisOut:
    """Localise and classify why a candidate fails: ranked bug-class hypotheses with evidence and lines."""
    def work():
        from debugger.diagnose import diagnose

        case = load_tool_case(reference_src, candidate_src, reference_path, candidate_path, case_dir, atol, rtol)
        s = _settings(device)
        d = jsonable(diagnose(case, s.device, experiments=experiments, probes=probes, timeout=s.timeout).to_dict())
        return DiagnosisOut(status=d["status"], summary=d["summary"], bug_class=d["bug_class"],
                            hypotheses=[HypothesisOut(**h) for h in d["hypotheses"]],
                            symptoms=d["symptoms"], static=d["static"], recipe_sites=d["recipe_sites"],
                            experiments=d["experiments"], probes=d["probes"], error_maps=d["error_maps"],
                            evaluation=evaluation_out(d["evaluation"]) if d.get("evaluation") else None)
    return await _run(work)


@mcp.tool(annotations=READ_ONLY)
async def check_integrity(reference_src: ReferenceSrc = None, candidate_src: CandidateSrc = None,
                          reference_path: ReferencePath = None, candidate_path: CandidatePath = None,
                          case_dir: CaseDir = None, device: Device = None, atol: Atol = None, rtol: Rtol = None,
                          strict_precision: StrictPrecision = False, static_only: StaticOnly = False,
                          policy: Policy = "kernelbench") -> VerdictOut:
    """Integrity gate: does the candidate really compute the operator with its own kernels?

    Rejects PyTorch doing the heavy part, fallbacks, caches, input introspection, precision downgrades,
    and fixes that pass the visible checks but fail hidden inputs and shapes.
    """
    def work():
        from debugger.integrity.gate import check

        case = load_tool_case(reference_src, candidate_src, reference_path, candidate_path, case_dir, atol, rtol)
        s = _settings(device)
        return verdict_out(check(case, s.device, strict_precision=strict_precision, dynamic=not static_only,
                                 timeout=s.timeout, policy=policy))
    return await _run(work)


@mcp.tool(annotations=READ_ONLY)
async def search_knowledge(query: Query = None, symptoms: Symptoms = None, bug_class: BugClassFilter = None,
                           operator: Operator = None, code: Code = None, kind: Kind = None, k: K = 5) -> SearchOut:
    """Search the knowledge base for failure patterns (symptom, cause, fix) and reference kernels."""
    def work():
        from debugger.knowledge import KnowledgeBase

        if not (query or symptoms or bug_class or operator or code):
            raise InvalidInput("give a query or at least one of symptoms, bug_class, operator, code")
        hits = KnowledgeBase().search(query, symptoms=symptoms, bug_class=bug_class, operator=operator, code=code,
                                      kind=kind, k=k)
        return SearchOut(hits=[HitOut(**h.to_dict(), text=_hit_text(h.path)) for h in hits])
    return await _run(work)


def _hit_text(path: str) -> str:
    p = Path(path)
    p = p / "kernel.py" if p.is_dir() else p
    try:
        return p.read_text()
    except OSError:
        return ""


@mcp.tool(annotations=WRITES_KB)
async def repair_kernel(ctx: Context, reference_src: ReferenceSrc = None, candidate_src: CandidateSrc = None,
                        reference_path: ReferencePath = None, candidate_path: CandidatePath = None,
                        case_dir: CaseDir = None, device: Device = None, atol: Atol = None, rtol: Rtol = None,
                        backend: Backend = None, model: ModelName = None, max_iters: MaxIters = None,
                        token_budget: TokenBudget = None, wall_budget: WallBudget = None) -> RepairOut:
    """Debug a near-miss candidate to a verified, integrity-accepted fix, or say honestly that it could not.

    Long-running (minutes): progress notifications carry one line per step. Nothing is written next to
    the candidate; the repaired source and the diff come back in the result. A verified fix is also
    written back to the server's knowledge base.
    """
    # The graph may call `progress` from threads of its own: reach the event loop through its token.
    token = anyio.lowlevel.current_token()
    step = itertools.count(1)

    def progress(line: str) -> None:
        try:
            anyio.from_thread.run(ctx.report_progress, next(step), None, line, token=token)
        except Exception:  # noqa: BLE001 - a lost notification must not abort the repair
            logger.debug("progress notification not sent", exc_info=True)

    def work():
        from debugger.repair import repair

        case = load_tool_case(reference_src, candidate_src, reference_path, candidate_path, case_dir, atol, rtol)
        s = _settings(device, backend=backend, model=model, max_iters=max_iters, token_budget=token_budget,
                      wall_budget=wall_budget)
        r = repair(case, settings=s, write_files=False, progress=progress)
        d = jsonable(r.to_dict())
        return RepairOut(status=r.status, message=r.message, repaired_src=r.repaired_src, diff=r.diff, guard=r.guard,
                         iterations=r.iterations, tokens=TokensOut(**r.tokens), bug_class=r.bug_class,
                         diagnosis_summary=r.diagnosis_summary, history=d["history"], verdict=d["verdict"],
                         distilled=d["distilled"], run_id=r.run_id, seconds=r.seconds)
    return await _run(work)


@mcp.tool(annotations=WRITES_KB)
async def record_fix(fixed_src: FixedSrc = None, fixed_path: FixedPath = None, bug_class: BugClass = None,
                     agent: Agent = "mcp", operator: Operator = None,
                     reference_src: ReferenceSrc = None, candidate_src: CandidateSrc = None,
                     reference_path: ReferencePath = None, candidate_path: CandidatePath = None,
                     case_dir: CaseDir = None, device: Device = None, atol: Atol = None,
                     rtol: Rtol = None) -> RecordFixOut:
    """Contribute a fix you found yourself: the original (failing) candidate and your fixed kernel.

    kdebug re-verifies before anything enters the knowledge base: the original must fail, the fix must
    pass every check and the integrity gate (hidden inputs and shapes included). A fix that does not is
    refused with the reason; one that does becomes a learned pattern (or strengthens its twin).
    """
    def work():
        from debugger.case import validate_candidate
        from debugger.diagnose import diagnose
        from debugger.evaluate import evaluate
        from debugger.integrity.gate import check
        from debugger.knowledge import KnowledgeBase
        from debugger.settings import bug_classes

        if fixed_src is not None and fixed_path:
            raise InvalidInput("give fixed_src or fixed_path, not both")
        if fixed_src is None and not fixed_path:
            raise InvalidInput("no fix: give fixed_src or fixed_path")
        if bug_class is not None and bug_class not in bug_classes():
            raise InvalidInput(f"unknown bug_class {bug_class!r}: one of {', '.join(bug_classes())}")
        case = load_tool_case(reference_src, candidate_src, reference_path, candidate_path, case_dir, atol, rtol)
        after = fixed_src if fixed_src is not None else _read(fixed_path, "fixed kernel")
        validate_candidate(after, "fixed kernel")
        fixed = case.with_candidate(after)
        if after.strip() == case.candidate_src.strip():
            raise InvalidInput("the fixed kernel is the candidate itself")
        s = _settings(device)
        run = dict(timeout=s.timeout, memory_limit_gb=s.memory_limit_gb)

        before = evaluate(case, s.device, fail_fast=True, **run)
        if before.status == "invalid_input":
            raise InvalidInput(before.message)
        if before.passed:
            return RecordFixOut(status="refused", bug_class=bug_class,
                                reason="the original candidate already passes every check: there is nothing to fix")
        report = evaluation_out(evaluate(fixed, s.device, fail_fast=True, **run).to_dict())
        if not report.passed:
            return RecordFixOut(status="refused", bug_class=bug_class, evaluation=report,
                                reason=f"the fix does not pass: {report.message}")
        # The standard checks just passed; the gate adds the static rules and the hidden inputs.
        verdict = verdict_out(check(fixed, s.device, timeout=s.timeout, full=False))
        if not verdict.accepted:
            return RecordFixOut(status="refused", bug_class=bug_class, evaluation=report, verdict=verdict,
                                reason=f"the integrity gate rejects the fix: {'; '.join(verdict.reasons)}")
        diagnosis = None
        cls = bug_class
        if cls is None:
            diagnosis = diagnose(case, s.device, timeout=s.timeout).to_dict()
            cls = diagnosis.get("bug_class") or "other"
        res = KnowledgeBase().record_fix(case.name, case.candidate_src, after, diagnosis=diagnosis, backend=agent,
                                         bug_class=cls, reference_src=case.reference_src, operator=operator)
        return RecordFixOut(status="recorded", bug_class=cls, action=res.get("action"), pattern_id=res.get("id"),
                            path=res.get("path"), evaluation=report, verdict=verdict,
                            reason=f"verified and {res.get('action')} as {res.get('id')}")
    return await _run(work)


def serve(http_port: int | None = None, host: str = "127.0.0.1") -> None:
    """Serve over stdio, or over streamable HTTP at http://HOST:PORT/mcp."""
    if http_port is None:
        mcp.run("stdio")
    else:
        mcp.run("streamable-http", host=host, port=http_port)
