"""The knowledge base's failure patterns (kb/patterns/*.md): well-formed, and each example is a test.

A pattern is one Markdown file with YAML front matter (id, title, bug_class, operators, symptoms,
root_cause, fix, fix_recipe, status, occurrences, provenance) and the sections Symptom, Root cause,
Fix, Example. The example holds three complete KernelBench files in fenced blocks tagged
`python reference`, `python before` and `python after`: the before must fail full evaluation and the
after must pass it (CPU interpreter here), so a pattern can never teach a fix that does not work.
Only the top level of kb/patterns/ is covered; learned patterns (kb/patterns/learned/) have their own
tests. A pattern with `language: cuda` holds CUDA inside load_inline strings: its evaluations need a
GPU (marked `gpu`, skipped without one), and on the CPU its recipe must turn the before into the after.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from debugger import symptoms
from debugger.case import case_from_sources
from debugger.evaluate import evaluate
from debugger.settings import bug_classes

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "kb" / "patterns"
PATHS = sorted(ROOT.glob("*.md"))
IDS = [p.stem for p in PATHS]

REQUIRED_FIELDS = ("id", "title", "bug_class", "operators", "symptoms", "root_cause", "fix", "fix_recipe",
                   "status", "occurrences", "provenance")
SECTIONS = ("Symptom", "Root cause", "Fix", "Example")
BLOCKS = ("reference", "before", "after")
# The recipe ids of the original brief; debugger.recipes.RECIPES (the registry) may hold more.
RECIPE_IDS = {"add_mask", "fix_mask_bound", "other_identity", "grid_cdiv", "widen_accumulator",
              "subtract_rowmax", "advance_pointers", "swap_strides", "contiguous_inputs", "atomic_accumulate",
              "int64_offsets", "mean_over_n", "variance_biased", "eps_inside_sqrt", "k_tail_mask",
              "swap_program_id_axis", "scan_inclusive", "block_covers_row", "output_dtype",
              "activation_constant"}
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
BLOCK_RE = re.compile(r"^```python (reference|before|after)\n(.*?)^```\s*$", re.S | re.M)


def language(path: Path) -> str:
    return parse(path)[0].get("language", "triton")


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _on_device(paths):
    """Pattern paths as parameters: a CUDA pattern's evaluation is marked gpu and needs one."""
    gpu = [pytest.mark.gpu, pytest.mark.skipif(not _has_cuda(), reason="a CUDA pattern runs on a GPU")]
    return [pytest.param(p, id=p.stem, marks=gpu if language(p) == "cuda" else ()) for p in paths]


def _device(path: Path) -> str:
    return "cuda" if language(path) == "cuda" else "cpu"


def _registered() -> set[str]:
    try:
        import debugger.lang  # noqa: F401 - the languages register their recipes
        from debugger.recipes import RECIPES
    except ImportError:
        return set()
    return set(RECIPES)


def parse(path: Path) -> tuple[dict, str, dict[str, str], dict[str, str]]:
    """(front matter, body, sections by heading, code blocks by tag) of one pattern file."""
    text = path.read_text()
    m = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S)
    assert m, f"{path.name}: no '---' delimited YAML front matter"
    meta = yaml.safe_load(m.group(1))
    body = m.group(2)
    secs, current = {}, None
    in_fence = False
    for line in body.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.startswith("## "):
            current = line[3:].strip()
            secs[current] = ""
        elif current is not None:
            secs[current] += line + "\n"
    blocks: dict[str, str] = {}
    for tag, code in BLOCK_RE.findall(body):
        assert tag not in blocks, f"{path.name}: two `python {tag}` blocks"
        blocks[tag] = code
    return meta, body, secs, blocks


@pytest.fixture(scope="module", params=PATHS, ids=IDS)
def pattern(request):
    return request.param, *parse(request.param)


def test_enough_patterns_covering_every_class():
    assert len(PATHS) >= 32, f"only {len(PATHS)} patterns"
    seen = {parse(p)[0]["bug_class"] for p in PATHS}
    missing = set(bug_classes()) - {"other"} - seen
    assert not missing, f"no pattern for bug classes: {sorted(missing)}"


def test_ids_are_unique():
    ids = [parse(p)[0]["id"] for p in PATHS]
    assert len(ids) == len(set(ids))


def test_front_matter(pattern):
    path, meta, _, _, _ = pattern
    missing = [k for k in REQUIRED_FIELDS if k not in meta]
    assert not missing, f"missing fields {missing}"
    assert meta["id"] == path.stem and KEBAB.match(meta["id"]), "id must be the file stem, kebab-case"
    assert isinstance(meta["title"], str) and meta["title"].strip() and "\n" not in meta["title"].strip()
    assert meta["bug_class"] in bug_classes() and meta["bug_class"] != "other", meta["bug_class"]
    assert isinstance(meta["operators"], list) and meta["operators"]
    assert all(isinstance(o, str) and re.match(r"^[a-z0-9_]+$", o) for o in meta["operators"]), meta["operators"]
    assert isinstance(meta["symptoms"], list) and meta["symptoms"], "symptoms are what retrieval joins on"
    unknown = [s for s in meta["symptoms"] if s not in symptoms.ALL]
    assert not unknown, f"not symptom tags of debugger/symptoms.py: {unknown}"
    assert len(set(meta["symptoms"])) == len(meta["symptoms"]), "duplicate symptom tags"
    for key in ("root_cause", "fix"):
        assert isinstance(meta[key], str) and len(meta[key]) >= 80, f"{key} should be a real paragraph"
    assert meta["fix_recipe"] is None or meta["fix_recipe"] in RECIPE_IDS | _registered(), meta["fix_recipe"]
    assert meta["status"] == "reviewed"
    assert isinstance(meta["occurrences"], int) and meta["occurrences"] >= 1
    assert meta["provenance"] is None


def test_fix_recipe_is_registered(pattern):
    _, meta, _, _, _ = pattern
    if meta["fix_recipe"] is None:
        return
    import debugger.lang  # noqa: F401 - the languages register their recipes
    from debugger.recipes import RECIPES

    assert meta["fix_recipe"] in RECIPES, f"{meta['fix_recipe']} is not in debugger.recipes.RECIPES"


def test_sections_in_order(pattern):
    _, _, body, secs, _ = pattern
    assert list(secs)[:4] == list(SECTIONS), f"sections {list(secs)}, want {SECTIONS} first"
    for name in SECTIONS[:3]:
        assert len(secs[name].strip()) >= 40, f"section {name} is too short"
    assert "```diff" in secs["Fix"], "the Fix section shows the change as a diff"


def test_example_files_are_complete(pattern):
    _, meta, _, secs, blocks = pattern
    assert set(blocks) == set(BLOCKS), f"example blocks {sorted(blocks)}, want {BLOCKS}"
    assert all(f"```python {b}" in secs["Example"] for b in BLOCKS), "blocks belong in the Example section"
    ref = {n.name for n in ast.parse(blocks["reference"]).body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    assert {"Model", "get_inputs", "get_init_inputs"} <= ref
    assert blocks["before"] != blocks["after"]
    for tag in ("before", "after"):
        src = blocks[tag]
        tree = ast.parse(src)
        names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
        assert "ModelNew" in names and "Model" not in names, tag
        if meta.get("language") == "cuda":
            from debugger import lang

            assert lang.get("cuda").uses(src) and lang.get("cuda").kernels(src), f"{tag}: no CUDA kernel"
            continue
        jitted = [n for n in tree.body if isinstance(n, ast.FunctionDef)
                  and any(ast.unparse(d).startswith("triton.jit") for d in n.decorator_list)]
        assert jitted, f"{tag}: no @triton.jit kernel"
        # what the CPU interpreter cannot run (see shared/research/interpreter.md)
        assert "libdevice" not in src and '"tl.constexpr"' not in src and "autotune" not in src, tag


def test_the_example_is_loadable_by_the_knowledge_base(pattern):
    path, _, _, _, _ = pattern
    loader = pytest.importorskip("debugger.knowledge.loader")
    loader.load_pattern(path)


# Classes only KernelBench's verdict shows: the kernel is right with Model's weights mapped in.
PIPELINE_ONLY = {"parameter_init"}


def test_language_is_known(pattern):
    _, meta, _, _, _ = pattern
    from debugger.lang import REGISTRY

    assert meta.get("language", "triton") in {"triton", *REGISTRY}


@pytest.mark.parametrize("path", [p for p in PATHS if language(p) == "cuda"],
                         ids=[p.stem for p in PATHS if language(p) == "cuda"])
def test_cuda_recipe_turns_the_before_into_the_after(path):
    """No GPU needed: the named CUDA recipe's first patch of the before is the after, and the CUDA
    fact the pattern lists first is gone from it."""
    import debugger.lang as lang
    from debugger.recipes import RECIPES

    meta, _, _, blocks = parse(path)
    patches = RECIPES[meta["fix_recipe"]].propose(blocks["before"], {"bug_class": meta["bug_class"]})
    assert patches and patches[0].new_src == blocks["after"]
    fact = meta["symptoms"][0]
    assert fact.startswith("cuda_")
    assert fact in {f["tag"] for f in lang.static_facts(blocks["before"])}
    assert fact not in {f["tag"] for f in lang.static_facts(blocks["after"])}


@pytest.mark.parametrize("path", _on_device(PATHS))
def test_before_fails_evaluation(path):
    meta, _, _, blocks = parse(path)
    report = evaluate(case_from_sources(blocks["reference"], blocks["before"]), device=_device(path))
    if meta["bug_class"] in PIPELINE_ONLY:
        assert report.status == "pass" and report.verdicts["kernelbench"]["status"] != "pass", report.verdict_note
        return
    assert report.status != "pass", "the 'before' example must fail evaluation"
    assert report.status != "invalid_input", report.message
    if language(path) == "cuda":  # a CUDA before compiles and computes wrongly; a build refused is no failure of it
        assert report.status != "compile_error", report.message


@pytest.mark.parametrize("path", _on_device(PATHS))
def test_after_passes_evaluation(path):
    meta, _, _, blocks = parse(path)
    report = evaluate(case_from_sources(blocks["reference"], blocks["after"]), device=_device(path))
    failed = [(c.name, c.status, c.message) for c in report.checks if not c.passed]
    assert report.status == "pass", f"{report.message} {failed}"
    if meta["bug_class"] in PIPELINE_ONLY:
        assert report.verdicts["kernelbench"]["status"] == "pass", report.verdict_note


@pytest.mark.slow
@pytest.mark.parametrize("path", _on_device([p for p in PATHS if parse(p)[0].get("fix_recipe")]))
def test_fix_recipe_repairs_the_before(path):
    """The named recipe, asked as the kb backend asks it (recipe and bug class named), proposes a
    patch of the 'before' that passes evaluation: the pattern's machine fix really works."""
    from debugger.recipes import RECIPES

    import debugger.lang  # noqa: F401 - the languages register their recipes

    meta, _, _, blocks = parse(path)
    recipe = RECIPES[meta["fix_recipe"]]
    patches = [p for p in recipe.propose(blocks["before"], {"recipe": recipe.id, "bug_class": meta["bug_class"],
                                                           "symptoms": meta["symptoms"]}) if p]
    assert patches, f"{recipe.id} proposes no patch for the before"
    statuses = []
    for patch in patches[:4]:
        report = evaluate(case_from_sources(blocks["reference"], patch.new_src), device=_device(path))
        statuses.append(report.status)
        if report.status == "pass":
            return
    pytest.fail(f"no patch of {recipe.id} passes: {statuses}")
