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
