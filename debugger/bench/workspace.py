"""A throw-away data folder for one benchmark run.

The run sets KDEBUG_DATA_DIR to a temporary folder: the index, the ledger and the user's layer of the
knowledge base (learned patterns, <data>/kb) all live there, so neither the user's own data, nor
their learned patterns, nor the repository is ever written or read; the curated knowledge base is
only read. By default every case starts from the curated knowledge base alone (a fix learned on one
case is forgotten before the next); with `across_run` the learned patterns and the ledger persist
across the cases of the run.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from debugger import settings

ENV_KEYS = ("KDEBUG_DATA_DIR",)


class Workspace:
    """Context manager: a temporary data dir, with the environment pointing at it."""

    def __init__(self, *, across_run: bool = False, keep: bool = False):
        self.across_run = across_run
        self.keep = keep
        self.root: Path | None = None
        self._saved_env: dict[str, str | None] = {}
        self._case_no = 0

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def learned_dir(self) -> Path:
        """The run's layer of the knowledge base (what the write-back adds)."""
        return settings.user_kb_dir(self.data_dir)

    def __enter__(self) -> "Workspace":
        self.root = Path(tempfile.mkdtemp(prefix="kdebug-bench-"))
        self.data_dir.mkdir()
        for key in ENV_KEYS:
            self._saved_env[key] = os.environ.get(key)
        os.environ["KDEBUG_DATA_DIR"] = str(self.data_dir)
        return self

    def __exit__(self, *exc) -> None:
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if not self.keep and self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def ledger(self):
        """The ledger for the next case: shared across the run, or a fresh one per case (isolated)."""
        from debugger.ledger import Ledger

        self._case_no += 1
        if self.across_run:
            return Ledger(self.data_dir / "ledger.db")
        return Ledger(self.data_dir / f"ledger-{self._case_no:04d}.db")

    def reset_knowledge(self) -> bool:
        """Between cases (isolated runs): forget what the last case learned. True if it had learned any."""
        if self.across_run or not self.learned_patterns():
            return False
        shutil.rmtree(self.learned_dir)
        return True

    def learned_patterns(self) -> list[Path]:
        """Pattern files the run has added to its layer of the knowledge base."""
        root = self.learned_dir
        return sorted(root.rglob("*.md")) if root.is_dir() else []
