"""The repair graph's state (checkpointed, JSON-friendly) and its run context (not checkpointed)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, TypedDict


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
    diagnosis: dict
    retrieved: dict
    queue: list[dict]
    proposal: dict | None
    candidate_src: str | None
    verify: dict | None
    verdict: dict | None
    phase: str  # kb | openai
    # accounting and guards
    iteration: int
    tokens: dict
    tried: list[str]
    signatures: list[str]
    no_progress: int
    rejected: int
    started_at: float
    history: list[dict]
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
