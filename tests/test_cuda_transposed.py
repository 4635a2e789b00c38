"""cuda_transposed_conv_weight on a KernelBench-format task of our own: a transposed convolution whose
ModelNew declares its weight in a convolution's (out, in, k) shape, reads it out-channel major, flips the
taps and adds the padding twice (the shape of real answers: qwencoder level1/64, 74, 79).

Run on the CPU through kdebug's CUDA emulation with Model's weights mapped in (the kernel verdict's seed
check). Where in != out the parameter correspondence hands the (out, in, k) tensor the reference's values
transposed, so the taps alone fix it; where in == out it cannot tell (same shape) and hands them as they
are, and only the layout variant, which declares the weight (in, out, k) and reads it so, is right at both.
"""
import pytest

from debugger import lang
from debugger.case import case_from_sources
from debugger.evaluate import evaluate, standard_checks
from debugger.lang.cuda import units
from debugger.lang.cuda.recipes.transposed import declaration_swaps
from debugger.lang.cuda.transposed import host_out_count_edits, transposed_gathers
from debugger.recipes import RECIPES
from debugger.recipes.syntax import Source

CUDA = lang.get("cuda")

REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.deconv = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                                         bias=False)

    def forward(self, x):
        return self.deconv(x)


batch_size = 2
in_channels = {cin}
out_channels = {cout}
length = 9


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, 3, 2, 1]
'''

CANDIDATE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>

__global__ void upsample_conv(const float* input, const float* weight, float* output, int batch_size,
                              int in_channels, int out_channels, int in_len, int out_len, int kernel_size,
                              int stride, int padding) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= batch_size * out_channels * out_len) return;
    int pos = idx % out_len;
    int oc = (idx / out_len) % out_channels;
    int b = idx / (out_len * out_channels);
    float acc = 0.0f;
    for (int ic = 0; ic < in_channels; ++ic) {
        for (int k = 0; k < kernel_size; ++k) {
            int src = pos - k + 2 * padding;
            if (src % stride == 0) {
                int i = src / stride;
                if (i >= 0 && i < in_len) {
                    int w_idx = oc * (in_channels * kernel_size) + ic * kernel_size + (kernel_size - 1 - k);
                    acc += input[(b * in_channels + ic) * in_len + i] * weight[w_idx];
                }
            }
        }
    }
    output[idx] = acc;
}

torch::Tensor upsample(torch::Tensor input, torch::Tensor weight, int stride, int padding) {
    int batch_size = input.size(0), in_channels = input.size(1), in_len = input.size(2);
    int out_channels = weight.size(0);
    int kernel_size = weight.size(2);
    int out_len = (in_len - 1) * stride - 2 * padding + kernel_size;
    auto output = torch::empty({batch_size, out_channels, out_len}, input.options());
    int total = batch_size * out_channels * out_len;
    upsample_conv<<<(total + 127) / 128, 128>>>(input.data_ptr<float>(), weight.data_ptr<float>(),
                                                output.data_ptr<float>(), batch_size, in_channels, out_channels,
                                                in_len, out_len, kernel_size, stride, padding);
    return output;
}
"""

ext = load_inline(name="kdebug_deconv_test", cpp_sources="torch::Tensor upsample(torch::Tensor input, "
                  "torch::Tensor weight, int stride, int padding);", cuda_sources=cuda_src, functions=["upsample"])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.stride, self.padding = stride, padding
        self.weight = nn.Parameter(torch.randn(out_channels, in_channels, kernel_size))

    def forward(self, x):
        return ext.upsample(x.contiguous(), self.weight, self.stride, self.padding)
'''


def seed_check() -> list[dict]:
    return [c for c in standard_checks() if c["name"] == "seed0"]


def kernel_verdict(src: str, cin: int, cout: int) -> str:
    case = case_from_sources(REFERENCE.format(cin=cin, cout=cout), src)
    return evaluate(case, "cpu", semantics="kernel", checks=seed_check()).status


def patches() -> dict[str, str]:
    out = {}
    for p in RECIPES["cuda_transposed_conv_weight"].propose(CANDIDATE):
        key = "declared" if "declared" in p.description else "layout" if "weight read" in p.description else "taps"
        out[key] = p.new_src
    return out


def test_the_three_variants_and_their_edits():
    found = patches()
    assert set(found) == {"taps", "declared", "layout"}
    assert "int src = pos - k + padding;" in found["taps"]
    assert "ic * kernel_size + k;" in found["taps"] and "oc * (in_channels * kernel_size)" in found["taps"]
    declared = found["declared"]
    assert "int w_idx = ic * (out_channels * kernel_size) + oc * kernel_size + k;" in declared
    assert "int out_channels = weight.size(1);" in declared
    assert "torch.randn(in_channels, out_channels, kernel_size)" in declared
    assert "int out_channels = weight.size(0);" in found["layout"]  # the host left as it was


@pytest.mark.parametrize("cin,cout", [(4, 4), (3, 5)])
def test_only_the_declared_layout_is_right_at_every_size(cin, cout):
    # (the answer itself is not built here, an emulated build being about 25 s of CI: the taps-only variant
    # failing where in == out shows the check tells a wrong layout apart, and the answer's two faults are
    # named by its static facts below)
    found = patches()
    assert kernel_verdict(found["declared"], cin, cout) == "pass"
    # the taps alone: right where the correspondence transposes (in != out), wrong where it cannot tell
    assert kernel_verdict(found["taps"], cin, cout) == ("pass" if cin != cout else "mismatch")


def test_facts_name_the_flipped_taps_and_the_out_major_read():
    facts = {f.tag: f.message for f in CUDA.static_facts(CANDIDATE)}
    assert "reads the flipped tap (k: K - 1 - k)" in facts["cuda_transposed_taps_flipped"]
    assert "adds 2 * padding" in facts["cuda_transposed_taps_flipped"]
    assert "output channel oc strided by the input-channel count" in facts["cuda_transposed_weight_out_major"]
    assert not {"cuda_transposed_taps_flipped", "cuda_transposed_weight_out_major"} & \
        {f.tag for f in CUDA.static_facts(patches()["declared"])}


def test_a_right_gather_and_a_convolution_are_left_alone():
    right = patches()["declared"]
    fn = next(f for u in units(right) for f in u.kernels)
    assert not transposed_gathers(fn)
    # a plain convolution: the position adds the tap and is never divided by a stride
    conv = CANDIDATE.replace("int src = pos - k + 2 * padding;", "int src = pos * stride + k - padding;") \
        .replace("if (src % stride == 0) {", "{").replace("int i = src / stride;", "int i = src;")
    fn = next(f for u in units(conv) for f in u.kernels)
    assert not transposed_gathers(fn)
    assert not RECIPES["cuda_transposed_conv_weight"].propose(conv)


def test_declarations_and_host_counts_need_the_convolution_shape():
    grouped = declaration_swaps(Source("w = torch.randn(out_channels, in_channels // groups, 3, 3)"))
    assert [e.text for e in grouped] == ["in_channels", "out_channels // groups"]
    assert not declaration_swaps(Source("w = torch.randn(in_channels, out_channels, 3)"))  # already ConvTranspose's
    assert not declaration_swaps(Source("a = torch.randn(out_channels, in_channels, 3)\n"
                                        "b = torch.randn(out_ch, in_ch, 5)"))  # which one: neither
    unit = next(u for u in units(CANDIDATE) if u.source.kind == "cuda")
    (edit,) = host_out_count_edits(unit)
    assert edit[2] == "1"
