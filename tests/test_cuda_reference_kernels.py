"""The knowledge base's CUDA reference kernels (kb/reference_kernels/cuda_*, `language = "cuda"` in
kernel.toml): well-formed, readable to kdebug's CUDA layer, honest, found by retrieval, and correct.

On the CPU: each folder loads as a `language = "cuda"` reference kernel, its load_inline sources parse
with tree-sitter-cuda with no ERROR node, no CUDA static fact fires on it (no unguarded access, no
floor-divided grid, no missing __syncthreads, ...), the integrity gate's static rules accept it under
both policies, and retrieval hands a CUDA candidate a CUDA reference kernel (each one for its own
operator) and a Triton candidate a Triton one. On a GPU (`-m gpu`, skipped without CUDA): kdebug's
evaluation on device cuda passes, and so does the whole integrity gate (its dynamic run included).
"""
from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from debugger import lang
from debugger.lang.cuda import units
from debugger.lang.cuda.splice import error_count
from debugger.knowledge import KnowledgeBase
from debugger.knowledge.loader import load_reference_kernel

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "kb" / "reference_kernels"
CUDA_KERNELS = sorted(d.name for d in ROOT.iterdir() if (d / "kernel.toml").is_file()
                      and tomllib.loads((d / "kernel.toml").read_text()).get("language") == "cuda")
# What issue 18 asks for, by operator.
REQUIRED = {"row_sum", "softmax", "layernorm", "batchnorm_train", "batchnorm_eval", "conv2d", "conv_transpose2d",
            "matmul", "cumsum"}
TRITON_FOR_RETRIEVAL = ("softmax", "row_sum", "layernorm", "matmul", "cumsum", "gelu")


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


GPU = [pytest.mark.gpu, pytest.mark.skipif(not _has_cuda(), reason="a CUDA reference kernel runs on a GPU")]


def test_every_required_operator_has_a_cuda_reference_kernel():
    operators = {load_reference_kernel(ROOT / name).operator for name in CUDA_KERNELS}
    assert REQUIRED <= operators, f"missing: {sorted(REQUIRED - operators)}"


@pytest.mark.parametrize("name", CUDA_KERNELS)
def test_parses_as_cuda_with_no_static_fact(name):
    kernel = load_reference_kernel(ROOT / name)
    assert kernel.language == "cuda" and "load_inline" in kernel.kernel_src
    us = units(kernel.kernel_src)
    assert any(u.kernels for u in us), "no __global__ kernel found in the load_inline sources"
    assert any(u.launches for u in us), "no <<<grid, block>>> launch found in host code"
    assert error_count(us) == 0, "tree-sitter-cuda ERROR/MISSING nodes in the CUDA source"
    assert lang.get("cuda").uses(kernel.kernel_src)
    facts = lang.get("cuda").static_facts(kernel.kernel_src)
    assert facts == [], [(f.tag, f.line, f.message) for f in facts]


@pytest.mark.parametrize("name", CUDA_KERNELS)
@pytest.mark.parametrize("policy", ["kernelbench", "strict"])
def test_static_integrity_accepts(name, policy):
    from debugger.integrity.findings import REJECT
    from debugger.integrity.static import static_findings

    folder = ROOT / name
    findings = static_findings((folder / "kernel.py").read_text(), (folder / "reference.py").read_text(),
                               policy=policy)
    rejected = [f"{f.rule}: {f.message}" for f in findings if f.severity == REJECT]
    assert not rejected, rejected


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    """A curated kb of every CUDA reference kernel and a few Triton ones, indexed once, on metadata only
    (operator, API calls, language): embedding whole CUDA files costs seconds a query on a small CPU, and
    test_knowledge covers the embedding signals."""
    root = tmp_path_factory.mktemp("cuda_ref")
    for name in CUDA_KERNELS + list(TRITON_FOR_RETRIEVAL):
        shutil.copytree(ROOT / name, root / "kb" / "reference_kernels" / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    kb = KnowledgeBase(root / "kb", root / "data")
    kb.index.embedder = None
    assert kb.reindex()["problems"] == []
    return kb


def _renamed(src: str) -> str:
    """The same kernel as another answer might write it: other names for the kernel and its helpers."""
    return src.replace("_kernel", "_impl").replace("kdebug_ref_", "answer_")


@pytest.mark.parametrize("name", CUDA_KERNELS)
def test_retrieval_finds_it_for_a_cuda_query(kb, name):
    kernel = load_reference_kernel(ROOT / name)
    hit = kb.closest_reference_kernel(_renamed(kernel.kernel_src), operator_hint=kernel.operator)
    assert hit is not None and hit.id == name, hit
    hits = kb.search(f"{kernel.operator} CUDA", operator=kernel.operator, kind="reference_kernel",
                     language="cuda", k=3)
    assert hits[0].id == name, [h.id for h in hits]
    assert kb.reference_kernel(hit.id).kernel_src == kernel.kernel_src


def test_closest_reference_kernel_follows_the_candidates_language(kb):
    # A CUDA candidate for an operator only a Triton reference kernel has (gelu) still gets a CUDA
    # kernel: a model repairing CUDA is shown CUDA.
    cuda_gelu = (ROOT / "cuda_row_sum" / "kernel.py").read_text().replace("row_sum", "gelu_rows")
    hit = kb.closest_reference_kernel(cuda_gelu, operator_hint="gelu")
    assert hit is not None and hit.id in CUDA_KERNELS, hit
    # and a Triton candidate for an operator only CUDA kernels have gets a Triton kernel
    triton_bn = (ROOT / "softmax" / "kernel.py").read_text().replace("softmax_kernel", "bn_kernel")
    hit = kb.closest_reference_kernel(triton_bn, operator_hint="batchnorm_train")
    assert hit is not None and hit.id in TRITON_FOR_RETRIEVAL, hit
    # same operator in both languages: each candidate gets its own language's softmax
    assert kb.closest_reference_kernel((ROOT / "softmax" / "kernel.py").read_text(), "softmax").id == "softmax"
    assert kb.closest_reference_kernel((ROOT / "cuda_softmax" / "kernel.py").read_text(),
                                       "softmax").id == "cuda_softmax"


@pytest.mark.parametrize("name", [pytest.param(n, marks=GPU) for n in CUDA_KERNELS])
def test_passes_evaluation_on_the_gpu(name):
    from debugger.case import load_case
    from debugger.evaluate import evaluate

    folder = ROOT / name
    report = evaluate(load_case(folder / "kernel.py", folder / "reference.py"), device="cuda")
    failed = [(c.name, c.status, c.message) for c in report.checks if not c.passed]
    assert report.status == "pass", f"{report.message} {failed}"


@pytest.mark.parametrize("name", [pytest.param(n, marks=GPU) for n in CUDA_KERNELS])
def test_integrity_gate_accepts_on_the_gpu(name):
    from debugger.case import load_case
    from debugger.integrity.gate import check

    folder = ROOT / name
    verdict = check(load_case(folder / "kernel.py", folder / "reference.py"), device="cuda", policy="strict")
    assert verdict.verdict == "accept", verdict.reasons()


def test_an_index_built_before_languages_is_brought_up_to_date(tmp_path):
    import sqlite_utils

    from debugger.knowledge.index import KnowledgeIndex

    for name in ("softmax", "cuda_softmax"):
        shutil.copytree(ROOT / name, tmp_path / "kb" / "reference_kernels" / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "data").mkdir()
    old = sqlite_utils.Database(tmp_path / "data" / "kb.db")  # the items table as INDEX_VERSION 1 made it
    old["items"].create({"kind": str, "id": str, "path": str, "content_hash": str, "bug_class": str,
                         "operators": str, "symptoms": str, "status": str, "occurrences": int, "indexed_at": str,
                         "title": str, "fix_recipe": str, "category": str, "apis": str, "has_template": int},
                        pk=("kind", "id"))
    old["items"].insert({"kind": "reference_kernel", "id": "softmax", "path": "old", "content_hash": "1:old",
                         "operators": "[]", "symptoms": "[]", "apis": "[]"})
    index = KnowledgeIndex(tmp_path / "data")
    index.embedder = None
    result = index.reindex(tmp_path / "kb")
    assert (result["added"], result["updated"], result["problems"]) == (1, 1, [])
    assert {r["id"]: r["language"] for r in index.items()} == {"softmax": "triton", "cuda_softmax": "cuda"}
