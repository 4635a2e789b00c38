"""eval/header_fixes.py: which answers use a PyTorch CUDA macro no include declares, unit by unit as load_inline
writes them (the CUDA sources joined into one file, the C++ sources into another)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from tests.test_cuda_headers import ADD_ONE_CHECKED, SCALE_CHECKED
from tests.test_evaluate import CUDA_ADD_ONE

EVAL = Path(__file__).resolve().parents[1] / "eval"


def _load():
    sys.path.insert(0, str(EVAL))
    spec = importlib.util.spec_from_file_location("header_fixes", EVAL / "header_fixes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_macros_an_answer_leaves_undeclared_are_found_per_unit():
    header_fixes = _load()
    assert header_fixes.missing_macros(ADD_ONE_CHECKED) == ["C10_CUDA_KERNEL_LAUNCH_CHECK"]
    assert header_fixes.missing_macros(SCALE_CHECKED) == ["AT_CUDA_CHECK", "C10_CUDA_CHECK"]
    assert header_fixes.missing_macros(CUDA_ADD_ONE) == []
    # the header in the C++ source does not reach the CUDA unit, as with nvcc
    in_cpp = ADD_ONE_CHECKED.replace('cpp_sources="torch::Tensor', 'cpp_sources="#include <c10/cuda/CUDAException.h>\\ntorch::Tensor')
    assert in_cpp != ADD_ONE_CHECKED and header_fixes.missing_macros(in_cpp) == ["C10_CUDA_KERNEL_LAUNCH_CHECK"]


def test_a_missing_pool_is_one_line(tmp_path, capsys):
    assert _load().main([str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip() == f"header_fixes: no such pool folder: {tmp_path / 'none'}"
