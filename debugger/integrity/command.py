"""`kdebug check`: the integrity gate on its own (exit 0 accept, 3 reject, 2 unusable input)."""
from __future__ import annotations

from debugger.integrity.policy import DEFAULT_POLICY, POLICIES
from debugger.output import log, print_json


def register(sub, case_args) -> None:
    p = sub.add_parser("check", help="integrity gate: does the candidate really compute the operator itself?")
    case_args(p)
    p.add_argument("--strict-precision", action="store_true", help="also reject tf32 in tl.dot for float32 tasks")
    p.add_argument("--static-only", action="store_true", help="run only the static rules (no sandboxed run)")
    p.add_argument("--policy", choices=POLICIES, default=DEFAULT_POLICY,
                   help="kernelbench: own kernels for a real part of the work and no cheat (PyTorch may keep "
                        "sub-operations); strict: the operator's heavy part in own kernels, any layout")
    p.add_argument("--sizes", choices=["published", "auto", "small"], default="published",
                   help="sizes of the sandboxed run: the task's (default), small (batch-like constants halved "
                        "until a check fits), auto (published where a check fits the device)")
    p.set_defaults(func=run)


def run(args) -> int:
    from debugger.case_args import load_case_and_settings
    from debugger.integrity.gate import check
    from debugger.integrity.work import work_text

    case, settings = load_case_and_settings(args)
    log(f"checking {case.name} on {settings.device} (policy {args.policy}) ...")
    verdict = check(case, settings.device, strict_precision=args.strict_precision, dynamic=not args.static_only,
                    timeout=settings.timeout, policy=args.policy, sizes=args.sizes)
    if args.json:
        print_json(verdict.to_dict())
    else:
        print(f"verdict: {verdict.verdict} (policy {verdict.policy})")
        if verdict.torch_work is not None:
            print(work_text(verdict.torch_work))
        for f in verdict.findings:
            print(f"  {f.severity:<6} {f.rule:<30} line {f.line or '-':<4} {f.message}")
    if verdict.dynamic_not_run and verdict.accepted:  # an incomplete answer, not an accept (exit 2)
        log(f"kdebug: {verdict.dynamic_not_run}")
        return 2
    return 0 if verdict.accepted else 3
