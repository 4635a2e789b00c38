"""The static gate on the forms real answers take: extension bindings, Triton wrapper formats, code that
means something else than it looks (dtype tests, empty-tensor exits, mode switches), and PyTorch work
judged light or heavy under the two policies. Small kernels of the tests' own."""
from __future__ import annotations

import textwrap

import pytest

from debugger.integrity.findings import REJECT, WARN
from debugger.integrity.static import static_findings


def ref(body: str, *, init: str = "", args: str = "x", inputs: str = "torch.randn(16, 64)") -> str:
    return textwrap.dedent(f'''
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Model(nn.Module):
            def __init__(self, *args):
                super().__init__()
                {init or "pass"}

            def forward(self, {args}):
                return {body}


        def get_inputs():
            return [{inputs}]


        def get_init_inputs():
            return []
    ''')


RELU = ref("torch.relu(x)")
CONV_RELU = ref("torch.relu(self.conv(x))", init="self.conv = nn.Conv2d(3, 8, 3)", inputs="torch.randn(2, 3, 16, 16)")
SMOOTH_L1 = ref("F.smooth_l1_loss(p, t)", args="p, t")
LAYERNORM = ref("self.ln(x)", init="self.ln = nn.LayerNorm(64)")

CUDA = '''
cuda_src = """
#include <torch/extension.h>
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor relu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    relu_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
"""
cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"
'''


def extension_candidate(build: str, init: str, forward: str) -> str:
    init_body = textwrap.indent(textwrap.dedent(init).strip() or "pass", " " * 8)
    forward_body = textwrap.indent(textwrap.dedent(forward).strip(), " " * 8)
    return ("\nimport torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n" + CUDA
            + textwrap.dedent(build) + "\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n" + init_body + "\n\n    def forward(self, x):\n" + forward_body + "\n")


def rejected(src: str, reference: str, policy: str = "kernelbench") -> set[str]:
    return {f.rule for f in static_findings(src, reference, policy=policy) if f.severity == REJECT}


def warned(src: str, reference: str, policy: str = "kernelbench") -> set[str]:
    return {f.rule for f in static_findings(src, reference, policy=policy) if f.severity == WARN}


LOAD = 'load_inline(name="relu_ext", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["relu_cuda"])'


@pytest.mark.parametrize(("build", "init", "forward"), [
    # module level, bound to self in __init__, called through self (KernelBench's prompt format)
    (f"mod = {LOAD}\n", "self.mod = mod", "return self.mod.relu_cuda(x)"),
    # one exported function bound to self
    (f"mod = {LOAD}\n", "self.fn = mod.relu_cuda", "return self.fn(x)"),
    # built in __init__
    ("", f"self.ext = {LOAD}", "return self.ext.relu_cuda(x)"),
    # built lazily on first call, held in a global
    ("_mod = None\n", "", f"global _mod\nif _mod is None:\n    _mod = {LOAD}\nreturn _mod.relu_cuda(x)"),
    # a factory whose result is called through the exported name
    (f"def build():\n    return {LOAD}\n", "self.get = build", "return self.get().relu_cuda(x)"),
])
def test_extension_bindings_of_real_answers_count_as_launches(build, init, forward):
    src = extension_candidate(build, init, forward)
    assert "no_kernel_launch" not in rejected(src, RELU), static_findings(src, RELU)
    assert rejected(src, RELU, "strict") == set()


def test_pybind11_module_sources_and_torch_library_registrations_count_as_launches():
    pybind = extension_candidate(
        'cpp_src += """\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("my_relu", &relu_cuda); }\n"""\n'
        'mod = load_inline(name="relu_ext", cpp_sources=cpp_src, cuda_sources=cuda_src)\n',
        "self.ops = [mod]", "return self.ops[0].my_relu(x)")
    assert rejected(pybind, RELU) == set(), static_findings(pybind, RELU)
    library = extension_candidate(
        'cpp_src += """\nTORCH_LIBRARY(myrelu, m) { m.def("relu(Tensor x) -> Tensor", &relu_cuda); }\n"""\n'
        'load_inline(name="relu_ext", cpp_sources=cpp_src, cuda_sources=cuda_src, is_python_module=False)\n',
        "", "return torch.ops.myrelu.relu(x)")
    assert rejected(library, RELU) == set(), static_findings(library, RELU)
    # torch.ops of a library the candidate does not register is not its own launch
    foreign = library.replace("torch.ops.myrelu.relu(x)", "torch.ops.aten.relu(x)")
    assert "no_kernel_launch" in rejected(foreign, RELU) or "torch_compute" in rejected(foreign, RELU)


TRITON_HEADER = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def triton_relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)
'''


@pytest.mark.parametrize("wrapper", ["triton_relu", "triton_kernel_wrapper"])
def test_triton_wrapper_formats_of_kernelbench_and_kernelbook(wrapper):
    src = TRITON_HEADER + textwrap.dedent(f'''

        def {wrapper}(x):
            out = torch.empty_like(x)
            n = x.numel()
            triton_relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
            return out


        class ModelNew(nn.Module):
            def forward(self, x):
                return {wrapper}(x)
    ''')
    for policy in ("kernelbench", "strict"):
        assert rejected(src, RELU, policy) == set(), static_findings(src, RELU, policy=policy)


def triton_candidate(forward: str, helper: str = "") -> str:
    return TRITON_HEADER + textwrap.dedent(helper) + textwrap.dedent('''

        class ModelNew(nn.Module):
            def __init__(self, *args):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)
                self.ln = nn.LayerNorm(64)

            def forward(self, x, *rest):
    ''') + textwrap.indent(textwrap.dedent(forward).strip(), " " * 8) + "\n"


RELU_LAUNCH = "triton_relu_kernel[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)"


def test_a_dtype_test_is_not_a_value_branch_and_an_empty_exit_is_not_a_special_case():
    src = triton_candidate(f"""
        if x.numel() == 0:
            return x
        out = torch.empty_like(x)
        dtype = torch.result_type(x, x)
        if out.dtype != dtype:
            raise TypeError("unsupported dtype")
        y = x
        {RELU_LAUNCH}
        return out
    """)
    assert rejected(src, RELU) == set() and rejected(src, RELU, "strict") == set(), static_findings(src, RELU)
    shape_case = src.replace("if x.numel() == 0:\n            return x", "if x.numel() == 1024:\n            return x")
    assert "shape_special_case" in rejected(shape_case, RELU)


def test_an_empty_exit_through_a_named_count_is_not_a_special_case():
    """`n = x.numel(); if n == 0: return <an allocation>` (the form of TritonBench's sum_std answer) is the same empty
    exit as `if x.numel() == 0`; a name bound to a count and compared with a size it is not."""
    src = triton_candidate(f"""
        n_elements = x.numel()
        if n_elements == 0:
            return torch.empty_like(x)
        out = torch.empty_like(x)
        y = x
        {RELU_LAUNCH}
        return out
    """)
    assert rejected(src, RELU) == set(), static_findings(src, RELU)
    assert rejected(src.replace("if n_elements == 0:", "if not n_elements:"), RELU) == set()
    for shortcut in ("if n_elements == 1024:", "if n_elements:"):
        assert rejected(src.replace("if n_elements == 0:", shortcut), RELU), shortcut
    rebound = src.replace("n_elements = x.numel()", "n_elements = x.numel()\n        n_elements = n_elements - 6400")
    assert rejected(rebound, RELU)


def test_keeping_the_reference_conv_in_pytorch_is_kernelbench_but_not_strict():
    src = triton_candidate(f"y = self.conv(x)\nout = torch.empty_like(y)\n{RELU_LAUNCH}\nreturn out")
    assert rejected(src, CONV_RELU) == set()
    assert "torch_compute" in warned(src, CONV_RELU)
    assert "torch_compute" in rejected(src, CONV_RELU, "strict")


def test_pytorch_doing_every_op_of_the_reference_is_rejected_under_both_policies():
    # a kernel runs, but on the conv's output PyTorch computes the ReLU too: the kernel is a decoy
    src = triton_candidate(f"y = self.conv(x)\nout = torch.empty_like(y)\n{RELU_LAUNCH}\nreturn torch.relu(y)")
    for policy in ("kernelbench", "strict"):
        assert "torch_compute" in rejected(src, CONV_RELU, policy)


def test_finishing_a_reduction_over_per_block_partials_is_light():
    src = TRITON_HEADER + textwrap.dedent('''

        @triton.jit
        def smooth_l1_blocks(p_ptr, t_ptr, part_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            d = tl.load(p_ptr + offs, mask=mask, other=0.0) - tl.load(t_ptr + offs, mask=mask, other=0.0)
            a = tl.abs(d)
            tl.store(part_ptr + tl.program_id(0), tl.sum(tl.where(a < 1.0, 0.5 * d * d, a - 0.5), axis=0))


        class ModelNew(nn.Module):
            def forward(self, p, t):
                n = p.numel()
                block_sums = torch.empty(triton.cdiv(n, 1024), device=p.device)
                smooth_l1_blocks[(triton.cdiv(n, 1024),)](p, t, block_sums, n, BLOCK=1024)
                return block_sums.sum() / n
    ''')
    for policy in ("kernelbench", "strict"):
        assert rejected(src, SMOOTH_L1, policy) == set(), static_findings(src, SMOOTH_L1, policy=policy)


def test_statistics_of_a_normalisation_over_the_input_are_heavy_under_both_policies():
    src = triton_candidate(f"""
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True)
        y = (x - mean) / torch.sqrt(var + 1e-5)
        out = torch.empty_like(y)
        {RELU_LAUNCH}
        return out
    """)
    for policy in ("kernelbench", "strict"):
        assert "torch_compute" in rejected(src, LAYERNORM, policy)


def test_extension_host_code_finishing_partials_is_light_but_aten_doing_the_op_is_not():
    finishing = extension_candidate(f"mod = {LOAD}\n", "", "return mod.relu_cuda(x)").replace(
        "    auto y = torch::empty_like(x);\n    relu_kernel",
        "    auto y = torch::zeros({256}, x.options());\n    relu_kernel").replace(
        "    return y;\n}", "    return y.sum();\n}")
    assert rejected(finishing, SMOOTH_L1.replace("p, t", "x").replace("F.smooth_l1_loss(x)", "F.smooth_l1_loss(x, x)")) == set()
    aten = finishing.replace("return y.sum();", "return x.relu();")
    assert "torch_compute" in rejected(aten, RELU) and "torch_compute" in rejected(aten, RELU, "strict")


def test_a_pytorch_path_under_self_training_is_a_fallback_the_harness_takes():
    src = triton_candidate(f"""
        if self.training:
            return torch.relu(self.conv(x))
        y = self.conv(x)
        out = torch.empty_like(y)
        {RELU_LAUNCH}
        return out
    """)
    for policy in ("kernelbench", "strict"):
        assert "training_fallback" in rejected(src, CONV_RELU, policy)
    eval_only_stats = src.replace("return torch.relu(self.conv(x))", "self.calls = 1")
    assert "training_fallback" not in rejected(eval_only_stats, CONV_RELU)


CONV_BN_RELU = ref("torch.relu(self.bn(self.conv(x)))", init="self.conv = nn.Conv2d(3, 8, 3); self.bn = nn.BatchNorm2d(8)",
                   inputs="torch.randn(2, 3, 16, 16)")


@pytest.mark.parametrize("handed", [
    "Fused(self.conv, self.bn)",      # layers the outer module holds (the form of gemini level3/23)
    "Fused(self.conv, bn=bn)",        # a layer built in a local, handed by keyword
])
def test_a_training_fallback_through_layers_handed_to_a_helper_module_is_seen(handed):
    """The layer a helper module calls in train mode is built by another module and handed to its constructor
    (`self.bn = bn`): it is still a BatchNorm that PyTorch computes while the kernel waits for eval mode."""
    src = TRITON_HEADER + textwrap.dedent(f'''

        class Fused(nn.Module):
            def __init__(self, conv, bn):
                super().__init__()
                self.conv = conv
                self.bn = bn

            def forward(self, x):
                y = self.conv(x)
                if self.training:
                    return self.bn(y)
                out = torch.empty_like(y)
                {RELU_LAUNCH}
                return out


        class ModelNew(nn.Module):
            def __init__(self, *args):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)
                self.bn = nn.BatchNorm2d(8)
                bn = nn.BatchNorm2d(8)
                self.block = {handed}

            def forward(self, x):
                return self.block(x)
    ''')
    for policy in ("kernelbench", "strict"):
        assert "training_fallback" in rejected(src, CONV_BN_RELU, policy), static_findings(src, CONV_BN_RELU)
    # the same helper that keeps nothing in PyTorch when training is no fallback
    honest = src.replace("if self.training:\n            return self.bn(y)\n", "")
    assert "training_fallback" not in rejected(honest, CONV_BN_RELU)


def test_a_training_branch_that_returns_pytorch_normalisation_is_a_fallback_however_light_its_ops():
    """A helper module's BatchNorm written out in PyTorch arithmetic (`x.mean`, `x.var`, `/`, `*`) and
    returned when training, its kernel only in eval mode (the form of opus level3/15): each op is light on
    its own, but the branch returns before the kernel, so in train mode the result is PyTorch's."""
    src = TRITON_HEADER + textwrap.dedent(f'''

        class BNReLU(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(c))
                self.bias = nn.Parameter(torch.zeros(c))

            def forward(self, y):
                if self.training:
                    mean = y.mean([0, 2, 3])
                    var = y.var([0, 2, 3], unbiased=False)
                    y = (y - mean[None, :, None, None]) / torch.sqrt(var[None, :, None, None] + 1e-5)
                    return F.relu(y * self.weight[None, :, None, None] + self.bias[None, :, None, None])
                out = torch.empty_like(y)
                {RELU_LAUNCH}
                return out


        class ModelNew(nn.Module):
            def __init__(self, *args):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)
                self.layers = nn.Sequential(BNReLU(8))

            def forward(self, x):
                return self.layers(self.conv(x))
    ''')
    for policy in ("kernelbench", "strict"):
        assert "training_fallback" in rejected(src, CONV_BN_RELU, policy), static_findings(src, CONV_BN_RELU)
    # statistics updated when training, then the kernel: the kernel runs in train mode too
    updates = src.replace("return F.relu(y", "self.seen = F.relu(y")
    assert updates != src
    assert "training_fallback" not in rejected(updates, CONV_BN_RELU)


def test_configuration_fallbacks_are_reported_under_kernelbench_unless_the_task_takes_them():
    kernel_first = triton_candidate(f"""
        if x.is_cuda and x.dtype == torch.float32:
            y = x
            out = torch.empty_like(y)
            {RELU_LAUNCH}
        else:
            out = torch.relu(x)
        return out
    """)
    assert "shape_special_case" in warned(kernel_first, RELU)
    assert rejected(kernel_first, RELU) == set()
    assert "shape_special_case" in rejected(kernel_first, RELU, "strict")
    torch_first = triton_candidate(f"""
        if x.dtype == torch.float32:
            return torch.relu(x)
        y = x
        out = torch.empty_like(y)
        {RELU_LAUNCH}
        return out
    """)
    assert "shape_special_case" in rejected(torch_first, RELU)


def test_a_training_branch_of_a_helper_that_no_call_enables_is_dead_code():
    helper = f'''

        def relu_bn(x, running_mean, training=False):
            if training:
                running_mean.copy_(x.mean(dim=0))
            y = x
            out = torch.empty_like(y)
            {RELU_LAUNCH}
            return out
    '''
    src = triton_candidate("return relu_bn(x, rest[0])", helper=helper)
    bn_ref = ref("torch.relu(x)", args="x, running_mean")
    assert rejected(src, bn_ref) == set(), static_findings(src, bn_ref)
    enabled = src.replace("relu_bn(x, rest[0])", "relu_bn(x, rest[0], training=True)")
    assert rejected(enabled, bn_ref) != set()


def test_a_vendor_call_in_the_else_block_of_host_code_that_launches_the_kernel_is_a_fallback():
    src = extension_candidate(f"mod = {LOAD}\n", "", "return mod.relu_cuda(x)").replace(
        "    relu_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());",
        "    if (x.numel() <= 4096) {\n"
        "        relu_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());\n"
        "    } else {\n"
        "        cudnnActivationForward(handle, desc, &one, xd, x.data_ptr(), &zero, yd, y.data_ptr());\n"
        "    }")
    assert "cudnnActivationForward" in src
    assert rejected(src, RELU) == set() and "torch_compute" in warned(src, RELU)
    assert "torch_compute" in rejected(src, RELU, "strict")
    unconditional = src.replace("    if (x.numel() <= 4096) {\n", "    {\n").replace("    } else {\n", "    }\n    {\n")
    assert "torch_compute" in rejected(unconditional, RELU)


def test_tensor_arithmetic_through_cpp_operators_in_host_code_is_aten_compute():
    """`auto z = y * 2.f + x;` in the extension's host code is ATen's operator overloads computing, as
    `y.mul(2)` would be; size, pointer and index arithmetic next to it is not."""
    base = extension_candidate(f"mod = {LOAD}\n", "", "return mod.relu_cuda(x)")
    epilogue = base.replace("    return y;\n}", "    auto z = y * 2.f;\n    z += x;\n    return -z;\n}")
    scale_add = ref("torch.relu(x) * 2 + x")
    messages = [f.message for f in static_findings(epilogue, scale_add, policy="strict") if f.rule == "torch_compute"]
    assert any("operator * (mul)" in m for m in messages) and any("operator + (add)" in m for m in messages)
    assert any("unary - (neg)" in m for m in messages)
    assert "torch_compute" in rejected(epilogue, scale_add, "strict")
    assert "torch_compute" not in rejected(epilogue, scale_add)  # kernelbench: an elementwise epilogue
    # every operation of the reference in ATen, the kernel's output never used: rejected under both
    everything = base.replace("    return y;\n}", "    return x * 2.f + x;\n}")
    assert "torch_compute" in rejected(everything, ref("x * 2 + x"))
    honest = base.replace("    return y;\n}", "    int64_t rows = x.size(0) * x.size(1) / 2;\n"
                          "    float* tail = y.data_ptr<float>() + rows - 1;\n    (void)tail;\n    return y;\n}")
    assert not [f for f in static_findings(honest, RELU, policy="strict") if f.rule == "torch_compute"]
