"""The records every reader produces: one generation attempt, or one malformed record.

Readers turn their format into `Attempt`s (normalised fields, provenance) and `Malformed`s (where and
why a record could not be read); nothing downstream knows which format an attempt came from.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass
class Attempt:
    """One candidate kernel for one problem, with what the pipeline recorded about it."""

    location: str                     # file:line, file#index or a file path: where to look
    source: str                       # the log file or run folder it came from
    format: str                       # kernelbench | traces | jsonl
    problem_id: str                   # as the log names the problem
    history: str                      # attempts sharing a history are ordered and paired (a trace, a problem)
    order: tuple = ()                 # position within the history (turn, sample)
    reference_src: str | None = None
    candidate_src: str | None = None
    compiled: bool | None = None
    correct: bool | None = None
    error: str | None = None
    max_difference: float | None = None
    timed_out: bool | None = None
    tokens: int | None = None
    model: str | None = None
    feedback: str | None = None
    meta: dict = field(default_factory=dict)

    def content_hash(self) -> str:
        """Same attempt, same hash, whichever file or copy of the logs it is read from."""
        h = hashlib.sha256()
        for part in (self.problem_id, self.reference_src, self.candidate_src, self.compiled, self.correct,
                     self.error, self.max_difference, self.timed_out):
            h.update(repr(part).encode())
            h.update(b"\0")
        return h.hexdigest()


@dataclass
class Malformed:
    """A record that could not be read; counted and reported, never fatal."""

    location: str
    reason: str

    def to_dict(self) -> dict:
        return {"location": self.location, "reason": self.reason}
