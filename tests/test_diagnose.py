"""Diagnosis on real kernels: error maps, probes, localisation across kernels, ranked hypotheses,
the command line and the picture."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from debugger.case import case_from_sources, load_case
from debugger.diagnose import diagnose
from debugger.diagnose.errormap import analyse_output
from debugger.diagnose.localisation import describe
from debugger.evaluate import SENTINEL_POISON, run_evaluation
from debugger.lang.spans import kernel_lines

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "eval" / "cases"

# ---- error maps on synthetic outputs: each shape of wrongness gets its own tag ------------------


def _ref(rows=8, cols=300):
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(0), dtype=torch.float64)


def test_error_map_tail_block():
    r = _ref()
    c = r.clone()
    c[:, 256:] = 0.0
    facts = analyse_output(r, c.float(), None)
    assert "tail_block_wrong" in facts["symptoms"]
    assert facts["wrong_from_column"] == 256


def test_error_map_never_written_from_both_poisons():
    r = _ref(1, 1000).reshape(-1)
    run1, run2 = r.clone().float(), r.clone().float()
    run1[900:] = float("nan")
    run2[900:] = SENTINEL_POISON
    facts = analyse_output(r, run1, run2)
    assert facts["never_written"] == 100
    assert {"never_written", "tail_block_wrong"} <= set(facts["symptoms"])
    assert "nan_in_output" not in facts["symptoms"]  # poison is not a NaN the kernel computed


def test_error_map_whole_rows_and_periodic():
    r = _ref(16, 64)
    c = r.clone()
    c[3] += 1.0
    c[11] += 1.0
    assert "whole_rows_wrong" in analyse_output(r, c.float(), None)["symptoms"]
    flat = _ref(1, 4096).reshape(-1)
    p = flat.clone()
    p[torch.arange(100, 4096, 128)] += 5.0  # one lane of every 128-wide block
    facts = analyse_output(flat, p.float(), None, block_sizes=(128,))
    assert "periodic_errors" in facts["symptoms"] and facts["period"] == 128


def test_error_map_whole_rows_survive_a_few_nearly_right_rows():
    # A per-channel scale read at the wrong channel (rows // C instead of rows % C), at a size with
    # thousands of rows: a few wrong scales lie within tolerance of the right one on most elements.
    g = torch.Generator().manual_seed(0)
    n, channels, length = 61, 96, 257
    x = torch.randn(n * channels, length, generator=g, dtype=torch.float64)
    scale = torch.randn(channels, generator=g, dtype=torch.float64)
    rows = torch.arange(n * channels)
    right, wrong = x * scale[rows % channels, None], x * scale[rows // channels, None]
    row_frac = ((wrong - right).abs() > 1e-4 + 1e-4 * right.abs()).double().mean(1)
    assert bool(((row_frac > 0) & (row_frac < 0.9)).any())  # the partial rows the rule must tolerate
    assert "whole_rows_wrong" in analyse_output(right, wrong.float(), None)["symptoms"]
    # Errors scattered over every row are not whole rows.
    scattered = right.clone()
    scattered[rows, rows % length] += 1.0
    assert "whole_rows_wrong" not in analyse_output(right, scattered.float(), None)["symptoms"]


def test_error_map_magnitude_structure():
    r = _ref(12, 40)
    assert "constant_factor" in analyse_output(r, (r * 0.5).float(), None)["symptoms"]
    assert analyse_output(r, (r * 0.5).float(), None)["factor"] == pytest.approx(0.5)
    assert "sign_flip" in analyse_output(r, (-r).float(), None)["symptoms"]
    assert "offset_error" in analyse_output(r, (r + 0.25).float(), None)["symptoms"]
    sq = _ref(32, 32)
    assert "transposed" in analyse_output(sq, sq.t().contiguous().float(), None)["symptoms"]
    shifted = torch.cat([r[:, :1], r[:, :-1]], dim=1)
    assert "shifted_by_one" in analyse_output(r, shifted.float(), None)["symptoms"]
    noisy = r * (1 + 1e-3 * torch.randn_like(r))
    tags = analyse_output(r, noisy.float(), None)["symptoms"]
    assert "precision_noise" in tags and "large_error" not in tags


def test_error_map_of_a_passing_output_has_no_symptoms():
    r = _ref()
    assert analyse_output(r, r.float(), None)["symptoms"] == []


# ---- whole diagnoses of benchmark near-misses -----------------------------------------------------


def _case(name):
    return load_case(CASES / name / "candidate.py", CASES / name / "reference.py")


def test_missing_store_mask_is_located_in_the_tail():
    diag = diagnose(_case("mask_missing__sum_rows"), experiments=False)
    assert diag.status == "diagnosed"
    assert diag.hypotheses[0]["bug_class"] == "mask_missing"
    assert diag.hypotheses[0]["lines"]
    assert 0 < diag.hypotheses[0]["confidence"] <= 1
    maps = [f for facts in diag.error_maps.values() for f in facts]
    assert maps and all("symptoms" in f for f in maps)


def test_probes_see_which_programs_wrote_what():
    case = _case("grid_undercount__vector_mul")
    diag = diagnose(case, experiments=False)
    assert diag.hypotheses[0]["bug_class"] == "grid_undercount"
    assert "never_written" in diag.symptoms
    probes = diag.probes
    assert probes.get("check"), probes
    assert "programs_missing" in probes.get("symptoms", []) or probes.get("unwritten_elements", 0) > 0


def test_experiments_confirm_the_class():
    diag = diagnose(_case("numerical_overflow__softmax"))
    fixed = [e for e in diag.experiments if e["result"] == "fixed"]
    assert fixed and fixed[0]["bug_class"] == "numerical_overflow"
    assert diag.hypotheses[0]["bug_class"] == "numerical_overflow"
    assert "numerical_overflow" in diag.summary


def test_a_small_experiment_budget_tries_each_recipe_before_a_second_variant():
    # Five axis swaps of one recipe come first in this kernel; the rows // C -> rows % C index fix
    # must still be among the first two experiments.
    diag = diagnose(_case("broadcast_axis__silu_channel_scale"), experiment_budget=2, probes=False)
    assert [e["recipe"] for e in diag.experiments] == ["mutate_broadcast_axis", "mutate_index_arithmetic"]
    assert diag.experiments[-1]["result"] == "fixed"
    assert diag.hypotheses[0]["bug_class"] == "broadcast_axis"


def test_the_kb_backend_ranks_a_different_recipe_before_a_recipes_fifth_variant():
    from debugger.backends.kb import KBBackend
    from debugger.backends.ranking import RecipeRanker

    src = (CASES / "broadcast_axis__silu_channel_scale" / "candidate.py").read_text()
    # The first diagnosis of this kernel at its CPU size, before experiments: a weak wrong class.
    diagnosis = {"hypotheses": [{"bug_class": "activation_formula", "confidence": 0.14, "lines": [18]}]}
    proposals = KBBackend(ranker=RecipeRanker()).propose(src, diagnosis, {}, {})
    recipes = [p.recipe for p in proposals]
    assert recipes.count("mutate_broadcast_axis") == 5
    assert "mutate_index_arithmetic" in recipes[:3]


def test_a_passing_candidate_is_reported_as_passing():
    case = load_case(CASES / "mask_missing__sum_rows" / "fixed.py", CASES / "mask_missing__sum_rows" / "reference.py")
    diag = diagnose(case)
    assert diag.status == "passes" and diag.hypotheses == []


# ---- localisation across kernels: which kernel departs first -------------------------------------

SOFTMAX_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(13, 300)]


def get_init_inputs():
    return []
'''

TWO_PASS_SOFTMAX = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_stats_kernel(x_ptr, max_ptr, sum_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=float("-inf"))
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=float("-inf"))
        s += STATS_TERM
    tl.store(max_ptr + row, row_max)
    tl.store(sum_ptr + row, tl.sum(s, axis=0))


@triton.jit
def normalize_kernel(x_ptr, out_ptr, max_ptr, sum_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row_max = tl.load(max_ptr + row)
    row_sum = tl.load(sum_ptr + row)
    offs = tl.arange(0, BLOCK)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + row * n_cols + cols, NORMALIZED, mask=cols < n_cols)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        row_max = torch.empty(rows, device=x.device, dtype=torch.float32)
        row_sum = torch.empty(rows, device=x.device, dtype=torch.float32)
        out = torch.empty_like(x)
        row_stats_kernel[(rows,)](x, row_max, row_sum, cols, x.stride(0), BLOCK=128)
        normalize_kernel[(rows,)](x, out, row_max, row_sum, cols, x.stride(0), BLOCK=128)
        return out
'''


def _two_pass(stats_term="tl.exp(x - row_max)", normalized="tl.exp(x - row_max) / row_sum"):
    return TWO_PASS_SOFTMAX.replace("STATS_TERM", stats_term).replace("NORMALIZED", normalized)


def test_the_correct_two_kernel_softmax_passes():
    case = case_from_sources(SOFTMAX_REF, _two_pass())
    assert run_evaluation(case, "cpu").report.status == "pass"


def test_localisation_targets_the_second_kernel_when_the_first_matches():
    case = case_from_sources(SOFTMAX_REF, _two_pass(normalized="tl.exp(x) / row_sum"))
    diag = diagnose(case, experiments=False, probes=False)
    loc = diag.localisation
    assert loc["target"]["kernel"] == "normalize_kernel"
    assert loc["target"]["lines"] == kernel_lines(case.candidate_src)["normalize_kernel"]
    assert loc["matched_kernels"] == ["row_stats_kernel"]
    verdicts = {(b["kernel"], b["arg"]): b for b in loc["buffers"]}
    assert "row max" in verdicts[("row_stats_kernel", 1)]["quantity"]
    assert "exp(x - max)" in verdicts[("row_stats_kernel", 2)]["quantity"]
    assert "normalize_kernel" in diag.summary and "normalize_kernel" in describe(loc)
    assert "localisation:" in diag.prompt_text()


def test_localisation_targets_the_first_kernel_when_its_statistics_are_wrong():
    case = case_from_sources(SOFTMAX_REF, _two_pass(stats_term="tl.exp(x)"))
    loc = diagnose(case, experiments=False, probes=False).localisation
    assert loc["target"]["kernel"] == "row_stats_kernel"
    assert loc["first_departing"]["arg"] == 2  # the row sum, not the row max
    assert loc["matched_kernels"] == []
    assert not loc["target"]["earlier_unchecked"]


def test_a_single_kernel_candidate_needs_no_localisation():
    diag = diagnose(_case("mask_missing__sum_rows"), experiments=False, probes=False)
    assert diag.localisation == {}


def test_localisation_says_when_an_earlier_kernel_could_not_be_checked():
    # Per-block partial sums have no counterpart in the reference: the final kernel departs, but the
    # diagnosis must not claim the partial kernel is right.
    loc = diagnose(_case("activation_formula__smooth_l1_loss"), experiments=False, probes=False).localisation
    assert loc["target"]["kernel"] == "finalize_mean_kernel"
    assert loc["target"]["earlier_unchecked"] == ["smooth_l1_partial_kernel"]
    assert "could not be checked" in describe(loc)


def test_the_kb_repair_of_a_two_kernel_candidate_edits_the_departing_kernel(tmp_path):
    from debugger.repair import repair

    case = case_from_sources(SOFTMAX_REF, _two_pass(normalized="tl.exp(x) / row_sum"))
    result = repair(case, backend="kb", write_files=False, retrieval=False, write_back=False)
    assert result.status == "repaired", result.message
    span = kernel_lines(case.candidate_src)["normalize_kernel"]
    changed = [i + 1 for i, (a, b) in enumerate(zip(case.candidate_src.splitlines(),
                                                     result.repaired_src.splitlines())) if a != b]
    assert changed and all(span[0] <= n <= span[1] for n in changed)


# ---- the command line ---------------------------------------------------------------------------


def _kdebug(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "debugger.cli", *args], capture_output=True, text=True,
                          cwd=cwd or REPO, timeout=600)


def test_cli_diagnose_json_contract_and_plot(tmp_path):
    folder = CASES / "mask_missing__sum_rows"
    png = tmp_path / "map.png"
    p = _kdebug("diagnose", str(folder / "candidate.py"), "--ref", str(folder / "reference.py"), "--json",
                "--no-experiments", "--plot", str(png))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["hypotheses"][0]["bug_class"] == "mask_missing"
    for h in out["hypotheses"]:
        assert {"bug_class", "confidence", "evidence"} <= set(h) and 0 <= h["confidence"] <= 1
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out["plot"] == str(png)


def test_cli_diagnose_exit_codes(tmp_path):
    folder = CASES / "mask_missing__sum_rows"
    p = _kdebug("diagnose", str(folder / "fixed.py"), "--ref", str(folder / "reference.py"))
    assert p.returncode == 1
    p = _kdebug("diagnose", str(tmp_path / "missing.py"), "--ref", str(folder / "reference.py"))
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
