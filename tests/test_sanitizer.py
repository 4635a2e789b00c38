"""compute-sanitizer as a GPU probe (debugger/diagnose/sanitizer*.py, debugger/lang/cuda/build_lines.py).

On the CPU: the parser on reports written in compute-sanitizer's documented message formats
(memcheck, racecheck in analysis and hazard mode, initcheck, synccheck; new and old location forms),
lines of load_inline's cuda.cu mapped back to the Python file, findings turned into ranked evidence,
the skips where no sanitizer or no GPU is, and the sandbox plumbing (a worker started under a
launcher, its log read back) with a stand-in for compute-sanitizer on the interpreter.
On a GPU (`-m gpu`): two CUDA kernels of our own, an unguarded store past the end and a shared-memory
exchange without __syncthreads, under memcheck and racecheck: the findings name the kernel's lines.
CUDA localisation (diagnose/localisation.py, lang/cuda/exports.py): exported functions' spans, the
departing call tied to its host function and kernels; on a GPU, a softmax in two calls whose second
departs.
"""
from __future__ import annotations

import os
import stat

import pytest

from debugger.case import Case
from debugger.diagnose import ranking
from debugger.diagnose.sanitizer import find_compute_sanitizer, place, run_sanitizer, run_tool, tools_for
from debugger.diagnose.sanitizer_evidence import evidence
from debugger.diagnose.sanitizer_report import Location, kernel_name, parse
from debugger.lang.cuda import units
from debugger.lang.cuda.build_lines import python_line

MEMCHECK = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at scale_kernel(const float *, float *, int)+0x1d0 in /cache/ext/0f3a/scale_ext/cuda.cu:{line}
=========     by thread (232,0,0) in block (3,0,0)
=========     Address 0x7f2a40000fa0 is out of bounds
=========     and is 4 bytes after the nearest allocation at 0x7f2a40000000 of size 4,000 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2ea231] in /usr/lib/x86_64-linux-gnu/libcuda.so.1
=========
========= Invalid __global__ write of size 4 bytes
=========     at scale_kernel(const float *, float *, int)+0x1d0 in /cache/ext/0f3a/scale_ext/cuda.cu:{line}
=========     by thread (233,0,0) in block (3,0,0)
=========     Address 0x7f2a40000fa4 is out of bounds
=========     and is 8 bytes after the nearest allocation at 0x7f2a40000000 of size 4,000 bytes
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaStreamSynchronize.
=========     Saved host backtrace up to driver entry point at error
=========
========= ERROR SUMMARY: 3 errors
"""

RACECHECK = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at reverse_kernel(const float *, float *)+0x90 in /b/cuda.cu:12
=========     and Read access at reverse_kernel(const float *, float *)+0xb0 in /b/cuda.cu:13 [3840 hazards]
=========
========= Warning: Race reported between Write access at 0x60 in warp_kernel(float *) and Read access at 0x70 in warp_kernel(float *)
=========
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
"""

HAZARD_MODE = """\
========= ERROR: Potential RAW hazard detected at __shared__ 0x8 in block (0,0,0) :
=========     Write Thread (2,0,0) at 0x00000090 in /b/cuda.cu:12:reverse_kernel(float const *, float*)
=========     Read Thread (253,0,0) at 0x000000b0 in /b/cuda.cu:13:reverse_kernel(float const *, float*)
=========     Current Value : 0, Incoming Value : 1065353216
"""

INITCHECK = """\
========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at void accumulate<float>(float *, const float *, int)+0x70
=========        in /cache/ext/9a/acc_ext/cuda.cu:20
=========     by thread (31,0,0) in block (1,0,0)
=========     Address 0x7f3c7ec000fc
=========
========= Host API memory access error at host access to 0x7f3c7ec00000 of size 4096 bytes
=========     Uninitialized access at 0x7f3c7ec00800 on access by cudaMemcopy source.
=========     Saved host backtrace up to driver entry point at error
=========
========= ERROR SUMMARY: 2 errors
"""

SYNCCHECK = """\
========= Barrier error detected. Divergent thread(s) in block.
=========     at 0x000002c8 in /tmp/kdebug-sandbox-1/can-x/candidate.py:23:add_kernel
=========     by thread (64,0,0) in block (0,0,0)
========= ERROR SUMMARY: 1 error
"""

SCALE_CANDIDATE = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void scale_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = 2.0f * x[min(i, n - 1)];  // the load is clamped, the store is not guarded
}

torch::Tensor scale(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
ext = load_inline(name="kd_sanitizer_scale", cpp_sources="torch::Tensor scale(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["scale"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.scale(x.contiguous())
'''

SCALE_REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return 2.0 * x


def get_inputs():
    return [torch.randn(1000)]


def get_init_inputs():
    return []
'''

REVERSE_CANDIDATE = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void reverse_kernel(const float* x, float* y) {
    __shared__ float tile[256];
    int t = threadIdx.x;
    int i = blockIdx.x * 256 + t;
    tile[t] = x[i];
    y[i] = tile[255 - t];
}

torch::Tensor reverse(torch::Tensor x) {
    auto y = torch::empty_like(x);
    reverse_kernel<<<x.numel() / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>());
    return y;
}
"""
ext = load_inline(name="kd_sanitizer_reverse", cpp_sources="torch::Tensor reverse(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["reverse"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.reverse(x.contiguous())
'''

REVERSE_REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.view(-1, 256).flip(1).reshape(-1)


def get_inputs():
    return [torch.randn(16 * 256)]


def get_init_inputs():
    return []
'''


def _line(src: str, needle: str) -> int:
    return next(n for n, text in enumerate(src.split("\n"), 1) if needle in text)


def _cuda_cu(src: str) -> str:
    """cuda.cu as load_inline writes it: three implicit includes, then the CUDA source."""
    unit = next(u for u in units(src) if u.source.kind == "cuda")
    return "\n".join(["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>", unit.source.text])


# -- the parser ---------------------------------------------------------------------------------------
def test_memcheck_out_of_bounds_merged_per_place():
    report = parse(MEMCHECK.format(line=9), "memcheck")
    assert report.complete and report.errors == 3
    oob, api = report.findings
    assert (oob.kind, oob.space, oob.size, oob.kernel, oob.line) == ("invalid_write", "global", 4, "scale_kernel", 9)
    assert oob.file.endswith("scale_ext/cuda.cu")
    assert oob.count == 2 and oob.oob_side == "after" and oob.oob_bytes == 8 and oob.allocation_size == 4000
    assert (oob.thread, oob.block) == ("232,0,0", "3,0,0")
    assert api.kind == "api_error" and "cudaStreamSynchronize" in api.message


def test_racecheck_analysis_and_hazard_reports():
    report = parse(RACECHECK, "racecheck")
    assert report.complete and report.errors == 1
    race, warning = report.findings
    assert race.kind == "race" and race.severity == "error" and race.kernel == "reverse_kernel"
    assert [(a["access"], a["line"], a["hazards"]) for a in race.accesses] == [("write", 12, None), ("read", 13, 3840)]
    assert warning.severity == "warning" and [a["access"] for a in warning.accesses] == ["write", "read"]
    assert warning.kernel == "warp_kernel" and warning.line is None
    hazard = parse(HAZARD_MODE, "racecheck").findings[0]
    assert hazard.kind == "race" and hazard.space == "shared" and hazard.kernel == "reverse_kernel"
    assert [(a["access"], a["line"]) for a in hazard.accesses] == [("write", 12), ("read", 13)]
    assert not parse(HAZARD_MODE, "racecheck").complete  # no summary: the run did not reach its end


def test_initcheck_kernel_read_and_host_copy():
    report = parse(INITCHECK, "initcheck")
    read, copy = report.findings
    assert (read.kind, read.kernel, read.line, read.size) == ("uninitialised_read", "accumulate", 20, 4)
    assert read.file.endswith("acc_ext/cuda.cu")  # the file on the line after the function
    assert copy.kind == "uninitialised_copy" and copy.size == 4096 and "cudaMemcopy" in copy.message


def test_synccheck_barrier_old_location_form():
    f = parse(SYNCCHECK, "synccheck").findings[0]
    assert (f.kind, f.kernel, f.line) == ("barrier_error", "add_kernel", 23)
    assert f.file.endswith("candidate.py") and "Divergent" in f.message


def test_location_forms_and_kernel_names():
    assert Location.parse("k(float *)+0x70").kernel == "k"
    assert Location.parse("0x1b8 in kernel(float *, float *)").kernel == "kernel"
    old = Location.parse("0xd80 in /src/a.cu:162:void fused<(bool)1, __half>(T2 *, int)")
    assert (old.kernel, old.file, old.line) == ("fused", "/src/a.cu", 162)
    assert kernel_name("void ns::(anonymous namespace)::tile_k<float, 4>(float*, int)") == "tile_k"
    assert kernel_name("triton_add_kernel") == "triton_add_kernel"
    assert parse("", "memcheck").findings == [] and not parse("", "memcheck").complete


# -- lines and evidence ---------------------------------------------------------------------------------
def test_cuda_cu_lines_map_to_the_python_file():
    src, cu = SCALE_CANDIDATE, _cuda_cu(SCALE_CANDIDATE)
    store = _line(cu, "y[i] = 2.0f")
    assert python_line(src, "/x/kd_sanitizer_scale/cuda.cu", store, "scale_kernel") == _line(src, "y[i] = 2.0f")
    assert python_line(src, "/x/kd_sanitizer_scale/cuda.cu", store, "scale_kernel", cu) == _line(src, "y[i] = 2.0f")
    # the compiled text disagrees with the row the offset gives: the line is not claimed
    assert python_line(src, "/x/cuda.cu", store, "scale_kernel", cu.replace("y[i] = 2.0f", "y[j] = 3.0f")) is None
    assert python_line(src, "/x/cuda.cu", None, "scale_kernel") is None
    # a line of a __device__ helper the kernel inlined; and a build without the implicit includes
    helper = src.replace("__global__ void scale_kernel", "__device__ float twice(float v) {\n    return 2.0f * v;\n}\n\n"
                                                     "__global__ void scale_kernel")
    ret = _line(_cuda_cu(helper), "return 2.0f * v;")
    assert python_line(helper, "/x/cuda.cu", ret, "scale_kernel") == _line(helper, "return 2.0f * v;")
    bare = helper.replace("functions=[\"scale\"])", "functions=[\"scale\"], no_implicit_headers=True)")
    assert bare != helper and python_line(bare, "/x/cuda.cu", ret - 3, "scale_kernel") == _line(bare, "return 2.0f")


def test_findings_become_ranked_evidence_with_lines(tmp_path):
    src = SCALE_CANDIDATE
    store = _line(_cuda_cu(src), "y[i] = 2.0f")
    kernels = {"scale_kernel"}
    report = parse(MEMCHECK.format(line=store), "memcheck")
    findings = [place(f.to_dict(), src, kernels) for f in report.findings]
    assert findings[0]["in_candidate"] and findings[0]["pyline"] == _line(src, "y[i] = 2.0f")
    assert not findings[1]["in_candidate"]  # the API error is no kernel of the candidate
    other = dict(report.findings[0].to_dict(), kernel="gemm_kernel", file="/opt/lib/gemm.cu")
    assert not place(other, src, kernels)["in_candidate"] and other["pyline"] is None  # a library's kernel
    built = dict(other, file=f"{tmp_path}/scale_ext/cuda.cu")  # compiled from the candidate's strings
    assert place(built, src, kernels, build_base=tmp_path)["pyline"] == _line(src, "y[i] = 2.0f")
    tags, scored = evidence({"tools": [{"tool": "memcheck", "findings": findings}]})
    assert tags == {"sanitizer_out_of_bounds"}
    hyps = ranking.rank(tags, [], [], findings=scored)
    assert hyps[0]["bug_class"] == "mask_missing" and _line(src, "y[i] = 2.0f") in hyps[0]["lines"]
    assert any("4 bytes" in e and "scale_kernel" in e for e in hyps[0]["evidence"])


def test_race_barrier_and_unwritten_evidence_classes():
    src = REVERSE_CANDIDATE
    cu = _cuda_cu(src)
    text = RACECHECK.replace("cuda.cu:12", f"cuda.cu:{_line(cu, 'tile[t] = x[i]')}") \
        .replace("cuda.cu:13", f"cuda.cu:{_line(cu, 'tile[255 - t]')}")
    race = [place(f.to_dict(), src, {"reverse_kernel"}) for f in parse(text, "racecheck").findings]
    assert [a["pyline"] for a in race[0]["accesses"]] == [_line(src, "tile[t] = x[i]"), _line(src, "tile[255 - t]")]
    tags, scored = evidence({"tools": [{"tool": "racecheck", "findings": race}]})
    assert tags == {"sanitizer_shared_race"}  # the warning is in no kernel of ours, and only a warning
    assert ranking.rank(tags, [], [], findings=scored)[0]["bug_class"] == "write_race"
    init = [place(f.to_dict(), src, set()) for f in parse(INITCHECK, "initcheck").findings]
    tags, scored = evidence({"tools": [{"tool": "initcheck", "findings": init}]})
    assert tags == {"sanitizer_unwritten_output"}  # the host copied what no kernel wrote
    assert ranking.rank(tags, [], [], findings=scored)[0]["bug_class"] == "unwritten_output"
    assert len(scored[0]["evidence"]) == 1  # a library's read (no kernel of ours, not PyTorch's) is not evidence
    torch_read = INITCHECK.replace("void accumulate<float>(float *, const float *, int)",
                                   "void at::native::elementwise_kernel<128, 2>(int, float *)")
    init = [place(f.to_dict(), src, set()) for f in parse(torch_read, "initcheck").findings]
    assert len(evidence({"tools": [{"tool": "initcheck", "findings": init}]})[1][0]["evidence"]) == 2
    wrapped = dict(place(parse(MEMCHECK.format(line=9), "memcheck").findings[0].to_dict(), src, {"scale_kernel"}),
                   oob_side="before", oob_bytes=1 << 33)
    assert evidence({"tools": [{"tool": "memcheck", "findings": [wrapped]}]})[0] == \
        {"sanitizer_out_of_bounds", "sanitizer_index_wrapped"}


# -- skips and the plumbing -----------------------------------------------------------------------------
class _Report:
    def __init__(self, drift=None):
        self.checks = [type("C", (), {"drift": drift})()]
        self.failed_checks = []


def test_skips_say_why(monkeypatch):
    case = Case("c", SCALE_REFERENCE, SCALE_CANDIDATE)
    assert "CUDA GPU" in run_sanitizer(case, _Report(), "cpu")["skipped"]
    monkeypatch.setattr("debugger.diagnose.sanitizer.find_compute_sanitizer", lambda: None)
    assert "not found" in run_sanitizer(case, _Report(), "cuda")["skipped"]
    assert tools_for(SCALE_CANDIDATE, _Report()) == ["memcheck", "initcheck"]
    assert tools_for(REVERSE_CANDIDATE, _Report()) == ["memcheck", "initcheck", "racecheck"]
    assert "racecheck" in tools_for(SCALE_CANDIDATE, _Report(drift=0.5))


def test_finds_the_sanitizer_in_the_toolkit(monkeypatch, tmp_path):
    exe = tmp_path / "bin" / "compute-sanitizer"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert find_compute_sanitizer() == str(exe)


TRITON_REFERENCE = SCALE_REFERENCE.replace("1000", "300")
TRITON_CANDIDATE = '''import os

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, 2.0 * x, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        assert os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1", "the sanitizer's environment"
        y = torch.empty_like(x)
        double_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
        return y
'''
# A stand-in for compute-sanitizer: writes a memcheck report naming the Triton store, then runs the
# command it was given (`env VAR=... python -m debugger.sandbox.zygote FD DEVICE`).
FAKE_SANITIZER = '''#!/bin/sh
log=""
while [ $# -gt 0 ]; do
  case "$1" in
    --log-file) log="$2"; shift 2 ;;
    --tool|--target-processes|--launch-timeout|--print-limit|--racecheck-report) shift 2 ;;
    *) break ;;
  esac
done
log=$(echo "$log" | sed "s/%p/$$/")
printf '%s\\n' "========= Invalid __global__ write of size 4 bytes" \\
  "=========     at double_kernel+0x1c0 in $PWD/can-x/candidate.py:LINE" \\
  "=========     by thread (5,0,0) in block (2,0,0)" \\
  "=========     Address 0x7f00 is out of bounds" "=========" > "$log"
exec "$@"
'''


def _can_isolate() -> bool:
    """Whether this machine lets a process move into a network namespace of its own (root)."""
    from debugger.sandbox import guard

    pid = os.fork()
    if pid == 0:
        os._exit(0 if guard.isolate_network() else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


@pytest.mark.skipif(not _can_isolate(), reason="this machine keeps every process in one network namespace")
def test_under_the_sanitizer_the_candidate_worker_keeps_the_network_namespace(tmp_path):
    """compute-sanitizer's library in the worker reports to the tool over local TCP: a candidate worker
    moved into an empty network namespace (as it is outside the sanitizer) never finished a run on the
    H200. Under the launcher it stays in the parent's namespace (the candidate asserts it)."""
    here = os.readlink("/proc/self/ns/net")
    src = TRITON_CANDIDATE.replace('        y = torch.empty_like(x)\n',
                                   f'        assert os.readlink("/proc/self/ns/net") == {here!r}, "isolated"\n'
                                   '        y = torch.empty_like(x)\n', 1)
    assert "isolated" in src
    fake = tmp_path / "compute-sanitizer"
    fake.write_text(FAKE_SANITIZER.replace("LINE", str(_line(src, "tl.store"))))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    result = run_tool(Case("t", TRITON_REFERENCE, src), {"name": "seed0", "kind": "seed", "seed": 0}, "memcheck",
                      str(fake), device="cpu")
    assert result["status"] == "ran", result


def test_a_worker_runs_under_the_launcher_and_its_log_is_read(tmp_path):
    """The plumbing on the interpreter: zygote started under the launcher, the check run in a worker,
    the sanitizer's environment passed on (the candidate asserts it), the log parsed and placed at the
    Triton kernel's line."""
    store = _line(TRITON_CANDIDATE, "tl.store")
    fake = tmp_path / "compute-sanitizer"
    fake.write_text(FAKE_SANITIZER.replace("LINE", str(store)))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    case = Case("t", TRITON_REFERENCE, TRITON_CANDIDATE)
    result = run_tool(case, {"name": "seed0", "kind": "seed", "seed": 0}, "memcheck", str(fake), device="cpu")
    assert result["status"] == "ran", result
    (f,) = result["findings"]
    assert f["kernel"] == "double_kernel" and f["in_candidate"] and f["pyline"] == store


def test_diagnosis_weighs_the_sanitizer_findings(monkeypatch):
    """The wiring in diagnose(): on a GPU the sanitizer's result is kept, its tags join the symptoms and
    its findings the ranking (the sanitizer is faked here, on an evaluation made on the interpreter)."""
    from debugger.diagnose import diagnose
    from debugger.evaluate import run_evaluation

    src = TRITON_CANDIDATE.replace("        assert os.environ.get(\"PYTORCH_NO_CUDA_MEMORY_CACHING\") == \"1\", "
                                   "\"the sanitizer's environment\"\n", "").replace("2.0 * x", "3.0 * x")
    assert "assert" not in src and "3.0 * x" in src
    case = Case("t", TRITON_REFERENCE, src)
    ev = run_evaluation(case, "cpu", capture=True, checks=[{"name": "seed0", "kind": "seed", "seed": 0}])
    store = _line(src, "tl.store")
    log = MEMCHECK.format(line=store).replace("scale_kernel(const float *, float *, int)", "double_kernel") \
        .replace("/cache/ext/0f3a/scale_ext/cuda.cu", "/tmp/s/can-1/candidate.py")
    findings = [place(f.to_dict(), src, {"double_kernel"}) for f in parse(log, "memcheck").findings]
    fake = {"executable": "compute-sanitizer", "check": "seed0",
            "tools": [{"tool": "memcheck", "status": "ran", "message": "", "findings": findings}]}
    monkeypatch.setattr("debugger.diagnose.sanitizer.run_sanitizer", lambda *a, **k: fake)
    assert not diagnose(case, "cuda", evaluation=ev, experiments=False, localise=False).sanitizer  # opt-in
    diag = diagnose(case, "cuda", evaluation=ev, experiments=False, localise=False, sanitizer=True)
    assert diag.sanitizer is fake and "sanitizer_out_of_bounds" in diag.symptoms
    top = diag.hypotheses[0]
    assert top["bug_class"] == "mask_missing" and store in top["lines"]
    assert any("compute-sanitizer memcheck" in e for e in top["evidence"])
    assert "memcheck: 1 finding(s) in the candidate's kernels" in diag.prompt_text()


# -- on the GPU ---------------------------------------------------------------------------------------
def _gpu_ready() -> bool:
    try:
        import torch
        return torch.cuda.is_available() and find_compute_sanitizer() is not None
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_ready(), reason="needs a CUDA GPU and compute-sanitizer")
def test_memcheck_names_the_unguarded_store():
    case = Case("oob", SCALE_REFERENCE, SCALE_CANDIDATE)
    timeout = float(os.environ.get("KDEBUG_TIMEOUT", "300"))
    result = run_tool(case, {"name": "seed0", "kind": "seed", "seed": 0}, "memcheck", find_compute_sanitizer(),
                      timeout=timeout)
    own = [f for f in result["findings"] if f["in_candidate"]]
    assert own, result
    line = _line(SCALE_CANDIDATE, "y[i] = 2.0f")
    assert {f["kernel"] for f in own} == {"scale_kernel"}
    assert any(f["kind"] == "invalid_write" and f["pyline"] == line for f in own), own
    assert not any(f["kind"] == "invalid_read" for f in own), own  # the clamped load stays inside
    tags, scored = evidence({"tools": [result]})
    assert "sanitizer_out_of_bounds" in tags
    assert ranking.rank(tags, [], [], findings=scored)[0]["bug_class"] == "mask_missing"


TRITON_UNMASKED = TRITON_CANDIDATE.replace("tl.store(y_ptr + offs, 2.0 * x, mask=offs < n)",
                                          "tl.store(y_ptr + offs, 2.0 * x)")


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_ready(), reason="needs a CUDA GPU and compute-sanitizer")
def test_memcheck_names_a_triton_store_without_mask():
    """Triton keeps its kernels' line information: the finding is at the store's line of the file."""
    assert TRITON_UNMASKED != TRITON_CANDIDATE
    case = Case("triton_oob", SCALE_REFERENCE, TRITON_UNMASKED)
    timeout = float(os.environ.get("KDEBUG_TIMEOUT", "300"))
    result = run_tool(case, {"name": "seed0", "kind": "seed", "seed": 0}, "memcheck", find_compute_sanitizer(),
                      timeout=timeout)
    own = [f for f in result["findings"] if f["in_candidate"]]
    assert any(f["kind"] == "invalid_write" and f["kernel"] == "double_kernel"
               and f["pyline"] == _line(TRITON_UNMASKED, "tl.store") for f in own), result


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_ready(), reason="needs a CUDA GPU and compute-sanitizer")
def test_racecheck_names_the_unsynchronised_shared_accesses():
    case = Case("race", REVERSE_REFERENCE, REVERSE_CANDIDATE)
    timeout = float(os.environ.get("KDEBUG_TIMEOUT", "300"))
    result = run_tool(case, {"name": "seed0", "kind": "seed", "seed": 0}, "racecheck", find_compute_sanitizer(),
                      timeout=timeout)
    races = [f for f in result["findings"] if f["kind"] == "race" and f["in_candidate"]]
    assert races, result
    lines = {a["pyline"] for f in races for a in f["accesses"]}
    assert {_line(REVERSE_CANDIDATE, "tile[t] = x[i]"), _line(REVERSE_CANDIDATE, "tile[255 - t]")} <= lines, races
    tags, scored = evidence({"tools": [result]})
    assert ranking.rank(tags, [], [], findings=scored)[0]["bug_class"] == "write_race"


# -- CUDA localisation: which call into the extension departs first ---------------------------------------
SOFTMAX_CANDIDATE = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void row_max_kernel(const float* x, float* m, int cols) {
    int r = blockIdx.x;
    float best = -3.402823466e38f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) best = fmaxf(best, x[r * cols + c]);
    for (int o = 16; o > 0; o /= 2) best = fmaxf(best, __shfl_xor_sync(0xffffffff, best, o));
    if (threadIdx.x == 0) m[r] = best;
}

__global__ void exp_norm_kernel(const float* x, const float* m, float* y, int cols) {
    int r = blockIdx.x;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[r * cols + c] = expf(x[r * cols + c] - m[r]);
}

torch::Tensor row_max(torch::Tensor x) {
    auto m = torch::empty({x.size(0)}, x.options());
    row_max_kernel<<<x.size(0), 32>>>(x.data_ptr<float>(), m.data_ptr<float>(), x.size(1));
    return m;
}

torch::Tensor exp_norm(torch::Tensor x, torch::Tensor m) {
    auto y = torch::empty_like(x);
    exp_norm_kernel<<<x.size(0), 128>>>(x.data_ptr<float>(), m.data_ptr<float>(), y.data_ptr<float>(), x.size(1));
    return y;
}
"""
cpp_src = "torch::Tensor row_max(torch::Tensor x);\\ntorch::Tensor exp_norm(torch::Tensor x, torch::Tensor m);"
ext = load_inline(name="kd_sanitizer_softmax", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["row_max", "exp_norm"])


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        return ext.exp_norm(x, ext.row_max(x))  # the sum is never divided out
'''

SOFTMAX_REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(64, 300)]


def get_init_inputs():
    return []
'''


def test_extension_functions_have_spans_over_their_kernels():
    from debugger.lang.spans import kernel_lines
    from debugger.lang.cuda.exports import export_spans

    src = SOFTMAX_CANDIDATE
    spans = export_spans(src)
    assert spans["row_max"]["kernels"] == ["row_max_kernel"] and spans["exp_norm"]["host"] == "exp_norm"
    first, last = spans["exp_norm"]["lines"]
    assert first == _line(src, "void exp_norm_kernel") and last >= _line(src, "return y;")
    assert kernel_lines(src)["row_max"] == spans["row_max"]["lines"]
    assert kernel_lines(TRITON_CANDIDATE) == {"double_kernel": [_line(TRITON_CANDIDATE, "@triton.jit"),
                                                                _line(TRITON_CANDIDATE, "tl.store")]}


def test_the_departing_extension_call_names_its_host_and_kernels(monkeypatch):
    """The parent's side of localisation on the buffers a localising run reports (faked here): the
    first departing call is tied to its host function, its kernels and their lines."""
    from debugger.diagnose import localisation
    from debugger.evaluate import Evaluation
    from debugger.records import EvalReport

    buffers = [{"launch": 0, "kernel": "row_max", "arg": 1, "verdict": "matches", "quantity": "row max of input 0"},
               {"launch": 1, "kernel": "exp_norm", "arg": 2, "verdict": "departs", "quantity": "aten._softmax"}]
    obs = {"localisation": {"buffers": buffers, "first_departing": buffers[1], "summary": "..."}}
    monkeypatch.setattr("debugger.evaluate.run_evaluation",
                        lambda *a, **k: Evaluation(EvalReport(status="mismatch"), observations={"seed0": obs}))
    check = type("Check", (), {"spec": {"name": "seed0", "kind": "seed", "seed": 0}, "status": "mismatch"})()
    report = type("Report", (), {"failed_checks": [check]})()
    case = Case("softmax", SOFTMAX_REFERENCE, SOFTMAX_CANDIDATE)
    loc = localisation.run_localisation(case, report, "cuda", launched=["row_max", "exp_norm"])
    target = loc["target"]
    assert (target["kernel"], target["host"], target["kernels"]) == ("exp_norm", "exp_norm", ["exp_norm_kernel"])
    assert target["lines"][0] == _line(SOFTMAX_CANDIDATE, "void exp_norm_kernel")
    assert loc["matched_kernels"] == ["row_max"]
    assert "extension function exp_norm (kernels exp_norm_kernel)" in localisation.describe(loc)


def _cuda() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
def test_cuda_localisation_names_the_call_that_departs():
    """Two calls into one extension: the row max matches the reference's, the second call departs."""
    from debugger.diagnose.localisation import run_localisation
    from debugger.evaluate import evaluate

    case = Case("softmax", SOFTMAX_REFERENCE, SOFTMAX_CANDIDATE)
    timeout = float(os.environ.get("KDEBUG_TIMEOUT", "300"))
    report = evaluate(case, "cuda", checks=[{"name": "seed0", "kind": "seed", "seed": 0}], timeout=timeout)
    assert report.status == "mismatch", report.message
    loc = run_localisation(case, report, "cuda", timeout=timeout)
    assert loc.get("target", {}).get("kernel") == "exp_norm", loc
    assert loc["target"]["kernels"] == ["exp_norm_kernel"] and "row_max" in loc["matched_kernels"]


def test_the_recorder_keeps_what_an_extension_call_wrote():
    """Calls into an extension (a module of Python functions standing in for one): what a call
    returned, and the arguments it changed, are kept as its writes; arguments it left alone are not."""
    import types

    import torch

    from debugger.sandbox.hooks import LaunchRecorder

    ext = types.ModuleType("fake_ext")
    ext.doubled = lambda x: x * 2
    ext.fill_out = lambda x, out: (out.copy_(x + 1), None)[1]
    rec = LaunchRecorder()
    rec.wrap_extension(ext)
    rec.reset(capture_writes=True)
    rec.active = True
    x, out = torch.arange(4.0), torch.zeros(4)
    y = ext.doubled(x)
    ext.fill_out(y, out)
    rec.active = False
    assert rec.kernels() == ["doubled", "fill_out"]
    kept = {(w["kernel"], w["launch"]): w["tensor"] for w in rec.writes}
    assert set(kept) == {("doubled", 0), ("fill_out", 1)}
    assert torch.equal(kept[("doubled", 0)], x * 2) and torch.equal(kept[("fill_out", 1)], x * 2 + 1)
