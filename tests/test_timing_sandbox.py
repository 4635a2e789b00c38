"""The timing process confines untrusted implementations as a sandbox worker does (debugger/bench/timing.py)."""
from __future__ import annotations

import pytest

from debugger.bench.perf import run_timing

REFERENCE = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return x * 2

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return []
'''

HONEST = '''
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return x + x
'''


def reading(path) -> str:
    return HONEST + f"\nSECRET = open({str(path)!r}).read()\n"


WRITING = HONEST + "\nimport os\nopen(os.path.expanduser('~') + '/../../kdebug-timing-escape', 'w').write('x')\n"
SPAWNING = HONEST + "\nimport subprocess\nsubprocess.run(['sh', '-c', 'true'])\n"


@pytest.fixture
def case(tmp_path):
    folder = tmp_path / "case"
    folder.mkdir()
    (folder / "expected.txt").write_text("the answer")
    cache = tmp_path / "cache"
    cache.mkdir()
    return folder, cache


def build(implementations: dict, folder, cache, sandbox=True) -> dict:
    spec = {"op": "build", "device": "cpu", "reference_src": REFERENCE, "implementations": implementations}
    if sandbox:
        spec["sandbox"] = {"deny_read": [str(folder)], "cache": str(cache)}
    return run_timing(spec, timeout=120)


def test_honest_implementation_builds_and_escapes_are_refused(case):
    folder, cache = case
    out = build({"honest": HONEST, "reads": reading(folder / "expected.txt"), "spawns": SPAWNING}, folder, cache)
    assert out["ok"] and out["honest"] == {"ok": True}
    assert "PermissionError" in out["reads"]["error"] and "not allowed" in out["reads"]["error"]
    assert "PermissionError" in out["spawns"]["error"]


def test_writes_outside_scratch_and_cache_are_refused(case, tmp_path):
    folder, cache = case
    out = build({"writes": WRITING}, folder, cache)
    assert "PermissionError" in out["writes"]["error"]


def test_without_a_sandbox_the_same_read_succeeds(case):
    """The refusal above comes from the sandbox, not from the file: the unconfined process reads it."""
    folder, cache = case
    out = build({"reads": reading(folder / "expected.txt")}, folder, cache, sandbox=False)
    assert out["reads"] == {"ok": True}


def _script(name: str):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "eval" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_repair_timing_times_the_original_beside_the_repair_and_tables_the_rows(tmp_path):
    timing = _script("real_repair_timing")
    repairs, originals = tmp_path / "repairs", tmp_path / "cases"
    for root, src in ((repairs, HONEST), (originals, HONEST.replace("x + x", "x * 2"))):
        (root / "a__level1__1").mkdir(parents=True)
        (root / "a__level1__1" / "reference.py").write_text(REFERENCE)
        (root / "a__level1__1" / "candidate.py").write_text(src)
    (repairs / "b__level1__2").mkdir()  # no reference: not a case folder
    (repairs / "b__level1__2" / "candidate.py").write_text(HONEST)
    folders = timing.case_folders(repairs, None)
    assert [f.name for f in folders] == ["a__level1__1"]
    assert timing.implementations(folders[0], originals) == {"repaired": HONEST,
                                                             "candidate": HONEST.replace("x + x", "x * 2")}
    assert timing.implementations(folders[0], None) == {"repaired": HONEST}
    rows = [timing.row_of(folders[0], {"reference_ms": 2.0, "repaired_ms": 1.0, "candidate_ms": 1.1,
                                       "speedup_vs_reference": 2.0, "spread": {"reference": 0.01}}, 3.0),
            {"id": "b/level1/2", "error": "build: OSError: nvcc failed"}]
    text = timing.table(rows, "python eval/real_repair_timing.py R --out O")
    assert "1 of 2 repairs timed" in text and "| a/level1/1 | 2.000 | 1.000 | 2.00x | 1.100 |" in text
    assert "build: OSError: nvcc failed" in text


def test_a_timing_process_past_its_timeout_is_ended_with_what_it_started(tmp_path, monkeypatch):
    """A build cut by the timeout used to leave its compilers running (only the timing process was killed),
    holding the cores the next builds needed. Here the 'timing process' starts a child of its own and hangs."""
    import os
    import time

    import debugger.bench.perf as perf

    pid_file = tmp_path / "child.pid"
    fake = tmp_path / "fake_python"
    fake.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pid_file}\nwait\n")
    fake.chmod(0o755)
    monkeypatch.setattr(perf.sys, "executable", str(fake))
    out = run_timing({"op": "ceilings"}, timeout=2)
    assert "within 2 s" in out["error"]
    child = int(pid_file.read_text())
    for _ in range(50):  # reaped by init shortly after the kill
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the timing process's child outlived its timeout")
