"""`kdebug check`: the integrity gate on its own (exit 0 accept, 3 reject, 2 unusable input)."""
from __future__ import annotations

from debugger.integrity.policy import DEFAULT_POLICY, POLICIES
from debugger.output import log, print_json

BOTH = "both"  # every policy, from one sandboxed run


def register(sub, case_args) -> None:
    p = sub.add_parser("check", help="integrity gate: does the candidate really compute the operator itself?")
    case_args(p)
    p.add_argument("--strict-precision", action="store_true", help="also reject tf32 in tl.dot for float32 tasks")
    p.add_argument("--static-only", action="store_true", help="run only the static rules (no sandboxed run)")
    p.add_argument("--policy", choices=[*POLICIES, BOTH], default=DEFAULT_POLICY,
                   help="kernelbench: own kernels for a real part of the work and no cheat (PyTorch may keep "
                        "sub-operations); strict: the operator's heavy part in own kernels, any layout; both: "
                        "each from one sandboxed run (--json: one object per policy; exit 3 if either rejects)")
    p.add_argument("--sizes", choices=["published", "auto", "small"], default="published",
                   help="sizes of the sandboxed run: the task's (default), small (batch-like constants halved "
                        "until a check fits), auto (published where a check fits the device)")
    p.set_defaults(func=run)


def run(args) -> int:
    from debugger.case_args import load_case_and_settings
    from debugger.integrity.gate import check_policies
    from debugger.integrity.work import work_text

    case, settings = load_case_and_settings(args)
    policies = POLICIES if args.policy == BOTH else (args.policy,)
    log(f"checking {case.name} on {settings.device} (policy {args.policy}) ...")
    verdicts = check_policies(case, settings.device, policies, strict_precision=args.strict_precision,
                              dynamic=not args.static_only, timeout=settings.timeout, sizes=args.sizes)
    if args.json:
        print_json({p: v.to_dict() for p, v in verdicts.items()} if args.policy == BOTH
                   else verdicts[args.policy].to_dict())
    else:
        for verdict in verdicts.values():
            print(f"verdict: {verdict.verdict} (policy {verdict.policy})")
            if verdict.torch_work is not None:
                print(work_text(verdict.torch_work))
            for f in verdict.findings:
                print(f"  {f.severity:<6} {f.rule:<30} line {f.line or '-':<4} {f.message}")
    if any(not v.accepted for v in verdicts.values()):
        return 3
    incomplete = next((v.dynamic_not_run for v in verdicts.values() if v.dynamic_not_run), None)
    if incomplete:  # an incomplete answer, not an accept (exit 2)
        log(f"kdebug: {incomplete}")
        return 2
    return 0
