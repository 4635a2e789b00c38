"""Ingest past generation logs: failed candidates become repair work, failed -> passing pairs knowledge.

    from ingest import ingest
    report = ingest("runs/my_run", problems="KernelBench/")   # -> IngestReport (report.to_dict())

Readers (one module per format) turn logs into `Attempt`s: `kernelbench` (run folders with
eval_results.json, or with detailed_results.json through `detailed`), `traces` (multi-turn trace files),
`jsonl` (our own schema, SCHEMA.md). `classify` sorts attempts into compile_error, runtime_error,
interface_error, numerical_mismatch, timeout, correct and unverifiable; the numerical mismatches, with their
case folders, go to the repair queue (debugger/batch/queue.py);
`distil` turns failed -> later correct pairs into pattern drafts; `pipeline` runs the whole ingest and
`command` is `kdebug ingest`. `kdebug repair-batch` (debugger/batch) works the queue.
"""
from ingest.attempt import Attempt, Malformed
from ingest.pipeline import IngestReport, ingest

__all__ = ["Attempt", "IngestReport", "Malformed", "ingest"]
