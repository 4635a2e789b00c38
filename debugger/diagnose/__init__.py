"""Diagnosis: say where and why a near-miss kernel is wrong.

`diagnose(case)` evaluates with captured tensors, reads the error maps of every failing check, adds
the dependence on input sets, static facts and recipe sites from the source, the probes of an
instrumented copy (CPU interpreter), localisation across kernels (which kernel's output departs
first from the reference's intermediates), and counterfactual experiments (recipe patches, both
models in eval mode; on a GPU also tf32, int64, serialised and repeated runs: gpu_experiments.py),
compute-sanitizer's findings on a failing check (GPU: sanitizer.py),
then ranks bug-class hypotheses with their evidence and source lines. A
candidate whose kernel passes with Model's weights mapped in but fails KernelBench's verdict is
diagnosed from the parameter correspondence (diagnose/semantics.py).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from debugger import lang
from debugger.case import Case
from debugger.diagnose import compile_evidence, errormap, ranking, rewrite, semantics, static
from debugger.diagnose.experiments import run_experiments
from debugger.evaluate import run_evaluation
from debugger.inputs import LAYOUT_TRANSFORMS
from debugger.recipes import propose_all
from debugger.settings import bug_classes


@dataclass
class Diagnosis:
    """What is wrong, where, and the ranked root-cause hypotheses."""

    status: str  # diagnosed | passes | invalid_input | <eval status when nothing could be captured>
    summary: str = ""
    hypotheses: list[dict] = field(default_factory=list)
    symptoms: list[str] = field(default_factory=list)
    error_maps: dict = field(default_factory=dict)  # check -> [per-output facts]
    static: list[dict] = field(default_factory=list)
    recipe_sites: list[dict] = field(default_factory=list)
    probes: dict = field(default_factory=dict)
    experiments: list[dict] = field(default_factory=list)
    localisation: dict = field(default_factory=dict)  # multi-kernel candidates: the kernel that departs first
    sanitizer: dict = field(default_factory=dict)  # compute-sanitizer on a failing check (GPU; sanitizer.py)
    needs_rewrite: dict | None = None  # {"reason", "evidence"}: the run shows the code never computes the operator
    signature: str | None = None
    evaluation: dict = field(default_factory=dict)

    @property
    def bug_class(self) -> str | None:
        return self.hypotheses[0]["bug_class"] if self.hypotheses else None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["bug_class"] = self.bug_class
        return d

    def prompt_text(self) -> str:
        """A compact plain-text rendering for a language model's prompt."""
        lines = [f"Evaluation: {self.evaluation.get('message', '')}", f"Symptoms: {', '.join(self.symptoms)}"]
        for h in self.hypotheses[:3]:
            lines.append(f"- {h['bug_class']} ({h['confidence']:.0%}): {'; '.join(h['evidence'][:4])}"
                         + (f" [lines {h['lines']}]" if h["lines"] else ""))
        for f in self.static[:8]:
            lines.append(f"static: line {f['line']}: {f['message']}")
        if self.probes.get("summary"):
            lines.append(f"probes: {self.probes['summary']}")
        if self.sanitizer.get("tools"):
            from debugger.diagnose.sanitizer import summary
            lines.append(summary(self.sanitizer))
        if self.localisation.get("target"):
            from debugger.diagnose.localisation import describe
            lines.append(f"localisation: {describe(self.localisation)}")
        if self.needs_rewrite:
            lines.append(f"needs a rewrite ({self.needs_rewrite['reason']}): "
                         f"{'; '.join(self.needs_rewrite['evidence'])}")
        return "\n".join(lines)


def _tags(diag: Diagnosis, report, block_sizes) -> set[str]:
    tags: set[str] = set()
    for check in report.failed_checks:
        for o in check.outputs:
            if o.problem and "dtype" in o.problem:
                tags.add("dtype_mismatch")
    tags.update(errormap.dependence(report))
    for check in report.checks:
        if check.status in ("runtime_error", "timeout"):
            fault = any(w in check.message for w in ("SIGSEGV", "SIGABRT", "SIGBUS", "double free", "malloc"))
            tags.add("memory_fault" if fault else "raises_exception")
    for maps in diag.error_maps.values():
        for facts in maps:
            tags.update(facts.get("symptoms", []))
    # A race changes finite values between runs; inf/NaN drift is overflow or poison, not a race. Nor is
    # drift on a strided layout only: a kernel that ignores strides reads past the view, whatever lies there.
    drift = any(math.isfinite(c.drift or 0) and (c.drift or 0) > 0 for c in report.checks
                if (c.spec or {}).get("transform") not in LAYOUT_TRANSFORMS)
    if drift and "never_written" not in tags:
        tags.add("run_to_run_drift")
    tags.update(f["tag"] for f in diag.static)
    tags.update(s["tag"] for s in diag.recipe_sites if s.get("tag"))
    tags.update(diag.probes.get("symptoms", []))
    return tags


def _summary(diag: Diagnosis, report) -> str:
    if not diag.hypotheses:
        return report.message
    top = diag.hypotheses[0]
    where = f" (lines {', '.join(map(str, top['lines'][:4]))})" if top["lines"] else ""
    failing = ", ".join(c.name for c in report.failed_checks[:6])
    text = (f"Fails {len(report.failed_checks)} of {len(report.checks)} checks ({failing}). Most likely "
            f"{top['bug_class']}{where}: {bug_classes().get(top['bug_class'], '')} "
            f"Symptoms: {', '.join(diag.symptoms[:8]) or 'none'}.")
    if diag.localisation.get("target"):
        from debugger.diagnose.localisation import describe
        text += f" Localisation: {describe(diag.localisation)}."
    if diag.needs_rewrite:
        text += (f" Needs a rewrite ({diag.needs_rewrite['reason']}): "
                 f"{'; '.join(diag.needs_rewrite['evidence'])}.")
    return text


def _error_map(ref, run1, run2, case: Case, blocks, device: str) -> dict:
    """errormap.analyse_output, on the GPU when the case runs there: a GPU-sized output takes tens of
    seconds per map on a shared host's CPUs. Falls back to the CPU when the GPU cannot hold it."""
    import torch

    if device == "cuda" and torch.cuda.is_available() and isinstance(ref, torch.Tensor):
        try:
            return errormap.analyse_output(ref.to("cuda"), run1, run2, atol=case.atol, rtol=case.rtol,
                                           block_sizes=blocks, device=device)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
    return errormap.analyse_output(ref, run1, run2, atol=case.atol, rtol=case.rtol, block_sizes=blocks,
                                   device=device)


def _only_layouts_fail(report) -> list[str]:
    """Under KernelBench's semantics, the kernel checks that fail when all of them are layouts the task
    never draws (a strided or transposed view of an input): the kernel is right on the task's own inputs,
    and what KernelBench's trials fail on is what to diagnose; the layouts are hardened after the repair
    (repair/nodes.py `harden`). Empty otherwise."""
    if report.semantics == "kernel" or report.verdicts.get("kernelbench", {}).get("status") in (None, "pass"):
        return []
    failing = [c for c in report.checks if not c.passed and c.status != "skipped" and c.kind != "kernelbench"]
    return [c.name for c in failing] if failing and all(c.kind == "layout" for c in failing) else []


def _pipeline_only(diag: Diagnosis, report, layouts: list[str] | None = None) -> Diagnosis:
    """The kernel passes with Model's weights mapped in (on the task's own layouts); only KernelBench's
    verdict fails."""
    finding = semantics.parameter_init_hypothesis(report)
    findings = [finding] if finding else [
        {"bug_class": "other", "score": 1.0, "evidence": [report.verdict_note or "only KernelBench's trials fail"],
         "lines": [], "recipes": []}]
    diag.hypotheses = ranking.rank(set(), [], [], findings=findings)
    diag.symptoms = ["kernel_passes", "kernelbench_fails"] + (["fails_noncontiguous"] if layouts else [])
    where = (f" on the task's own layouts (it fails {', '.join(layouts)}: strided views the task never draws)"
             if layouts else "")
    diag.summary = (f"The kernel is right with Model's weights mapped in{where}; KernelBench's verdict fails. "
                    f"{report.verdict_note}")
    return diag


# Differing tensors under KernelBench's seed, without a run: strong but not proved (a tensor forward never
# reads would differ too; none of the 172 recorded-correct real answers built here showed one).
HOST_SIDE_SCORE = 5.0


# Seconds per request for the probes' interpreted run after a GPU run: evidence, not worth a stalled diagnosis.
GPU_PROBE_SECONDS = 60.0


def _host_side(diag: Diagnosis, case: Case, timeout: float) -> None:
    """A CUDA candidate on the CPU: its kernels cannot run, its constructor can. Where ModelNew starts
    with other tensors than Model under KernelBench's seed, that is diagnosed (parameter_init, host side
    only); otherwise the diagnosis stays invalid_input, saying what was checked."""
    from debugger import host_params
    from debugger.evaluate import is_cuda_candidate

    if not is_cuda_candidate(case.candidate_src):
        return
    deny = [str(p.parent) for p in (case.reference_path, case.candidate_path) if p]
    host = host_params.check(case.reference_src, case.candidate_src, deny_read=deny, timeout=timeout)
    if host.get("status") != "ok":
        diag.summary += f"; its constructor could not be built on the CPU either ({host.get('error', host['status'])})"
        return
    if not host["differing"]:
        diag.summary += "; on the host side, ModelNew starts with Model's tensors under KernelBench's seed"
        return
    evidence = [f"host side only, the kernels were not run (no GPU): ModelNew's {p['candidate']} (Model's "
                f"{p['reference']}, matched by {p['by']}) starts {p['own_init_diff']:.3g} away from Model's under "
                f"KernelBench's seed" for p in host["differing"][:8]]
    if host["unheld"]:
        evidence.append(f"Model's {', '.join(host['unheld'][:6])} matched no tensor of ModelNew")
    if host.get("fix") == "right":
        evidence.append("the parameter_init fix, built on the host, starts every tensor ModelNew holds as Model's")
    finding = {"bug_class": "parameter_init", "score": HOST_SIDE_SCORE, "evidence": evidence, "lines": [],
               "recipes": ["parameter_init"]}
    diag.status = "diagnosed"
    diag.hypotheses = ranking.rank(set(), [], [], findings=[finding])
    diag.symptoms = ["kernelbench_fails", "host_side_only"]
    diag.summary = (f"Not run: {diag.summary}. On the host side, {len(host['differing'])} tensor(s) of ModelNew "
                    f"start differently from Model's under KernelBench's seed: KernelBench's verdict fails whatever "
                    f"the kernels do (parameter_init). Run on a GPU for the kernels.")
    diag.evaluation["parameter_map"] = host["parameter_map"]


def _untried(patches: list, experiments: list[dict]) -> list[dict]:
    """The proposals no experiment ran, as {recipe, bug_class}."""
    from debugger.source.edits import source_hash

    ran = {e.get("patch_hash") for e in experiments}
    return [{"recipe": p.recipe, "bug_class": p.bug_class} for p in patches if source_hash(p.new_src) not in ran]


def diagnose(case: Case, device: str = "cpu", *, experiments: bool = True, experiment_budget: int = 6,
             probes: bool = True, localise: bool = True, timeout: float = 120.0, evaluation=None,
             experiment_seconds: float | None = None, sanitizer: bool = False) -> Diagnosis:
    """Evaluate (or reuse `evaluation`, a captured Evaluation), then localise and classify.
    `experiment_seconds` bounds the counterfactual experiments' time (at least one always runs).
    `sanitizer`: compute-sanitizer on a failing check (GPU only; `kdebug diagnose --sanitizer`). Off by
    default: a tool run costs about 40 s on the H200 (run 11, 2026-12-05, where its GPU tests passed once
    the worker kept its network namespace under the tool), and it has not been measured inside repair
    loops since it stalled them (2026-12-04)."""
    ev = evaluation or run_evaluation(case, device, capture=True, timeout=timeout)
    report = ev.report
    diag = Diagnosis(status="diagnosed", evaluation=report.to_dict(),
                     signature=report.signature.key() if report.signature else None)
    if report.status == "invalid_input":
        diag.status, diag.summary = "invalid_input", report.message
        if device == "cpu":
            _host_side(diag, case, timeout)
        return diag
    if all(v["status"] == "pass" for v in report.verdicts.values()):
        diag.status, diag.summary = "passes", "the candidate passes every check"
        return diag
    layouts = _only_layouts_fail(report)
    if report.verdicts.get("kernel", {}).get("status") == "pass" or layouts:
        return _pipeline_only(diag, report, layouts)
    # The kernel verdict fails too: its checks (Model's weights mapped in) are what error maps, probes and
    # experiments read. KernelBench's trials fail on every parameter ModelNew builds its own way as well, so a
    # patch that fixes the kernel would still fail them and never count as a fix.
    pipeline_report, report = report, report.selecting("kernel")
    blocks = static.block_sizes(case.candidate_src)
    for name, art in ev.artifacts.items():
        check = next((c for c in report.checks if c.name == name), None)
        if check is None or check.passed:
            continue
        maps = []
        for i, ref in enumerate(art["reference"]):
            runs = art["runs"]
            run1 = runs[0][i] if i < len(runs[0]) else None
            run2 = runs[1][i] if len(runs) > 1 and i < len(runs[1]) else None
            if ref is None or run1 is None or not hasattr(ref, "shape"):
                continue
            maps.append({"output": i, **_error_map(ref, run1, run2, case, blocks, device)})
        diag.error_maps[name] = maps
    compile_fails = compile_evidence.failures(report, device)  # a body a GPU build rejects
    patches = propose_all(case.candidate_src, hints=compile_evidence.hints(report, device))
    from debugger.recipes.mutations import mutations

    guesses = mutations(case.candidate_src)
    diag.static = lang.static_facts(case.candidate_src)  # every language the candidate uses
    diag.recipe_sites = [{"recipe": p.recipe, "bug_class": p.bug_class, "lines": p.sites,
                          "description": p.description, "tag": static.RECIPE_TAGS.get(p.recipe)} for p in patches]
    families = static.reference_families(case.reference_src)
    if probes and report.failed_checks:  # on a GPU too: the interpreter shows what a crashed kernel's stores reach
        from debugger.diagnose.probes import run_probes
        diag.probes = run_probes(case, report, timeout=timeout if device == "cpu" else min(timeout, GPU_PROBE_SECONDS),
                                 device=device)
    if probes and report.failed_checks and not (diag.probes or {}).get("buffers"):
        # the run's own count of what stayed poison (sandbox/buffer_coverage.py), where the probes saw none:
        # on a GPU machine whose Triton interpreter cannot run the kernel, say
        measured = next(filter(None, (ev.observations.get(c.name, {}).get("buffers") for c in report.failed_checks)),
                        None)
        if measured:
            diag.probes = {**(diag.probes or {}), "buffers": measured}
    compiled = not (device == "cuda" and compile_fails)  # a kernel that never compiled ran nothing to look at
    if localise and report.failed_checks and compiled:
        from debugger.diagnose.localisation import run_localisation
        launched = {k for obs in ev.observations.values() for k in (obs.get("launches") or [])}
        diag.localisation = run_localisation(case, report, device, timeout=timeout,
                                             launched=sorted(launched) if ev.observations else None)
    tags = _tags(diag, report, blocks) | {f"family:{f}" for f in families}
    tags |= {compile_evidence.TAG} if compile_fails else set()
    sanitizer_findings: list[dict] = []
    if probes and sanitizer and device == "cuda" and report.failed_checks and compiled:  # compute-sanitizer
        from debugger.diagnose.sanitizer import run_sanitizer
        from debugger.diagnose.sanitizer_evidence import evidence
        diag.sanitizer = run_sanitizer(case, report, device, timeout=timeout, seconds=experiment_seconds)
        sanitizer_tags, sanitizer_findings = evidence(diag.sanitizer)
        tags |= sanitizer_tags
    prelim = ranking.rank(tags, diag.recipe_sites, [], top=len(bug_classes()), findings=sanitizer_findings)
    # Evidence that no experiment can overturn (a placeholder; no coverage recipe for an output that is
    # mostly poison) makes the verdict now: a slow candidate must not spend minutes on guesses.
    early = rewrite.verdict(diag, case.candidate_src, _untried(patches + guesses, [])) \
        if report.status in ("mismatch", "runtime_error") else None
    if device == "cuda":  # a kernel that never compiled: nothing else on a GPU can judge it (CPU: at the end)
        early = early or compile_evidence.rewrite_verdict(compile_fails, patches)
    if experiments and early is None and device == "cuda":  # faults only a GPU shows (gpu_experiments.py)
        from debugger.diagnose.gpu_experiments import run_gpu_experiments
        spans = [obs.get("largest_launch_tensor_bytes") for obs in ev.observations.values()]
        diag.experiments, gpu_tags = run_gpu_experiments(
            case, report, device, timeout, experiment_seconds,
            launch_bytes=max(spans) if spans and None not in spans else None)
        tags |= gpu_tags
    if experiments and report.status in ("mismatch", "runtime_error"):
        # Before the recipes: one re-run decides train_eval_mode, and a recipe that rewrites every BatchNorm of a
        # network to batch statistics takes minutes under emulation (gemini level3/22 ran out of 900 s on it).
        mode = semantics.eval_mode_experiment(case, report, device, timeout)
        if mode is not None:
            diag.experiments.append(mode)
    settled = any(e["result"] == "fixed" and (e.get("gpu") or e["recipe"] == "eval_mode") for e in diag.experiments)
    if experiments and report.status in ("mismatch", "runtime_error") and early is None and not settled:
        # experiments are how support is found: they follow the raw scores, not the support order
        # (every class with a raw score: the ranked list ends at its first zero score, and a supported class
        # with none, ranked above unsupported ones, hid groupnorm's pointer_advance; ties keep that order)
        raw, pos = ranking.score_classes(tags, diag.recipe_sites, [], sanitizer_findings), \
            {h["bug_class"]: i for i, h in enumerate(prelim)}
        order = sorted((c for c, v in raw.items() if v["score"] > 0 or c in pos),
                       key=lambda c: (-raw[c]["score"], pos.get(c, len(pos))))
        diag.experiments += run_experiments(case, report, patches + guesses, order,
                                           device=device,
                                           budget=experiment_budget, timeout=timeout, seconds=experiment_seconds,
                                           scores={c: v["score"] for c, v in raw.items()})
    findings = list(sanitizer_findings) + compile_evidence.findings(compile_fails, diag.recipe_sites)
    for hypothesis in (semantics.parameter_init_hypothesis(pipeline_report),
                       semantics.operator_misread_hypothesis(case, report, tags, diag.experiments)):
        if hypothesis is not None:
            findings.append(hypothesis)
            tags |= set(hypothesis.get("tags", []))
    if any(e.get("recipe") == "eval_mode" and e["result"] == "fixed" for e in diag.experiments):
        tags.add("passes_in_eval_mode")
    diag.hypotheses = ranking.rank(tags, diag.recipe_sites, diag.experiments, findings=findings)
    ranking.cite_static_facts(diag.hypotheses, diag.static)
    span = (diag.localisation.get("target") or {}).get("lines")
    if span:  # lines in the kernel that departs first come first
        for h in diag.hypotheses:
            h["lines"] = sorted(h["lines"], key=lambda n: (not span[0] <= n <= span[1], n))
    diag.symptoms = sorted(t for t in tags if not t.startswith("family:"))
    if report.status in ("mismatch", "runtime_error"):
        diag.needs_rewrite = rewrite.verdict(diag, case.candidate_src, _untried(patches + guesses, diag.experiments))
    if diag.needs_rewrite is None:
        diag.needs_rewrite = compile_evidence.rewrite_verdict(compile_fails, patches)
    diag.summary = _summary(diag, report)
    if pipeline_report is not report:
        kb = pipeline_report.verdicts.get("kernelbench") or {"status": pipeline_report.status, "failed": [], "checks": 0}
        diag.summary = (f"KernelBench's verdict: {kb['status']} ({len(kb['failed'])} of {kb['checks']} trials); "
                        f"the kernel checks (Model's weights mapped in) fail too and are what is diagnosed. "
                        + diag.summary)
    return diag
