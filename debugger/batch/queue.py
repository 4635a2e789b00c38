"""The repair queue: ingested attempts, queue entries with their case folders, and drafts, in SQLite.

Layout (default `<data dir>/queue/`, or `--queue DIR`):

    queue.db             attempts (content hash -> class, provenance), entries, drafts, ingests
    cases/<entry id>/    reference.py, candidate.py, case.toml (provenance); a repair writes
                         candidate.repaired.py (+ .diff, .md) beside them

An entry's life: queued -> running (worker, host, pid, started, lease_until) -> done | failed.
`claim` takes the oldest queued entry in one IMMEDIATE transaction, so two workers never get the
same one; a running worker renews its lease (`heartbeat`); `finish` only lands for the worker that
holds the entry; `recover` puts back running entries whose process on this host is gone (or, for a
holder on another host, whose lease ran out), so a crashed or interrupted batch loses nothing and repairs nothing twice.
Schema changes are named migrations, as in the ledger.
"""
from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path

import sqlite_utils

from debugger.settings import data_dir

STATUSES = ("queued", "running", "done", "failed")


def default_queue_dir() -> Path:
    return data_dir() / "queue"


def _m001_initial(db: sqlite_utils.Database) -> None:
    db["attempts"].create({"hash": str, "problem_id": str, "history": str, "class": str, "reason": str,
                           "location": str, "source": str, "format": str, "model": str, "tokens": int,
                           "max_difference": float, "entry_id": str, "ingest_id": int, "ingested": float},
                          pk="hash", if_not_exists=True)
    db["entries"].create({"id": str, "attempt_hash": str, "problem_id": str, "case_dir": str, "status": str,
                          "created": float, "worker": str, "host": str, "pid": int, "started": float,
                          "lease_until": float, "finished": float, "tries": int, "result_status": str,
                          "run_id": str, "output": str, "iterations": int, "prompt_tokens": int,
                          "completion_tokens": int, "seconds": float, "bug_class": str, "message": str},
                         pk="id", if_not_exists=True)
    db["entries"].create_index(["status", "created"], if_not_exists=True)
    db["drafts"].create({"id": str, "pair_hash": str, "path": str, "failed_hash": str, "correct_hash": str,
                         "bug_class": str, "created": float}, pk="id", if_not_exists=True)
    db["ingests"].create({"id": int, "path": str, "format": str, "started": float, "finished": float,
                          "summary": str}, pk="id", if_not_exists=True)


MIGRATIONS = [("m001_initial", _m001_initial)]


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Queue:
    """The queue database and case folders under one directory."""

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root else default_queue_dir()
        self.root.mkdir(parents=True, exist_ok=True)
        self.cases_dir = self.root / "cases"
        self.path = self.root / "queue.db"
        conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=60000")
        self.db = sqlite_utils.Database(conn)
        self._migrate()

    def close(self) -> None:
        self.db.conn.close()

    @contextmanager
    def transaction(self):
        """BEGIN IMMEDIATE .. COMMIT: the write lock is taken up front, so read-then-write is atomic."""
        self.db.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.conn.execute("ROLLBACK")
            raise
        self.db.conn.execute("COMMIT")

    def _migrate(self) -> None:
        with self.transaction() as db:
            db["_migrations"].create({"name": str, "applied": float}, pk="name", if_not_exists=True)
            done = {r["name"] for r in db["_migrations"].rows}
            for name, fn in MIGRATIONS:
                if name not in done:
                    fn(db)
                    db["_migrations"].insert({"name": name, "applied": time.time()})

    # -- ingest side ---------------------------------------------------------------------------
    def start_ingest(self, path: str, fmt: str) -> int:
        with self.transaction() as db:
            return db["ingests"].insert({"path": path, "format": fmt, "started": time.time()}).last_pk

    def finish_ingest(self, ingest_id: int, summary: dict) -> None:
        with self.transaction() as db:
            db["ingests"].update(ingest_id, {"finished": time.time(), "summary": json.dumps(summary, default=str)})

    def known_attempts(self, hashes: list[str]) -> set[str]:
        """Which of these attempt hashes were ingested before."""
        known: set[str] = set()
        for i in range(0, len(hashes), 500):
            chunk = hashes[i:i + 500]
            marks = ",".join("?" * len(chunk))
            known.update(r[0] for r in self.db.execute(f"select hash from attempts where hash in ({marks})", chunk))
        return known

    def record_attempts(self, rows: list[dict]) -> None:
        with self.transaction() as db:
            db["attempts"].insert_all(rows, pk="hash", ignore=True)

    def add_entry(self, entry: dict) -> bool:
        """Queue an entry (status queued); False if its id is already there."""
        with self.transaction() as db:
            if db.execute("select 1 from entries where id = ?", [entry["id"]]).fetchone():
                return False
            db["entries"].insert({**entry, "status": "queued", "created": time.time(), "tries": 0})
        return True

    def add_draft(self, row: dict) -> bool:
        with self.transaction() as db:
            if db.execute("select 1 from drafts where id = ? or pair_hash = ?",
                          [row["id"], row["pair_hash"]]).fetchone():
                return False
            db["drafts"].insert({**row, "created": time.time()})
        return True

    def draft_known(self, draft_id: str, pair_hash: str) -> bool:
        return self.db.execute("select 1 from drafts where id = ? or pair_hash = ?",
                               [draft_id, pair_hash]).fetchone() is not None

    # -- worker side ---------------------------------------------------------------------------
    def claim(self, worker: str, lease_s: float, pid: int | None = None, only: list[str] | None = None) -> dict | None:
        """Take the oldest queued entry (of `only`, when given) for `worker`, atomically; None when none is left."""
        now = time.time()
        where, params = "status = 'queued'", []
        if only is not None:
            if not only:
                return None
            where += f" and id in ({','.join('?' * len(only))})"
            params = list(only)
        with self.transaction() as db:
            row = db.execute(f"select id from entries where {where} order by created, id limit 1", params).fetchone()
            if row is None:
                return None
            db.execute("update entries set status = 'running', worker = ?, host = ?, pid = ?, started = ?, "
                       "lease_until = ?, tries = coalesce(tries, 0) + 1 where id = ? and status = 'queued'",
                       [worker, socket.gethostname(), pid or os.getpid(), now, now + lease_s, row[0]])
        return self.entry(row[0])

    def heartbeat(self, entry_id: str, worker: str, lease_s: float) -> bool:
        """Renew the lease; False if the entry is no longer this worker's."""
        with self.transaction() as db:
            cur = db.execute("update entries set lease_until = ? where id = ? and worker = ? and status = 'running'",
                             [time.time() + lease_s, entry_id, worker])
            return cur.rowcount == 1

    def finish(self, entry_id: str, worker: str, status: str, fields: dict) -> bool:
        """Record the outcome (status done or failed); lands only if `worker` still holds the entry."""
        if status not in ("done", "failed"):
            raise ValueError(f"finish: status must be done or failed, not {status!r}")
        with self.transaction() as db:
            row = db.execute("select 1 from entries where id = ? and worker = ? and status = 'running'",
                             [entry_id, worker]).fetchone()
            if row is None:
                return False
            db["entries"].update(entry_id, {**fields, "status": status, "finished": time.time(),
                                            "lease_until": None})
        return True

    def release(self, entry_id: str, worker: str) -> bool:
        """Give an entry back (interrupted before it finished): running -> queued."""
        with self.transaction() as db:
            cur = db.execute("update entries set status = 'queued', worker = null, pid = null, lease_until = null "
                             "where id = ? and worker = ? and status = 'running'", [entry_id, worker])
            return cur.rowcount == 1

    def recover(self, max_tries: int | None = None) -> list[str]:
        """Put back running entries whose holder is gone: on this host, its process is dead; elsewhere,
        its lease ran out. An entry that has already been tried `max_tries` times fails instead."""
        now, host = time.time(), socket.gethostname()
        with self.transaction() as db:
            rows = db.execute("select id, lease_until, host, pid, tries from entries where status = 'running'").fetchall()
            stale = [r for r in rows if (not pid_alive(r[3]) if r[2] == host else (r[1] or 0) < now)]
            for entry_id, _, _, _, tries in stale:
                if max_tries is not None and (tries or 0) >= max_tries:
                    db.execute("update entries set status = 'failed', result_status = 'error', finished = ?, "
                               "lease_until = null, message = ? where id = ? and status = 'running'",
                               [now, f"its worker died on each of {tries} tries", entry_id])
                else:
                    db.execute("update entries set status = 'queued', worker = null, pid = null, lease_until = null "
                               "where id = ? and status = 'running'", [entry_id])
        return [r[0] for r in stale]

    # -- reading -------------------------------------------------------------------------------
    def entry(self, entry_id: str) -> dict | None:
        rows = list(self.db.query("select * from entries where id = ?", [entry_id]))
        return rows[0] if rows else None

    def entries(self, status: str | None = None) -> list[dict]:
        if status:
            return list(self.db.query("select * from entries where status = ? order by created, id", [status]))
        return list(self.db.query("select * from entries order by created, id"))

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for status, n in self.db.execute("select status, count(*) from entries group by status"):
            out[status] = n
        return out
