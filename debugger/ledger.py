"""The ledger: every repair run, iteration, patch, evaluation, guard, verdict and token count, in SQLite.

Schema changes are named migrations applied in order (sqlite-utils). The kb backend learns its recipe
ranking from the `outcomes` table (which recipe fixed which symptoms).
"""
from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import sqlite_utils

from debugger.settings import data_dir


def _m001_initial(db: sqlite_utils.Database) -> None:
    db["runs"].create({"id": str, "case": str, "case_digest": str, "started": float, "finished": float,
                       "backend": str, "device": str, "status": str, "guard": str, "iterations": int,
                       "prompt_tokens": int, "completion_tokens": int, "seconds": float, "bug_class": str,
                       "output": str, "message": str}, pk="id", if_not_exists=True)
    db["iterations"].create({"run_id": str, "n": int, "origin": str, "recipe": str, "bug_class": str,
                             "description": str, "patch_hash": str, "status_before": str, "status_after": str,
                             "error_before": float, "error_after": float, "signature": str, "outcome": str,
                             "prompt_tokens": int, "completion_tokens": int, "seconds": float, "diff": str},
                            pk=("run_id", "n"), if_not_exists=True)
    db["events"].create({"run_id": str, "at": float, "node": str, "kind": str, "detail": str},
                        if_not_exists=True)
    db["outcomes"].create({"run_id": str, "recipe": str, "features": str, "result": str, "at": float},
                          if_not_exists=True)


def _m002_tool_calls(db: sqlite_utils.Database) -> None:
    # the openai backend's tool loop: one row per model call (kind model, with its tokens), per tool
    # call (kind tool), and per fallback or stop
    db["tool_calls"].create({"run_id": str, "seq": int, "iteration": int, "kind": str, "tool": str,
                             "arguments": str, "ok": int, "result_chars": int, "prompt_tokens": int,
                             "completion_tokens": int, "seconds": float, "detail": str, "at": float},
                            pk=("run_id", "seq"), if_not_exists=True)


MIGRATIONS = [("m001_initial", _m001_initial), ("m002_tool_calls", _m002_tool_calls)]


class Ledger:
    """Access to the ledger database (default: <data dir>/ledger.db)."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else data_dir() / "ledger.db"
        self.db = sqlite_utils.Database(self.path)
        self._migrate()

    def _migrate(self) -> None:
        self.db["_migrations"].create({"name": str, "applied": float}, pk="name", if_not_exists=True)
        done = {r["name"] for r in self.db["_migrations"].rows}
        for name, fn in MIGRATIONS:
            if name not in done:
                with self.db.conn:
                    fn(self.db)
                    self.db["_migrations"].insert({"name": name, "applied": time.time()})

    def start_run(self, *, case: str, case_digest: str, backend: str, device: str, run_id: str | None = None) -> str:
        run_id = run_id or uuid.uuid4().hex[:12]
        self.db["runs"].upsert({"id": run_id, "case": case, "case_digest": case_digest, "started": time.time(),
                                "backend": backend, "device": device, "status": "running"}, pk="id")
        return run_id

    def finish_run(self, run_id: str, **fields) -> None:
        self.db["runs"].update(run_id, {**fields, "finished": time.time()})

    def iteration(self, run_id: str, record: dict) -> None:
        self.db["iterations"].upsert({"run_id": run_id, **record}, pk=("run_id", "n"), alter=True)

    def event(self, run_id: str, node: str, kind: str, detail) -> None:
        self.db["events"].insert({"run_id": run_id, "at": time.time(), "node": node, "kind": kind,
                                  "detail": json.dumps(detail, default=str)[:4000]})

    def outcome(self, run_id: str, recipe: str, features: list[str], result: str) -> None:
        self.db["outcomes"].insert({"run_id": run_id, "recipe": recipe, "features": json.dumps(sorted(features)),
                                    "result": result, "at": time.time()})

    def tool_call(self, run_id: str, record: dict) -> None:
        """One row of the tool loop (see _m002_tool_calls); `arguments` and `detail` are cut to 4000 chars."""
        seq = self.db.execute("select count(*) from tool_calls where run_id = ?", [run_id]).fetchone()[0]
        row = {"run_id": run_id, "seq": seq, "at": time.time(), "prompt_tokens": 0, "completion_tokens": 0, **record}
        for key in ("arguments", "detail"):
            if row.get(key) is not None:
                row[key] = str(row[key])[:4000]
        self.db["tool_calls"].insert(row, alter=True)

    def tool_calls(self, run_id: str) -> list[dict]:
        return list(self.db.query("select * from tool_calls where run_id = ? order by seq", [run_id]))

    def outcomes(self) -> list[dict]:
        return [dict(r, features=json.loads(r["features"])) for r in self.db["outcomes"].rows]

    def runs(self, limit: int = 50) -> list[dict]:
        return list(self.db.query("select * from runs order by started desc limit ?", [limit]))

    def run(self, run_id: str) -> dict | None:
        rows = list(self.db.query("select * from runs where id = ?", [run_id]))
        return rows[0] if rows else None

    def iterations(self, run_id: str) -> list[dict]:
        return list(self.db.query("select * from iterations where run_id = ? order by n", [run_id]))
