"""A CUDA candidate the CPU emulation cannot run (inline PTX): not judged, but its parameter initialisation
is (debugger/host_params.py)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from debugger.case import case_from_sources
from debugger.diagnose import diagnose

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("_rpi_tests", REPO / "tests" / "test_real_param_init.py")
own = importlib.util.module_from_spec(spec)
spec.loader.exec_module(own)
PTX_CANDIDATE = own.CANDIDATE.replace("float acc = b[c];", 'float acc = b[c];\n            asm volatile("" ::: "memory");')
assert PTX_CANDIDATE != own.CANDIDATE


def test_diagnose_on_the_cpu_names_parameter_init_from_the_host_side():
    case = case_from_sources(own.REFERENCE, PTX_CANDIDATE.replace("INIT", own.OWN), name="gemm_scale")
    diag = diagnose(case, "cpu", timeout=120)
    assert diag.status == "diagnosed" and diag.bug_class == "parameter_init", diag.summary
    top = diag.hypotheses[0]
    assert top["confidence"] > 0.5 and "host_side_only" in diag.symptoms
    assert any("gemm.weight" in e and "host side only" in e for e in top["evidence"])
    assert any("fix, built on the host" in e for e in top["evidence"])
    assert {p["reference"] for p in diag.evaluation["parameter_map"]["pairs"]} == {"gemm.weight", "gemm.bias", "scale"}


def test_diagnose_on_the_cpu_of_a_cuda_candidate_drawing_as_model_stays_not_judged():
    case = case_from_sources(own.REFERENCE, PTX_CANDIDATE.replace("INIT", own.AS_MODEL), name="gemm_scale")
    diag = diagnose(case, "cpu", timeout=120)
    assert diag.status == "invalid_input" and diag.hypotheses == []
    assert "--device cuda" in diag.summary and "starts with Model's tensors" in diag.summary
