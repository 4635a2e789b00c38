"""Driving one repair: build the run context, stream the graph, keep the ledger, write the outputs.

The ledger rows for each step are written by the nodes (iterations, outcomes) and here (the run);
the graph's own SQLite checkpointer makes a run resumable by its id.
"""
from __future__ import annotations

import difflib
import sqlite3
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from debugger.case import Case
from debugger.errors import InvalidInput
from debugger.repair.state import Limits, RunContext, initial_state
from debugger.settings import Settings, data_dir, resolve

MARKER = "# repaired by kdebug"


@dataclass
class RepairResult:
    """What `kdebug repair --json` prints (interface.md fields first)."""

    status: str
    output: str | None
    iterations: int
    tokens: dict
    bug_class: str | None
    history: list[dict]
    guard: str | None = None
    run_id: str | None = None
    diff: str = ""
    message: str = ""
    seconds: float = 0.0
    verdict: dict | None = None
    report: str | None = None
    repaired_src: str | None = None
    diagnosis_summary: str = ""
    distilled: dict | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("repaired_src")
        return d


def default_output(case: Case) -> Path | None:
    if case.candidate_path is None:
        return None
    return case.candidate_path.with_name(case.candidate_path.stem + ".repaired.py")


def _writable(path: Path, candidate: Path | None) -> None:
    if candidate is not None and path.resolve() == candidate.resolve():
        raise InvalidInput(f"refusing to write the repair over the candidate itself: {path}")
    if path.exists() and not path.read_text(errors="replace").startswith(MARKER):
        raise InvalidInput(f"{path} exists and was not written by kdebug; choose another -o path")


def build_context(settings: Settings, *, backend: str, run_id: str, ledger, knowledge, progress,
                  options: dict) -> RunContext:
    from debugger.backends.kb import KBBackend
    from debugger.backends.ranking import RecipeRanker

    kb_backend = model_backend = None
    if backend in ("kb", "auto"):
        kb_backend = KBBackend(RecipeRanker(ledger.outcomes() if ledger else []), knowledge)
    if backend == "openai" or (backend == "auto" and settings.base_url):
        from debugger.backends.openai_tools import OpenAIToolBackend

        model_backend = OpenAIToolBackend(base_url=settings.base_url, api_key=settings.api_key, model=settings.model,
                                          tools=settings.tools, max_tool_calls=settings.max_tool_calls)
    kb_budget = options.get("kb_wall_budget") or Limits.kb_wall_budget
    limits = Limits(max_iters=settings.max_iters, token_budget=settings.token_budget,
                    wall_budget=settings.wall_budget, kb_wall_budget=min(kb_budget, settings.wall_budget))
    return RunContext(device=settings.device, limits=limits, kb_backend=kb_backend, model_backend=model_backend,
                      knowledge=knowledge, ledger=ledger, run_id=run_id, timeout=settings.timeout,
                      strict_precision=options.get("strict_precision", False),
                      write_back=options.get("write_back", True), retrieval=options.get("retrieval", True),
                      instrumentation=options.get("instrumentation", True),
                      integrity=options.get("integrity", True), semantics=options.get("semantics", "kernel"),
                      sizes=options.get("sizes", "published"),
                      progress=progress)


def open_knowledge(enabled: bool = True):
    if not enabled:
        return None
    try:
        from debugger.knowledge import KnowledgeBase

        return KnowledgeBase()
    except Exception:  # noqa: BLE001 - repair works without a knowledge base, only less well
        return None


def repair(case: Case, *, settings: Settings | None = None, backend: str | None = None, output: str | Path | None = None,
           write_files: bool = True, progress=None, ledger=None, knowledge=None, resume: str | None = None,
           **options) -> RepairResult:
    """Debug a near-miss candidate to a verified, integrity-accepted fix, or say honestly that it could not."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from debugger.ledger import Ledger
    from debugger.repair.graph import build_graph

    settings = settings or resolve()
    backend = backend or settings.backend
    if backend not in ("kb", "openai", "auto"):
        raise InvalidInput(f"unknown backend {backend!r}: choose kb, openai or auto")
    out_path = Path(output) if output else default_output(case)
    if write_files and out_path is not None:
        _writable(out_path, case.candidate_path)
    ledger = ledger or Ledger()
    knowledge = knowledge if knowledge is not None else open_knowledge(options.get("retrieval", True)
                                                                      or options.get("write_back", True))
    run_id = resume or uuid.uuid4().hex[:12]
    t0 = time.time()
    ctx = build_context(settings, backend=backend, run_id=run_id, ledger=ledger, knowledge=knowledge,
                        progress=progress, options=options)
    if not resume:
        ledger.start_run(case=case.name, case_digest=case.digest(), backend=backend, device=settings.device,
                         run_id=run_id)
    conn = sqlite3.connect(data_dir() / "checkpoints.db", check_same_thread=False)
    graph = build_graph(checkpointer=SqliteSaver(conn))
    config = {"configurable": {"thread_id": run_id}, "recursion_limit": 1000}
    state = None if resume else initial_state(case, started_at=t0)
    final = {}
    try:
        for chunk in graph.stream(state, config=config, context=ctx, stream_mode="values"):
            final = chunk
    finally:
        conn.close()
    return _result(case, final, ctx, ledger, out_path if write_files else None, run_id, t0)


def _result(case: Case, final: dict, ctx: RunContext, ledger, out_path: Path | None, run_id: str, t0: float) -> RepairResult:
    status = final.get("status", "unrepaired")
    repaired = final.get("candidate_src") if status in ("repaired", "unverified") else None
    diag = final.get("diagnosis") or {}
    history = final.get("history") or []
    fixed_by = next((h for h in reversed(history) if h.get("outcome") == "fixed"), None)
    bug_class = (fixed_by or {}).get("bug_class") or diag.get("bug_class")
    diff = ""
    written = None
    report_path = None
    if repaired is not None:
        name = case.candidate_path.name if case.candidate_path else "candidate.py"
        diff = "".join(difflib.unified_diff(case.candidate_src.splitlines(True), repaired.splitlines(True),
                                            f"a/{name}", f"b/{name}"))
        if out_path is not None:
            out_path.write_text(f"{MARKER} ({run_id}); diff against {name} in {out_path.stem}.diff\n" + repaired)
            out_path.with_suffix(".diff").write_text(diff)
            written = str(out_path)
    if out_path is not None and status != "invalid_input":  # an unusable input changes nothing
        from debugger.repair.report import write_report

        report_path = str(write_report(out_path.with_suffix(".md"), case, final, diff, ctx))
    msg = {"repaired": f"repaired in {final.get('iteration', 0)} iteration(s)",
           "rejected": "only repairs the integrity gate rejected were found",
           "unverified": "a repair passed, but some of the gate's checks could not run: "
                         + ", ".join(f"{k} ({v[:60]})" for k, v in (final.get("unverified") or {}).items()),
           "invalid_input": (final.get("best_report") or {}).get("message", "unusable input")}.get(
        status, f"not repaired (guard: {final.get('stop')})")
    result = RepairResult(status=status, output=written, iterations=final.get("iteration", 0),
                          tokens=final.get("tokens") or {"prompt": 0, "completion": 0}, bug_class=bug_class,
                          history=history, guard=final.get("stop"), run_id=run_id, diff=diff, message=msg,
                          seconds=time.time() - t0, verdict=final.get("verdict"), report=report_path,
                          repaired_src=repaired, diagnosis_summary=diag.get("summary", ""),
                          distilled=final.get("distilled"))
    ledger.finish_run(run_id, status=status, guard=result.guard, iterations=result.iterations,
                      prompt_tokens=result.tokens.get("prompt", 0), completion_tokens=result.tokens.get("completion", 0),
                      seconds=result.seconds, bug_class=bug_class, output=written, message=msg)
    return result
