"""One queue entry through `repair()`: the unit of work of a local worker and of a Ray task alike.

The payload carries the sources, so a node that cannot see the queue folder can still repair the
entry (then the repaired source comes back and the driver writes the files); where the case folder
is there, the repair writes its outputs beside the candidate as `kdebug repair` does. The repair runs
exactly as `kdebug repair` runs it, with a private ledger whose rows come back with the result.
"""
from __future__ import annotations

import tempfile
import tomllib
from pathlib import Path

RESULT_FIELDS = ("status", "output", "iterations", "bug_class", "guard", "run_id", "message", "seconds", "report")
OUTPUT_NAME = "candidate.repaired.py"


def payload(entry: dict) -> dict:
    """Everything a repair of this entry needs, self-contained."""
    folder = Path(entry["case_dir"])
    toml = folder / "case.toml"
    return {"id": entry["id"], "case_dir": str(folder),
            "reference_src": (folder / "reference.py").read_text(),
            "candidate_src": (folder / "candidate.py").read_text(),
            "case_toml": toml.read_text() if toml.is_file() else None}


def _case(p: dict):
    """(case, output path or None): from the folder where this node sees it unchanged, else from sources."""
    from debugger.case import case_from_sources, load_case

    folder = Path(p["case_dir"])
    candidate = folder / "candidate.py"
    try:
        here = candidate.is_file() and candidate.read_text() == p["candidate_src"]
    except OSError:
        here = False
    if here:
        return load_case(folder), folder / OUTPUT_NAME
    meta = tomllib.loads(p["case_toml"]) if p.get("case_toml") else {}
    return case_from_sources(p["reference_src"], p["candidate_src"], name=p["id"], atol=meta.get("atol"),
                             rtol=meta.get("rtol")), None


def run_task(p: dict, flags: dict, outcome_rows: list[dict], progress=None) -> dict:
    """Repair one entry; returns {"result", "repaired_src", "diff", "wrote_files", "ledger_rows", "device"}."""
    from debugger.batch.ledger_rows import export_run, seed
    from debugger.errors import InvalidInput
    from debugger.ledger import Ledger
    from debugger.repair import repair
    from debugger.settings import resolve

    settings = resolve(**flags)
    try:
        case, output = _case(p)
    except InvalidInput as e:
        return {"result": {"status": "invalid_input", "message": str(e), "iterations": 0}, "ledger_rows": {},
                "wrote_files": False, "device": settings.device}
    with tempfile.TemporaryDirectory(prefix="kdebug-batch-") as tmp:
        ledger = Ledger(Path(tmp) / "ledger.db")
        try:
            seed(ledger, outcome_rows)
            result = repair(case, settings=settings, output=output, write_files=output is not None,
                            progress=progress, ledger=ledger)
            rows = export_run(ledger, result.run_id) if result.run_id else {}
        finally:
            ledger.db.conn.close()
    summary = {k: getattr(result, k) for k in RESULT_FIELDS}
    summary["tokens"] = dict(result.tokens or {})
    return {"result": summary, "repaired_src": result.repaired_src if output is None else None,
            "diff": result.diff, "wrote_files": output is not None, "ledger_rows": rows, "device": settings.device}


def write_outputs(case_dir: Path | str, out: dict) -> str | None:
    """Write a repair that came back as source (a node without the folder) beside the candidate."""
    from debugger.repair.run import MARKER

    src = out.get("repaired_src")
    if out.get("wrote_files") or not src:
        return out["result"].get("output")
    path = Path(case_dir) / OUTPUT_NAME
    run_id = out["result"].get("run_id")
    path.write_text(f"{MARKER} ({run_id}); diff against candidate.py in {path.stem}.diff\n" + src)
    path.with_suffix(".diff").write_text(out.get("diff") or "")
    return str(path)


def record(queue, entry_id: str, worker: str, out: dict, ledger_path=None) -> bool:
    """Land a finished repair: the entry becomes done (if `worker` still holds it), then the ledger rows."""
    from debugger.batch.ledger_rows import import_run

    entry = queue.entry(entry_id)
    output = write_outputs(entry["case_dir"], out) if entry else None
    r = out["result"]
    tokens = r.get("tokens") or {}
    fields = {"result_status": r.get("status"), "run_id": r.get("run_id"), "output": output,
              "iterations": r.get("iterations"), "prompt_tokens": tokens.get("prompt"),
              "completion_tokens": tokens.get("completion"), "seconds": r.get("seconds"),
              "bug_class": r.get("bug_class"), "message": (r.get("message") or "")[:1000]}
    landed = queue.finish(entry_id, worker, "done", fields)
    if landed and out.get("ledger_rows"):
        import_run(out["ledger_rows"], ledger_path)
    return landed


def record_failure(queue, entry_id: str, worker: str, message: str) -> bool:
    """The repair itself crashed (not the candidate): the entry becomes failed with the error."""
    return queue.finish(entry_id, worker, "failed", {"result_status": "error", "message": message[:1000]})
