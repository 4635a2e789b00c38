"""`kdebug repair` and `kdebug runs`: the debug loop from the command line, and the ledger's runs."""
from __future__ import annotations

from debugger.output import log, print_json

REPAIR_EXIT = {"repaired": 0, "unrepaired": 1, "unverified": 1, "rejected": 3, "invalid_input": 2}


def register(sub, case_args) -> None:
    p = sub.add_parser("repair", help="debug a near-miss candidate to a verified, integrity-accepted fix")
    case_args(p)
    p.add_argument("-o", "--output", help="where to write the repaired kernel (default: CANDIDATE.repaired.py)")
    p.add_argument("--backend", choices=["auto", "kb", "openai"], help="kb: no model; openai: an endpoint; "
                   "auto (default with an endpoint): kb first, then the model")
    p.add_argument("--model", help="model name for the openai backend (or KDEBUG_MODEL)")
    p.add_argument("--max-iters", type=int, help="iteration budget (default 12)")
    p.add_argument("--token-budget", type=int, help="token budget for model calls (default 200000)")
    p.add_argument("--wall-budget", type=float, help="wall-clock budget in seconds (default 600)")
    p.add_argument("--no-tools", action="store_true", help="openai backend: one-shot edits, no tool calls "
                   "(or KDEBUG_TOOLS=0; an endpoint without tool support falls back to this by itself)")
    p.add_argument("--max-tool-calls", type=int, help="openai backend: tool calls per run (default 40)")
    p.add_argument("--kb-wall-budget", type=float, help="seconds the recipe search may take before it stops "
                   "(or hands over to the model; default 300, at most --wall-budget)")
    p.add_argument("--strict-precision", action="store_true", help="also reject tf32 in tl.dot")
    p.add_argument("--no-retrieval", action="store_true", help="ablation: no knowledge-base retrieval")
    p.add_argument("--no-instrumentation", action="store_true", help="ablation: no probes")
    p.add_argument("--no-integrity", action="store_true", help="ablation: accept repairs without the gate")
    p.add_argument("--no-write-back", action="store_true", help="do not distil the fix into the knowledge base")
    p.add_argument("--resume", metavar="RUN_ID", help="resume an interrupted run from its checkpoint")
    p.add_argument("--semantics", choices=["kernel", "kernelbench"], default="kernel",
                   help="kernel (default): repaired when the kernel verdict passes (Model's weights mapped in); "
                        "kernelbench: KernelBench's verdict (each model's own initialisation) must pass too")
    p.add_argument("--sizes", choices=["auto", "published", "small"], default="published",
                   help="auto: the loop at reduced sizes, the final verdict at the published sizes where they "
                        "fit the device; small: reduced sizes throughout; published (default)")
    p.set_defaults(func=run)
    r = sub.add_parser("runs", help="list repair runs from the ledger")
    r.add_argument("run_id", nargs="?", help="show one run with its iterations")
    r.add_argument("--limit", type=int, default=20)
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=runs)


def run(args) -> int:
    from debugger.case_args import load_case_and_settings
    from debugger.repair import repair
    from debugger.settings import resolve

    case, _ = load_case_and_settings(args)
    settings = resolve(device=args.device, timeout=args.timeout, backend=args.backend, model=args.model,
                       max_iters=args.max_iters, token_budget=args.token_budget, wall_budget=args.wall_budget,
                       tools=False if args.no_tools else None, max_tool_calls=args.max_tool_calls)
    log(f"repairing {case.name} on {settings.device} with backend {settings.backend} ...")
    result = repair(case, settings=settings, output=args.output, progress=log, resume=args.resume,
                    strict_precision=args.strict_precision, retrieval=not args.no_retrieval,
                    instrumentation=not args.no_instrumentation, integrity=not args.no_integrity,
                    write_back=not args.no_write_back, semantics=args.semantics, sizes=args.sizes)
    if args.json:
        print_json(result.to_dict())
    else:
        print(f"{result.status}: {result.message}")
        if result.diff:
            print(result.diff)
        if result.output:
            print(f"repaired kernel: {result.output}")
        if result.report:
            print(f"report: {result.report}")
    return REPAIR_EXIT.get(result.status, 1)


def runs(args) -> int:
    from debugger.ledger import Ledger

    ledger = Ledger()
    if args.run_id:
        run = ledger.run(args.run_id)
        if run is None:
            log(f"kdebug: no run {args.run_id}")
            return 2
        its = ledger.iterations(args.run_id)
        if args.json:
            print_json({"run": run, "iterations": its})
        else:
            print(f"{run['id']} {run['case']} {run['status']} guard={run['guard']} iters={run['iterations']}")
            for it in its:
                print(f"  {it['n']:>3} {it['recipe'] or it['origin']}: {it['outcome']}")
        return 0
    rows = ledger.runs(args.limit)
    if args.json:
        print_json({"runs": rows})
    else:
        for r in rows:
            print(f"{r['id']}  {r['case']:<40} {r['status'] or '-':<11} {r['backend']:<6} "
                  f"iters={r['iterations'] or 0:<3} {r['seconds'] or 0:6.1f}s guard={r['guard'] or '-'}")
    return 0
