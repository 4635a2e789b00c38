"""Moving one run's ledger rows between ledger files.

A batch worker (a local process or a Ray task on another node) repairs with a private ledger, seeded
with the main ledger's recipe outcomes so the kb backend ranks recipes as it would anyway, and hands
back the rows of its run; only the batch driver or the worker's final step writes them into the main
ledger, in one transaction. Nothing contends for the main ledger during a repair, and a remote node
needs no access to it.
"""
from __future__ import annotations

from pathlib import Path

from debugger.ledger import Ledger

RUN_TABLES = ("iterations", "events", "outcomes")


def outcomes(ledger_path: Path | str | None = None) -> list[dict]:
    """The recipe outcomes of a ledger (the kb backend's ranking data), as rows."""
    ledger = Ledger(ledger_path)
    try:
        return [dict(r) for r in ledger.db["outcomes"].rows]
    finally:
        ledger.db.conn.close()


def seed(ledger: Ledger, outcome_rows: list[dict]) -> None:
    """Give a fresh private ledger the main ledger's outcomes."""
    if outcome_rows:
        with ledger.db.conn:
            ledger.db["outcomes"].insert_all(outcome_rows)


def export_run(ledger: Ledger, run_id: str) -> dict[str, list[dict]]:
    """Every row of one run: {"runs": [...], "iterations": [...], "events": [...], "outcomes": [...]}."""
    rows = {"runs": list(ledger.db.query("select * from runs where id = ?", [run_id]))}
    for table in RUN_TABLES:
        rows[table] = list(ledger.db.query(f"select * from {table} where run_id = ?", [run_id]))
    return rows


def import_run(rows: dict[str, list[dict]], ledger_path: Path | str | None = None) -> None:
    """Write a run's rows into a ledger (the main one by default), replacing that run's earlier rows."""
    ledger = Ledger(ledger_path)
    try:
        db = ledger.db
        run_ids = [r["id"] for r in rows.get("runs", [])]
        with db.conn:
            for run_id in run_ids:
                for table in RUN_TABLES:
                    db.execute(f"delete from {table} where run_id = ?", [run_id])
            if rows.get("runs"):
                db["runs"].upsert_all(rows["runs"], pk="id", alter=True)
            if rows.get("iterations"):
                db["iterations"].upsert_all(rows["iterations"], pk=("run_id", "n"), alter=True)
            for table in ("events", "outcomes"):
                if rows.get(table):
                    db[table].insert_all(rows[table], alter=True)
    finally:
        ledger.db.conn.close()

