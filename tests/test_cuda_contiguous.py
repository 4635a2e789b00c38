"""cuda_contiguous_inputs: CUDA kernels that index their tensors as dense get dense tensors where the
tensors enter the candidate's extension, and a KernelBench repair is hardened with it (the `harden` node)
when its verdict passes but the layouts the task never draws fail. Kernels of the tests' own, run on the
CPU through kdebug's CUDA emulation."""
import pytest

from debugger.case import case_from_sources
from debugger.evaluate import evaluate
from debugger.lang.cuda.recipes.contiguous import CudaContiguousInputs

ROW_SCALE_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.w = nn.Parameter(torch.randn(cols))

    def forward(self, x, s: float):
        return x * self.w[None, :] * s


def get_inputs():
    return [torch.randn(8, 16), 0.5]


def get_init_inputs():
    return [16]
'''

# rows of `cols` read at x[r * cols + c]: right for a dense x only
ROW_SCALE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
__global__ void row_scale(const float* x, const float* w, float* y, int rows, int cols, float s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) y[i] = x[i] * w[i % cols] * s;
}
torch::Tensor row_scale_cuda(torch::Tensor x, torch::Tensor w, double s) {
    auto y = torch::empty({x.size(0), x.size(1)}, x.options());
    int n = x.size(0) * x.size(1);
    row_scale<<<(n + 127) / 128, 128>>>(x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(),
                                        x.size(0), x.size(1), (float)s);
    return y;
}
"""
ext = load_inline(name="row_scale", cpp_sources="torch::Tensor row_scale_cuda(torch::Tensor x, torch::Tensor w, double s);",
                  cuda_sources=src, functions=["row_scale_cuda"])


class ModelNew(nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.w = nn.Parameter(torch.randn(cols))

    def forward(self, x, s: float):
        """Scaled rows."""
        return ext.row_scale_cuda(x, self.w, s)
'''


LAYOUTS_FAIL = {"symptoms": ["fails_noncontiguous"]}


def test_tensor_parameters_that_reach_the_extension_are_made_contiguous_at_the_top():
    assert CudaContiguousInputs().propose(ROW_SCALE) == []  # never on sight: only when layouts fail
    patch, = CudaContiguousInputs().propose(ROW_SCALE, LAYOUTS_FAIL)
    assert patch.recipe == "cuda_contiguous_inputs" and patch.bug_class == "stride_layout"
    # x reaches a torch::Tensor parameter; s reaches a double, self.w is the module's own (dense) parameter
    assert '"""Scaled rows."""\n        x = x.contiguous()\n        return ext.row_scale_cuda(x, self.w, s)' \
        in patch.new_src
    assert "s.contiguous" not in patch.new_src and "self.w.contiguous" not in patch.new_src
    assert CudaContiguousInputs().propose(patch.new_src, LAYOUTS_FAIL) == []  # already dense: nothing left to do


def test_an_argument_re_laid_inside_the_function_is_made_contiguous_at_the_call():
    relaid = ROW_SCALE.replace("        return ext.row_scale_cuda(x, self.w, s)",
                               "        xt = x.t()\n        return ext.row_scale_cuda(xt, self.w, s)")
    patch, = CudaContiguousInputs().propose(relaid, {"bug_class": "stride_layout"})
    assert "return ext.row_scale_cuda(xt.contiguous(), self.w, s)" in patch.new_src
    assert "x = x.contiguous()" not in patch.new_src  # x itself never reaches the extension


def test_no_patch_without_an_extension_of_the_candidate_s_own():
    torch_only = ("import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                  "    def forward(self, x):\n        return x.t().relu()\n")
    assert CudaContiguousInputs().propose(torch_only, LAYOUTS_FAIL) == []


@pytest.mark.parametrize("reference, candidate", [
    pytest.param(ROW_SCALE_REF, ROW_SCALE, id="row_scale"),
    pytest.param(None, None, id="add_one"),  # a second kernel with the same fault: tests/test_evaluate.py's
])
def test_the_patch_makes_the_layout_checks_pass_on_the_emulated_gpu(reference, candidate):
    if reference is None:
        from tests.test_evaluate import ADD_ONE_REF, CUDA_ADD_ONE
        reference, candidate = ADD_ONE_REF, CUDA_ADD_ONE
    before = evaluate(case_from_sources(reference, candidate), "cpu")
    assert {c.name for c in before.failed_checks} == {"noncontiguous", "transposed"}, before.message
    patch, = CudaContiguousInputs().propose(candidate, LAYOUTS_FAIL)
    after = evaluate(case_from_sources(reference, patch.new_src), "cpu")
    assert after.status == "pass", after.message
