"""cuda_fused_axis_guard and cuda_batch_loop: CUDA kernels whose own code computes only the first slice of
a batched launch (a guard on one factor of a fused block axis; an index fixed at 0 whose bound is never
read). The kernels are the tests' own (tests/test_cuda_recipes.py, two per recipe, where all four run on a
GPU); here one per recipe runs on the CPU through kdebug's CUDA emulation under both verdicts, before the
patch and after it."""
import pytest

from debugger import lang
from debugger.case import case_from_sources
from debugger.evaluate import evaluate, kernelbench_checks, standard_checks
from debugger.lang.cuda import units
from debugger.lang.cuda.coverage import bound_choices, fixed_zero_indices, fused_axis_guards, stem
from debugger.recipes import RECIPES
from tests.test_cuda_recipes import BATCH_BIAS, BATCH_ROWMAX, FUSED_Y, FUSED_Z, candidate

CUDA = lang.get("cuda")

REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, w):
        return {expr}


def get_inputs():
    return [torch.randn{shape}, torch.randn({channels})]


def get_init_inputs():
    return []
'''

CASES = {
    "fused_guard_y": (FUSED_Y, "cuda_fused_axis_guard", "x * w[None, :, None]", (4, 6, 40), 6),
    "batch_loop_rowmax": (BATCH_ROWMAX, "cuda_batch_loop", "x.amax(-1) * w[None, :]", (3, 70, 9), 70),
}


def kernel(src: str):
    return next(fn for u in units(src) for fn in u.kernels)


def checks() -> list[dict]:
    """Two of KernelBench's trials and the kernel verdict's first seed: both verdicts, cheaply."""
    return [c for c in standard_checks() if c["name"] == "seed0"] + kernelbench_checks(trials=2)


@pytest.mark.parametrize("name", ["fused_guard_y", "batch_loop_rowmax"])  # the other two: statically and on a GPU
def test_the_patched_kernel_passes_on_the_emulated_gpu(name):
    """The patch under the CPU's emulation of CUDA: both verdicts pass. That the kernel before fails is the
    GPU test's (tests/test_cuda_recipes.py::test_on_the_gpu_before_fails_and_after_passes, same kernels), and
    its static fact is checked here without a build: one emulated build (about 20 s of CI) less a case."""
    from debugger.lang import get

    cuda, recipe, expr, shape, channels = CASES[name]
    reference = REFERENCE.format(expr=expr, shape=shape, channels=channels)
    fact = {"cuda_fused_axis_guard": "cuda_guard_on_fused_axis", "cuda_batch_loop": "cuda_index_fixed_at_zero"}[recipe]
    assert fact in {f.tag for f in get("cuda").static_facts(candidate(cuda))}
    patch = RECIPES[recipe].propose(candidate(cuda))[0]
    assert fact not in {f.tag for f in get("cuda").static_facts(patch.new_src)}
    after = evaluate(case_from_sources(reference, patch.new_src), "cpu", semantics="both", checks=checks())
    assert after.status == "pass", (patch.description, after.message)


def test_the_guard_is_widened_to_the_product_with_the_quotient_s_bound():
    fixed = RECIPES["cuda_fused_axis_guard"].propose(candidate(FUSED_Y))
    assert "if (i >= hw || bc >= channels * batch) return;" in fixed[0].new_src
    assert "if (i >= hw || bc >= gridDim.y) return;" in fixed[-1].new_src  # the launch's own extent, last
    # the quotient `n` is batch-like: the batch-like parameter, then the launch's extent
    first, last = RECIPES["cuda_fused_axis_guard"].propose(candidate(FUSED_Z))
    assert "if (bh < heads * batch_size && threadIdx.x == 0) {" in first.new_src
    assert "if (bh < gridDim.z && threadIdx.x == 0) {" in last.new_src


def test_the_rest_of_the_block_is_looped_over_the_unread_bound():
    bias = RECIPES["cuda_batch_loop"].propose(candidate(BATCH_BIAS))[0].new_src
    assert ("    int c = idx / hw;\n    for (int n = 0; n < batch_size; ++n) {\n"
            "        y[n * channels * hw + idx] = x[n * channels * hw + idx] + w[c];\n    }\n}") in bias
    assert "one sample at a time" not in bias  # the dropped declaration's comment goes with it
    rowmax = RECIPES["cuda_batch_loop"].propose(candidate(BATCH_ROWMAX))[0].new_src
    assert "    if (r < rows) {\n        for (int batch_idx = 0; batch_idx < batch; ++batch_idx) {\n" \
           "            float m = -1e30f;" in rowmax


def test_fact_messages_name_the_guard_and_the_unread_bound():
    facts = {f.tag: f.message for f in CUDA.static_facts(candidate(FUSED_Y))}
    assert "bc >= channels in channel_scale bounds blockIdx.y, which the kernel decodes as b = bc / channels" \
        in facts["cuda_guard_on_fused_axis"]
    facts = {f.tag: f.message for f in CUDA.static_facts(candidate(BATCH_ROWMAX))}
    assert "the parameter batch that bounds it is never read" in facts["cuda_index_fixed_at_zero"]


def test_kernels_that_cover_every_slice_are_left_alone():
    # the guard on the whole product; a guard on an axis the kernel never decodes
    whole = FUSED_Y.replace("bc >= channels)", "bc >= batch * channels)")
    assert not fused_axis_guards(kernel(candidate(whole)))
    plain = FUSED_Y.replace("int b = bc / channels;", "int b = 0;").replace("int c = bc % channels;", "int c = bc;")
    assert not fused_axis_guards(kernel(candidate(plain)))
    # the bound is read (a loop over the batch already), or the index is reassigned
    looped = BATCH_BIAS.replace("    int n = 0;  // one sample at a time\n    y[",
                                "    for (int n = 0; n < batch_size; ++n) y[")
    assert not fixed_zero_indices(kernel(candidate(looped)))
    moved = BATCH_BIAS.replace("int n = 0;  // one sample at a time", "int n = 0;\n    n = blockIdx.y;")
    assert not fixed_zero_indices(kernel(candidate(moved)))
    assert not RECIPES["cuda_batch_loop"].propose(candidate(looped))


def test_a_return_on_the_fixed_index_is_not_looped():
    early = BATCH_BIAS.replace("    y[n * channels", "    if (n > 0) return;\n    y[n * channels")
    assert fixed_zero_indices(kernel(candidate(early)))
    assert not RECIPES["cuda_batch_loop"].propose(candidate(early))


def test_stems_pair_an_index_with_its_bound():
    assert stem("batch_idx") == stem("batch_size") == stem("num_batches") == "batch"
    fn = kernel(candidate(FUSED_Y))
    assert bound_choices(fn, "batch_idx") == ["batch"] and bound_choices(fn, "b") == ["batch"]
    assert bound_choices(fn, "b", {"batch"}) == [] and bound_choices(fn, "c") == ["channels"]
