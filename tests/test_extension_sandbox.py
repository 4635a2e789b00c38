"""A candidate that builds a C++ extension with load_inline, evaluated on the CPU in the sandbox: the
build goes where the user's TORCH_EXTENSIONS_DIR says (in a folder keyed by the build), and the sandbox
lets it write there. On the H200 every build under a user-set TORCH_EXTENSIONS_DIR was refused as a
write outside the compiler cache, so every CUDA answer was reported as a compile error."""

from debugger.case import case_from_sources
from debugger.evaluate import run_evaluation
from debugger.sandbox.pool import Sandbox

REFERENCE = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0

def get_inputs():
    return [torch.randn(64, 33)]

def get_init_inputs():
    return []
'''

CANDIDATE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = """
#include <torch/extension.h>
torch::Tensor relu2(torch::Tensor x) {
    auto y = torch::empty_like(x);
    auto xc = x.contiguous();
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] > 0.f ? 2.f * in[i] : 0.f;
    return y;
}
"""
ext = load_inline(name="relu2_ext", cpp_sources=cpp_src, functions=["relu2"], verbose=False)

class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu2(x)
'''


def evaluate_under(base, monkeypatch, timeout):
    """One seed check of CANDIDATE with TORCH_EXTENSIONS_DIR=base, in a sandbox of its own (the process-wide
    one's workers keep the environment they started with)."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(base))
    monkeypatch.delenv("KDEBUG_TORCH_EXTENSIONS_BASE", raising=False)
    checks = [{"name": "seed0", "kind": "seed", "seed": 0}]
    sandbox = Sandbox("cpu", timeout=timeout)
    try:
        return run_evaluation(case_from_sources(REFERENCE, CANDIDATE), device="cpu", checks=checks, timeout=timeout,
                              sandbox=sandbox).report
    finally:
        sandbox.close()


def test_an_extension_builds_under_a_user_set_dir_and_a_lock_left_there_does_not_block_the_next_evaluation(
        tmp_path, monkeypatch):
    """The build goes to the user's TORCH_EXTENSIONS_DIR, in a folder keyed by the build. Then a worker killed
    mid-build (a timeout) leaves torch's lock file in that folder; the next evaluation of the same sources (or
    of a repair that changed only host code) used to wait on it until its own timeout (on the H100, a repair's
    timing ran past 90 s twice after its build was cut at 150 s). One build serves both (ninja finds the
    second up to date; torch takes the lock all the same)."""
    from debugger.lang.cuda.sources import build_key

    base = tmp_path / "ext"
    report = evaluate_under(base, monkeypatch, 300)
    assert report.status == "pass", report.message
    built = [p for p in base.iterdir() if p.is_dir()]
    folder = base / build_key(CANDIDATE) / "relu2_ext"
    assert built == [folder.parent] and folder.is_dir(), sorted(base.rglob("*"))

    (folder / "lock").write_text("")  # as a SIGKILLed builder leaves it
    report = evaluate_under(base, monkeypatch, 150)
    assert report.status == "pass", report.message
    assert not (folder / "lock").exists()
