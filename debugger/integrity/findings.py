"""The vocabulary of the integrity gate: a Finding (what a rule saw, where) and a Rule (a named check)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from debugger.integrity.context import Context

REJECT = "reject"
WARN = "warn"


@dataclass(frozen=True)
class Finding:
    """One thing a rule saw: `severity` reject fails the gate, warn is reported only."""

    rule: str
    severity: str
    message: str
    line: int | None = None

    def to_dict(self) -> dict:
        """The JSON form used by `kdebug check`."""
        return asdict(self)


@dataclass(frozen=True)
class Rule:
    """A named static check; `severity` is the strongest severity its findings can carry."""

    id: str
    severity: str
    rationale: str
    check: Callable[[Context], list[Finding]]

    def __call__(self, ctx: Context) -> list[Finding]:
        return self.check(ctx)


def rule(id: str, severity: str, rationale: str) -> Callable[[Callable[[Context], list[Finding]]], Rule]:
    """Turn a check function into a Rule."""
    def make(check: Callable[[Context], list[Finding]]) -> Rule:
        return Rule(id, severity, rationale, check)
    return make


def is_rejected(findings: list[Finding]) -> bool:
    """True when any finding rejects."""
    return any(f.severity == REJECT for f in findings)
