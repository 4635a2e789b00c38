"""The static half of the integrity gate: run every registered rule over a candidate's syntax tree."""
from __future__ import annotations

from debugger.integrity.context import Context
from debugger.integrity.findings import REJECT, Finding
from debugger.integrity.policy import DEFAULT_POLICY, check_policy
from debugger.integrity.reference import profile_reference
from debugger.integrity.rules import RULES
from debugger.source.host import SourceModule


def static_findings(candidate_src: str, reference_src: str, *, strict_precision: bool = False,
                    policy: str = DEFAULT_POLICY, measured=None) -> list[Finding]:
    """All findings of the static rules under `policy` (see policy.py), ordered by line; a candidate that
    does not parse gives one finding. `measured`: PyTorch's work measured on a run (work.Measurement),
    which then judges the PyTorch compute the run saw instead of the source."""
    candidate = SourceModule(candidate_src)
    if candidate.has_error:
        return [Finding("parse_error", REJECT, "the candidate is not valid Python", candidate.first_error_line())]
    ctx = Context(candidate, profile_reference(reference_src), strict_precision=strict_precision,
                  policy=check_policy(policy), measured=measured)
    findings = [finding for rule in RULES for finding in rule(ctx)]
    return sorted(findings, key=lambda f: (f.line or 0, f.rule))
