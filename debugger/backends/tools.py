"""The tools a model may call while it debugs a kernel, as thin wrappers over the library.

    evaluate               debugger.evaluate.run_evaluation (every check, or one)
    diagnose               the run's diagnosis (debugger.diagnose.diagnose), by section
    probe                  debugger.diagnose.probes.run_probes on one named kernel (Triton interpreter)
    experiment             debugger.diagnose.experiments.run_experiments on a proposed edit (nothing kept)
    localise               debugger.diagnose.localisation.run_localisation (which launch departs)
    search_knowledge       KnowledgeBase.search
    read_reference_kernel  KnowledgeBase.reference_kernel / closest_reference_kernel
    propose_edit           only checked here (the edits apply to the current kernel, and leave a file
                           that parses, with its CUDA kernels still in the load_inline strings); the repair graph
                           applies and verifies them (debugger/backends/openai_tools.py hands them over)

Every tool reads the current best version of the kernel and returns text for the model. A bad
argument is a ToolError: its one line goes back to the model, which may try again.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from debugger.backends import kernel_lang
from debugger.backends.edits import apply_edits, parse_edits
from debugger.case import Case
from debugger.records import CheckResult, EvalReport

EXCERPT_CHARS = 1200


class ToolError(Exception):
    """A tool cannot do what the model asked; the message goes back to the model."""


@dataclass
class Workbench:
    """What the tools work on: the task with the current best kernel, and the run's dependencies."""

    case: Case
    device: str = "cpu"
    timeout: float = 120.0
    semantics: str = "kernel"  # the run's semantics (kernel | kernelbench)
    sizes: str = "published"  # the loop's sizes
    knowledge: Any = None
    diagnosis: dict = field(default_factory=dict)
    best_report: dict = field(default_factory=dict)
    instrumentation: bool = True

    @classmethod
    def from_context(cls, candidate_src: str, diagnosis: dict, context: dict) -> "Workbench":
        """From what the repair graph's propose node hands a backend (`context["run"]`: the RunContext)."""
        run = context.get("run")
        case = Case(name=context.get("case_name", "candidate"), reference_src=context["reference_src"],
                    candidate_src=candidate_src, atol=context.get("atol"), rtol=context.get("rtol"))
        if run is None:
            return cls(case=case, device=context.get("device", "cpu"), diagnosis=diagnosis or {},
                       best_report=context.get("best_report") or {})
        return cls(case=case, device=run.device, timeout=run.timeout, semantics=run.semantics,
                   sizes=run.loop_sizes, knowledge=run.knowledge if run.retrieval else None,
                   diagnosis=diagnosis or {}, best_report=context.get("best_report") or {},
                   instrumentation=run.instrumentation)

    @property
    def language(self) -> str:
        return kernel_lang.language(self.case.candidate_src)

    @property
    def evaluation_semantics(self) -> str:
        return "both" if self.semantics == "kernelbench" else "kernel"

    def specs(self) -> list[dict]:
        from debugger.evaluate import repair_checks

        return repair_checks(self.semantics)

    def failing_report(self, check: str | None = None) -> EvalReport:
        """The best version's report as the diagnosis functions take it: its failing checks (or one
        named check), each with the spec that re-draws its inputs."""
        rows = self.best_report.get("checks") or []
        if check is not None:
            row = next((c for c in rows if c["name"] == check), None)
            spec = (row or {}).get("spec") or next((s for s in self.specs() if s["name"] == check), None)
            if spec is None:
                raise ToolError(f"no check named {check!r}; checks: {', '.join(s['name'] for s in self.specs())}")
            kind = spec.get("kind", "seed")
            return EvalReport(status="mismatch", semantics="kernelbench" if kind == "kernelbench" else "kernel",
                              checks=[CheckResult(name=check, kind=kind, passed=False, status="mismatch", spec=spec)])
        checks = [CheckResult(name=c["name"], kind=c["kind"], passed=c["passed"], status=c["status"],
                              spec=c.get("spec") or {}) for c in rows]
        return EvalReport(status=self.best_report.get("status", "mismatch"), checks=checks,
                          semantics=self.best_report.get("semantics", "kernel"))


def render_report(report: EvalReport) -> str:
    """An evaluation report, one line per check."""
    lines = [f"status: {report.status}: {report.message}"]
    for c in report.checks:
        if c.passed:
            lines.append(f"{c.name} [{c.kind}]: pass")
            continue
        bad = next((o for o in c.outputs if not o.passed), None)
        detail = c.message
        if bad is not None and not detail:
            detail = bad.problem or (f"output {bad.index} {tuple(bad.shape)}: {bad.frac_wrong:.1%} wrong, "
                                     f"max_abs_err {bad.max_abs_err:.3g}, first wrong at {bad.first_wrong}"
                                     + (f", {bad.nan_mismatch} NaN mismatches" if bad.nan_mismatch else ""))
        lines.append(f"{c.name} [{c.kind}]: {c.status}: {detail}"[:400])
    return "\n".join(lines)


def _edits(args: dict) -> list[dict]:
    """Edits from `edits` ([{search, replace}]) or `blocks` (SEARCH/REPLACE text)."""
    edits = args.get("edits")
    if edits is None and isinstance(args.get("blocks"), str):
        edits = parse_edits(args["blocks"])
    if isinstance(edits, dict):
        edits = [edits]
    if not isinstance(edits, list) or not edits:
        raise ToolError("give `edits`: a non-empty list of {\"search\": exact text of the current file, "
                        "\"replace\": its replacement}")
    for n, e in enumerate(edits, start=1):
        if not isinstance(e, dict) or not isinstance(e.get("search"), str) or not isinstance(e.get("replace"), str):
            raise ToolError(f"edit {n} must be an object with string fields `search` and `replace`")
    return [{"search": e["search"], "replace": e["replace"]} for e in edits]


def broken_by(old_src: str, new_src: str) -> str | None:
    """Why an edited file is no longer one kdebug can run, or None: Python that no longer parses (a CUDA
    edit that closed or opened a string literal), or CUDA kernels gone from the load_inline strings."""
    import ast

    try:
        ast.parse(old_src)
    except SyntaxError:
        return None  # it did not parse before: not the edit's doing
    try:
        ast.parse(new_src)
    except SyntaxError as e:
        return (f"the edited file is not valid Python (line {e.lineno}: {e.msg}); edit the CUDA code inside "
                f"its string literal and leave the quotes as they are")
    if kernel_lang.language(old_src) == "cuda":
        lost = set(kernel_lang.kernel_names(old_src)) - set(kernel_lang.kernel_names(new_src))
        if lost and not (kernel_lang.language(new_src) == "cuda" and kernel_lang.kernel_names(new_src)):
            return (f"the edited file has no CUDA kernel left in its load_inline strings (lost: "
                    f"{', '.join(sorted(lost))})")
    return None


def checked_edits(bench: Workbench, args: dict) -> tuple[list[dict], str]:
    """The edits of a propose_edit call and the source they give; ToolError when they do not apply or
    leave a file that cannot run (broken_by)."""
    return checked(bench.case.candidate_src, _edits(args))


def checked(src: str, edits: list[dict]) -> tuple[list[dict], str]:
    """`edits` applied to `src`: (edits, new source); ToolError with the reason when they cannot be."""
    new_src, why = apply_edits(src, edits)
    if new_src is None:
        raise ToolError(f"{why}; copy SEARCH text exactly from the current kernel")
    if new_src == src:
        raise ToolError("the edits change nothing")
    broken = broken_by(src, new_src)
    if broken:
        raise ToolError(broken)
    return edits, new_src


# -- the tools ------------------------------------------------------------------------------------

def evaluate(bench: Workbench, args: dict) -> str:
    from debugger.evaluate import run_evaluation

    specs = bench.specs()
    check = args.get("check")
    if check:
        specs = [s for s in specs if s["name"] == check]
        if not specs:
            raise ToolError(f"no check named {check!r}; checks: {', '.join(s['name'] for s in bench.specs())}")
    report = run_evaluation(bench.case, bench.device, checks=specs, timeout=bench.timeout,
                            semantics=bench.evaluation_semantics, sizes=bench.sizes).report
    return render_report(report)


SECTIONS = ("summary", "hypotheses", "error_maps", "static", "experiments", "probes", "localisation")


def diagnose(bench: Workbench, args: dict) -> str:
    section = args.get("section") or "summary"
    if section not in SECTIONS:
        raise ToolError(f"unknown section {section!r}; sections: {', '.join(SECTIONS)}")
    d = bench.diagnosis
    if not d:
        from debugger.diagnose import diagnose as run_diagnosis

        diag = run_diagnosis(bench.case, bench.device, probes=bench.instrumentation, experiment_budget=3,
                             timeout=bench.timeout)
        d = bench.diagnosis = {**diag.to_dict(), "prompt_text": diag.prompt_text()}
    if section == "summary":
        return f"{d.get('summary', '')}\n{d.get('prompt_text', '')}".strip()
    if section == "hypotheses":
        return "\n".join(f"{h['bug_class']} ({h['confidence']:.0%}) lines {h.get('lines')}: "
                         f"{'; '.join(h.get('evidence', []))}" for h in d.get("hypotheses", [])[:6]) or "none"
    return json.dumps(d.get(section, {}), default=str)


def probe(bench: Workbench, args: dict) -> str:
    from debugger.diagnose.probes import run_probes

    if bench.language != "triton":
        raise ToolError("probes instrument Triton kernels on the interpreter; this candidate is CUDA")
    if bench.device != "cpu":
        raise ToolError("probes run on the CPU interpreter; this run is on the GPU")
    names = kernel_lang.kernel_names(bench.case.candidate_src)
    kernel = args.get("kernel") or None
    if kernel is not None and kernel not in names:
        raise ToolError(f"no kernel named {kernel!r}; kernels: {', '.join(names)}")
    summary = run_probes(bench.case, bench.failing_report(args.get("check") or None), timeout=bench.timeout,
                         kernel=kernel)
    if not summary:
        return "the probes recorded nothing (no failing check, or the instrumented copy did not run)"
    if summary.get("error"):
        return f"the instrumented copy failed: {summary['error']}"
    head = f"probed {kernel or 'every kernel'} on check {summary.get('check')}: {summary.get('summary') or 'nothing unusual'}"
    detail = {k: summary.get(k) for k in ("outputs", "grids", "buffers", "out_of_bounds_stores",
                                          "out_of_bounds_loads", "reductions", "symptoms")}
    return head + "\n" + json.dumps(detail, default=str)


def experiment(bench: Workbench, args: dict) -> str:
    from debugger.diagnose.experiments import run_experiments
    from debugger.recipes import Patch

    edits, new_src = checked_edits(bench, args)
    report = bench.failing_report()
    if not report.failed_checks:
        raise ToolError("the current kernel fails no check; nothing to experiment on")
    patch = Patch(recipe="model_experiment", description="the model's edit", new_src=new_src, sites=[],
                  bug_class="other")
    results = run_experiments(bench.case, report, [patch], [], device=bench.device, budget=1,
                              timeout=bench.timeout)
    if not results:
        return "the experiment did not run"
    r = results[0]
    meaning = {"fixed": "every failing check passes", "better": "fewer checks fail",
               "no_change": "the same checks fail", "worse": "worse than before"}.get(r["result"], "")
    return (f"{r['result']} ({meaning}) on the {len(report.failed_checks)} failing checks: {r['status']}: "
            f"{r['message']}\n(not kept: call propose_edit to have it applied and verified)")


def localise(bench: Workbench, args: dict) -> str:
    from debugger.diagnose.localisation import describe, run_localisation

    loc = bench.diagnosis.get("localisation") or {}
    if not loc:
        if bench.language != "triton" and not kernel_lang.kernel_names(bench.case.candidate_src):
            raise ToolError("no kernels found to localise")
        loc = run_localisation(bench.case, bench.failing_report(), bench.device, timeout=bench.timeout)
    if not loc:
        return "the candidate launches one kernel: localisation compares the launches of several"
    if loc.get("error"):
        return f"localisation failed: {loc['error']}"
    return (describe(loc) or loc.get("summary", "")) + "\n" + loc.get("summary", "")


def search_knowledge(bench: Workbench, args: dict) -> str:
    if bench.knowledge is None:
        raise ToolError("no knowledge base in this run (retrieval is off)")
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolError("give `query`: words describing the failure or the fix")
    k = args.get("k", 3)
    k = max(1, min(int(k), 6)) if isinstance(k, (int, float)) else 3
    search = dict(bug_class=args.get("bug_class") or None, code=bench.case.candidate_src, kind="pattern", k=k)
    # the candidate's language first (CUDA patterns for a CUDA kernel), any where it has none
    hits = bench.knowledge.search(query, language=bench.language, **search) or bench.knowledge.search(query, **search)
    parts = []
    for h in hits:
        try:
            text = open(h.path).read()[:EXCERPT_CHARS]
        except OSError:
            text = ""
        parts.append(f"## {h.id}: {h.title} (class {h.bug_class}, score {h.score:.2f})\n{text}")
    return "\n\n".join(parts) or "no pattern matches"


def read_reference_kernel(bench: Workbench, args: dict) -> str:
    kb = bench.knowledge
    if kb is None:
        raise ToolError("no knowledge base in this run (retrieval is off)")
    name = args.get("name")
    if not name and args.get("query"):
        hits = (kb.search(str(args["query"]), kind="reference_kernel", k=1, language=bench.language)
                or kb.search(str(args["query"]), kind="reference_kernel", k=1))
        name = hits[0].id if hits else None
    if not name:
        hit = kb.closest_reference_kernel(bench.case.candidate_src)
        name = hit.id if hit else None
    if not name:
        return "no reference kernel in the knowledge base"
    try:
        kernel = kb.reference_kernel(str(name))
    except Exception as e:  # noqa: BLE001 - an unknown name goes back to the model
        raise ToolError(f"no reference kernel {name!r}: {str(e)[:200]}") from None
    return f"## reference kernel {kernel.name}\n```python\n{kernel.kernel_src}\n```"


_EDITS = {"type": "array", "description": "search/replace edits of the current file, applied in order",
          "items": {"type": "object", "properties": {
              "search": {"type": "string", "description": "exact, unique lines copied from the current file"},
              "replace": {"type": "string", "description": "the replacement lines"}},
              "required": ["search", "replace"]}}


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict
    run: Callable[[Workbench, dict], str] | None  # None: handled by the loop (propose_edit)
    languages: tuple[str, ...] = ("triton", "cuda")
    cpu_only: bool = False

    def schema(self) -> dict:
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}


def _params(props: dict | None = None, required: list[str] | None = None) -> dict:
    return {"type": "object", "properties": props or {}, "required": required or []}


TOOLS = [
    Tool("evaluate", "Run the correctness checks on the current kernel (all, or one by name: seed0, x100, "
         "noncontiguous, ...): status, per check the share of wrong elements, max error, first wrong index.",
         _params({"check": {"type": "string", "description": "one check's name; omit for every check"}}), evaluate),
    Tool("diagnose", "The diagnosis of the current kernel: summary, ranked hypotheses with evidence and lines, "
         "error maps, static facts, experiments, probes or localisation.",
         _params({"section": {"type": "string", "enum": list(SECTIONS)}}), diagnose),
    Tool("probe", "Instrument one kernel (or all) and run it on a failing check on the interpreter: which programs "
         "wrote which output elements, elements no program wrote, stores/loads outside every tensor, launch grids, "
         "and what each reduction computed against the row statistics of the input.",
         _params({"kernel": {"type": "string", "description": "the @triton.jit function to instrument"},
                  "check": {"type": "string", "description": "the check to run (default: the first failing)"}}),
         probe, languages=("triton",), cpu_only=True),
    Tool("experiment", "Run a proposed edit on the failing checks without keeping it: fixed, better, no_change "
         "or worse.", _params({"edits": _EDITS}, ["edits"]), experiment),
    Tool("localise", "For a candidate that launches several kernels: which launch's output first departs from "
         "the reference's intermediates.", _params(), localise),
    Tool("search_knowledge", "Search the knowledge base of known kernel failure patterns and their fixes.",
         _params({"query": {"type": "string"}, "bug_class": {"type": "string"},
                  "k": {"type": "integer", "minimum": 1, "maximum": 6}}, ["query"]), search_knowledge),
    Tool("read_reference_kernel", "Read a correct reference kernel from the knowledge base: by name, by query, "
         "or (neither) the one closest to the current kernel.",
         _params({"name": {"type": "string"}, "query": {"type": "string"}}), read_reference_kernel),
    Tool("propose_edit", "Propose the fix: search/replace edits of the current file. kdebug applies them, "
         "verifies on fresh inputs and runs the integrity gate, then answers with the outcome.",
         _params({"edits": _EDITS, "explanation": {"type": "string", "description": "the root cause, in one line"}},
                 ["edits"]), None),
]
BY_NAME = {t.name: t for t in TOOLS}


def available(bench: Workbench) -> list[Tool]:
    """The tools for this candidate's language and device (and what the run enables)."""
    out = []
    for t in TOOLS:
        if bench.language not in t.languages or (t.cpu_only and bench.device != "cpu"):
            continue
        if t.name == "probe" and not bench.instrumentation:
            continue
        if t.name in ("search_knowledge", "read_reference_kernel") and bench.knowledge is None:
            continue
        out.append(t)
    return out
