"""PyTorch's CUDA macros used with no include that declares them (debugger/lang/cuda/emulate/headers.py): nvcc's
build error reproduced by the CPU emulation, and the recipe that includes the declaring header
(cuda_include_declaring_header), on two kernels of our own with the same fault."""
from __future__ import annotations

from debugger.case import case_from_sources
from debugger.evaluate import evaluate, standard_checks
from debugger.lang.cuda.emulate.headers import undeclared
from debugger.recipes import RECIPES
from debugger.source.tree import parses
from tests.test_evaluate import ADD_ONE_REF, CUDA_ADD_ONE

# gemini's form (KernelBench logged it 32 times): the launch checked with a macro torch/extension.h does not declare
ADD_ONE_CHECKED = CUDA_ADD_ONE.replace("x.numel());\n    return y;", "x.numel());\n    C10_CUDA_KERNEL_LAUNCH_CHECK();\n    return y;")

SCALE_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 3.0


def get_inputs():
    return [torch.randn(4, 300)]


def get_init_inputs():
    return []
'''

# a second form: no #include at all in the CUDA source, the error checked with C10_CUDA_CHECK and AT_CUDA_CHECK
SCALE_CHECKED = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void scale3(const float* __restrict__ x, float* __restrict__ y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3.0f * x[i];
}

torch::Tensor scale(torch::Tensor x) {
    auto y = torch::empty_like(x);
    long n = x.numel();
    scale3<<<(unsigned)((n + 127) / 128), 128>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_CHECK(cudaGetLastError());
    AT_CUDA_CHECK(cudaDeviceSynchronize());
    return y;
}
"""

ext = load_inline(name="kdebug_scale3", cpp_sources="torch::Tensor scale(torch::Tensor x);", cuda_sources=cuda_src,
                  functions=["scale"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.scale(x.contiguous())
'''


def _fixed(src: str) -> str:
    patches = RECIPES["cuda_include_declaring_header"].propose(src)
    assert len(patches) == 1 and patches[0].bug_class == "gpu_incompatible"
    fixed = patches[0].new_src
    assert parses(fixed) and RECIPES["cuda_include_declaring_header"].propose(fixed) == []  # nothing left to add
    return fixed


def test_the_declaring_header_goes_after_the_units_last_include():
    fixed = _fixed(ADD_ONE_CHECKED)
    assert "#include <torch/extension.h>\n#include <c10/cuda/CUDAException.h>\n__global__" in fixed
    assert fixed.replace("#include <c10/cuda/CUDAException.h>\n", "") == ADD_ONE_CHECKED  # nothing else changed


def test_a_unit_with_no_include_gets_both_headers_at_its_top():
    assert undeclared(SCALE_CHECKED.split('r"""')[1]) == ["AT_CUDA_CHECK", "C10_CUDA_CHECK"]
    fixed = _fixed(SCALE_CHECKED)
    assert 'cuda_src = r"""\n#include <ATen/cuda/Exceptions.h>\n#include <c10/cuda/CUDAException.h>\n__global__' in fixed
    assert RECIPES["cuda_include_declaring_header"].propose(CUDA_ADD_ONE) == []  # declares nothing it lacks


def test_the_fixed_kernel_builds_and_computes_the_operator_on_the_cpu():
    seed = standard_checks()[:1]  # one check: the build is what changed
    before = evaluate(case_from_sources(SCALE_REF, SCALE_CHECKED), "cpu", checks=seed)
    assert before.status == "compile_error" and 'identifier "AT_CUDA_CHECK" is undefined' in before.message
    after = evaluate(case_from_sources(SCALE_REF, _fixed(SCALE_CHECKED)), "cpu", checks=seed)
    assert after.status == "pass" and after.checks[0].passed, after.message
