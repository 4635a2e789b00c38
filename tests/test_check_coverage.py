"""What the checks cover: layouts reach every tensor input (an integer index tensor read by flat
offsets fails on a strided view exactly as a float one does), and value distributions outside the
operator's domain, where the reference itself yields NaN/Inf, are not held against the candidate."""
from debugger.case import case_from_sources
from debugger.evaluate import evaluate, standard_checks

GATHER_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, table, idx):
        return table[idx]


rows, dim, picks = 50, 24, 17


def get_inputs():
    return [torch.randn(rows, dim), torch.randint(0, rows, (picks,))]


def get_init_inputs():
    return []
'''

GATHER = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gather_kernel(table_ptr, idx_ptr, out_ptr, dim, idx_stride, BLOCK: tl.constexpr):
    m = tl.program_id(0)
    row = tl.load(idx_ptr + m * idx_stride)
    cols = tl.arange(0, BLOCK)
    vals = tl.load(table_ptr + row * dim + cols, mask=cols < dim)
    tl.store(out_ptr + m * dim + cols, vals, mask=cols < dim)


class ModelNew(nn.Module):
    def forward(self, table, idx):
        table = table.contiguous()
        out = torch.empty(idx.shape[0], table.shape[1], device=table.device, dtype=table.dtype)
        gather_kernel[(idx.shape[0],)](table, idx, out, table.shape[1], STRIDE, BLOCK=32)
        return out
'''


def test_an_index_tensor_read_flat_fails_the_noncontiguous_check():
    checks = [s for s in standard_checks() if s["name"] in ("seed0", "noncontiguous")]
    flat = evaluate(case_from_sources(GATHER_REF, GATHER.replace("STRIDE", "1")), "cpu", checks=checks)
    assert [c.name for c in flat.failed_checks] == ["noncontiguous"]
    strided = evaluate(case_from_sources(GATHER_REF, GATHER.replace("STRIDE", "idx.stride(0)")), "cpu",
                       checks=checks)
    assert strided.status == "pass", strided.message


LOG_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.log(x)


def get_inputs():
    return [torch.rand(7, 33) + 0.1]


def get_init_inputs():
    return []
'''

LOG_ABS = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def log_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.store(out_ptr + offs, tl.log(tl.abs(x)), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        log_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), BLOCK=128)
        return out
'''


def test_inputs_outside_the_operators_domain_are_not_held_against_the_candidate():
    names = ("seed0", "x3", "negated", "all_negative")
    report = evaluate(case_from_sources(LOG_REF, LOG_ABS), "cpu",
                      checks=[s for s in standard_checks() if s["name"] in names])
    assert report.status == "pass", report.message
    skipped = {c.name: c.message for c in report.checks if c.status == "skipped"}
    assert set(skipped) == {"negated", "all_negative"}
    assert all("reference itself yields" in m for m in skipped.values())


def test_a_check_that_could_not_run_never_passes_silently():
    from debugger.evaluate import _set_verdicts
    from debugger.records import CheckResult, EvalReport

    report = EvalReport(status="pass", checks=[
        CheckResult(name="seed0", kind="seed", passed=True, status="pass"),
        CheckResult(name="x3", kind="distribution", passed=False, status="skipped",
                    message="reference failed: request timed out after 120 s"),
        CheckResult(name="negated", kind="distribution", passed=False, status="skipped", not_applicable=True,
                    message="not applicable: the reference itself yields 5 NaN/Inf values on these inputs")])
    _set_verdicts(report)
    assert report.status == "timeout" and report.verdicts["kernel"]["skipped"].keys() == {"x3", "negated"}
    report.checks[1].not_applicable = True
    report.status = "pass"
    _set_verdicts(report)
    assert report.status == "pass"


def test_a_repair_whose_gate_checks_could_not_run_is_unverified_not_repaired(tmp_path, monkeypatch):
    """The reference hangs on the gate's larger hidden shape: the repair passes every check it saw, but
    its acceptance would rest on checks that never ran."""
    from pathlib import Path

    from debugger.repair import repair
    from debugger.settings import resolve

    monkeypatch.setenv("KDEBUG_DATA_DIR", str(tmp_path / "data"))
    data = Path(__file__).parent / "data" / "kernels"
    reference = (data / "add_reference.py").read_text().replace(
        "        return a + b", "        if a.shape[0] > 1000:\n            time.sleep(60)\n        return a + b"
    ).replace("import torch\n", "import time\nimport torch\n", 1)
    floor_grid = (data / "add_kernel.py").read_text().replace("triton.cdiv(n, 256)", "n // 256")
    case = case_from_sources(reference, floor_grid, name="add_floor_grid")
    result = repair(case, settings=resolve(device="cpu", timeout=8, backend="kb"), write_files=False,
                    write_back=False)
    assert result.status == "unverified", result.message
    assert "hidden_shape0" in result.message and result.repaired_src is not None
    assert "triton.cdiv" in result.repaired_src or "+ 255" in result.repaired_src
