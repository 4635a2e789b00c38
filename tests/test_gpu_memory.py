"""Out-of-memory errors on a shared GPU: the other processes' doing is a skipped check, the run's own
use a runtime error (the messages are PyTorch's, as the H200 printed them in run 5 of 2026-12-04)."""
from debugger.case import case_from_sources
from debugger.evaluate import evaluate, standard_checks
from debugger.gpu_memory import crowded_out, held_by_others, is_out_of_memory

SHARED = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total capacity of "
          "139.80 GiB of which 19.25 MiB is free. Process 2328 has 64.73 GiB memory in use. Process 2334 has "
          "8.62 GiB memory in use. Process 2522 has 18.07 GiB memory in use. Process 2574 has 518.00 MiB memory "
          "in use. Process 2611 has 47.80 GiB memory in use. Of the allocated memory 512.00 MiB is allocated by "
          "PyTorch, and 6.00 MiB is reserved by PyTorch but unallocated.")
OWN = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 96.00 GiB. GPU 0 has a total capacity of "
       "139.80 GiB of which 30.10 GiB is free. Process 51 has 108.20 GiB memory in use. Including non-PyTorch "
       "memory, this process has 107.70 GiB memory in use. Of the allocated memory 106.00 GiB is allocated by "
       "PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.")


def test_memory_held_by_other_processes_is_their_doing():
    others = held_by_others(SHARED)
    assert abs(others / (1 << 30) - (64.73 + 8.62 + 18.07 + 0.518 + 47.80 - 0.518)) < 0.05
    assert "other processes held" in crowded_out(SHARED)


def test_a_workers_error_keeps_every_process_of_an_out_of_memory_message():
    """The worker's one-line error was cut at 500 characters: with five processes on the GPU the accounting
    crowded_out reads was gone, and a reference crowded out by the other jobs read as failing on its own inputs
    (run24 on the H100: the right fix of elu_linear reverted as 'worse')."""
    import torch

    from debugger.sandbox.roles import _error

    # as the H100 printed it beside three pool jobs: a dozen processes
    crowded = SHARED.removeprefix("OutOfMemoryError: ").replace(
        "Process 2611", " ".join(f"Process {1036 + i} has 4.96 GiB memory in use." for i in range(12)) + " Process 2611")
    error = _error(torch.OutOfMemoryError(crowded), "forward")["error"]
    assert len(error) > 500 and crowded_out(error) is not None
    assert len(_error(RuntimeError("x" * 2000), "forward")["error"]) == 500


def test_a_cuda_errors_one_line_is_the_error_not_pytorchs_advice():
    """torch.AcceleratorError's text ends with advice every CUDA error carries; the H100 pool run of TritonBench
    reported four answers and a reference as 'AcceleratorError: Compile with `TORCH_USE_CUDA_DSA`...',
    which says nothing of what failed."""
    import torch

    from debugger.sandbox.roles import _error

    advice = ("CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
              "below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
              "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
    error_type = getattr(torch, "AcceleratorError", RuntimeError)
    illegal = _error(error_type("CUDA error: an illegal memory access was encountered\n" + advice), "forward")
    assert illegal["error"].endswith(": CUDA error: an illegal memory access was encountered")
    oom = _error(error_type("CUDA error: out of memory\n" + advice), "forward")["error"]
    assert oom.endswith("CUDA error: out of memory") and is_out_of_memory(oom)
    assert crowded_out(oom) is None  # the driver's error names no process: nothing to excuse it with


def test_the_drivers_out_of_memory_error_carries_what_the_failing_process_saw(monkeypatch):
    """The driver's "CUDA error: out of memory" (an extension's cudaMalloc, a launch) names no process, so a gate
    beside ten others on the H100 rejected two TritonBench answers and two opus answers for it (2026-12-07, runs
    43-44; alone, all four were accepted). The worker now adds the GPU's free and total memory and its own, read
    as it fails, and crowded_out judges by them."""
    import torch

    from debugger.sandbox.roles import _error

    gib = 1 << 30
    error_type = getattr(torch, "AcceleratorError", RuntimeError)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: 2 * gib)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (gib // 2, 79 * gib))  # others: 76.5 GiB
    crowded = _error(error_type("CUDA error: out of memory"), "forward")["error"]
    assert "GPU memory at the failure" in crowded and "76.5 of 79.0 GiB" in crowded_out(crowded)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: 70 * gib)  # the run's own 70 GiB
    assert crowded_out(_error(error_type("CUDA error: out of memory"), "forward")["error"]) is None
    # PyTorch's own message names every process already: nothing added
    assert _error(torch.OutOfMemoryError(SHARED.removeprefix("OutOfMemoryError: ")), "forward")["error"].endswith(
        "reserved by PyTorch but unallocated.")


def test_a_runs_own_allocation_is_not_excused():
    assert held_by_others(OWN) < 1 << 30
    assert crowded_out(OWN) is None
    assert crowded_out("RuntimeError: CUDA error: an illegal memory access was encountered") is None
    assert crowded_out("OutOfMemoryError: CUDA out of memory.") is None  # says nothing of the others


REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return []
'''

CANDIDATE = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        if x.abs().max() > 0:
            raise torch.cuda.OutOfMemoryError(MESSAGE)
        return x * 2.0
'''


def _check(message: str):
    src = CANDIDATE.replace("MESSAGE", repr(message.split(": ", 1)[1]))
    report = evaluate(case_from_sources(REFERENCE, src), "cpu", checks=[standard_checks()[0]])
    return report, report.checks[0]


def test_a_check_crowded_out_of_the_gpu_is_skipped_with_its_reason_not_failed():
    report, check = _check(SHARED)
    assert check.status == "skipped" and "other processes held" in check.message
    assert report.verdicts["kernel"]["failed"] == [] and "seed0" in report.verdicts["kernel"]["skipped"]
    assert report.status != "pass" and report.message.startswith("not judged: 1 of 1 checks could not run")
    report, check = _check(OWN)
    assert check.status == "runtime_error" and "106.00 GiB is allocated" in check.message
    assert report.status == "runtime_error"


def test_the_gate_calls_an_accept_with_checks_crowded_out_incomplete():
    """A check skipped because other processes held the GPU is a check that did not run: the gate's accept
    says so (`kdebug check` exits 2), where a check skipped for inputs the reference itself rejects is not."""
    from debugger.integrity.gate import _crowded_checks

    crowded = {"checks": [{"name": "seed0", "status": "pass", "message": ""},
                          {"name": "seed1", "status": "skipped", "message": "candidate: " + crowded_out(SHARED)}]}
    assert "1 of 2 dynamic checks could not run for GPU memory (first: seed1" in _crowded_checks(crowded)
    rejected_shape = {"checks": [{"name": "hidden_shape0", "status": "skipped",
                                  "message": "reference failed: RuntimeError: Expected 3 channels"}]}
    assert _crowded_checks(rejected_shape) is None and _crowded_checks(None) is None


# The comparison runs in the reference's worker: this reference makes it fail as it failed beside nine other gates on an
# H100 (run 47), out of memory others held.
COMPARISON_CROWDED_REFERENCE = REFERENCE + '''

import debugger.compare as _compare


def _crowded(*args, **kwargs):
    raise torch.cuda.OutOfMemoryError(MESSAGE)


_compare.output_stats = _compare.kernelbench_stats = _crowded
'''


def test_a_comparison_out_of_gpu_memory_is_a_check_not_run_not_the_candidates_error():
    from debugger.integrity.gate import _crowded_checks

    honest = CANDIDATE.replace("if x.abs().max() > 0:\n            raise torch.cuda.OutOfMemoryError(MESSAGE)\n", "")
    reference = COMPARISON_CROWDED_REFERENCE.replace("MESSAGE", repr(SHARED.split(": ", 1)[1]))
    report = evaluate(case_from_sources(reference, honest), "cpu", checks=[standard_checks()[0]])
    check = report.checks[0]
    assert check.status == "skipped" and check.message.startswith("comparison failed: out of GPU memory while other")
    assert report.verdicts["kernel"]["failed"] == [] and report.status != "pass"
    assert "1 of 1 dynamic checks could not run for GPU memory" in _crowded_checks(report.to_dict())
    # any other failure of the comparison stays what it was
    broken = COMPARISON_CROWDED_REFERENCE.replace("torch.cuda.OutOfMemoryError(MESSAGE)", "ValueError('no stats')")
    check = evaluate(case_from_sources(broken, honest), "cpu", checks=[standard_checks()[0]]).checks[0]
    assert check.status == "runtime_error" and check.message == "comparison failed: ValueError: no stats"
