"""eval/real_repair_timing.py's choice of what to time: an original whose kernels a host-side repair left as they
were is not timed again, and the repairs that changed a kernel go first (device time is short)."""
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("real_repair_timing", REPO / "eval" / "real_repair_timing.py")
timing = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(timing)

ANSWER = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>
__global__ void scale_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * SCALE;
}
torch::Tensor scale(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
ext = load_inline(name="scale_ext", cpp_sources="torch::Tensor scale(torch::Tensor x);", cuda_sources=cuda_src,
                  functions=["scale"])

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))
    def forward(self, x):
        return ext.scale(x) + self.weight
'''
HOST_REPAIR = ANSWER.replace("nn.Parameter(torch.randn(n))", "nn.Linear(n, n).bias")
KERNEL_REPAIR = ANSWER.replace("if (i < n) y[i]", "for (; i < n; i += gridDim.x * blockDim.x) y[i]")


def case(root: Path, name: str, src: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "candidate.py").write_text(src)
    (folder / "reference.py").write_text("# the reference\n")
    return folder


def test_a_host_side_repair_is_timed_without_its_original_and_after_kernel_repairs(tmp_path):
    repairs, originals = tmp_path / "repairs", tmp_path / "originals"
    host = case(repairs, "a__level1__1", HOST_REPAIR)
    kernel = case(repairs, "b__level1__2", KERNEL_REPAIR)
    case(originals, "a__level1__1", ANSWER)
    case(originals, "b__level1__2", ANSWER)

    assert timing.same_kernels(host, originals) and not timing.same_kernels(kernel, originals)
    assert set(timing.implementations(host, originals)) == {"repaired"}
    assert set(timing.implementations(kernel, originals)) == {"repaired", "candidate"}
    assert timing.timing_order(timing.case_folders(repairs, None), originals) == [kernel, host]
    row = timing.row_of(host, {"repaired_ms": 1.0, "reference_ms": 2.0, "speedup_vs_reference": 2.0}, 3.0, originals)
    assert row["original"] == "same kernels as the repair"
    assert "same kernels as the repair" in timing.table([row], "cmd")
    # without --originals every repair is timed alone, in name order
    assert timing.timing_order(timing.case_folders(repairs, None), None) == [host, kernel]
    assert set(timing.implementations(host, None)) == {"repaired"}
