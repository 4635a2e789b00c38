"""One ingest: read every unit, classify, deduplicate, queue the near misses, distil pairs into drafts.

Nothing is added twice: an attempt is known by its content hash (attempts table), a queue entry by
an id derived from that hash, a draft by the hash of its pair. Malformed records are counted and
reported with their location; they never stop the run.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from debugger.settings import data_dir
from ingest import classify as classifier
from ingest import jsonl, kernelbench, traces
from ingest.attempt import Attempt, Malformed
from ingest.cases import entry_id, write_case
from ingest.detect import Unit, plan, problems_dir
from ingest.distil import Logged, find_pairs, write_draft
from debugger.batch.queue import Queue
from ingest.sources import as_kernelbench_candidate, as_kernelbench_reference, is_candidate, is_reference


def default_drafts_dir() -> Path:
    return data_dir() / "drafts"


@dataclass
class IngestReport:
    """What an ingest read and did (the --json object)."""

    path: str
    queue: str
    drafts_dir: str
    units: dict = field(default_factory=dict)
    attempts: int = 0
    new: int = 0
    duplicates_skipped: int = 0
    classes: dict = field(default_factory=lambda: {c: 0 for c in classifier.CLASSES})
    queued: int = 0
    not_queued: dict = field(default_factory=dict)
    drafts: int = 0
    draft_paths: list = field(default_factory=list)
    drafts_skipped: dict = field(default_factory=dict)
    malformed: list = field(default_factory=list)
    skipped_files: list = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"status": "ok", "path": self.path, "units": self.units, "attempts": self.attempts,
                "new": self.new, "duplicates_skipped": self.duplicates_skipped, "classes": self.classes,
                "queued": self.queued, "not_queued": self.not_queued, "drafts": self.drafts,
                "draft_paths": self.draft_paths, "drafts_skipped": self.drafts_skipped,
                "malformed_count": len(self.malformed), "malformed": [m.to_dict() for m in self.malformed],
                "skipped_files": self.skipped_files, "queue": self.queue, "drafts_dir": self.drafts_dir,
                "seconds": round(self.seconds, 2)}


def _bump(d: dict, key: str) -> None:
    d[key] = d.get(key, 0) + 1


def read_unit(unit: Unit, problems: kernelbench.Problems):
    if unit.format == "kernelbench":
        return kernelbench.read(unit.path, problems)
    if unit.format == "traces":
        return traces.read(unit.path)
    return jsonl.read(unit.path)


def normalise(a: Attempt) -> tuple[str | None, str | None]:
    """(reference, candidate) with the class names a case needs, renames noted in a.meta."""
    reference, ref_class = as_kernelbench_reference(a.reference_src)
    candidate, cand_class = as_kernelbench_candidate(a.candidate_src, ref_class)
    renamed = {k: v for k, v in (("reference", ref_class), ("candidate", cand_class)) if v}
    if renamed:
        a.meta["renamed"] = renamed
    return reference, candidate


def _queue_reason(item: Logged) -> str | None:
    """Why a numerical mismatch cannot be queued (None: it can)."""
    if not item.reference_src:
        return "no reference (for KernelBench runs pass --problems DIR)"
    if not is_reference(item.reference_src):
        return "reference does not parse or define Model and get_inputs"
    if not is_candidate(item.candidate_src):
        return "candidate does not parse or define ModelNew"
    return None


def ingest(path: Path | str, fmt: str = "auto", *, problems: Path | str | None = None,
           queue_dir: Path | str | None = None, drafts_dir: Path | str | None = None,
           progress=None) -> IngestReport:
    """Read generation logs into the repair queue and the drafts folder (see the module doc)."""
    t0 = time.time()
    units, skipped = plan(path, fmt)
    catalogue = kernelbench.Problems(problems_dir(problems))
    queue = Queue(queue_dir)
    drafts = Path(drafts_dir) if drafts_dir else default_drafts_dir()
    report = IngestReport(path=str(path), queue=str(queue.root), drafts_dir=str(drafts), skipped_files=skipped)
    ingest_id = queue.start_ingest(str(path), fmt)
    try:
        logged: list[Logged] = []
        for unit in units:
            if progress:
                progress(f"reading {unit.format}: {unit.path}")
            _bump(report.units, unit.format)
            for item in read_unit(unit, catalogue):
                if isinstance(item, Malformed):
                    report.malformed.append(item)
                    continue
                try:
                    klass, reason = classifier.classify(item)
                    reference, candidate = normalise(item)
                    logged.append(Logged(item, klass, reason, item.content_hash(), True, reference, candidate))
                except (ValueError, TypeError, RecursionError, MemoryError) as e:  # odd data, never fatal
                    report.malformed.append(Malformed(item.location, f"could not be processed: "
                                                                     f"{e.__class__.__name__}: {str(e)[:200]}"))
        known = queue.known_attempts([x.hash for x in logged])
        seen_now: set[str] = set()
        rows = []
        for item in logged:
            report.attempts += 1
            report.classes[item.klass] += 1
            if item.hash in known or item.hash in seen_now:
                item.new = False
                report.duplicates_skipped += 1
                continue
            seen_now.add(item.hash)
            report.new += 1
            rows.append(_queue_if_near_miss(item, queue, report, ingest_id))
        queue.record_attempts(rows)
        for pair in find_pairs(logged):
            _draft(pair, queue, drafts, report)
    finally:
        report.seconds = time.time() - t0
        queue.finish_ingest(ingest_id, {k: v for k, v in report.to_dict().items() if k != "malformed"})
        queue.close()
    return report


def _queue_if_near_miss(item: Logged, queue: Queue, report: IngestReport, ingest_id: int) -> dict:
    a = item.attempt
    row = {"hash": item.hash, "problem_id": a.problem_id, "history": a.history, "class": item.klass,
           "reason": item.reason[:500], "location": a.location, "source": a.source, "format": a.format,
           "model": a.model, "tokens": a.tokens, "max_difference": a.max_difference, "entry_id": None,
           "ingest_id": ingest_id, "ingested": time.time()}
    if item.klass != "numerical_mismatch":
        return row
    why_not = _queue_reason(item)
    if why_not:
        _bump(report.not_queued, why_not)
        return row
    eid = entry_id(a, item.hash)
    folder = queue.cases_dir / eid
    write_case(folder, a, item.reference_src, item.candidate_src, item.hash, item.klass, item.reason)
    if queue.add_entry({"id": eid, "attempt_hash": item.hash, "problem_id": a.problem_id, "case_dir": str(folder)}):
        report.queued += 1
    row["entry_id"] = eid
    return row


def _draft(pair, queue: Queue, drafts: Path, report: IngestReport) -> None:
    from ingest.distil import draft_id

    did = draft_id(pair)
    if queue.draft_known(did, pair.hash):
        _bump(report.drafts_skipped, "drafted by an earlier ingest")
        return
    try:
        path, did, outcome = write_draft(pair, drafts)
    except (ValueError, TypeError, RecursionError, OSError) as e:  # a draft is a bonus; the ingest goes on
        _bump(report.drafts_skipped, f"could not be drafted: {e.__class__.__name__}")
        return
    if path is None:
        _bump(report.drafts_skipped, outcome)
        return
    queue.add_draft({"id": did, "pair_hash": pair.hash, "path": str(path), "failed_hash": pair.failed.hash,
                     "correct_hash": pair.correct.hash, "bug_class": outcome})
    report.drafts += 1
    report.draft_paths.append(str(path))
