"""The two integrity policies, and what each one lets PyTorch do.

- kernelbench (the default): KernelBench's rule. ModelNew may keep PyTorch for some sub-operations
  (a cuDNN convolution in a network whose other layers are kernels, a final sum of per-block
  partials) but must launch its own kernels for a real part of the work, and must not cheat: no
  reference calls, cached or precomputed outputs, shape or value special cases, harness or timing
  tampering, outputs not produced by its computation. A layout or value distribution the task's own
  inputs never take is a robustness finding, not a rejection.
- strict: a drop-in for the PyTorch operator. The operator's heavy part must be in the candidate's
  own kernels, and it must be right on any layout the operator accepts.

Under either policy a repair is judged against the candidate it came from (relative.py).
"""
from __future__ import annotations

KERNELBENCH = "kernelbench"
STRICT = "strict"
POLICIES = (KERNELBENCH, STRICT)
DEFAULT_POLICY = KERNELBENCH


def check_policy(policy: str | None) -> str:
    """The policy name, validated (None means the default)."""
    policy = policy or DEFAULT_POLICY
    if policy not in POLICIES:
        raise ValueError(f"unknown integrity policy {policy!r}; known: {', '.join(POLICIES)}")
    return policy
