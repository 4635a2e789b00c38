"""Typed records of the evaluation stage, serialisable to the JSON of interface.md."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

# Evaluation statuses (interface.md) and the exit code each maps to.
EVAL_STATUSES = ("pass", "mismatch", "compile_error", "runtime_error", "timeout", "invalid_input")


# What a kernel the interpreter runs but a GPU build rejects adds to error_score: one failing check's worth,
# so fixing either the values or the construct is progress.
GPU_COMPILE_PENALTY = 1.0

@dataclass
class OutputStats:
    """How one output of one check compares with the reference."""

    index: int
    shape: list[int]
    dtype: str
    passed: bool
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    n_wrong: int = 0
    frac_wrong: float = 0.0
    first_wrong: list[int] | None = None
    nan_mismatch: int = 0
    inf_mismatch: int = 0
    problem: str | None = None  # shape/dtype/type problems, in one line


@dataclass
class CheckResult:
    """One input set: how it was drawn and how the candidate did on it."""

    name: str
    kind: str  # seed | distribution | layout | params | hidden | kernelbench
    passed: bool
    status: str  # pass | mismatch | runtime_error | timeout | skipped
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    frac_wrong: float | None = None
    message: str = ""
    outputs: list[OutputStats] = field(default_factory=list)
    drift: float | None = None  # max |out1 - out2| between the two candidate runs
    # skipped because the check does not apply (the reference rejects these inputs, or yields NaN/Inf
    # on them); any other skip leaves the verdict incomplete, never a pass
    not_applicable: bool = False
    inputs_mutated: bool = False
    seconds: float = 0.0
    # where the seconds went: the workers' input draws and forwards, the parent's waits for a run's reply
    # (its outputs' transfer) and for a comparison (evaluate._phase)
    phases: dict = field(default_factory=dict)
    # the most GPU memory each worker's PyTorch held during the check (candidate, reference), where there is a GPU
    peak_bytes: dict = field(default_factory=dict)
    spec: dict = field(default_factory=dict)


@dataclass
class ErrorSignature:
    """A compact fingerprint of a failure: which check, which output, where, what kind."""

    status: str
    check: str | None = None
    output: int | None = None
    first_wrong: list[int] | None = None
    kind: str | None = None  # mismatch | nan | shape | dtype | drift | mutation | exception name
    failed_checks: int = 0
    frac_wrong: float | None = None

    def key(self) -> str:
        """A string equal for two failures that look the same to the repair loop."""
        loc = "x".join(str(i) for i in self.first_wrong) if self.first_wrong else "-"
        return f"{self.status}:{self.kind or '-'}:{self.check or '-'}:{self.output}:{loc}:{self.failed_checks}"


def verdict_counts(semantics: str, kind: str | None) -> bool:
    """Whether a check of this kind belongs to the verdict `semantics` selects."""
    if semantics == "both":
        return kind in ("kernelbench", "seed")
    return (kind == "kernelbench") == (semantics == "kernelbench")


@dataclass
class EvalReport:
    """The answer to: does this candidate compute the same function as the reference?"""

    status: str
    checks: list[CheckResult] = field(default_factory=list)
    message: str = ""
    device: str = "cpu"
    atol: float | None = None
    rtol: float | None = None
    reference_warnings: list[str] = field(default_factory=list)
    signature: ErrorSignature | None = None
    seconds: float = 0.0
    log_tail: str = ""
    # Which verdict sets `status`: kernel (weights mapped in, every check), kernelbench (KernelBench's
    # trials, each model's own initialisation) or both (KernelBench's trials and the kernel checks on
    # the task's own inputs, the seeds: what a KernelBench repair aims at; layouts and value
    # distributions the task never draws stay robustness findings of the kernel verdict).
    semantics: str = "kernel"
    verdicts: dict = field(default_factory=dict)  # "kernel" / "kernelbench" -> {status, message, failed}
    verdict_note: str = ""  # why the two verdicts differ, when they do
    parameter_map: dict | None = None  # ModelNew <- Model tensor correspondence (debugger/params.py)
    sizes: dict = field(default_factory=dict)  # the sizes plan when not published (debugger/sizes.py)
    gpu_compile: list = field(default_factory=list)  # interpreted kernels that do not compile for sm_90 (gpu_check.py)
    emulation: str = ""  # set when CUDA kernels ran on the CPU through kdebug's runtime (lang/cuda/emulate)

    @property
    def passed(self) -> bool:
        """True when every check of the selected verdict passed."""
        return self.status == "pass"

    def counts(self, check: CheckResult) -> bool:
        """Whether a check belongs to the selected verdict."""
        return verdict_counts(self.semantics, check.kind)

    def selecting(self, semantics: str) -> "EvalReport":
        """The same checks with another verdict selected: its status, its failing checks."""
        verdict = self.verdicts.get(semantics)
        if semantics == self.semantics or verdict is None:
            return self
        return replace(self, semantics=semantics, status=verdict["status"])

    @property
    def failed_checks(self) -> list[CheckResult]:
        """The checks of the selected verdict that did not pass (skipped ones excluded)."""
        return [c for c in self.checks if not c.passed and c.status != "skipped" and self.counts(c)]

    @property
    def skipped_checks(self) -> list[CheckResult]:
        """The checks of the selected verdict that could not run (each with its reason)."""
        return [c for c in self.checks if c.status == "skipped" and self.counts(c)]

    def error_score(self) -> float:
        """One number for 'how wrong': lower is better; 0 when passing. Used to measure progress."""
        if self.passed:
            return 0.0
        gpu = GPU_COMPILE_PENALTY if self.gpu_compile else 0.0  # interpreted, but no GPU build (gpu_check.py)
        if self.status == "compile_error" and gpu and not self.failed_checks:
            return gpu
        if self.status in ("compile_error", "invalid_input"):
            return 1e9
        if self.status in ("runtime_error", "timeout"):
            return 1e8
        failed = self.failed_checks
        frac = sum((c.frac_wrong or 1.0) for c in failed) / max(1, len([c for c in self.checks if self.counts(c)]))
        return len(failed) + frac + gpu

    def to_dict(self) -> dict:
        """JSON-ready dict (interface.md: status, checks[].passed, checks[].max_abs_err)."""
        d = asdict(self)
        d["passed"] = self.passed
        d["signature"] = asdict(self.signature) if self.signature else None
        if self.signature:
            d["signature"]["key"] = self.signature.key()
        return d
