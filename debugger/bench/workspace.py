"""A throw-away data folder and knowledge base for one benchmark run.

The run sets KDEBUG_DATA_DIR and KDEBUG_KB_DIR to a temporary folder holding a copy of the knowledge
base, so neither the user's knowledge base, nor their ledger, nor the repository is ever written.
By default every case starts from the pristine copy (a fix learned on one case is forgotten before
the next); with `across_run` the copy and the ledger persist across the cases of the run.
"""
from __future__ import annotations

import filecmp
import os
import shutil
import tempfile
from pathlib import Path

from debugger import settings

ENV_KEYS = ("KDEBUG_DATA_DIR", "KDEBUG_KB_DIR")


def _same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    return all(_same_tree(a / d, b / d) for d in cmp.common_dirs)


class Workspace:
    """Context manager: a temporary data dir + kb copy, with the environment pointing at them."""

    def __init__(self, source_kb: Path | None = None, *, across_run: bool = False, keep: bool = False):
        self.source_kb = Path(source_kb) if source_kb else settings.kb_dir()
        self.across_run = across_run
        self.keep = keep
        self.root: Path | None = None
        self._saved_env: dict[str, str | None] = {}
        self._case_no = 0

    @property
    def kb_dir(self) -> Path:
        return self.root / "kb"

    @property
    def pristine_kb(self) -> Path:
        return self.root / "kb-pristine"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def __enter__(self) -> "Workspace":
        self.root = Path(tempfile.mkdtemp(prefix="kdebug-bench-"))
        if self.source_kb.is_dir():
            shutil.copytree(self.source_kb, self.pristine_kb)
        else:
            (self.pristine_kb / "patterns").mkdir(parents=True)
        shutil.copytree(self.pristine_kb, self.kb_dir)
        self.data_dir.mkdir()
        for key in ENV_KEYS:
            self._saved_env[key] = os.environ.get(key)
        os.environ["KDEBUG_DATA_DIR"] = str(self.data_dir)
        os.environ["KDEBUG_KB_DIR"] = str(self.kb_dir)
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
        """Between cases (isolated runs): put the pristine knowledge base back. True if it had changed."""
        if self.across_run or _same_tree(self.kb_dir, self.pristine_kb):
            return False
        shutil.rmtree(self.kb_dir)
        shutil.copytree(self.pristine_kb, self.kb_dir)
        return True

    def learned_patterns(self) -> list[Path]:
        """Pattern files present now that the pristine copy did not have."""
        before = {p.relative_to(self.pristine_kb) for p in self.pristine_kb.rglob("*.md")}
        return sorted(p for p in self.kb_dir.rglob("*.md") if p.relative_to(self.kb_dir) not in before)
