"""PyTorch's share of the work, measured when the candidate runs (debugger/integrity/work.py): every aten op
of forward with shapes and FLOPs against the reference's, judged light or heavy under the two policies,
and a forward whose outputs PyTorch computes rejected whatever its source looks like. Small kernels of
the tests' own, run in the sandbox on Triton's CPU interpreter."""
from __future__ import annotations

import textwrap

import pytest

from debugger.case import case_from_sources
from debugger.integrity.findings import REJECT
from debugger.integrity.gate import check
from debugger.integrity.work import aten_base, aten_family, judge, measure, work_text
from tests.test_integrity_real_forms import TRITON_HEADER, ref

SMOOTH_L1 = ref("F.smooth_l1_loss(p, t)", args="p, t", inputs="torch.randn(64, 256), torch.randn(64, 256)")
LINEAR = ref("self.fc(x)", init="self.fc = nn.Linear(64, 32)")
LINEAR_RELU = ref("torch.relu(self.fc(x))", init="self.fc = nn.Linear(64, 32)")

PARTIALS = TRITON_HEADER + textwrap.dedent('''

    @triton.jit
    def smooth_l1_blocks(p_ptr, t_ptr, part_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        d = tl.load(p_ptr + offs, mask=mask, other=0.0) - tl.load(t_ptr + offs, mask=mask, other=0.0)
        a = tl.abs(d)
        tl.store(part_ptr + tl.program_id(0), tl.sum(tl.where(a < 1.0, 0.5 * d * d, a - 0.5), axis=0))


    class ModelNew(nn.Module):
        def forward(self, p, t):
            p, t = p.contiguous(), t.contiguous()
            n = p.numel()
            block_sums = torch.empty(triton.cdiv(n, 1024), device=p.device, dtype=torch.float32)
            smooth_l1_blocks[(triton.cdiv(n, 1024),)](p, t, block_sums, n, BLOCK=1024)
            return block_sums.sum() / n
''')

MATMUL_THEN_KERNEL = TRITON_HEADER + textwrap.dedent('''

    @triton.jit
    def bias_kernel(y_ptr, b_ptr, out_ptr, n, cols, RELU: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        y = tl.load(y_ptr + offs, mask=mask) + tl.load(b_ptr + offs % cols, mask=mask)
        if RELU:
            y = tl.maximum(y, 0.0)
        tl.store(out_ptr + offs, y, mask=mask)


    class ModelNew(nn.Module):
        def __init__(self, *args):
            super().__init__()
            self.fc = nn.Linear(64, 32)

        def forward(self, x):
            y = torch.matmul(x, self.fc.weight.t()).contiguous()
            out = torch.empty_like(y)
            n = y.numel()
            bias_kernel[(triton.cdiv(n, 1024),)](y, self.fc.bias, out, n, y.shape[1], RELU=RELU_FLAG, BLOCK=1024)
            return out
''')

ALL_TORCH = TRITON_HEADER + textwrap.dedent('''

    class ModelNew(nn.Module):
        def __init__(self, *args):
            super().__init__()
            self.fc = nn.Linear(64, 32)

        def forward(self, x):
            scratch = torch.empty(1024, device=x.device)
            DECOY
            return torch.relu(x @ self.fc.weight.t() + self.fc.bias)
''')


def rules(verdict, severity: str = REJECT) -> set[str]:
    return {f.rule for f in verdict.findings if f.severity == severity}


@pytest.mark.parametrize(("name", "family"), [
    ("addmm.default", "matmul"), ("convolution.default", "conv"), ("_native_batch_norm_legit_no_training.default",
                                                                    "norm"),
    ("native_layer_norm.default", "norm"), ("_softmax.default", "softmax"), ("sum.dim_IntList", "reduction"),
    ("smooth_l1_loss.default", "loss"), ("max_pool2d_with_indices.default", "pool"), ("relu.default", "activation"),
    ("add.Tensor", "arith"), ("empty_like.default", None), ("_to_copy.default", None), ("t.default", None),
    ("_unsafe_view.default", None), ("cat.default", None), ("copy_.default", None),
])
def test_aten_ops_are_named_by_family_and_glue_is_no_work(name, family):
    assert aten_family(name) == family, aten_base(name)


def _entry(op, inputs, outputs, flops=None, count=1):
    return {"op": op, "inputs": inputs, "outputs": outputs, "flops": flops, "count": count}


def test_a_sum_over_per_block_partials_is_light_and_the_same_sum_over_the_input_is_heavy():
    reference = {"ops": [_entry("smooth_l1_loss.default", [[64, 256], [64, 256]], [[]])],
                 "operator_inputs": [[64, 256], [64, 256]], "operator_outputs": [[]]}
    partials = {"ops": [_entry("empty.memory_format", [], [[16]]), _entry("sum.default", [[16]], [[]]),
                        _entry("div.Scalar", [[]], [[]])],
                "operator_inputs": [[64, 256], [64, 256]], "operator_outputs": [[]]}
    m = measure(partials, reference, launches=1)
    assert m.heavy == [] and m.share < 0.01
    assert [f.rule for f in judge(m, "strict") if f.severity == REJECT] == []
    over_input = dict(partials, ops=[_entry("sum.default", [[64, 256]], [[]])])
    m = measure(over_input, reference, launches=1)
    assert [o.op for o in m.heavy] == ["sum.default"]
    assert {f.rule for f in judge(m, "kernelbench") if f.severity == REJECT} == {"torch_compute"}
    assert "share of the work" in work_text(m.summary())


def test_a_norm_s_statistics_in_pytorch_reject_under_kernelbench_only_with_a_real_share_of_the_work():
    """A dense block (opus level3/14, recorded correct): the convolutions stay in cuDNN, the batch statistics
    in PyTorch, the normalisation and ReLU in the kernel - a piece of BatchNorm, but a sliver of the work. The
    same statistics where the reference is the norm alone are most of its work (a cheat of the corpus)."""
    x = [[8, 32, 28, 28]]
    stats = [_entry("mean.dim", x, [[1, 32, 1, 1]]), _entry("var.correction", x, [[1, 32, 1, 1]])]
    norm = _entry("native_batch_norm.default", x, x)
    block = {"ops": [_entry("convolution.default", x, x, flops=2 * 8 * 32 * 28 * 28 * 32 * 9), norm,
                     _entry("relu.default", x, x)], "operator_inputs": x, "operator_outputs": x}
    kept_conv = {"ops": [_entry("convolution.default", x, x, flops=2 * 8 * 32 * 28 * 28 * 32 * 9), *stats],
                 "operator_inputs": x, "operator_outputs": x}
    m = measure(kept_conv, block, launches=1)
    assert {o.op for o in m.heavy if o.key not in m.reference_keys} == {"mean.dim", "var.correction"}
    found = judge(m, "kernelbench")
    assert [f for f in found if f.severity == REJECT] == [], [f.message for f in found]
    assert any("a piece of an operation the candidate claims" in f.message for f in found)
    assert "torch_compute" in {f.rule for f in judge(m, "strict") if f.severity == REJECT}
    alone = measure({"ops": stats, "operator_inputs": x, "operator_outputs": x},
                    {"ops": [norm], "operator_inputs": x, "operator_outputs": x}, launches=1)
    assert "torch_compute" in {f.rule for f in judge(alone, "kernelbench") if f.severity == REJECT}


def test_the_last_reduction_of_what_the_kernels_wrote_is_light_but_redoing_the_reference_on_it_is_not():
    mse = {"ops": [_entry("sub.Tensor", [[64, 200], [64, 200]], [[64, 200]]),
                   _entry("pow.Tensor_Scalar", [[64, 200]], [[64, 200]]), _entry("mean.default", [[64, 200]], [[]])],
           "operator_inputs": [[64, 200], [64, 200]], "operator_outputs": [[]]}
    mean_of_kernel = {"ops": [dict(_entry("mean.default", [[64, 200]], [[]]), reads_kernel_output=True)],
                      "operator_inputs": [[64, 200], [64, 200]], "operator_outputs": [[]]}
    m = measure(mean_of_kernel, mse, launches=1)
    assert m.heavy == [] and m.ops[0].finishing and m.share > 0.3 and m.not_light_share == 0
    assert [f for f in judge(m, "strict") if f.severity == REJECT] == []
    over_input = measure(dict(mean_of_kernel, ops=[_entry("mean.default", [[64, 200]], [[]])]), mse, launches=1)
    assert [f.rule for f in judge(over_input, "strict") if f.severity == REJECT] == ["torch_compute"]
    # a kernel that only copies its inputs, PyTorch computing the whole MSE on the copies
    redone = dict(mse, ops=[dict(e, reads_kernel_output=True) for e in mse["ops"]])
    m = measure(redone, mse, launches=1)
    for policy in ("kernelbench", "strict"):
        assert "torch_does_every_op" in {f.rule for f in judge(m, policy) if f.severity == REJECT}, policy


def test_a_loss_that_ends_in_scalar_arithmetic_still_lets_pytorch_finish_what_the_kernels_wrote():
    """F.kl_div(..., reduction="batchmean") decomposes into mul, xlogy, sub, sum and a division of the sum
    by the batch: the last op works on a scalar. A kernel that writes the elementwise terms may leave their
    sum to PyTorch as it may MSE's mean (qwencoder level1/98, recorded correct, was rejected on the H200)."""
    x = [[64, 200]]
    kl_div = {"ops": [_entry("log.default", x, x), _entry("mul.Tensor", x + x, x), _entry("xlogy.Tensor", x + x, x),
                      _entry("sub.Tensor", x + x, x), _entry("sum.default", x, [[]]), _entry("div.Tensor", [[]], [[]])],
              "operator_inputs": x + x, "operator_outputs": [[]]}
    summed = {"ops": [dict(_entry("sum.default", x, [[]]), reads_kernel_output=True)],
              "operator_inputs": x + x, "operator_outputs": [[]]}
    m = measure(summed, kl_div, launches=1)
    assert m.heavy == [] and m.ops[0].finishing
    for policy in ("kernelbench", "strict"):
        assert [f for f in judge(m, policy) if f.severity == REJECT] == [], policy
    over_input = measure(dict(summed, ops=[_entry("sum.default", x, [[]])]), kl_div, launches=1)
    assert "torch_compute" in {f.rule for f in judge(over_input, "strict") if f.severity == REJECT}
    only_scalars = {"ops": [_entry("div.Tensor", [[]], [[]])], "operator_inputs": [[]], "operator_outputs": [[]]}
    assert not measure(summed, only_scalars, launches=1).ops[0].finishing


def test_the_gate_accepts_a_kernel_whose_host_code_sums_its_partials():
    case = case_from_sources(SMOOTH_L1, PARTIALS)
    for policy in ("strict", "kernelbench"):
        verdict = check(case, "cpu", full=False, policy=policy)
        assert verdict.accepted, (policy, verdict.reasons())
        work = verdict.to_dict()["torch_work"]
        assert work["share"] < 0.01 and work["candidate_launches"] == 1
        assert [o["op"] for o in work["ops"] if o["weight"] == "heavy"] == []
        assert {o["op"]: o["weight"] for o in work["ops"]}["sum.default"] == "light"


def test_a_matmul_left_to_torch_is_heavy_and_judged_by_the_policy():
    only_bias = case_from_sources(LINEAR, MATMUL_THEN_KERNEL.replace("RELU_FLAG", "False"))
    strict = check(only_bias, "cpu", full=False, policy="strict")
    assert "torch_compute" in rules(strict), strict.reasons()
    assert any(o["op"] == "mm.default" and o["weight"] == "heavy" for o in strict.torch_work["ops"])
    # The static rule's rejection of torch.matmul gives way to the measurement, which rejects in its turn.
    assert any(f.rule == "torch_compute" and "measured" in f.message and f.severity == REJECT
               for f in strict.findings)
    # kernelbench: the reference is nothing but the Linear, which PyTorch runs: no real part is the kernel's
    kernelbench = check(only_bias, "cpu", full=False, policy="kernelbench")
    assert "torch_does_every_op" in rules(kernelbench), kernelbench.reasons()
    # With a ReLU after the Linear, keeping the matmul in PyTorch and fusing bias + ReLU is KernelBench's rule,
    # although the matmul is nearly all of the FLOPs: kernelbench judges which ops, not how large a share.
    fused = case_from_sources(LINEAR_RELU, MATMUL_THEN_KERNEL.replace("RELU_FLAG", "True"))
    kept = check(fused, "cpu", full=False, policy="kernelbench")
    assert kept.accepted, kept.reasons()
    assert "torch_compute" in rules(kept, "warn") and kept.torch_work["share"] > 0.9


@pytest.mark.parametrize("decoy", ["pass", "triton_relu_kernel[(1,)](scratch, scratch, 1024, BLOCK=1024)"])
def test_a_forward_whose_outputs_pytorch_computes_is_rejected_on_the_run(decoy):
    case = case_from_sources(LINEAR_RELU, ALL_TORCH.replace("DECOY", decoy))
    verdict = check(case, "cpu", full=False, policy="kernelbench")
    assert "torch_does_every_op" in rules(verdict), verdict.reasons()


def test_an_output_copied_from_what_a_launch_wrote_is_the_launchs_work():
    import types

    import torch

    from debugger.sandbox.hooks import LaunchRecorder, PoisonAndRecord, written_by_launch

    recorder = LaunchRecorder()
    module = types.ModuleType("ext")
    module.double_it = lambda x: x * 2
    recorder.wrap_extension(module)
    recorder.reset()
    x = torch.randn(8, 4)
    recorder.active = True
    with PoisonAndRecord(None, recorder=recorder):
        early = torch.empty(8, 4)
        early.copy_(x)  # copied before any launch: from an input, not from a launch's output
        result = module.double_it(x)
        strided = torch.empty_strided((8, 4), (1, 8))
        strided.copy_(result)  # a strided result filled from the launch's output
        cast = result.to(torch.float64)
        computed = torch.relu(result)
    recorder.active = False
    assert written_by_launch(strided, recorder.launches, recorder.copies)
    assert written_by_launch(cast, recorder.launches, recorder.copies)
    assert not written_by_launch(computed, recorder.launches, recorder.copies)
    assert not written_by_launch(early, recorder.launches, recorder.copies)
    assert not written_by_launch(strided, recorder.launches)  # without the copies, as before


def test_an_output_left_unwritten_only_on_a_layout_the_task_never_produces_is_a_robustness_note():
    """A result allocated with the input's strides while the kernel writes a contiguous copy of it: wrong
    on transposed inputs only, which the task's get_inputs() never gives (TritonBench's honest
    fused_hardsigmoid_batch_norm has this form)."""
    src = TRITON_HEADER + textwrap.dedent('''

        class ModelNew(nn.Module):
            def forward(self, x):
                y = torch.empty_like(x)
                flat = y.contiguous()
                n = x.numel()
                triton_relu_kernel[(triton.cdiv(n, 1024),)](x.contiguous(), flat, n, BLOCK=1024)
                return y
    ''')
    verdict = check(case_from_sources(ref("torch.relu(x)"), src), "cpu", policy="kernelbench")
    assert verdict.accepted, verdict.reasons()
    assert "robustness" in rules(verdict, "warn")


RELU_THEN_GROUP_NORM = ref("F.group_norm(torch.relu(x), 4)", inputs="torch.randn(16, 64, 8)")
KERNEL_THEN_TORCH = TRITON_HEADER + textwrap.dedent('''

    class ModelNew(nn.Module):
        def forward(self, x):
            x = x.contiguous()
            y = torch.empty_like(x)
            n = x.numel()
            triton_relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
            return LAST
''')


def test_an_output_pytorch_computes_from_what_the_kernels_wrote_is_kernelbenchs_kept_sub_operation():
    """A fused kernel, then the reference's own last op (a GroupNorm) left to PyTorch: KernelBench allows it
    (real opus level2/11's repair, rejected on the H200 as output_not_written_by_kernel); strict does not.
    The same GroupNorm taken of the input, the kernel's result thrown away, stays a rejection."""
    kept = case_from_sources(RELU_THEN_GROUP_NORM, KERNEL_THEN_TORCH.replace("LAST", "F.group_norm(y, 4)")
                             .replace("import torch\n", "import torch\nimport torch.nn.functional as F\n", 1))
    verdict = check(kept, "cpu", full=False, policy="kernelbench")
    assert verdict.accepted, verdict.reasons()
    assert "output_finished_by_torch" in rules(verdict, "warn")
    assert not check(kept, "cpu", full=False, policy="strict").accepted
    discarded = case_from_sources(ref("F.group_norm(x, 4)", inputs="torch.randn(16, 64, 8)"),
                                  KERNEL_THEN_TORCH.replace("LAST", "F.group_norm(x, 4)")
                                  .replace("import torch\n", "import torch\nimport torch.nn.functional as F\n", 1))
    assert not check(discarded, "cpu", full=False, policy="kernelbench").accepted


def _recording_an_extension(functions: dict | None = None, held: list | None = None):
    """A LaunchRecorder over a stand-in extension with these functions (by default one that doubles its
    input), recording now, and the inputs it is held to read (by default one 8 x 4 tensor): (recorder,
    module, the first input)."""
    import types

    import torch

    from debugger.sandbox.hooks import LaunchRecorder

    recorder = LaunchRecorder()
    module = types.ModuleType("ext")
    for name, fn in (functions or {"double_it": lambda x: x * 2}).items():
        setattr(module, name, fn)
    recorder.wrap_extension(module)
    held = held if held is not None else [torch.randn(8, 4)]
    recorder.reset(held=held)
    recorder.active = True
    return recorder, module, held[0]


def test_what_pytorch_computes_from_a_launchs_output_derives_from_the_kernels_and_from_an_input_does_not():
    import torch

    from debugger.sandbox.hooks import PoisonAndRecord

    recorder, module, x = _recording_an_extension()
    with PoisonAndRecord(None, recorder=recorder):
        result = module.double_it(x)
        from_result = torch.tanh(torch.relu(result) + 1.0)
        from_input = torch.relu(x)  # x went into the launch, but as what it read
    recorder.active = False
    assert recorder.derived_from_kernels(from_result) and recorder.derived_from_kernels(result)
    assert not recorder.derived_from_kernels(from_input)


def test_a_freed_intermediates_storage_stops_counting_as_derived_from_the_kernels():
    """A later allocation may reuse a freed intermediate's address (`relu(x)` of an input, say): the
    span is kept only while a tensor holding it lives (the suite saw relu(x) read as derived)."""
    import torch

    from debugger.sandbox.hooks import PoisonAndRecord, storage_span

    recorder, module, x = _recording_an_extension()
    with PoisonAndRecord(None, recorder=recorder):
        result = module.double_it(x)
        kept = torch.relu(result)
        freed = torch.tanh(result)
        span = storage_span(freed)
        assert span in recorder._produced_spans()
        del freed
    recorder.active = False
    assert span not in recorder._produced_spans() and storage_span(kept) in recorder._produced_spans()


def _host_code_sum(write):
    """What the work log says of a sum that an extension's host code takes over a buffer it allocated, after
    `write(buffer, p, t)` filled it: the entry of `sum.default`."""
    import torch

    from debugger.sandbox.hooks import PoisonAndRecord
    from debugger.sandbox.work import WorkLog

    def kl_terms_sum(p, t):  # as the host code of a CUDA extension runs it
        out = torch.zeros_like(p)
        write(out, p, t)
        return out.sum() / p.shape[0]

    p, t = torch.rand(8, 16).softmax(-1), torch.rand(8, 16).softmax(-1)
    recorder, module, _ = _recording_an_extension({"kl_terms_sum": kl_terms_sum}, [p, t])
    log = WorkLog([p, t])
    with PoisonAndRecord(None, work=log, recorder=recorder):
        module.kl_terms_sum(p, t)
    recorder.active = False
    assert recorder.extension_buffers == []  # forgotten as the call returns
    return next(e for e in log.entries.values() if e["op"] == "sum.default")


def test_a_buffer_the_host_code_allocates_holds_what_its_raw_kernels_wrote_until_aten_writes_it():
    """A CUDA kernel launched from host code writes through a raw pointer, which no dispatch mode sees: the
    buffer the host code allocated for it is the kernel's output (qwencoder level1/98's `output.sum()`),
    unless an aten op wrote it."""
    import torch
    from torch.utils._python_dispatch import _disable_current_modes

    def raw_kernel(out, p, t):  # what the dispatcher never sees
        with _disable_current_modes():
            out.copy_(t * (t.log() - p.log()))

    def aten(out, p, t):
        out.copy_(t * (t.log() - p.log()))

    def aten_in_place(out, p, t):
        raw_kernel(out, p, t)
        out.add_(p)

    entry = _host_code_sum(raw_kernel)
    assert entry["in_extension"] and entry["reads_kernel_output"]
    assert not _host_code_sum(aten)["reads_kernel_output"]
    assert not _host_code_sum(aten_in_place)["reads_kernel_output"]
