"""Would this compile on a GPU? sm_90 compiles of interpreted launches (debugger/sandbox/gpu_compile.py,
debugger/gpu_check.py), the evidence and needs_rewrite (debugger/diagnose/compile_evidence.py), and the
recipes for what only a GPU build rejects (debugger/recipes/gpu_compat.py), on kernels of our own."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from debugger.recipes import get, propose_all

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n\n"

# Each kernel passes on the interpreter (the construct sits in a runtime branch the inputs never take,
# or numpy accepts it) and does not compile for sm_90. run(mode) launches it; expect(mode) is torch's answer.
KERNELS = {
    "div_rounding": (textwrap.dedent("""
        @triton.jit
        def div_round_kernel(x_ptr, y_ptr, out_ptr, n, mode, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            q = tl.load(x_ptr + offs, mask=mask, other=0.0) / tl.load(y_ptr + offs, mask=mask, other=1.0)
            if mode == 1:
                q = tl.math.trunc(q)
            elif mode == 2:
                q = tl.floor(q)
            tl.store(out_ptr + offs, q, mask=mask)


        def run(mode, device="cpu"):
            torch.manual_seed(0)
            x, y = torch.randn(300, device=device) * 10, torch.rand(300, device=device) + 0.5
            out = torch.empty_like(x)
            div_round_kernel[(triton.cdiv(300, 128),)](x, y, out, 300, mode, BLOCK=128)
            ref = torch.div(x, y, rounding_mode={0: None, 1: "trunc", 2: "floor"}[mode])
            return (out - ref).abs().max().item()
        """), "tl_math_substitute", "module 'triton.language.math' has no attribute 'trunc'"),
    "quantize_rows": (textwrap.dedent("""
        @triton.jit
        def quantize_kernel(x_ptr, out_ptr, n_cols, stride, inv_scale, quantize, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            cols = tl.arange(0, BLOCK)
            mask = cols < n_cols
            x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
            if quantize != 0:
                x = tl.math.trunc(x * inv_scale + 0.5 * inv_scale) / inv_scale
            tl.store(out_ptr + row * stride + cols, x, mask=mask)


        def run(mode, device="cpu"):
            torch.manual_seed(0)
            x = torch.randn(6, 40, device=device) * 4
            out = torch.empty_like(x)
            quantize_kernel[(6,)](x, out, 40, 40, 3.0, mode, BLOCK=64)
            ref = torch.trunc(x * 3.0 + 1.5) / 3.0 if mode else x
            return (out - ref).abs().max().item()
        """), "tl_math_substitute", "module 'triton.language.math' has no attribute 'trunc'"),
    "gelu_tanh": (textwrap.dedent("""
        @triton.jit
        def gelu_kernel(x_ptr, out_ptr, n, approximate, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(x_ptr + offs, mask=mask, other=0.0)
            if approximate == 0:
                y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
            else:
                y = 0.5 * x * (1.0 + tl.math.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
            tl.store(out_ptr + offs, y, mask=mask)


        def run(mode, device="cpu"):
            torch.manual_seed(0)
            x = torch.randn(300, device=device) * 3
            out = torch.empty_like(x)
            gelu_kernel[(3,)](x, out, 300, mode, BLOCK=128)
            ref = torch.nn.functional.gelu(x, approximate="tanh" if mode else "none")
            return (out - ref).abs().max().item()
        """), "tl_math_substitute", "module 'triton.language.math' has no attribute 'tanh'"),
    "branch_types": (textwrap.dedent("""
        @triton.jit
        def gate_kernel(x_ptr, out_ptr, n, thresh, scale, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(x_ptr + offs, mask=mask, other=0.0)
            keep = x > thresh
            if scale > 0.0:
                w = keep * scale
            else:
                w = keep
            tl.store(out_ptr + offs, x * w, mask=mask)


        def run(mode, device="cpu"):
            torch.manual_seed(0)
            x = torch.randn(300, device=device)
            out = torch.empty_like(x)
            scale = 0.5 if mode else -1.0
            gate_kernel[(3,)](x, out, 300, 0.1, scale, BLOCK=128)
            ref = x * (x > 0.1) * (scale if scale > 0 else 1.0)
            return (out - ref).abs().max().item()
        """), "unify_branch_types", "Mismatched type for w between then block"),
    "loop_carried": (textwrap.dedent("""
        @triton.jit
        def row_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            acc = 0
            for start in range(0, n_cols, BLOCK):
                cols = start + tl.arange(0, BLOCK)
                acc += tl.sum(tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0), axis=0)
            tl.store(out_ptr + row, acc)


        def run(mode, device="cpu"):
            torch.manual_seed(0)
            x = torch.randn(5, 70, device=device)
            out = torch.empty(5, device=device)
            row_sum_kernel[(5,)](x, out, 70, 70, BLOCK=32)
            return (out - x.sum(1)).abs().max().item()
        """), "unify_branch_types", "Loop-carried variable acc has initial type int32"),
}

# Runs in a child process (TRITON_INTERPRET=1, the language snapshot taken first, as the sandbox's zygote
# does): for each module, run(0) and run(1) on the interpreter, then the sm_90 compile of its kernel with
# the arguments of its run(0) launch.
PROBE = r"""
import importlib.util, json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from debugger.sandbox import gpu_compile
gpu_compile.snapshot_language()
from triton.runtime.interpreter import InterpretedFunction
out = {}
for name, path in json.loads(sys.argv[1]).items():
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    seen, original = [], InterpretedFunction.run
    def run(self, *args, grid, warmup, **kwargs):
        seen.append((self, gpu_compile.arg_summary(args, kwargs)))
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)
    InterpretedFunction.run = run
    row = {}
    for mode in (0, 1):
        try:
            row[f"err{mode}"] = mod.run(mode)
        except Exception as e:
            row[f"err{mode}"] = f"{type(e).__name__}: {e}"
    InterpretedFunction.run = original
    row["compile"] = gpu_compile.compile_one(*seen[0])
    out[name] = row
print(json.dumps(out))
"""


def _probe(tmp_path, sources: dict) -> dict:
    paths = {}
    for name, src in sources.items():
        paths[name] = str(tmp_path / f"{name}_{abs(hash(src))}.py")
        with open(paths[name], "w") as f:
            f.write(src)
    env = dict(os.environ, TRITON_INTERPRET="1", TRITON_DEFAULT_FP_FUSION="1")
    r = subprocess.run([sys.executable, "-c", PROBE, json.dumps(paths)], capture_output=True, text=True,
                       timeout=240, env=env, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def fixed(tmp_path_factory):
    """Before: each kernel's interpreter results and its sm_90 compile; the recipe's patch with the
    compiler's message as the run gives it; after: the same for the patched kernels."""
    tmp = tmp_path_factory.mktemp("gpu-compile")
    before = _probe(tmp, {n: HEADER + src for n, (src, _, _) in KERNELS.items()})
    patched = {}
    for name, (src, recipe, _) in KERNELS.items():
        hints = {"gpu_errors": [before[name]["compile"]["error"]]}
        patches = get(recipe).propose(HEADER + src, hints)
        patched[name] = patches[0].new_src if patches else None
    after = _probe(tmp, {n: s for n, s in patched.items() if s is not None})
    return before, patched, after


@pytest.mark.parametrize("name", list(KERNELS))
def test_recipe_makes_kernel_compile_for_sm90(fixed, name):
    before, patched, after = fixed
    _, recipe, message = KERNELS[name]
    b = before[name]
    assert b["err0"] < 1e-5, b  # the interpreter passes it
    assert b["compile"]["ok"] is False and message in b["compile"]["error"], b["compile"]
    assert b["compile"]["line"] is not None
    assert patched[name] is not None, f"{recipe} proposed nothing"
    a = after[name]
    assert a["compile"]["ok"] is True, a["compile"]
    assert a["err0"] < 1e-5 and a["err1"] < 1e-5, a  # same values, also on the branch the GPU needs


def test_gpu_compile_recipes_need_evidence():
    """No compiler message, no type unification; a kernel without trunc gets no trunc edit."""
    src = HEADER + KERNELS["branch_types"][0]
    assert get("unify_branch_types").propose(src, {}) == []
    assert get("tl_math_substitute").propose(src, {}) == []
    assert [p.recipe for p in propose_all(HEADER + KERNELS["div_rounding"][0])
            if p.bug_class == "gpu_incompatible"] == ["tl_math_substitute"]


REFERENCE = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x, y):
            return torch.div(x, y, rounding_mode="floor")


    def get_inputs():
        return [torch.randn(300) * 10, torch.rand(300) + 0.5]


    def get_init_inputs():
        return []
    """)

CANDIDATE = HEADER + textwrap.dedent("""
    @triton.jit
    def div_round_kernel(x_ptr, y_ptr, out_ptr, n, mode, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        q = tl.load(x_ptr + offs, mask=mask, other=0.0) / tl.load(y_ptr + offs, mask=mask, other=1.0)
        if mode == 1:
            q = tl.math.trunc(q)
        elif mode == 2:
            q = tl.floor(q)
        tl.store(out_ptr + offs, q, mask=mask)


    class ModelNew(torch.nn.Module):
        def forward(self, x, y):
            x, y = x.contiguous(), y.contiguous()
            out = torch.empty_like(x)
            n = x.numel()
            div_round_kernel[(triton.cdiv(n, 128),)](x, y, out, n, 2, BLOCK=128)
            return out
    """)


def test_interpreter_pass_that_cannot_compile_is_a_compile_error(tmp_path):
    """Through the sandbox: the interpreter passes every check, the report says compile_error with the
    compiler's message and the kernel line; the recipe's repair passes with nothing to report."""
    from tests.conftest import write_case

    from debugger.case import load_case
    from debugger.evaluate import evaluate, quick_checks

    checks = quick_checks()[:2]
    case = load_case(write_case(tmp_path / "case", REFERENCE, CANDIDATE))
    r = evaluate(case, "cpu", checks=checks, timeout=120)
    assert all(c.passed for c in r.checks), r.message
    assert r.status == "compile_error" and not r.passed, r.message
    assert "does not compile for sm_90" in r.message and "trunc" in r.message
    assert r.gpu_compile and r.gpu_compile[0]["line"] == CANDIDATE.splitlines().index(
        "        q = tl.math.trunc(q)") + 1
    assert all(v["status"] == "compile_error" for v in r.verdicts.values())
    assert 0 < r.error_score() < 1.5  # the values are right: closer than any failing check

    repaired = get("tl_math_substitute").propose(CANDIDATE)[0].new_src
    case2 = load_case(write_case(tmp_path / "fixed", REFERENCE, repaired))
    r2 = evaluate(case2, "cpu", checks=checks, timeout=120)
    assert r2.status == "pass" and r2.gpu_compile == [], r2.message


def _gpu_report(message: str) -> dict:
    return {"status": "compile_error", "gpu_compile": [],
            "checks": [{"name": n, "status": "compile_error", "passed": False, "message": message}
                       for n in ("seed0", "seed1")]}


def test_body_that_cannot_compile_needs_rewrite_when_no_recipe_applies():
    from debugger.backends.kb import run_hints
    from debugger.diagnose import compile_evidence

    slices = _gpu_report("seed0: CompilationError: ValueError('unsupported tensor index: slice')")
    fails = compile_evidence.failures(slices, "cuda")
    assert fails and compile_evidence.failures(slices, "cpu") == []
    verdict = compile_evidence.rewrite_verdict(fails, [])
    assert verdict["reason"] == "body_cannot_compile" and "unsupported tensor index" in verdict["evidence"][0]
    finding = compile_evidence.findings(fails, [])[0]
    assert finding["bug_class"] == "gpu_incompatible" and finding["score"] > 0

    # no verdict while a recipe rewrites the construct in this source
    src = HEADER + KERNELS["branch_types"][0]
    loop = _gpu_report("seed0: CompilationError: AssertionError('Mismatched type for w between then block "
                       "(<['128'], fp32>) and else block (<['128'], int1>)')")
    patches = propose_all(src, hints=compile_evidence.hints(loop, "cuda"))
    assert "unify_branch_types" in {p.recipe for p in patches}
    assert compile_evidence.rewrite_verdict(compile_evidence.failures(loop, "cuda"), patches) is None
    fixed = get("unify_branch_types").propose(src, compile_evidence.hints(loop, "cuda"))[0].new_src
    assert "unify_branch_types" not in {p.recipe for p in propose_all(fixed, hints=compile_evidence.hints(loop, "cuda"))}

    # on the CPU the messages reach the kb's recipes from the report's gpu_compile
    cpu = {"evaluation": {"checks": [], "gpu_compile": [{"kernel": "k", "line": 3, "error": "boom"}]}}
    assert run_hints(cpu, {})["gpu_errors"] == ["boom"]


def test_gpu_compile_failure_seen_when_other_checks_ran_the_kernel():
    """A real answer on a GPU (softmax_mul on the H100): most checks fail compiling the kernel, the layout
    checks raise in the host code, and the transposed check passes `other.stride(0) == 1`, which Triton
    specialises to a constant: the ternary on it folds, that specialisation compiles and mismatches. The kernel still does not compile for the task's inputs: that
    is the evidence, and with no recipe for the construct, the verdict is needs_rewrite."""
    from debugger.diagnose import compile_evidence
    from debugger.gpu_check import compiles_now

    message = ("seed0: CompilationError: AssertionError('Ternary expression with dynamic condition has "
               "inconsistent types <[\'1024\'], fp32> and pointer<fp32>')")
    report = _gpu_report(message)
    report["checks"] += [
        {"name": "noncontiguous", "status": "runtime_error", "passed": False,
         "message": "RuntimeError: view size is not compatible with input tensor's size and stride"},
        {"name": "transposed", "status": "mismatch", "passed": False, "message": ""},
        {"name": "nan_inputs", "status": "skipped", "passed": False, "message": ""}]
    fails = compile_evidence.failures(report, "cuda")
    assert len(fails) == 1 and "Ternary expression" in fails[0]["error"]
    assert compile_evidence.rewrite_verdict(fails, [])["reason"] == "body_cannot_compile"

    ran = {"status": "mismatch", "gpu_compile": [], "checks": [
        {"name": n, "status": s, "passed": False, "message": ""}
        for n, s in (("seed0", "mismatch"), ("noncontiguous", "runtime_error"), ("x100", "skipped"))]}
    assert compile_evidence.failures(ran, "cuda") == []

    class Now:  # a later version on the GPU: every check ran the kernel
        gpu_compile = []
        checks = [type("C", (), {"status": "mismatch"})()]

    assert compiles_now({"device": "cuda", **report}, Now())
    assert not compiles_now({"device": "cuda", **ran}, Now())


def test_gpu_compile_counts_in_error_score():
    from debugger.records import CheckResult, EvalReport

    passing = [CheckResult(name="seed0", kind="seed", passed=True, status="pass")]
    failing = [CheckResult(name="seed0", kind="seed", passed=False, status="mismatch", frac_wrong=0.5)]
    only_gpu = EvalReport(status="compile_error", checks=passing, gpu_compile=[{"kernel": "k"}])
    both = EvalReport(status="mismatch", checks=failing, gpu_compile=[{"kernel": "k"}])
    values = EvalReport(status="mismatch", checks=failing)
    assert 0 < only_gpu.error_score() < values.error_score() < both.error_score() < 1e8
    assert EvalReport(status="compile_error", checks=failing).error_score() >= 1e9


# On a GPU (the H200): what the sm_90 compile here refuses, the device's own compile refuses too, and each
# recipe's patch compiles there and computes torch's answer on both branches.
DEVICE_PROBE = r"""
import importlib.util, json, sys
out = {}
for name, path in json.loads(sys.argv[1]).items():
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    row = {}
    for mode in (0, 1):
        try:
            row[f"err{mode}"] = mod.run(mode, "cuda")
        except Exception as e:
            row[f"err{mode}"] = f"{type(e).__name__}: {e}"
    out[name] = row
print(json.dumps(out))
"""


def _cuda_available() -> bool:
    import torch
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA GPU")
def test_on_the_gpu_the_device_agrees(tmp_path):
    paths, patched = {}, {}
    for name, (src, recipe, _) in KERNELS.items():
        before = HEADER + src
        probe = _probe(tmp_path, {name: before})[name]  # the error text, as the interpreter run gives it
        patched[name] = get(recipe).propose(before, {"gpu_errors": [probe["compile"]["error"]]})[0].new_src
        paths[f"{name}_before"], paths[f"{name}_after"] = before, patched[name]
    files = {}
    for key, src in paths.items():
        files[key] = str(tmp_path / f"dev_{key}.py")
        with open(files[key], "w") as f:
            f.write(src)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run([sys.executable, "-c", DEVICE_PROBE, json.dumps(files)], capture_output=True, text=True,
                       timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    for name, (_, _, message) in KERNELS.items():
        before, after = got[f"{name}_before"], got[f"{name}_after"]
        assert isinstance(before["err0"], str) and message.split(" between")[0][:40] in before["err0"], (name, before)
        assert after["err0"] < 1e-4 and after["err1"] < 1e-4, (name, after)


def test_on_a_gpu_a_body_that_cannot_compile_stops_at_the_first_diagnosis(tmp_path, monkeypatch):
    """Every check a compile_error on the GPU, no recipe for the construct: needs_rewrite from the first
    diagnosis, before localisation, the sanitizer or experiments (stand-in GPU evaluation)."""
    from tests.conftest import write_case

    import debugger.diagnose.localisation as localisation
    from debugger.case import load_case
    from debugger.diagnose import diagnose
    from debugger.evaluate import Evaluation
    from debugger.records import CheckResult, EvalReport

    def never(*a, **k):
        raise AssertionError("ran on a kernel that never compiled")

    monkeypatch.setattr(localisation, "run_localisation", never)
    slices = CANDIDATE.replace("q = tl.math.trunc(q)", "q = q[1:]")
    case = load_case(write_case(tmp_path / "case", REFERENCE, slices))
    message = "CompilationError: ValueError('unsupported tensor index: <triton.language.core.slice object>')"
    checks = [CheckResult(name=n, kind="seed", passed=False, status="compile_error", message=f"{n}: {message}")
              for n in ("seed0", "seed1")]
    report = EvalReport(status="compile_error", device="cuda", checks=checks, message=f"seed0: {message}",
                        verdicts={"kernel": {"status": "compile_error", "checks": 2, "failed": ["seed0", "seed1"],
                                             "skipped": {}}})
    diag = diagnose(case, "cuda", evaluation=Evaluation(report=report))
    assert diag.needs_rewrite and diag.needs_rewrite["reason"] == "body_cannot_compile", diag.needs_rewrite
    assert "unsupported tensor index" in diag.needs_rewrite["evidence"][0]
    assert diag.hypotheses[0]["bug_class"] == "gpu_incompatible" and diag.experiments == []

    # with a construct a recipe rewrites, the verdict waits for the recipe
    report.checks[0].message = report.checks[1].message = "seed0: CompilationError: AttributeError(\"module " \
        "'triton.language.math' has no attribute 'trunc'\")"
    diag = diagnose(load_case(write_case(tmp_path / "trunc", REFERENCE, CANDIDATE)), "cuda",
                    evaluation=Evaluation(report=report))
    assert diag.needs_rewrite is None and "tl_math_substitute" in diag.hypotheses[0]["recipes"]


def test_the_repair_screen_sees_a_kernel_that_now_compiles():
    """What the screen on the failing checks cannot measure: the best version did not compile (listed on
    the CPU; every check a compile_error on a GPU) and the proposal does."""
    from debugger import gpu_check
    from debugger.records import CheckResult, EvalReport

    mismatch = EvalReport(status="mismatch", checks=[CheckResult(name="seed0", kind="seed", passed=False,
                                                                 status="mismatch", frac_wrong=1.0)])
    on_gpu = {"device": "cuda", "checks": [{"status": "compile_error"}, {"status": "compile_error"}]}
    on_cpu = {"device": "cpu", "checks": [{"status": "mismatch"}], "gpu_compile": [{"kernel": "k"}]}
    assert gpu_check.compiles_now(on_gpu, mismatch) and gpu_check.compiles_now(on_cpu, mismatch)
    assert not gpu_check.compiles_now({"device": "cuda", "checks": [{"status": "mismatch"}]}, mismatch)
    still = EvalReport(status="mismatch", checks=mismatch.checks, gpu_compile=[{"kernel": "k"}])
    assert not gpu_check.compiles_now(on_cpu, still)
