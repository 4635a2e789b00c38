"""The faults real Triton answers have (issue 21), on small kernels of our own: coverage evidence from
the poisoned allocations and the probes' grids, the `needs_rewrite` verdict and its stop, a ranking
that follows the run's evidence, the kb's stop when no recipe applies, and the recipes that need the
run's hints (the dtype the reference returns) or exist for the GPU (tf32 in tl.dot)."""
from pathlib import Path

import torch

from debugger.backends.kb import KBBackend, run_hints
from debugger.case import case_from_sources
from debugger.diagnose import diagnose
from debugger.diagnose.errormap import analyse_output, describe_coverage
from debugger.diagnose.ranking import rank
from debugger.diagnose.rewrite import placeholder_lines
from debugger.diagnose.static import reference_families
from debugger.evaluate import SENTINEL_POISON, evaluate
from debugger.ledger import Ledger
from debugger.recipes import get
from debugger.repair import repair
from debugger.settings import resolve

DATA = Path(__file__).parent / "data" / "recipes"

ROWS_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(12, 40)]


def get_init_inputs():
    return []
'''

# The answer's body is a placeholder, and it says so (the shape of a real answer in the pool).
PLACEHOLDER = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    # Placeholder: replace with the actual softmax; this only exponentiates.
    y = tl.exp(x)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=64)
        return y
'''

# A grid that floors to zero programs (n_rows // 16 with 12 rows) over a body that cannot run: a
# block of a runtime size. Fixing the grid makes the body run, and it raises.
NEVER_RUNS = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK_ROWS: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, n_cols)
    x = tl.load(x_ptr + pid * n_cols + cols)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + pid * n_cols + cols, e / tl.sum(e, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        softmax_kernel[(n_rows // 16,)](x, y, n_rows, n_cols, BLOCK_ROWS=16)
        return y
'''


def _case(src, ref=ROWS_REF, **tol):
    return case_from_sources(ref, src, name="mine", **tol)


# ---- coverage of a poisoned output ---------------------------------------------------------------


def test_coverage_says_which_rows_and_prefix_were_written():
    r = torch.randn(6, 50, dtype=torch.float64)
    run1, run2 = r.clone().float(), r.clone().float()
    run1[1:] = float("nan")  # only the first row written: a kernel with no program id
    run2[1:] = SENTINEL_POISON
    facts = analyse_output(r, run1, run2)
    cov = facts["coverage"]
    assert cov["written"] == 50 and cov["rows_written"] == 1 and cov["written_row_ids"] == [0]
    assert cov["written_prefix"] == 50
    assert {"mostly_unwritten", "rows_unwritten", "prefix_written"} <= set(facts["symptoms"])
    assert "rows written: 1 of 6" in describe_coverage(cov, r.shape)
    batch = torch.randn(3, 4, 5, dtype=torch.float64)
    b1, b2 = batch.clone().float(), batch.clone().float()
    b1[1:] = float("nan")
    b2[1:] = SENTINEL_POISON
    assert "slices_unwritten" in analyse_output(batch, b1, b2)["symptoms"]


def test_every_element_written_has_no_coverage_tags():
    r = torch.randn(6, 50, dtype=torch.float64)
    c = r.clone().float() + 1.0
    facts = analyse_output(r, c, c.clone())
    assert "coverage" not in facts and not {"mostly_unwritten", "none_written"} & set(facts["symptoms"])


# ---- needs_rewrite: within one iteration, with the evidence ---------------------------------------


def test_a_placeholder_body_needs_a_rewrite_and_the_repair_stops_at_once(tmp_path):
    assert placeholder_lines(PLACEHOLDER) and not placeholder_lines(PLACEHOLDER.replace("Placeholder: ", "")
                                                                     .replace(" with the actual softmax", ""))
    case = _case(PLACEHOLDER)
    settings = resolve(device="cpu", backend="kb", max_iters=6, timeout=120)
    result = repair(case, settings=settings, ledger=Ledger(tmp_path / "l.db"), write_files=False,
                    write_back=False, retrieval=False)
    assert result.status == "unrepaired" and result.guard == "needs_rewrite"
    assert result.iterations == 0
    assert "Placeholder" in result.diagnosis_summary


def test_a_body_that_never_ran_and_cannot_run_needs_a_rewrite():
    d = diagnose(_case(NEVER_RUNS), "cpu", localise=False)
    grids = d.probes.get("grids") or []
    assert grids and grids[0]["programs"] == 0 and "zero_programs" in d.symptoms
    assert d.needs_rewrite and d.needs_rewrite["reason"] == "body_cannot_run", d.needs_rewrite
    assert any("zero programs" in e for e in d.needs_rewrite["evidence"])
    assert any("grid fixed" in e for e in d.needs_rewrite["evidence"])


ROW_TILES = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK_ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    tl.store(y_ptr + rows[:, None] * n_cols + cols[None, :], e / tl.sum(e, axis=1)[:, None], mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        softmax_kernel[(n_rows // 16,)](x, y, n_rows, n_cols, BLOCK_ROWS=16, BLOCK=64)
        return y
'''


def test_a_fixable_zero_grid_is_not_a_rewrite():
    """The same zero-program grid over a body that runs: cdiv fixes it, so no verdict."""
    d = diagnose(_case(ROW_TILES), "cpu", localise=False)
    assert "zero_programs" in d.symptoms
    assert d.needs_rewrite is None
    assert any(e["result"] == "fixed" and e["recipe"] == "grid_cdiv" for e in d.experiments), d.experiments


SCALE_REF = ROWS_REF.replace("torch.softmax(x, dim=-1)", "x * 2.0").replace("randn(12, 40)", "randn(6, 300)")

# A near-miss that leaves most of the output unwritten: the loop walks the row's blocks but only the
# load's pointer advances, so every block is stored over the row's first one.
STALE_STORE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_rows_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x_ptrs = x_ptr + row * n_cols + cols
    y_ptrs = y_ptr + row * n_cols + cols
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptrs, mask=mask, other=0.0)
        tl.store(y_ptrs, x * 2.0, mask=mask)
        x_ptrs += BLOCK


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        scale_rows_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=64)
        return y
'''

# Never written in full: the store sits after the loop and writes one block per row; advance_pointers
# still proposes (the loop's load stays put), but no pointer it moves can write the rest.
ONE_BLOCK_STORE = STALE_STORE.replace('''        tl.store(y_ptrs, x * 2.0, mask=mask)
        x_ptrs += BLOCK
''', '''        y = x * 2.0
    tl.store(y_ptrs, y, mask=cols < n_cols)
''')


def test_a_store_that_stays_put_in_its_loop_is_not_a_rewrite():
    from types import SimpleNamespace

    from debugger.diagnose.rewrite import stale_loop_stores, verdict
    from debugger.recipes import propose_all

    assert stale_loop_stores(STALE_STORE) == [17] and stale_loop_stores(ONE_BLOCK_STORE) == []
    unwritten = SimpleNamespace(experiments=[], probes={},
                                error_maps={"seed0": [{"symptoms": ["mostly_unwritten"], "frac_wrong": 0.8}]})
    untried = [{"recipe": "advance_pointers", "bug_class": "pointer_advance"}]
    for src in (STALE_STORE, ONE_BLOCK_STORE):
        assert "advance_pointers" in {p.recipe for p in propose_all(src)}
    assert verdict(unwritten, STALE_STORE, untried) is None
    assert verdict(unwritten, ONE_BLOCK_STORE, untried)["reason"] == "no_store_reaches_most_of_the_output"
    # and in the diagnosis the repair loop runs (its budget of three experiments): advance_pointers is tried
    d = diagnose(_case(STALE_STORE, SCALE_REF), "cpu", localise=False, experiment_budget=3)
    assert d.needs_rewrite is None, d.needs_rewrite
    assert any(e["recipe"] == "advance_pointers" and e["result"] == "fixed" for e in d.experiments), d.experiments


# A scratch buffer of one value per element, filled only along its first column by one program over the
# rows (the shape of a real answer's per-class loss), then reduced: the result is NaN, and on a GPU its
# out-of-bounds loads may crash the run before any output is seen.
ROW_LOSS_REF = ROWS_REF.replace("torch.softmax(x, dim=-1)", "(x * 2.0).mean()")
FIRST_COLUMN_ONLY = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_loss_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = rows < n_rows
    x = tl.load(x_ptr + rows * n_cols, mask=mask, other=0.0)
    tl.store(out_ptr + rows * n_cols, x * 2.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        scratch = torch.empty_like(x)
        row_loss_kernel[(1,)](x, scratch, x.shape[0], x.shape[1], BLOCK=64)
        return scratch.mean()
'''


def test_after_a_gpu_run_without_outputs_the_interpreter_s_probes_decide_the_rewrite():
    """A GPU run that crashed or did not compile leaves no outputs to map: the probes run on the interpreter
    (small sizes) and their poisoned buffer, with the NaN it put in the interpreted result, is the evidence."""
    from types import SimpleNamespace

    from debugger.diagnose.probes import run_probes
    from debugger.diagnose.rewrite import verdict

    case = _case(FIRST_COLUMN_ONLY, ROW_LOSS_REF)
    report = evaluate(case, "cpu", checks=[{"name": "seed0", "kind": "seed", "seed": 0}])
    assert report.status == "mismatch"
    seen = run_probes(case, report, device="cuda")  # as diagnose calls it after a GPU run
    assert seen["interpreter"] and seen["result_nan"], seen
    assert seen["buffers"][0]["stored"] < seen["buffers"][0]["elements"] / 2, seen["buffers"]
    crashed = SimpleNamespace(experiments=[], probes=seen, error_maps={})  # a crash leaves no error maps
    found = verdict(crashed, FIRST_COLUMN_ONLY, [])
    assert found["reason"] == "no_store_reaches_most_of_the_output", found
    assert "(probes on the interpreter)" in found["evidence"][0]
    assert verdict(SimpleNamespace(experiments=[], probes=dict(seen, result_nan=False), error_maps={}),
                   FIRST_COLUMN_ONLY, []) is None  # stores that miss without poisoning the result decide nothing

    # On the H100 a recipe that made such a kernel compile counted as "better" and held the verdict back for
    # four iterations: a fix after which every check still gets most of the output wrong does not.
    ran_wrong = {"recipe": "unify_branch_types", "bug_class": "gpu_incompatible", "result": "better",
                 "mostly_wrong": True}
    assert verdict(SimpleNamespace(experiments=[ran_wrong], probes=seen, error_maps={}), FIRST_COLUMN_ONLY, [])
    helped = dict(ran_wrong, mostly_wrong=False)
    assert verdict(SimpleNamespace(experiments=[helped], probes=seen, error_maps={}), FIRST_COLUMN_ONLY, []) is None


def test_the_run_counts_what_of_a_scratch_buffer_stayed_poison_and_diagnose_uses_it_without_probes(monkeypatch):
    """The same fact as the probes, counted after the forward on any device (a GPU machine's Triton 3.6
    interpreter raised on a real answer's `range(n)` over a runtime argument, so its probes saw nothing): the
    scratch buffer a launch received holds NaN wherever no store reached it."""
    import debugger.diagnose.probes as probes_module
    from debugger.evaluate import run_evaluation

    case = _case(FIRST_COLUMN_ONLY, ROW_LOSS_REF)
    ev = run_evaluation(case, "cpu", checks=[{"name": "seed0", "kind": "seed", "seed": 0}], capture=True)
    (buf,) = ev.observations["seed0"]["buffers"]
    assert buf["kernel"] == "row_loss_kernel" and buf["arg"] == 1 and buf["measured"] == "run", buf
    assert 0 < buf["stored"] < buf["elements"] / 2, buf  # one column of the rows

    every_column = FIRST_COLUMN_ONLY.replace("return scratch.mean()", "return scratch[:, :1].mean()")
    ev_ok = run_evaluation(_case(every_column, ROW_LOSS_REF), "cpu",
                           checks=[{"name": "seed0", "kind": "seed", "seed": 0}], capture=True)
    assert ev_ok.observations["seed0"]["buffers"][0]["stored"] == buf["stored"]  # the count, not the verdict

    monkeypatch.setattr(probes_module, "run_probes", lambda *a, **k: {"error": "InterpreterError: TypeError"})
    d = diagnose(case, "cpu", evaluation=ev, experiments=False, localise=False)
    assert d.needs_rewrite and d.needs_rewrite["reason"] == "no_store_reaches_most_of_the_output", d.needs_rewrite
    assert "(counted after the run)" in d.needs_rewrite["evidence"][0]
    assert diagnose(case, "cpu", evaluation=ev, experiments=False, localise=False, probes=False).needs_rewrite is None


def test_an_experiment_says_whether_the_kernel_it_made_still_gets_most_of_the_output_wrong():
    from debugger.diagnose.experiments import run_experiments
    from debugger.recipes.base import Patch

    raising = FIRST_COLUMN_ONLY.replace("x.shape[0], x.shape[1], BLOCK=64", "x.shape[0], BLOCK=64")
    case = _case(raising, ROW_LOSS_REF)
    report = evaluate(case, "cpu", checks=[{"name": "seed0", "kind": "seed", "seed": 0}])
    assert report.status == "runtime_error"
    every_row = FIRST_COLUMN_ONLY.replace("return scratch.mean()", "return (x * 2.0).mean()")
    found = run_experiments(case, report, [Patch("argument_fix", "pass n_cols", FIRST_COLUMN_ONLY, [30], "other"),
                                           Patch("argument_fix", "use every row", every_row, [30], "other")],
                            ["other"], device="cpu")
    assert [(e["result"], e["mostly_wrong"]) for e in found] == [("worse", True), ("fixed", False)], found


# ---- the ranking follows the run's evidence -----------------------------------------------------


def test_a_class_resting_on_the_family_and_the_source_does_not_lead():
    tags = {"family:matmul", "unmasked_load", "floor_div_grid", "all_wrong", "fails_negative_inputs"}
    hyps = rank(tags, [], [])
    assert hyps[0]["supported"] and hyps[0]["bug_class"] == "masked_fill_value", hyps[:2]
    lead = {h["bug_class"]: h for h in hyps}
    assert not lead.get("grid_undercount", {"supported": False})["supported"]


def test_drift_on_a_strided_layout_alone_is_no_race():
    from debugger.diagnose import Diagnosis, _tags
    from debugger.records import CheckResult, EvalReport

    def check(name, transform, drift):
        return CheckResult(name=name, kind="layout" if transform else "seed", passed=False, status="mismatch",
                           spec={"transform": transform} if transform else {}, drift=drift)

    # a kernel that ignores strides reads past the view: what lies there differs from run to run
    strided = EvalReport(status="mismatch", checks=[check("seed0", None, 0.0), check("noncontiguous", "noncontig", 2e32)])
    assert "run_to_run_drift" not in _tags(Diagnosis(status="diagnosed"), strided, [])
    racy = EvalReport(status="mismatch", checks=[check("seed0", None, 0.5), check("noncontiguous", "noncontig", 2e32)])
    assert "run_to_run_drift" in _tags(Diagnosis(status="diagnosed"), racy, [])


def test_a_normalisation_formula_needs_a_normalisation_in_the_reference():
    # a transposed convolution whose taps are misread: every element off by a near-constant factor
    finding = {"bug_class": "operator_misread", "score": 0.5, "evidence": ["wrong on most elements"]}
    tags = {"family:conv", "constant_factor", "all_wrong", "large_error"}
    hyps = rank(tags, [], [], findings=[finding])
    assert hyps[0]["bug_class"] == "operator_misread"
    assert "normalization_formula" not in {h["bug_class"] for h in hyps if h["score"] > 0}
    hyps = rank(tags | {"family:norm"}, [], [], findings=[finding])
    assert hyps[0]["bug_class"] == "normalization_formula"


def test_a_located_cuda_fault_outranks_operator_misread_without_the_candidate_s_words():
    """qwencoder level2/96's shape: a block capped at the pooling window, no block-stride loop, every value
    wrong. With no comment saying it simplifies, operator_misread is what is left when nothing is located;
    here something is, and the hypothesis cites its line."""
    from debugger.case import Case
    from debugger.diagnose import ranking, semantics
    from debugger.records import CheckResult, EvalReport

    report = EvalReport(status="mismatch", checks=[CheckResult(name="seed0", kind="seed", passed=False, status="mismatch",
                                                               frac_wrong=1.0, spec={})])
    fact = {"tag": "cuda_block_capped", "line": 98, "message": "block of fused_kernel is capped", "language": "cuda"}
    tags = {"cuda_block_capped", "family:reduction", "all_wrong"}
    for src, leads in (("int x = 1;", "reduction_axis"), ("// simplified: one window only", "operator_misread")):
        finding = semantics.operator_misread_hypothesis(Case("level2_96", "", src), report, tags, [])
        hyps = rank(tags, [], [], findings=[finding])
        ranking.cite_static_facts(hyps, [fact])
        assert hyps[0]["bug_class"] == leads, (src, hyps[:2])
    capped = next(h for h in hyps if h["bug_class"] == "reduction_axis")
    assert 98 in capped["lines"] and "line 98: block of fused_kernel is capped" in capped["evidence"]


def test_operator_families_come_from_code_not_comments():
    ref = "# thunlp/TritonBench @ 603e28a\nimport torch\ndef f(x):\n    '''no matmul here'''\n    return x.exp()\n"
    assert reference_families(ref) == set()
    assert reference_families("def f(a, b):\n    return a @ b\n") == {"matmul"}


def test_experiments_follow_every_scored_class_and_take_each_recipe_in_turn(monkeypatch):
    """The experiments' order has every class with a score (pointer_advance scores behind supported
    classes scoring nothing); a recipe's second site waits for the first of every recipe whose class
    scores the same, not for those of classes scoring less."""
    from types import SimpleNamespace

    import debugger.diagnose as diagnosis
    import debugger.diagnose.experiments as experiments

    orders = []
    monkeypatch.setattr(diagnosis, "run_experiments",
                        lambda case, report, patches, order, **kw: orders.append(order) or [])
    diagnosis.diagnose(_case(STALE_STORE, SCALE_REF), "cpu", localise=False, experiment_budget=3)
    assert orders and "pointer_advance" in orders[0], orders
    tried = []
    monkeypatch.setattr(experiments, "evaluate", lambda case, *a, **kw: tried.append(case.candidate_src) or
                        SimpleNamespace(status="mismatch", failed_checks=[SimpleNamespace(status="mismatch", frac_wrong=1.0)],
                                        checks=[], message=""))
    sites = [("fix_mask_bound", "mask_missing")] * 3 + [("broadcast_axis", "broadcast_axis")]
    patches = [SimpleNamespace(recipe=r, bug_class=c, new_src=f"{r}{i}", description="", sites=[])
               for i, (r, c) in enumerate(sites)]
    report = SimpleNamespace(failed_checks=[SimpleNamespace(spec={"name": "seed0"})], status="mismatch")
    for scores, want in (({"mask_missing": 1.0, "broadcast_axis": 1.0}, ["fix_mask_bound0", "broadcast_axis3",
                                                                         "fix_mask_bound1"]),
                         ({"mask_missing": 2.3, "broadcast_axis": 0.3}, ["fix_mask_bound0", "fix_mask_bound1",
                                                                         "fix_mask_bound2"])):
        tried.clear()
        experiments.run_experiments(_case(STALE_STORE, SCALE_REF), report, patches, ["mask_missing", "broadcast_axis"],
                                    device="cpu", budget=3, scores=scores)
        assert tried == want, scores


# ---- the kb stops when no recipe applies to the evidence ----------------------------------------


def test_the_kb_drops_proposals_no_evidence_backs():
    src = (DATA / "grid_cdiv" / "candidate.py").read_text()
    kb = KBBackend()
    unsupported = {"hypotheses": [{"bug_class": "grid_undercount", "confidence": 0.9, "supported": False,
                                   "lines": [], "evidence": []}]}
    guesses = kb.propose(src, unsupported, {}, {})
    assert len(guesses) <= 3 and kb.dropped > 0  # a few guesses at most, then the repair stops
    supported = {"hypotheses": [{**unsupported["hypotheses"][0], "supported": True}]}
    kept = kb.propose(src, supported, {}, {})
    assert kept and all(p.bug_class == "grid_undercount" for p in kept)


# ---- recipes that need the run's hints, or exist for the GPU ------------------------------------


def test_output_dtype_allocates_what_the_reference_returns():
    """An integer input divided in the kernel: the evaluation's dtype mismatch names float32."""
    for name in ("output_dtype_int_div", "output_dtype_int_pair"):
        ref = (DATA / name / "reference.py").read_text()
        cand = (DATA / name / "candidate.py").read_text()
        before = evaluate(_case(cand, ref), "cpu", fail_fast=True)
        assert before.status != "pass"
        hints = run_hints({"evaluation": before.to_dict()}, {})
        assert hints["expected_dtype"] == "float32"
        assert not get("output_dtype").propose(cand)  # the source alone says nothing
        patches = get("output_dtype").propose(cand, hints)
        assert any(evaluate(_case(p.new_src, ref), "cpu").status == "pass" for p in patches), name


def test_fp32_dot_gets_ieee_precision_for_a_tight_float32_task():
    src = (DATA / "dot_operand_transpose_scores" / "candidate.py").read_text()
    recipe = get("dot_ieee_precision")
    assert recipe.propose(src) == []  # no tolerance known: nothing
    assert recipe.propose(src, {"tolerance": 1e-2, "dtype": "float32"}) == []  # tf32 is good enough
    patch = recipe.propose(src, {"tolerance": 1e-3, "dtype": "float32"})[0]
    assert 'tl.dot(q, kt, input_precision="ieee")' in patch.new_src
    tf32 = src.replace("tl.dot(q, kt)", "tl.dot(q, kt, allow_tf32=True)")
    new = recipe.propose(tf32, {"tolerance": 1e-4})[0].new_src
    assert 'input_precision="ieee"' in new and "allow_tf32" not in new
    assert recipe.propose(patch.new_src, {"tolerance": 1e-3}) == []  # already ieee


def test_the_recipe_search_stops_at_its_wall_budget(tmp_path):
    """A kb budget spent by the first proposal: the search stops on the clock after it."""
    wrong = PLACEHOLDER.replace("    # Placeholder: replace with the actual softmax; this only exponentiates.\n", "")
    settings = resolve(device="cpu", backend="kb", max_iters=6, timeout=120)
    result = repair(_case(wrong), settings=settings, ledger=Ledger(tmp_path / "l.db"), write_files=False,
                    write_back=False, retrieval=False, kb_wall_budget=0.001)
    assert result.status == "unrepaired" and result.guard == "wall_clock_budget", (result.guard, result.history)
    assert result.iterations == 1


VIEW_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return x * y + 1.0


def get_inputs():
    return [torch.randn(24, 40), torch.randn(24, 40)]


def get_init_inputs():
    return []
'''

VIEW_FLAT = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fma_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * tl.load(y_ptr + offs, mask=m) + 1.0, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        xf, yf = x.view(-1), y.view(-1)
        out = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        n = xf.numel()
        fma_kernel[(triton.cdiv(n, 256),)](xf, yf, out.view(-1), n, BLOCK=256)
        return out
'''

VIEW_ROWS = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_fma_kernel(x_ptr, y_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    base = row * n_cols + cols
    tl.store(out_ptr + base, tl.load(x_ptr + base, mask=m) * tl.load(y_ptr + base, mask=m) + 1.0, mask=m)


def row_fma(x, y):
    cols = x.shape[-1]
    rows = x.numel() // cols
    x2 = x.view(-1, cols)
    y2 = y.view(-1, cols)
    out = torch.empty((rows, cols), device=x.device, dtype=x.dtype)
    row_fma_kernel[(rows,)](x2, y2, out, cols, BLOCK=64)
    return out.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return row_fma(x, y)
'''


VIEW_REF3 = VIEW_REF.replace("torch.randn(24, 40), torch.randn(24, 40)", "torch.randn(4, 6, 40), torch.randn(4, 6, 40)")


def test_contiguous_view_when_the_run_raised_on_a_view():
    """Host code flattening with .view() raises on the transposed check; with that error as the run's
    hint (only then) .contiguous().view() passes everything. Two kernels of our own."""
    for src, ref in ((VIEW_FLAT, VIEW_REF), (VIEW_ROWS, VIEW_REF3)):
        before = evaluate(_case(src, ref), "cpu")
        assert before.status != "pass"
        hints = run_hints({"evaluation": before.to_dict()}, {})
        assert any("view size is not compatible" in e for e in hints.get("errors", []))
        assert get("contiguous_view").propose(src) == []
        patches = get("contiguous_view").propose(src, hints)
        assert patches and evaluate(_case(patches[0].new_src, ref), "cpu").status == "pass"
