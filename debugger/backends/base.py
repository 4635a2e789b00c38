"""The backend protocol and the Proposal record every backend returns."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Protocol

from debugger.errors import KdebugError


class BackendError(KdebugError):
    """The backend cannot go on (authentication, unknown model, endpoint down after retries)."""


@dataclass
class Proposal:
    """One proposed repair: either a full new source (recipes, templates) or search/replace edits (models)."""

    origin: str  # recipe | template | model
    description: str
    new_src: str | None = None
    edits: list[dict] = field(default_factory=list)  # [{"search": str, "replace": str}]
    recipe: str | None = None
    bug_class: str | None = None
    sites: list[int] = field(default_factory=list)
    score: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


class Backend(Protocol):
    """What the repair graph asks of a backend."""

    name: str

    def propose(self, candidate_src: str, diagnosis: dict, retrieved: dict, context: dict) -> list[Proposal]:
        """Proposals for the current best candidate, most promising first."""
        ...
