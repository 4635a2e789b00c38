"""case.toml's `needs`: a case whose fault only a GPU shows is skipped on the CPU with its reason,
counted in no figure (not failed), and run where its device is."""
from pathlib import Path

import pytest

from debugger.bench import cases as case_files
from debugger.bench import runner
from debugger.bench.runner import BenchOptions, run_bench
from debugger.bench.scores import summarize
from debugger.case import load_case
from debugger.errors import InvalidInput

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "eval" / "cases"
GPU_ONLY = ["index_overflow__row_sum_int8__gpu", "low_precision_accumulator__matmul_tf32__gpu",
            "scan_semantics__block_carry_cumsum__gpu", "write_race__column_sum_rmw__gpu"]


def test_gpu_only_cases_need_cuda():
    for name in GPU_ONLY:
        case = load_case(CASES / name)
        assert case.meta.get("needs") == "cuda" and case.fixed_path is not None
        assert "needs cuda" in case_files.skip_reason(case, "cpu")
        assert case_files.skip_reason(case, "cuda") is None
    assert case_files.skip_reason(load_case(CASES / "mask_missing__sum_rows"), "cpu") is None


def test_bad_needs_value_is_invalid_input(tmp_path):
    case = load_case(CASES / GPU_ONLY[0])
    case.meta["needs"] = "tpu"
    with pytest.raises(InvalidInput, match="needs"):
        case_files.skip_reason(case, "cpu")


def test_bench_on_cpu_skips_them_without_running(monkeypatch, tmp_path):
    def no_repair(*a, **kw):
        raise AssertionError("a skipped case must not be repaired")

    import debugger.repair as repair_pkg

    monkeypatch.setattr(repair_pkg, "repair", no_repair)
    monkeypatch.setattr(runner, "verify_source", no_repair)
    s = run_bench(BenchOptions(cases_dir=CASES, backend="kb", device="cpu", names=GPU_ONLY, out=tmp_path,
                               progress=None, retrieval=False, write_back=False))
    assert [r["status"] for r in s["per_case"]] == ["skipped"] * 4
    assert s["cases"] == 0 and s["repaired"] == 0 and s["pass_at_1"] == 0.0
    assert sorted(x["name"] for x in s["skipped"]) == GPU_ONLY and all("cuda" in x["reason"] for x in s["skipped"])


def test_skipped_records_count_in_no_figure():
    recs = [{"name": "a", "status": "repaired", "true_class": "x", "diagnosed_class": "x", "tokens": 0, "seconds": 1.0},
            {"name": "g", "status": "skipped", "true_class": "x", "message": "needs cuda"}]
    s = summarize(recs)
    assert (s["cases"], s["repaired"], s["pass_at_1"]) == (1, 1, 1.0)
    assert s["per_class"]["x"]["cases"] == 1 and s["skipped"] == [{"name": "g", "reason": "needs cuda"}]
