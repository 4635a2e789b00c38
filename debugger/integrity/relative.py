"""A repair judged against the candidate it came from, whatever the policy.

A repair may fix indexing, masks, strides or launch configuration; it may not make the answer easier
by handing work to PyTorch, adding a fallback or a special case, or lowering the precision, where the
candidate it started from did none of that. `regressions` compares the static facts of both files
(PyTorch compute sites on the forward path by sub-operation, fallback and special-case findings,
precision findings of any severity) and reports what the repair added, as reject findings.
"""
from __future__ import annotations

from collections import Counter

from debugger.integrity.context import Context
from debugger.integrity.findings import REJECT, Finding
from debugger.integrity.reference import profile_reference
from debugger.integrity.rules import get_rule
from debugger.source.host import SourceModule

# Rules whose findings, at any severity, a repair must not add: fallbacks, special cases, precision loss.
_NOT_ADDED = ("try_except_fallback", "shape_special_case", "training_fallback", "value_dependent_branch",
              "precision_downgrade", "tf32_dot")


def _facts(src: str, reference_src: str, policy: str) -> tuple[Counter, Counter] | None:
    module = SourceModule(src)
    if module.has_error:
        return None
    ctx = Context(module, profile_reference(reference_src), policy=policy)
    compute = Counter(key for site in ctx.sites for key in site.all_keys)
    flagged = Counter()
    for rule_id in _NOT_ADDED:
        try:
            rule = get_rule(rule_id)
        except KeyError:
            continue
        flagged[rule_id] += len(rule(ctx))
    return compute, flagged


def regressions(candidate_src: str, repaired_src: str, reference_src: str, policy: str) -> list[Finding]:
    """What the repair adds that its candidate did not have, as reject findings (none if nothing)."""
    before = _facts(candidate_src, reference_src, policy)
    after = _facts(repaired_src, reference_src, policy)
    if before is None or after is None:
        return []
    found = []
    added_compute = after[0] - before[0]
    if added_compute:
        ops = ", ".join(f"{k} (x{n})" if n > 1 else k for k, n in sorted(added_compute.items()))
        found.append(Finding("repair_adds_torch_compute", REJECT,
                             f"the repair computes with PyTorch what its candidate computed in its kernels: {ops}"))
    for rule_id, n in sorted((after[1] - before[1]).items()):
        found.append(Finding(f"repair_adds_{rule_id}", REJECT,
                             f"the repair adds {n} {rule_id.replace('_', ' ')} finding(s) its candidate did not have"))
    return found
