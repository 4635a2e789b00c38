"""Knowledge base: schema validation, loading, incremental indexing into a real chromadb, retrieval.

Every test builds its own small kb folder and data folder under tmp_path; the packaged
all-MiniLM-L6-v2 model is loaded once for the module (the `model` fixture) and reused.
"""
from __future__ import annotations

import shutil

import pytest
import yaml

from debugger.knowledge import KnowledgeBase, KnowledgeError
from debugger.knowledge.embedder import model as load_model
from debugger.knowledge.index import CODE, TEXT
from debugger.knowledge.loader import load_pattern, load_reference_kernel, lint

REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return {expr}


def get_inputs():
    return [torch.randn(33, 70)]


def get_init_inputs():
    return []
'''

KERNEL_FILE = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


{kernel}

class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        {launch}
        return out
'''

SOFTMAX_BEFORE = '''@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + cols, num / den, mask=mask)
'''
SOFTMAX_LAUNCH = "softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))"

ADD_BEFORE = '''@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))
'''
ADD_LAUNCH = "add_kernel[(triton.cdiv(x.numel(), 256),)](x, x, out, x.numel(), BLOCK=256)"

GRID_BEFORE = '''@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
'''
GRID_LAUNCH = "scale_kernel[(x.numel() // 256,)](x, out, x.numel(), BLOCK=256)"

NORM_BEFORE = '''@triton.jit
def layernorm_kernel(x_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / BLOCK
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / BLOCK
    tl.store(out_ptr + row * n_cols + cols, diff / tl.sqrt(var + eps), mask=mask)
'''
NORM_LAUNCH = "layernorm_kernel[(x.shape[0],)](x, out, x.shape[1], 1e-5, BLOCK=128)"


def kernel_file(kernel: str, launch: str) -> str:
    return KERNEL_FILE.format(kernel=kernel, launch=launch)


def pattern_text(meta: dict, kernel: str, launch: str, expr: str = "x", *, fixed: str | None = None) -> str:
    """A pattern file: front matter, the four sections, a reference/before/after example."""
    before = kernel_file(kernel, launch)
    after = kernel_file(fixed or kernel.replace("tl.program_id(0)", "tl.program_id(axis=0)"), launch)
    return ("---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n"
            "## Symptom\nWhat the evaluation shows.\n\n## Root cause\nWhy.\n\n## Fix\nWhat to change.\n\n"
            "## Example\n"
            f"```python reference\n{REFERENCE.format(expr=expr)}```\n"
            f"```python before\n{before}```\n"
            f"```python after\n{after}```\n")


PATTERNS = {
    "softmax-overflow": (dict(
        title="Softmax exponentiates without subtracting the row max and overflows",
        bug_class="numerical_overflow", operators=["softmax"],
        symptoms=["nan_in_output", "inf_in_output", "fails_large_magnitude", "no_max_subtraction"],
        root_cause="exp(x) overflows to inf for x above 88, giving inf / inf = NaN.",
        fix="Subtract the row max before tl.exp.", fix_recipe="subtract_rowmax"),
        SOFTMAX_BEFORE, SOFTMAX_LAUNCH, "torch.softmax(x, dim=1)"),
    "add-unmasked-tail": (dict(
        title="Elementwise kernel loads and stores the last block without a mask",
        bug_class="mask_missing", operators=["add", "any"],
        symptoms=["tail_block_wrong", "unmasked_load", "unmasked_store", "masked_lane_store"],
        root_cause="The last block reaches past n; without a mask its lanes read and write out of bounds.",
        fix="Mask loads and stores with offs < n.", fix_recipe="add_mask"),
        ADD_BEFORE, ADD_LAUNCH, "x + x"),
    "grid-floor-division": (dict(
        title="Launch grid uses floor division and skips the last partial block",
        bug_class="grid_undercount", operators=["any"],
        symptoms=["never_written", "programs_missing", "floor_div_grid"],
        root_cause="n // BLOCK programs cover only the full blocks; the remainder is never computed.",
        fix="Launch triton.cdiv(n, BLOCK) programs.", fix_recipe="grid_cdiv"),
        GRID_BEFORE, GRID_LAUNCH, "x * 2"),
    "layernorm-divides-by-block": (dict(
        title="LayerNorm divides the mean and variance by BLOCK instead of the row length",
        bug_class="normalization_formula", operators=["layernorm"],
        symptoms=["whole_rows_wrong", "divides_by_block", "intermediate_wrong"],
        root_cause="The padded lanes are counted: mean and variance are scaled by n / BLOCK.",
        fix="Divide by n_cols.", fix_recipe="mean_over_n"),
        NORM_BEFORE, NORM_LAUNCH, "torch.nn.functional.layer_norm(x, x.shape[1:])"),
}

KERNELS = {
    "softmax": ("softmax", "softmax", "Row softmax, one program per row, max subtracted before exp.",
                SOFTMAX_BEFORE.replace("num = tl.exp(x)", "num = tl.exp(x - tl.max(x, axis=0))"),
                SOFTMAX_LAUNCH, "torch.softmax(x, dim=1)"),
    "vector_add": ("add", "elementwise", "Elementwise addition over a flat grid with masked tail.",
                   ADD_BEFORE.replace("tl.load(x_ptr + offs)", "tl.load(x_ptr + offs, mask=offs < n)")
                   .replace("tl.load(y_ptr + offs))", "tl.load(y_ptr + offs, mask=offs < n), mask=offs < n)"),
                   ADD_LAUNCH, "x + x"),
}


def write_pattern(kb, pid, **changes):
    meta, kernel, launch, expr = PATTERNS[pid]
    meta = {"id": pid, **meta, "status": "reviewed", "occurrences": 1, "provenance": None, **changes}
    path = kb / "patterns" / f"{pid}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(pattern_text(meta, kernel, launch, expr))
    return path


def write_kernel(kb, name):
    operator, category, description, kernel, launch, expr = KERNELS[name]
    folder = kb / "reference_kernels" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.py").write_text(REFERENCE.format(expr=expr))
    (folder / "kernel.py").write_text(kernel_file(kernel, launch))
    (folder / "kernel.toml").write_text(
        f'operator = "{operator}"\ncategory = "{category}"\ntags = ["test"]\ndescription = "{description}"\n')
    return folder


@pytest.fixture(scope="module")
def model():
    """The packaged embedding model, loaded once for this module."""
    return load_model()


def build_kb(root, patterns=tuple(PATTERNS), kernels=tuple(KERNELS)):
    kb = root / "kb"
    for pid in patterns:
        write_pattern(kb, pid)
    for name in kernels:
        write_kernel(kb, name)
    return kb


@pytest.fixture
def kb_dir(tmp_path):
    return build_kb(tmp_path)


@pytest.fixture
def kb(kb_dir, tmp_path, model):
    return KnowledgeBase(kb_dir, tmp_path / "data")


@pytest.fixture(scope="module")
def shared_kb(tmp_path_factory, model):
    """One indexed knowledge base for the read-only retrieval tests (embedding is the slow part)."""
    root = tmp_path_factory.mktemp("shared")
    kb = KnowledgeBase(build_kb(root), root / "data")
    kb.reindex()
    return kb


@pytest.fixture
def small_kb(tmp_path, model):
    """A knowledge base of one pattern, for tests that index from scratch."""
    return KnowledgeBase(build_kb(tmp_path, ["grid-floor-division"], []), tmp_path / "data")


# ----------------------------------------------------------------------------- schema and loading


def test_valid_pattern_loads_with_its_example(kb_dir):
    p = load_pattern(kb_dir / "patterns" / "softmax-overflow.md")
    assert (p.id, p.bug_class, p.status, p.fix_recipe) == ("softmax-overflow", "numerical_overflow",
                                                           "reviewed", "subtract_rowmax")
    assert "class Model(" in p.example.reference and "get_init_inputs" in p.example.reference
    assert "num = tl.exp(x)" in p.example.before and "class ModelNew" in p.example.after
    assert set(p.sections) == {"Symptom", "Root cause", "Fix", "Example"}
    assert lint(kb_dir) == []


@pytest.mark.parametrize(("change", "message"), [
    ({"bug_class": "overflow"}, "bug_class: 'overflow' is not a bug class"),
    ({"symptoms": ["nan_in_output", "explodes"]}, "['explodes'] are not symptom tags"),
    ({"id": "other-name"}, "id: 'other-name' differs from the file name"),
    ({"status": "approved"}, "status: Input should be 'reviewed', 'draft' or 'learned'"),
    ({"occurrences": 0}, "occurrences: Input should be greater than or equal to 1"),
    ({"fixrecipe": "add_mask"}, "fixrecipe: Extra inputs are not permitted"),
    ({"symptoms": []}, "a reviewed or draft pattern lists at least one symptom tag"),
    ({"operators": ["Soft Max"]}, "are not operator names"),
])
def test_front_matter_errors_are_one_clear_line(kb_dir, change, message):
    path = write_pattern(kb_dir, "softmax-overflow", **change)
    with pytest.raises(KnowledgeError) as err:
        load_pattern(path)
    text = str(err.value)
    assert "\n" not in text and text.startswith(str(path)) and message in text, text


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace("## Root cause\n", "## Cause\n"), "missing section(s) ## Root cause"),
    (lambda t: t.replace("```python before", "```python"), "no 'python before' fenced block"),
    (lambda t: t.replace("```python reference", "```python ref"), "no 'python reference' fenced block"),
    (lambda t: t.replace("def get_init_inputs", "def get_other"), "Example reference: does not define get_init_inputs"),
    (lambda t: t.replace("class ModelNew", "class Model2", 1), "Example before: does not define ModelNew"),
    (lambda t: t.replace("title: ", "title: [unclosed ", 1), "front matter is not valid YAML line"),
    (lambda t: t.replace("---\n", "", 1), "no YAML front matter"),
])
def test_body_errors_are_one_clear_line(kb_dir, edit, message):
    path = kb_dir / "patterns" / "softmax-overflow.md"
    path.write_text(edit(path.read_text()))
    with pytest.raises(KnowledgeError) as err:
        load_pattern(path)
    assert "\n" not in str(err.value) and message in str(err.value), str(err.value)
    assert any(message in problem for problem in lint(kb_dir))


def test_reference_kernel_validation(kb_dir):
    folder = kb_dir / "reference_kernels" / "softmax"
    k = load_reference_kernel(folder)
    assert (k.name, k.operator, k.category, k.tags) == ("softmax", "softmax", "softmax", ["test"])
    (folder / "kernel.toml").write_text('operator = "softmax"\ncategory = "Softmax Ops"\ndescription = "x"\n')
    with pytest.raises(KnowledgeError, match=r"kernel.toml: category: 'Softmax Ops' must be lowercase"):
        load_reference_kernel(folder)
    (folder / "kernel.toml").unlink()
    with pytest.raises(KnowledgeError, match="missing kernel.toml"):
        load_reference_kernel(folder)


def test_duplicate_ids_are_reported(kb_dir):
    learned = kb_dir / "patterns" / "learned"
    learned.mkdir()
    shutil.copy(kb_dir / "patterns" / "grid-floor-division.md", learned / "grid-floor-division.md")
    assert any("id 'grid-floor-division' is already used by" in p for p in lint(kb_dir))


# ----------------------------------------------------------------------------- index


def test_reindex_is_incremental_by_content_hash_and_drops_deleted_files(kb, kb_dir):
    embedder = kb.index.embedder
    assert kb.reindex() == {"added": 6, "updated": 0, "removed": 0, "unchanged": 0, "problems": []}
    assert embedder.embedded == 12  # one text and one code document per item

    assert kb.reindex() == {"added": 0, "updated": 0, "removed": 0, "unchanged": 6, "problems": []}
    assert embedder.embedded == 12  # nothing re-embedded

    path = kb_dir / "patterns" / "grid-floor-division.md"
    path.write_text(path.read_text().replace("skips the last partial block", "drops the remainder"))
    assert kb.reindex()["updated"] == 1
    assert embedder.embedded == 14
    assert kb.search("drops the remainder", k=1)[0].title.endswith("drops the remainder")

    path.unlink()
    shutil.rmtree(kb_dir / "reference_kernels" / "vector_add")
    assert kb.reindex() == {"added": 0, "updated": 0, "removed": 2, "unchanged": 4, "problems": []}
    assert embedder.embedded == 14
    assert kb.index.collection(TEXT).count() == kb.index.collection(CODE).count() == 4
    assert {r["id"] for r in kb.index.items()} == {"softmax-overflow", "add-unmasked-tail",
                                                   "layernorm-divides-by-block", "softmax"}

    # a second process (a new KnowledgeBase on the same folders) finds everything up to date
    again = KnowledgeBase(kb_dir, kb.data_dir)
    assert again.reindex()["unchanged"] == 4 and again.index.embedder.embedded == 0


def test_invalid_files_are_left_out_and_reported(small_kb):
    small_kb.reindex()
    path = small_kb.kb_dir / "patterns" / "grid-floor-division.md"
    path.write_text(path.read_text().replace("bug_class: grid_undercount", "bug_class: nope"))
    result = small_kb.reindex()
    assert result["removed"] == 1 and len(result["problems"]) == 1 and "nope" in result["problems"][0]


def test_stats(shared_kb):
    stats = shared_kb.stats()
    assert (stats["patterns"], stats["reference_kernels"]) == (4, 2)
    assert stats["by_class"] == {"grid_undercount": 1, "mask_missing": 1, "normalization_formula": 1,
                                 "numerical_overflow": 1}
    assert stats["by_category"] == {"elementwise": 1, "softmax": 1}
    assert stats["by_status"] == {"reviewed": 4} and stats["with_recipe"] == 4


# ----------------------------------------------------------------------------- retrieval


@pytest.mark.parametrize(("query", "tags", "expected"), [
    (None, ["nan_in_output", "fails_large_magnitude"], "softmax-overflow"),
    ("the elements after the last full block are never written", ["never_written"], "grid-floor-division"),
    (None, ["tail_block_wrong", "unmasked_store"], "add-unmasked-tail"),
    ("mean and variance are off by a constant factor per row", None, "layernorm-divides-by-block"),
])
def test_search_by_symptoms_and_words(shared_kb, query, tags, expected):
    hits = shared_kb.search(query, symptoms=tags, k=3)
    assert hits[0].id == expected, [(h.id, h.score) for h in hits]
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert hits[0].kind == "pattern" and hits[0].path.endswith(f"{expected}.md")


def test_search_filters_by_class_and_kind(shared_kb):
    assert [h.id for h in shared_kb.search("kernel", bug_class="grid_undercount")] == ["grid-floor-division"]
    assert {h.kind for h in shared_kb.search("softmax", kind="reference_kernel")} == {"reference_kernel"}
    hit = shared_kb.search("overflow", operator="log_softmax", kind="pattern", k=1)[0]
    assert hit.id == "softmax-overflow" and hit.fix_recipe == "subtract_rowmax"


def test_for_diagnosis_prefers_the_hypothesised_class(shared_kb):
    diagnosis = {
        "hypotheses": [
            {"bug_class": "normalization_formula", "confidence": 0.7,
             "evidence": ["the row variance probe is 0.55x the reference's", "divides_by_block"]},
            {"bug_class": "mask_missing", "confidence": 0.2, "evidence": "tail lanes"},
        ],
        "symptoms": ["whole_rows_wrong"],
        "error_signature": {"status": "mismatch", "kind": "mismatch", "check": "seed0"},
    }
    hits = shared_kb.for_diagnosis(diagnosis, kernel_file(NORM_BEFORE, NORM_LAUNCH), k=3)
    assert [h.id for h in hits][:2] == ["layernorm-divides-by-block", "add-unmasked-tail"]
    assert hits[0].signals["symptoms"] > 0 and hits[0].signals["bug_class"] == 0.7
    # one pattern per class first: the list names as many classes as it can
    assert len({h.bug_class for h in hits}) == len(hits)


def test_diversify_puts_each_class_best_hit_first():
    from debugger.knowledge.retrieve import Hit, diversify

    hits = [Hit(id=f"p{i}", kind="pattern", score=1 - i / 10, bug_class=c, path="", title="")
            for i, c in enumerate(["a", "a", "a", "b", "a", "c"])]
    assert [h.id for h in diversify(hits, 4)] == ["p0", "p3", "p5", "p1"]
    assert [h.id for h in diversify(hits[:3], 5)] == ["p0", "p1", "p2"]


def test_closest_reference_kernel_by_code(shared_kb):
    candidate = kernel_file(SOFTMAX_BEFORE.replace("x_ptr", "src").replace("num", "e"), SOFTMAX_LAUNCH)
    assert shared_kb.closest_reference_kernel(candidate).id == "softmax"
    assert shared_kb.closest_reference_kernel(kernel_file(ADD_BEFORE, ADD_LAUNCH)).id == "vector_add"


def test_search_on_an_unindexed_store_indexes_first(small_kb):
    assert small_kb.index.is_empty()
    assert small_kb.search(symptoms=["floor_div_grid"], k=1)[0].id == "grid-floor-division"
    assert not small_kb.index.is_empty()


# ----------------------------------------------------------------------------- add


def test_add_copies_validates_and_never_overwrites(small_kb, tmp_path):
    kb, kb_dir = small_kb, small_kb.kb_dir
    kb.reindex()
    outside = tmp_path / "incoming"
    new = write_pattern(outside, "grid-floor-division", id="grid-rows-floor-division")
    new = new.rename(new.with_name("grid-rows-floor-division.md"))
    result = kb.add(new)
    assert result["action"] == "added" and (kb.user_dir / "patterns" / "grid-rows-floor-division.md").exists()
    assert not (kb_dir / "patterns" / "grid-rows-floor-division.md").exists()  # the curated files are only read
    assert kb.stats()["patterns"] == 2
    with pytest.raises(KnowledgeError, match="already used by"):
        kb.add(new)
    bad = write_pattern(outside, "softmax-overflow", bug_class="nope")
    with pytest.raises(KnowledgeError, match="not a bug class"):
        kb.add(bad)
    assert kb.stats()["patterns"] == 2
    result = kb.add(write_kernel(outside, "softmax").rename(outside / "reference_kernels" / "softmax2"))
    assert result["kind"] == "reference_kernel" and kb.stats()["reference_kernels"] == 1
    with pytest.raises(KnowledgeError, match="exists already"):
        kb.add(outside / "reference_kernels" / "softmax2")


def test_the_embedding_cache_serves_each_text_once_across_processes_and_recomputes_a_broken_file(
        tmp_path, monkeypatch):
    import numpy as np

    from debugger.knowledge import embedder

    monkeypatch.setenv("KDEBUG_EMBEDDING_CACHE", str(tmp_path / "cache"))
    computed = []
    real = embedder._compute
    monkeypatch.setattr(embedder, "_compute", lambda texts: computed.append(list(texts)) or real(texts))
    first = embedder._encode(["a grid that floors", "a mask that is missing"])
    assert computed == [["a grid that floors", "a mask that is missing"]]
    assert len(list((tmp_path / "cache").glob("*.npy"))) == 2
    again = embedder._encode(["a mask that is missing", "softmax overflows", "a grid that floors"])
    assert computed[1:] == [["softmax overflows"]]  # only the new text reached the model
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[2], first[0])
    assert np.allclose(again[1], real(["softmax overflows"])[0], atol=1e-6)
    for f in (tmp_path / "cache").glob("*.npy"):
        f.write_bytes(b"not a vector")
    assert np.allclose(embedder._encode(["a grid that floors"])[0], first[0], atol=1e-6)
    assert computed[-1] == ["a grid that floors"]
    monkeypatch.delenv("KDEBUG_EMBEDDING_CACHE")
    embedder._encode(["a grid that floors"])
    assert computed[-1] == ["a grid that floors"] and len(computed) == 4  # no cache: the model every time


def test_an_embedding_cache_folder_that_cannot_be_made_is_no_cache(tmp_path, monkeypatch):
    from debugger.knowledge import embedder

    (tmp_path / "file").write_text("a file, not a folder")
    monkeypatch.setenv("KDEBUG_EMBEDDING_CACHE", str(tmp_path / "file" / "cache"))
    assert embedder._encode(["a grid that floors"])[0].shape == (384,)


def test_queries_are_not_kept_in_the_embedding_cache(tmp_path, monkeypatch):
    from debugger.knowledge import embedder

    monkeypatch.setenv("KDEBUG_EMBEDDING_CACHE", str(tmp_path / "cache"))
    ef = embedder.PackagedMiniLM()
    ef.embed_query(["why does my softmax overflow"])
    assert not list((tmp_path / "cache").glob("*.npy")) and ef.queries == 1
    ef(["why does my softmax overflow"])
    assert len(list((tmp_path / "cache").glob("*.npy"))) == 1 and ef.embedded == 1
