"""The repair graph's state (checkpointed, JSON-friendly) and its run context (not checkpointed).

The state's records are TypedDicts: at run time plain dicts (what the nodes return, the checkpointer
stores and `kdebug repair` reports), typed here for readers and type checkers with the keys the nodes
(nodes.py), the backends and the report (run.py, report.py) read and write. All keys are optional
(total=False): a node writes only some of them (a skipped verify carries `skipped`, not `score`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, TypedDict


class Diagnosis(TypedDict, total=False):
    """debugger.diagnose.Diagnosis.to_dict(), with the prompt rendering the diagnose node adds."""

    status: str  # diagnosed | passes | invalid_input | the evaluation's status
    summary: str
    hypotheses: list[dict]  # {bug_class, confidence, evidence, lines, ...}, most likely first
    symptoms: list[str]
    error_maps: dict  # check -> [per-output facts]
    static: list[dict]  # {tag, line, message, language, kernel} (debugger.lang.Fact)
    recipe_sites: list[dict]
    probes: dict
    experiments: list[dict]  # {result, patch_hash, base_hash, ...}: counterfactual runs
    localisation: dict
    sanitizer: dict
    needs_rewrite: dict | None  # {reason, evidence}
    signature: str | None
    evaluation: dict
    bug_class: str | None  # the first hypothesis's
    prompt_text: str  # Diagnosis.prompt_text(), for the model's prompt


class Proposal(TypedDict, total=False):
    """debugger.backends.base.Proposal.to_dict(): a new source or search/replace edits."""

    origin: str  # recipe | template | model
    description: str
    new_src: str | None
    edits: list[dict]  # [{"search": str, "replace": str}]
    recipe: str | None
    bug_class: str | None
    sites: list[int]
    score: float
    prompt_tokens: int
    completion_tokens: int


class Verify(TypedDict, total=False):
    """What verify (or evaluate, for a candidate that passes as given, or apply, for a patch it
    refused) says of the candidate."""

    passed: bool
    status: str  # the evaluation's status (pass, mismatch, runtime_error, ...)
    score: float  # the report's error score
    screen: bool  # True: only the checks the best version failed were run
    message: str
    signature: str | None
    report: dict  # EvalReport.to_dict()
    skipped: str  # apply refused the patch: why (nothing was evaluated)
    harness: bool  # the patch reached for the reference or the harness


class Verdict(TypedDict, total=False):
    """The integrity gate's Verdict.to_dict() without its evaluation, or a skipped gate."""

    verdict: str  # accept | reject
    policy: str
    findings: list[dict]  # {rule, severity, message, line, ...}
    torch_work: dict | None
    skipped: bool  # the run asked for no gate


class HistoryEntry(TypedDict, total=False):
    """One iteration, as guard records it (integrity rewrites the last one's outcome on a rejection)."""

    iteration: int
    origin: str | None
    recipe: str | None
    bug_class: str | None
    description: str | None
    outcome: str  # fixed | better | better_on_failing | no_change | worse | skipped | rejected
    status: str | None
    error_before: float
    error_after: float | None
    message: str | None
    reverted: bool
    prompt_tokens: int
    completion_tokens: int
    verdict: str  # reject, set by integrity
    reasons: list[str]  # the gate's reasons, set by integrity


class Tokens(TypedDict):
    """The model's token counts so far."""

    prompt: int
    completion: int


class Retrieved(TypedDict, total=False):
    """What retrieve found in the knowledge base."""

    patterns: list[dict]  # retrieval hits (Hit.to_dict()) with the pattern's text
    reference_kernel: dict | None  # the closest reference kernel, with its source
    error: str  # retrieval failed: why


class RepairState(TypedDict, total=False):
    # frozen task: only the kernel is ever edited
    case_name: str
    reference_src: str
    original_src: str
    atol: float | None
    rtol: float | None
    # the search
    best_src: str
    best_report: dict
    best_score: float
    diagnosis: Diagnosis
    retrieved: Retrieved
    queue: list[Proposal]
    proposal: Proposal | None
    candidate_src: str | None
    verify: Verify | None
    verdict: Verdict | None
    phase: str  # kb | openai
    # accounting and guards
    iteration: int
    tokens: Tokens
    tried: list[str]
    signatures: list[str]
    no_progress: int
    rejected: int
    started_at: float
    history: list[HistoryEntry]
    stop: str | None
    status: str  # running | repaired | unverified | unrepaired | rejected | invalid_input
    needs_diagnosis: bool
    feedback: str | None
    kb_asked_for: str | None
    kb_started_at: float | None
    distilled: dict | None
    unverified: dict | None  # gate checks that could not run (name -> why): the repair is not called repaired


@dataclass
class Limits:
    """Convergence guards."""

    max_iters: int = 12
    token_budget: int = 200_000
    wall_budget: float = 600.0
    kb_wall_budget: float = 300.0  # the recipe search stops here (a model, when configured, takes over)
    same_signature: int = 4
    patience: int = 8


@dataclass
class RunContext:
    """Dependencies of one run (reach nodes as runtime.context; never module globals)."""

    device: str
    limits: Limits
    kb_backend: Any | None
    model_backend: Any | None
    knowledge: Any | None
    ledger: Any | None
    run_id: str
    timeout: float = 120.0
    strict_precision: bool = False
    write_back: bool = True
    retrieval: bool = True
    instrumentation: bool = True
    sanitizer: bool = False  # compute-sanitizer in the loop's diagnoses (where sanitizer_may_help); see diagnose()
    integrity: bool = True
    # kernel: repaired when the kernel verdict passes; kernelbench: KernelBench's verdict must pass too
    semantics: str = "kernel"
    # published | small | auto (debugger/sizes.py): auto repairs at reduced sizes and gives the final
    # verdict at the published sizes where a check fits the device
    sizes: str = "published"
    progress: Any = None
    cache: dict = field(default_factory=dict)  # per-run: captured evaluations by source hash

    @property
    def evaluation_semantics(self) -> str:
        """What the loop's evaluations judge by: a KernelBench repair must also be a right kernel."""
        return "both" if self.semantics == "kernelbench" else "kernel"

    @property
    def loop_sizes(self) -> str:
        """The sizes the loop's own evaluations run at."""
        return "small" if self.sizes == "auto" else self.sizes

    def say(self, msg: str) -> None:
        if self.progress:
            self.progress(msg)


def initial_state(case, *, started_at: float | None = None) -> RepairState:
    """The graph's input for a case."""
    return RepairState(case_name=case.name, reference_src=case.reference_src, original_src=case.candidate_src,
                       atol=case.atol, rtol=case.rtol, best_src=case.candidate_src, iteration=0,
                       tokens={"prompt": 0, "completion": 0}, tried=[], signatures=[], no_progress=0, rejected=0,
                       queue=[], history=[], stop=None, status="running", phase="kb", needs_diagnosis=True,
                       started_at=started_at or time.time(), proposal=None, verify=None, verdict=None,
                       feedback=None)
