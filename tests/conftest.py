"""Shared test setup: an isolated data folder, offline model loading, small helpers."""
import os
import sys
import tempfile
from pathlib import Path

import pytest

_OWN_DATA = "KDEBUG_DATA_DIR" not in os.environ  # made here: removed when the run ends
_DATA = tempfile.mkdtemp(prefix="kdebug-test-data-") if _OWN_DATA else os.environ["KDEBUG_DATA_DIR"]
# Learned patterns, the index and the ledger go to the data folder (<data>/kb for learned patterns);
# the curated kb/ of the repository is only read (tests/test_packaging.py checks it stays so).
os.environ.setdefault("KDEBUG_DATA_DIR", _DATA)
# One build folder for the whole run (every xdist worker shares KDEBUG_DATA_DIR when the command sets it):
# tests that give each case a data folder of its own would otherwise compile the same CUDA source again
# (builds are keyed by their sources, debugger/sandbox/roles.py).
os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(Path(os.environ["KDEBUG_DATA_DIR"]) / "torch_extensions"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


@pytest.fixture
def repo() -> Path:
    return REPO


def write_case(folder: Path, reference: str, candidate: str) -> Path:
    """Write a case folder (reference.py + candidate.py) and return it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.py").write_text(reference)
    (folder / "candidate.py").write_text(candidate)
    return folder


_FAILURE_LOG = os.environ.get("KDEBUG_FAILURE_LOG")


def pytest_sessionfinish(session):
    """The data folder this file made (its builds, the emulation's ~800 MB precompiled header) goes with the
    run; the xdist controller removes it, after its workers are done."""
    if _OWN_DATA and not hasattr(session.config, "workerinput"):
        import shutil

        shutil.rmtree(_DATA, ignore_errors=True)


def pytest_runtest_logreport(report):
    """KDEBUG_FAILURE_LOG=FILE: each failure's report appended to FILE as the test ends. A GPU run cut at its
    device deadline never reaches pytest's closing summary, which is where failures are otherwise told."""
    if _FAILURE_LOG and report.failed:
        with open(_FAILURE_LOG, "a") as f:
            f.write(f"=== {report.nodeid} ({report.when})\n{report.longreprtext[-6000:]}\n")
