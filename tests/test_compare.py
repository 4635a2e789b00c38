"""Output comparison (debugger/compare.py): slice-by-slice figures equal whole-tensor ones."""
from __future__ import annotations

import torch


def _awkward_pair(shape=(5, 13)):
    g = torch.Generator().manual_seed(3)
    ref = torch.randn(shape, generator=g)
    cand = ref + 1e-6 * torch.randn(shape, generator=g)
    cand[2, 7] += 0.5          # wrong
    cand[4, 12] -= 3.0         # wrong, later slice
    cand[0, 3] = float("nan")  # NaN only in the candidate
    ref[1, 1] = float("inf")
    cand[1, 1] = float("inf")  # the same Inf: fine
    cand[3, 0] = float("-inf")  # an Inf only in the candidate
    return cand, ref


def _figures(compare, cand, ref, floor) -> dict:
    return {
        "stats": compare.output_stats(0, cand, ref, torch.float32, 1e-4, 1e-4),
        "floored": compare.output_stats(0, cand, ref, torch.float32, 1e-4, 1e-4, floor=floor),
        "kb": compare.kernelbench_stats(0, cand, ref, 1e-2),
        "kb_close": compare.kernelbench_stats(0, ref + 1e-4, ref, 1e-2),
        "diff": compare.max_difference([cand], [ref]),
        "diff_finite": compare.max_difference([ref + 0.25], [ref]),
        "any": compare.any_wrong(cand, ref, 1e-4, 1e-4),
        "finite": compare.max_finite_error(cand, ref),
    }


def test_comparisons_slice_by_slice_say_what_whole_tensor_comparisons_say(monkeypatch):
    """Large outputs are compared in slices (bounded float64 temporaries); every figure must be the same as
    comparing the whole tensors, the first wrong element's index included."""
    from debugger import compare

    cand, ref = _awkward_pair()
    floor = torch.full(ref.shape, 1e-3)
    whole = _figures(compare, cand, ref, floor)
    assert whole["stats"]["n_wrong"] == 4 and whole["stats"]["first_wrong"] == [0, 3]
    assert not whole["kb"]["passed"] and whole["kb_close"]["passed"] and abs(whole["diff_finite"] - 0.25) < 1e-6
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", 7)  # 65 elements: ten slices, the last one short
    sliced = _figures(compare, cand, ref, floor)
    assert sliced == whole
    assert compare.count_equal(ref, float(ref.reshape(-1)[8])) == int((ref == ref.reshape(-1)[8]).sum()) >= 1
    # a non-contiguous candidate and a 0-d output slice the same way
    assert compare.output_stats(0, cand.t().contiguous().t(), ref, torch.float32, 1e-4, 1e-4) == whole["stats"]
    assert compare.output_stats(0, torch.tensor(1.5), torch.tensor(1.0), torch.float32, 1e-4, 1e-4)["first_wrong"] == []


def test_a_close_kernelbench_trial_has_output_stats_figures_for_less_work():
    """A passing KernelBench trial is judged by torch.allclose and needs only its errors' size; its figures are
    the ones output_stats gives (an equal Inf included), without output_stats' dozen passes over the output."""
    from debugger import compare

    g = torch.Generator().manual_seed(5)
    ref = torch.randn(300, 70, generator=g)
    ref[3, 4] = float("inf")
    cand = ref + 1e-3 * torch.randn(300, 70, generator=g)
    cand[3, 4] = float("inf")
    full = compare.output_stats(0, cand, ref, torch.float32, 1e-2, 1e-2)
    fast = compare.kernelbench_stats(0, cand, ref, 1e-2)
    assert fast["passed"] and full["passed"]
    assert fast == {**full, "max_abs_err": fast["max_abs_err"], "max_rel_err": fast["max_rel_err"]}
    assert abs(fast["max_abs_err"] - full["max_abs_err"]) < 1e-9 and abs(fast["max_rel_err"] - full["max_rel_err"]) < 1e-9
