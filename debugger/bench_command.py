"""`kdebug bench`: run repair (or the regenerate baseline) over every case folder and score it."""
from __future__ import annotations

from debugger.output import log, print_json


def register(sub, case_args) -> None:
    p = sub.add_parser("bench", help="run repair over every case folder and score it (pass@1, tokens, time)")
    p.add_argument("cases_dir", metavar="CASES_DIR", help="a folder of case folders (reference.py + candidate.py)")
    p.add_argument("--backend", choices=["kb", "openai", "auto"],
                   help="repair backend (default as for repair: auto with an endpoint configured, else kb)")
    p.add_argument("--model", help="model name for the openai backend and --mode regenerate (or KDEBUG_MODEL)")
    p.add_argument("--mode", choices=["debug", "regenerate"], default="debug",
                   help="debug: repair the candidates; regenerate: the model writes new kernels from the reference")
    p.add_argument("--samples", type=int, default=1, metavar="K", help="regenerate: samples per case (pass@K)")
    p.add_argument("--temperature", type=float, help="regenerate: sampling temperature, where the backend takes one")
    p.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda when available, else cpu")
    p.add_argument("--scale", choices=["gpu"], help="run at the case.toml [gpu] sizes")
    p.add_argument("--cases", nargs="+", metavar="NAME", help="only these case folders (glob patterns allowed)")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N cases")
    p.add_argument("--max-iters", type=int, help="repair iteration budget per case (default 8)")
    p.add_argument("--timeout", type=float, help="seconds per sandbox request (default 120)")
    p.add_argument("--no-timing", action="store_true",
                   help="on a GPU, repair and verify but do not time (time later, alone on the GPU, with "
                        "python -m debugger.bench.fixed_timing --repairs OUT/repairs)")
    p.add_argument("--no-retrieval", action="store_true", help="ablation: no knowledge-base retrieval")
    p.add_argument("--no-instrumentation", action="store_true", help="ablation: no probes")
    p.add_argument("--no-integrity", action="store_true",
                   help="ablation: the loop accepts repairs without the gate (the bench still gates them)")
    wb = p.add_mutually_exclusive_group()
    wb.add_argument("--no-write-back", action="store_true", help="ablation: no write-back of fixes")
    wb.add_argument("--write-back-across-run", action="store_true",
                    help="keep fixes learned on earlier cases for later ones (counts fixes by learned templates)")
    p.add_argument("--out", default="bench-out", metavar="DIR",
                   help="where bench.md, bench.json, bench.png and the repaired sources go (default ./bench-out)")
    p.add_argument("--verbose", action="store_true", help="stream each repair's progress to stderr")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(func=run)


def run(args) -> int:
    from debugger.bench import BenchOptions, run_bench
    from debugger.bench.report import class_table, headline

    opts = BenchOptions(cases_dir=args.cases_dir, backend=args.backend, mode=args.mode, samples=args.samples,
                        device=args.device, scale=args.scale, names=args.cases, limit=args.limit,
                        retrieval=not args.no_retrieval, instrumentation=not args.no_instrumentation,
                        integrity=not args.no_integrity, write_back=not args.no_write_back,
                        across_run=args.write_back_across_run, model=args.model, max_iters=args.max_iters,
                        timeout=args.timeout, temperature=args.temperature, out=args.out, verbose=args.verbose,
                        timing=not args.no_timing)
    summary = run_bench(opts)
    if args.json:
        print_json(summary)
    else:
        print(class_table(summary))
        print()
        print(headline(summary))
        if summary.get("outputs"):
            print(f"written: {summary['outputs']['markdown']}, {summary['outputs']['json']}, "
                  f"{summary['outputs']['chart']}")
    log(f"bench: {summary['repaired']}/{summary['cases']} repaired, pass@1 {summary['pass_at_1']:.2f}")
    return 0
