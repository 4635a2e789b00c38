"""`kdebug diagnose`: localise and classify a failing candidate (exit 0 diagnosed, 1 passes, 2 unusable)."""
from __future__ import annotations

from debugger.output import log, print_json


def register(sub, case_args) -> None:
    p = sub.add_parser("diagnose", help="say where and why a failing candidate is wrong")
    case_args(p)
    p.add_argument("--plot", metavar="FILE.png", help="render the error map of the worst output")
    p.add_argument("--no-experiments", action="store_true", help="skip the counterfactual recipe experiments")
    p.add_argument("--no-probes", action="store_true", help="skip the instrumented run")
    p.add_argument("--sanitizer", action="store_true",
                   help="also run compute-sanitizer (memcheck, initcheck; racecheck and synccheck where they "
                        "apply) on a failing check (GPU only; slow)")
    p.add_argument("--no-localisation", action="store_true",
                   help="skip localisation across kernels (multi-kernel candidates)")
    p.add_argument("--sizes", choices=["auto", "published", "small"], default="published",
                   help="the sizes the checks run at (see kdebug eval --help)")
    p.add_argument("--semantics", choices=["kernel", "kernelbench"], default="kernel",
                   help="the verdict the summary leads with; a failure of either verdict is diagnosed")
    p.set_defaults(func=run)


def run(args) -> int:
    from debugger.case_args import load_case_and_settings
    from debugger.diagnose import diagnose
    from debugger.diagnose.plot import plot_error_map, worst_output
    from debugger.diagnose.static import block_sizes
    from debugger.evaluate import run_evaluation

    case, settings = load_case_and_settings(args)
    log(f"diagnosing {case.name} on {settings.device} ...")
    ev = run_evaluation(case, settings.device, capture=True, timeout=settings.timeout,
                        memory_limit_gb=settings.memory_limit_gb, sizes=args.sizes, semantics=args.semantics)
    diag = diagnose(case, settings.device, experiments=not args.no_experiments, probes=not args.no_probes,
                    localise=not args.no_localisation, timeout=settings.timeout, evaluation=ev,
                    sanitizer=args.sanitizer)
    plot_path = None
    if args.plot and diag.status == "diagnosed":
        worst = worst_output(ev)
        if worst:
            check, idx = worst
            art = ev.artifacts[check]
            plot_path = str(plot_error_map(art["reference"][idx], art["runs"][0][idx], args.plot,
                                           title=f"{case.name}: {check}, output {idx}",
                                           block_sizes=block_sizes(case.candidate_src)))
            log(f"error map written to {plot_path}")
    if args.json:
        print_json({**diag.to_dict(), "plot": plot_path})
    else:
        print(diag.summary)
        for h in diag.hypotheses:
            print(f"  {h['confidence']:6.1%}  {h['bug_class']:<26} lines {h['lines'] or '-'}")
            for e in h["evidence"][:5]:
                print(f"            - {e}")
        if diag.localisation.get("buffers"):
            print(f"  localisation ({diag.localisation.get('check')}): {diag.localisation.get('summary')}")
    if diag.status == "invalid_input":
        log(f"kdebug: {diag.summary}")
        return 2
    return 1 if diag.status == "passes" else 0
