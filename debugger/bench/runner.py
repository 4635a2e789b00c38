"""Running the benchmark: every case through repair (or the regenerate baseline), verified, scored.

Nothing outside the run's temporary workspace and the --out folder is written: repairs are made
with write_files=False and their sources saved under OUT/repairs/ for inspection.
"""
from __future__ import annotations

import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from debugger.bench import cases as case_files
from debugger.bench.scores import summarize
from debugger.bench.verify import verify_source
from debugger.errors import InvalidInput, KdebugError
from debugger.output import log


@dataclass
class BenchOptions:
    """What `kdebug bench` was asked to do."""

    cases_dir: str | Path
    backend: str | None = None  # None: as configured (auto with an endpoint, else kb)
    mode: str = "debug"  # debug | regenerate
    samples: int = 1
    device: str | None = None
    scale: str | None = None
    names: list[str] | None = None
    limit: int | None = None
    retrieval: bool = True
    instrumentation: bool = True
    integrity: bool = True
    write_back: bool = True
    across_run: bool = False
    model: str | None = None
    max_iters: int | None = None
    timeout: float | None = None
    temperature: float | None = None
    out: str | Path | None = "bench-out"
    verbose: bool = False
    timing: bool = True  # on a GPU: time repaired / fixed.py / reference after each case
    command: str = field(default_factory=lambda: "kdebug " + shlex.join(sys.argv[1:]))
    progress: object = log


def _say(opts: BenchOptions, msg: str) -> None:
    if opts.progress:
        opts.progress(msg)


def diff_lines(diff: str) -> int:
    """Changed lines in a unified diff (added + removed, headers excluded)."""
    return sum(1 for ln in diff.splitlines()
               if ln[:1] in "+-" and not ln.startswith("+++") and not ln.startswith("---"))


def _fixing_entry(history: list[dict]) -> dict | None:
    return next((h for h in reversed(history or []) if h.get("outcome") == "fixed"), None)


def _base_record(folder: Path, case=None, scaled: bool = False) -> dict:
    meta = case.meta if case is not None else {}
    return {"name": folder.name, "status": "error", "bug_class": meta.get("bug_class"),
            "true_class": meta.get("bug_class"), "operator": meta.get("operator"), "scaled": scaled,
            "iterations": 0, "tokens": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": None,
            "integrity_rejections": 0, "message": ""}


def _save(out: Path | None, sub: str, name: str, text: str) -> None:
    if out is None or text is None:
        return
    path = out / sub / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


class Run:
    """One benchmark run's state: options, settings, workspace, device ceilings, learned ids."""

    def __init__(self, opts: BenchOptions, settings, workspace):
        self.opts = opts
        self.settings = settings
        self.ws = workspace
        self.out = Path(opts.out) if opts.out else None
        self.ceilings: dict | None = None
        self.learned_ids: set[str] = set()
        self.model_backend = None

    # -- performance (GPU) ---------------------------------------------------------------------
    def timing(self, case, implementations: dict[str, str]) -> dict | None:
        if self.settings.device != "cuda" or not self.opts.timing:
            return None
        from debugger.bench.perf import case_timing, measure_ceilings

        if self.ceilings is None:
            _say(self.opts, "measuring the device's copy bandwidth and matmul throughput ...")
            self.ceilings = measure_ceilings()
        if case.fixed_path is not None:
            implementations = {**implementations, "fixed": case.fixed_path.read_text()}
        return case_timing(case.reference_src, implementations, self.ceilings)

    # -- debug mode ----------------------------------------------------------------------------
    def debug_case(self, folder: Path, case, scaled: bool) -> dict:
        from debugger.repair import repair

        opts, rec = self.opts, _base_record(folder, case, scaled)
        progress = (lambda m: _say(opts, f"    {m}")) if opts.verbose else None
        ledger = self.ws.ledger()
        result = repair(case, settings=self.settings, backend=opts.backend, write_files=False, progress=progress,
                        ledger=ledger, retrieval=opts.retrieval, instrumentation=opts.instrumentation,
                        integrity=opts.integrity, write_back=opts.write_back)
        fixing = _fixing_entry(result.history)
        calls = ledger.tool_calls(result.run_id)  # the openai backend's tool loop (none for kb)
        rec["tool_calls"] = sum(1 for c in calls if c["kind"] == "tool")
        rec["model_calls"] = sum(1 for c in calls if c["kind"] == "model")
        rec.update(loop_status=result.status, guard=result.guard, iterations=result.iterations,
                   prompt_tokens=int(result.tokens.get("prompt", 0)),
                   completion_tokens=int(result.tokens.get("completion", 0)), seconds=round(result.seconds, 2),
                   diagnosed_class=result.bug_class, diff_lines=diff_lines(result.diff), message=result.message,
                   fixed_by=(fixing or {}).get("origin"), recipe=(fixing or {}).get("recipe"))
        rec["tokens"] = rec["prompt_tokens"] + rec["completion_tokens"]
        # what each iteration tried and what came of it (the final diagnosis may be of a partial fix)
        rec["attempts"] = [{"recipe": h.get("recipe") or h.get("origin"), "bug_class": h.get("bug_class"),
                            "outcome": h.get("outcome"), "message": (h.get("message") or "")[:160]}
                           for h in result.history or []]
        rec["diagnosis_correct"] = bool(rec["true_class"]) and rec["diagnosed_class"] == rec["true_class"]
        if result.status == "invalid_input":
            rec["status"] = "invalid_input"
            return rec
        repaired_src = result.repaired_src if result.status in ("repaired", "unverified") else None
        # Verify what the user would hold after the run: the repair, or the candidate as it was.
        v = verify_source(case, repaired_src or case.candidate_src, self.settings.device,
                          timeout=self.settings.timeout, gate=repaired_src is not None,
                          fail_fast=repaired_src is None)
        rec["verification"] = v.to_dict()
        rec["verify_seconds"] = round(v.seconds, 2)
        rec["axes"] = {"compiles": v.compiles, "correct": v.correct, "integrity": v.gate, "performance": None}
        if repaired_src is not None and v.verified:
            rec["status"] = "repaired"
        elif repaired_src is not None and v.unverified:
            # passed everything that ran, but some checks did not run: never counted as repaired
            rec["status"] = "unverified"
            rec["message"] = "checks not run: " + "; ".join(f"{k} ({m[:80]})" for k, m in v.skipped.items())[:300]
        elif repaired_src is not None or result.status == "rejected":
            rec["status"] = "rejected"
            rec["integrity_rejections"] = 1
            if repaired_src is None:
                rec["rejected_by"] = "loop"
            else:
                rec["rejected_by"] = "gate" if v.correct else "verification"
                rec["message"] = ("; ".join(v.gate_reasons) or v.eval_message)[:300]
        else:
            rec["status"] = "unrepaired"
        if repaired_src is not None:
            _save(self.out, "repairs", f"{case.name}.py", repaired_src)
            _save(self.out, "repairs", f"{case.name}.diff", result.diff)
        distilled = result.distilled or {}
        learned_recipe = (rec.get("recipe") or "").removeprefix("learned:")
        if rec["status"] == "repaired" and rec["fixed_by"] == "template" and learned_recipe in self.learned_ids:
            rec["fixed_by_learned_in_run"] = True
        if distilled.get("id"):
            self.learned_ids.add(distilled["id"])
        timing = self.timing(case, {"repaired": repaired_src} if rec["status"] == "repaired" else {})
        if timing is not None:
            rec["timing"] = timing
            rec["axes"]["performance"] = timing.get("speedup_vs_reference")
        return rec

    # -- regenerate mode -----------------------------------------------------------------------
    def backend(self):
        if self.model_backend is None:
            from debugger.backends.base import BackendError
            from debugger.backends.openai_compat import OpenAIBackend

            s = self.settings
            if not s.base_url:
                raise InvalidInput("--mode regenerate needs an OpenAI-compatible endpoint: set OPENAI_BASE_URL")
            try:
                self.model_backend = OpenAIBackend(base_url=s.base_url, api_key=s.api_key, model=s.model,
                                                   timeout=s.timeout)
            except BackendError as e:
                raise InvalidInput(str(e)) from None
        return self.model_backend

    def regenerate_case(self, folder: Path, case, scaled: bool) -> dict:
        from debugger.bench.regenerate import build_messages, complete, defines_model_new, extract_code

        opts, rec = self.opts, _base_record(folder, case, scaled)
        backend = self.backend()
        messages = build_messages(case.reference_src)
        t0 = time.time()
        samples, first_verified = [], None
        for i in range(opts.samples):
            text, p_tok, c_tok = complete(backend, messages, opts.temperature)
            rec["prompt_tokens"] += p_tok
            rec["completion_tokens"] += c_tok
            src = extract_code(text)
            sample = {"index": i, "tokens": p_tok + c_tok}
            if src is None or not defines_model_new(src):
                sample.update(status="no_code" if src is None else "no_model_new", compiles=False, correct=False)
            else:
                v = verify_source(case, src, self.settings.device, timeout=self.settings.timeout)
                sample.update(v.to_dict())
                sample["status"] = "verified" if v.verified else ("rejected" if v.correct else v.eval_status)
                _save(self.out, f"regenerated/{case.name}", f"sample{i}.py", src)
                if v.verified and first_verified is None:
                    first_verified = src
            samples.append(sample)
            _say(opts, f"    sample {i + 1}/{opts.samples}: {sample['status']}")
        rec["seconds"] = round(time.time() - t0, 2)
        rec["tokens"] = rec["prompt_tokens"] + rec["completion_tokens"]
        rec["samples"] = len(samples)
        rec["verified_samples"] = sum(1 for s in samples if s["status"] == "verified")
        rec["compiled_samples"] = sum(1 for s in samples if s.get("compiles"))
        rec["correct_samples"] = sum(1 for s in samples if s.get("correct"))
        rec["integrity_rejections"] = sum(1 for s in samples if s["status"] == "rejected")
        rec["sample_results"] = samples
        rec["status"] = "repaired" if rec["verified_samples"] else (
            "rejected" if rec["integrity_rejections"] else "unrepaired")
        timing = self.timing(case, {"repaired": first_verified} if first_verified else {})
        if timing is not None:
            rec["timing"] = timing
        return rec

    # -- one case ------------------------------------------------------------------------------
    def case(self, folder: Path) -> dict:
        try:
            case, scaled = case_files.load_bench_case(folder, self.opts.scale)
        except InvalidInput as e:
            return {**_base_record(folder), "status": "invalid_input", "message": str(e)}
        skip = case_files.skip_reason(case, self.settings.device)
        if skip:
            return {**_base_record(folder, case, scaled), "status": "skipped", "message": skip}
        if self.opts.scale and not scaled:
            _say(self.opts, f"  {folder.name}: no [{self.opts.scale}] table in case.toml; run at its own sizes")
        try:
            if self.opts.mode == "regenerate":
                return self.regenerate_case(folder, case, scaled)
            return self.debug_case(folder, case, scaled)
        except InvalidInput as e:
            if self.opts.mode == "regenerate":
                raise
            return {**_base_record(folder, case, scaled), "status": "invalid_input", "message": str(e)}
        except KdebugError as e:
            if self.opts.mode == "regenerate":
                raise
            return {**_base_record(folder, case, scaled), "status": "error", "message": str(e)}
        except Exception as e:  # noqa: BLE001 - one broken case must not end the benchmark
            return {**_base_record(folder, case, scaled), "status": "error",
                    "message": f"{type(e).__name__}: {str(e)[:300]}"}
        finally:
            self.ws.reset_knowledge()


def _check(opts: BenchOptions) -> None:
    if opts.mode not in ("debug", "regenerate"):
        raise InvalidInput(f"unknown --mode {opts.mode!r}: choose debug or regenerate")
    if opts.backend not in (None, "kb", "openai", "auto"):
        raise InvalidInput(f"unknown backend {opts.backend!r}: choose kb, openai or auto")
    if opts.samples < 1:
        raise InvalidInput(f"--samples must be at least 1 (got {opts.samples})")
    if opts.across_run and not opts.write_back:
        raise InvalidInput("--write-back-across-run and --no-write-back contradict each other")


def _warm_knowledge(opts: BenchOptions) -> float:
    """Index the run's knowledge base before the first case, so no case's time includes it."""
    if opts.mode != "debug" or not (opts.retrieval or opts.write_back):
        return 0.0
    t0 = time.time()
    try:
        from debugger.knowledge import KnowledgeBase

        KnowledgeBase().reindex()
    except Exception as e:  # noqa: BLE001 - repair opens (or goes without) the knowledge base itself
        _say(opts, f"knowledge base unavailable: {e}")
    return time.time() - t0


def run_bench(opts: BenchOptions) -> dict:
    """Run the benchmark and return its summary (written to opts.out as bench.json/.md/.png)."""
    from debugger.bench.report import write_outputs
    from debugger.bench.workspace import Workspace
    from debugger.settings import resolve

    _check(opts)
    folders = case_files.discover(opts.cases_dir, opts.names, opts.limit)
    settings = resolve(device=opts.device, backend=opts.backend, model=opts.model, max_iters=opts.max_iters,
                       timeout=opts.timeout)
    opts.backend = settings.backend
    if settings.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise InvalidInput("--device cuda asked for, but no CUDA GPU is visible")
    if opts.mode == "debug" and opts.backend == "openai" and not settings.model:
        raise InvalidInput("--backend openai needs a model: pass --model or set KDEBUG_MODEL")
    if opts.mode == "regenerate" and not settings.model:
        raise InvalidInput("--mode regenerate needs a model: pass --model or set KDEBUG_MODEL")
    t_start = time.time()
    records = []
    with Workspace(across_run=opts.across_run) as ws:
        setup_seconds = _warm_knowledge(opts)
        run = Run(opts, settings, ws)
        for i, folder in enumerate(folders, start=1):
            _say(opts, f"[{i}/{len(folders)}] {folder.name} ...")
            rec = run.case(folder)
            records.append(rec)
            extra = f", {rec['iterations']} iteration(s)" if opts.mode == "debug" else \
                f", {rec.get('verified_samples', 0)}/{rec.get('samples', 0)} samples verified"
            _say(opts, f"[{i}/{len(folders)}] {folder.name}: {rec['status']} "
                       f"({rec['seconds'] if rec['seconds'] is not None else '-'} s{extra})"
                       + (f": {rec['message'][:160]}" if rec["status"] in ("error", "invalid_input") else ""))
        learned = ws.learned_patterns() if opts.across_run else []
        if opts.across_run and run.out is not None:
            for path in learned:
                _save(run.out, "learned", path.name, path.read_text())
        ceilings = run.ceilings
    summary = {"mode": opts.mode, "backend": opts.backend if opts.mode == "debug" else "openai",
               "model": settings.model if opts.mode == "regenerate" or opts.backend != "kb" else None,
               "device": settings.device, "scale": opts.scale, "cases_dir": str(opts.cases_dir),
               "command": opts.command, "samples": opts.samples if opts.mode == "regenerate" else 1,
               "ablations": {"no_retrieval": not opts.retrieval, "no_instrumentation": not opts.instrumentation,
                             "no_integrity": not opts.integrity, "no_write_back": not opts.write_back,
                             "write_back_across_run": opts.across_run}}
    summary.update(summarize(records, opts.mode, opts.samples))
    if opts.across_run:
        summary["write_back_across_run"] = {
            "learned_patterns": len(learned),
            "fixed_by_learned_template": sum(1 for r in records if r.get("fixed_by_learned_in_run")),
            "cases": [r["name"] for r in records if r.get("fixed_by_learned_in_run")]}
    if ceilings is not None:
        summary["ceilings"] = ceilings
    summary["setup_seconds"] = round(setup_seconds, 1)
    summary["wall_seconds"] = round(time.time() - t_start, 1)
    summary["per_case"] = records
    if opts.out:
        out = Path(opts.out)
        summary["outputs"] = {k: str(out / f) for k, f in
                              (("json", "bench.json"), ("markdown", "bench.md"), ("chart", "bench.png"))}
        write_outputs(summary, out)
    return summary
