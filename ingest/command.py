"""`kdebug ingest PATH`: past generation logs into the repair queue and pattern drafts.

Registering here also registers `kdebug repair-batch` (debugger/batch), which works that queue.
"""
from __future__ import annotations

from debugger.output import log, print_json

MALFORMED_SHOWN = 20


def register(sub, case_args) -> None:
    if "ingest" not in sub.choices:
        p = sub.add_parser("ingest", help="read past generation logs into the repair queue and pattern drafts")
        p.add_argument("path", help="a KernelBench run folder, a trace file (.json/.jsonl), a .jsonl attempt log, "
                       "or a folder of them")
        p.add_argument("--format", default="auto", choices=["auto", "kernelbench", "traces", "jsonl"],
                       help="default: auto (decided per file or folder)")
        p.add_argument("--problems", metavar="DIR", help="KernelBench checkout holding KernelBench/level<L>/<P>_<Name>.py "
                       "(the references of a KernelBench run)")
        p.add_argument("--queue", metavar="DIR", help="queue folder (default: <data dir>/queue)")
        p.add_argument("--drafts", metavar="DIR", help="where pattern drafts go (default: <data dir>/drafts)")
        p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
        p.set_defaults(func=run)
    from debugger.batch.command import register as register_batch

    register_batch(sub, case_args)


def run(args) -> int:
    from ingest.pipeline import ingest

    report = ingest(args.path, args.format, problems=args.problems, queue_dir=args.queue, drafts_dir=args.drafts,
                    progress=log)
    if args.json:
        print_json(report.to_dict())
        return 0
    print(text(report))
    return 0


def text(report) -> str:
    """The human summary of an IngestReport."""
    lines = [f"read {report.attempts} attempt(s) from {', '.join(f'{n} {k}' for k, n in report.units.items())}: "
             f"{report.new} new, {report.duplicates_skipped} duplicate(s) skipped"]
    lines.append("  " + "  ".join(f"{k}={v}" for k, v in report.classes.items()))
    lines.append(f"queued {report.queued} numerical mismatch(es) for repair in {report.queue}")
    for reason, n in report.not_queued.items():
        lines.append(f"  not queued ({n}): {reason}")
    lines.append(f"drafted {report.drafts} pattern(s) in {report.drafts_dir}")
    for reason, n in report.drafts_skipped.items():
        lines.append(f"  no draft ({n}): {reason}")
    if report.malformed:
        lines.append(f"malformed records: {len(report.malformed)}")
        for m in report.malformed[:MALFORMED_SHOWN]:
            lines.append(f"  {m.location}: {m.reason}")
        if len(report.malformed) > MALFORMED_SHOWN:
            lines.append(f"  ... and {len(report.malformed) - MALFORMED_SHOWN} more (--json lists them all)")
    return "\n".join(lines)
