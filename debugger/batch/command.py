"""`kdebug repair-batch`: work the repair queue that `kdebug ingest` filled."""
from __future__ import annotations

from debugger.output import log, print_json


def register(sub, case_args) -> None:  # noqa: ARG001 - same signature as every command module
    if "repair-batch" in sub.choices:
        return
    p = sub.add_parser("repair-batch", help="repair the queued candidates with several workers (resumable)")
    p.add_argument("--workers", type=int, help="worker processes (default: one per GPU; on the CPU, half the cores); "
                   "with --ray, the most entries in flight")
    p.add_argument("--devices", help="cpu, or GPUs as cuda:0,cuda:1 (default: every visible GPU, else cpu); "
                   "with --ray, cpu keeps the tasks off the cluster's GPUs")
    p.add_argument("--backend", choices=["auto", "kb", "openai"], help="as for kdebug repair")
    p.add_argument("--model", help="model name for the openai backend (or KDEBUG_MODEL)")
    p.add_argument("--max-iters", type=int, help="iteration budget per entry (default 8)")
    p.add_argument("--timeout", type=float, help="seconds per sandbox request (default 120)")
    p.add_argument("--limit", type=int, help="repair at most N entries this run")
    p.add_argument("--ray", metavar="ADDRESS", help="run on an existing Ray cluster (host:port, or auto)")
    p.add_argument("--queue", metavar="DIR", help="queue folder (default: <data dir>/queue)")
    p.add_argument("--lease", type=float, help="seconds a claim holds without a heartbeat (default 90)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.set_defaults(func=run)


def run(args) -> int:
    from debugger.batch.run import DEFAULT_LEASE_S, BatchOptions, run_batch
    from debugger.batch.summary import table

    flags = {k: v for k, v in (("backend", args.backend), ("model", args.model), ("max_iters", args.max_iters),
                               ("timeout", args.timeout)) if v is not None}
    opts = BatchOptions(queue_dir=args.queue, workers=args.workers, devices=args.devices, limit=args.limit,
                        ray=args.ray, lease_s=args.lease or DEFAULT_LEASE_S, flags=flags)
    summary = run_batch(opts)
    if args.json:
        log(table(summary))
        print_json(summary.to_dict())
    else:
        print(table(summary))
    if summary.interrupted:
        log("kdebug: interrupted; run repair-batch again to finish the queue")
        return 130
    return 0
