"""A pool run on a GPU builds each answer's extension before its evaluation is admitted by GPU memory
(eval/real_pool.py prebuild, debugger/bench/perf.build_extension): the build must land in the very folder the
evaluation then loads from, without building again, and must put nothing on the device (no ModelNew). On the
H100 an agreement command judged 7 answers in 300 s: each held 32-64 GiB of the memory budget through its
minute of nvcc. Checked here with a C++ extension the CPU builds."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from debugger.bench.perf import run_timing
from debugger.case import case_from_sources
from debugger.evaluate import run_evaluation, sandbox_cache_dir
from debugger.lang.cuda.sources import build_key
from debugger.sandbox.pool import Sandbox
from tests.test_extension_sandbox import CANDIDATE, REFERENCE

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("real_pool_for_prebuild", REPO / "eval" / "real_pool.py")
real_pool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(real_pool)

# builds the same extension at import, but refuses to be constructed
UNCONSTRUCTIBLE = CANDIDATE.replace("class ModelNew(nn.Module):\n",
                                    "class ModelNew(nn.Module):\n    def __init__(self):\n"
                                    "        raise RuntimeError('constructed')\n")


def answer_case(root: Path, candidate: str) -> Path:
    folder = root / "cases" / "a__level1__1"
    folder.mkdir(parents=True)
    (folder / "reference.py").write_text(REFERENCE)
    (folder / "candidate.py").write_text(candidate)
    return folder


def built_library(data: Path, candidate: str) -> Path:
    folder = sandbox_cache_dir(data) / "torch_extensions" / build_key(candidate) / "relu2_ext"
    return folder / "relu2_ext.so"


def own_extensions_base(monkeypatch) -> None:
    """Builds under the data folder's cache, as on the GPU machines (the suite sets TORCH_EXTENSIONS_DIR)."""
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    monkeypatch.delenv("KDEBUG_TORCH_EXTENSIONS_BASE", raising=False)


def test_the_prebuild_constructs_nothing_and_the_evaluation_loads_its_build(tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("KDEBUG_DATA_DIR", str(data))
    own_extensions_base(monkeypatch)
    case = answer_case(tmp_path, UNCONSTRUCTIBLE)
    built = real_pool.prebuild(case, real_pool.Kdebug(data), 300)
    assert built["ok"] is True and built["seconds"] > 0, built  # constructing ModelNew would have raised
    library = built_library(data, UNCONSTRUCTIBLE)
    assert library.is_file(), sorted(p.name for p in (sandbox_cache_dir(data) / "torch_extensions").rglob("*"))
    stamp = library.stat().st_mtime_ns
    # the timing's build op with construct (its default) does construct ModelNew: the error shows there
    out = run_timing({"op": "build", "device": "cpu", "reference_src": REFERENCE,
                      "implementations": {"c": UNCONSTRUCTIBLE},
                      "sandbox": {"deny_read": [str(case)], "cache": str(sandbox_cache_dir(data))}}, 300)
    assert "constructed" in out["c"]["error"]

    # CANDIDATE differs from it in host code only: the same build, which its evaluation loads
    assert build_key(CANDIDATE) == build_key(UNCONSTRUCTIBLE)
    sandbox = Sandbox("cpu", timeout=300)  # its workers start with KDEBUG_DATA_DIR=data, as `kdebug eval`'s do
    try:
        report = run_evaluation(case_from_sources(REFERENCE, CANDIDATE), device="cpu",
                                checks=[{"name": "seed0", "kind": "seed", "seed": 0}], timeout=300,
                                sandbox=sandbox).report
    finally:
        sandbox.close()
    assert report.status == "pass", report.message
    assert library.stat().st_mtime_ns == stamp  # loaded, not built again
    assert [p.name for p in (sandbox_cache_dir(data) / "torch_extensions").iterdir()] == [build_key(CANDIDATE)]


def test_answers_that_build_no_extension_are_not_prebuilt(tmp_path):
    case = answer_case(tmp_path, REFERENCE.replace("class Model(", "class ModelNew("))
    assert real_pool.prebuild(case, real_pool.Kdebug(tmp_path / "data"), 60) is None


def test_a_failing_build_is_reported_not_raised(tmp_path):
    broken = CANDIDATE.replace("ext = load_inline(", "raise ImportError('no extension')\next = load_inline(")
    case = answer_case(tmp_path, broken)
    built = real_pool.prebuild(case, real_pool.Kdebug(tmp_path / "data"), 300)
    assert "no extension" in built["error"] and "ok" not in built, built
