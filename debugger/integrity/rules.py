"""The registry of static integrity rules: every rule with its id, severity and rationale, in run order."""
from __future__ import annotations

from debugger.integrity.checks import compute, control, environment, kernels, precision
from debugger.integrity.findings import Rule

RULES: tuple[Rule, ...] = (*kernels.RULES, *compute.RULES, *control.RULES, *environment.RULES, *precision.RULES)
RULES_BY_ID: dict[str, Rule] = {r.id: r for r in RULES}


def get_rule(rule_id: str) -> Rule:
    """The rule with this id (KeyError names the known ids)."""
    try:
        return RULES_BY_ID[rule_id]
    except KeyError:
        raise KeyError(f"unknown integrity rule {rule_id!r}; known: {', '.join(RULES_BY_ID)}") from None
