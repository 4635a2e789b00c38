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
# Every test that indexes the knowledge base in a data folder of its own embeds the same texts: the vectors are
# computed once for the run (debugger/knowledge/embedder.py): a full index took 38 s here beside other work.
os.environ.setdefault("KDEBUG_EMBEDDING_CACHE", str(Path(os.environ["KDEBUG_DATA_DIR"]) / "embedding_cache"))
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


def kernel_source(candidate: str) -> str:
    """The CUDA source (the one defining a `__global__` kernel) a candidate file hands to load_inline."""
    from debugger.lang.cuda.sources import find_sources

    return next(s.text for s in find_sources(candidate) if "__global__" in s.text)


def one_function_candidate(cuda: str, name: str) -> str:
    """A candidate file whose load_inline builds `cuda`, defining `torch::Tensor name(torch::Tensor x)`, and
    whose ModelNew returns name(x.contiguous())."""
    return ('import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n'
            f'cuda_src = r"""{cuda}"""\n\n'
            f'ext = load_inline(name="{name}", cpp_sources="torch::Tensor {name}(torch::Tensor x);", '
            f'cuda_sources=cuda_src, functions=["{name}"])\n\n\n'
            'class ModelNew(nn.Module):\n    def forward(self, x):\n'
            f'        return ext.{name}(x.contiguous())\n')


def emulated_extension(build_dir: Path, name: str, cuda_sources: list[str], declarations: list[str],
                       functions: list[str]):
    """One extension built from several CUDA sources through kdebug's CPU emulation of CUDA (with the
    precompiled torch header), this process's loaders left as they are: before and after of a fix side by
    side for the price of one build."""
    from torch.utils import cpp_extension

    from debugger.lang.cuda import emulate

    load_inline = emulate.make_load_inline(cpp_extension.load_inline, emulate.header_pch())
    return load_inline(name=name, cpp_sources="\n".join(declarations), cuda_sources="\n".join(cuda_sources),
                       functions=functions, build_directory=str(build_dir))


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
