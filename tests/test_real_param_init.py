"""eval/real_param_init.py: the host side of parameter_init on CUDA answers, on the CPU (kernels never built)."""
from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("real_param_init", REPO / "eval" / "real_param_init.py")
real_param_init = importlib.util.module_from_spec(spec)
spec.loader.exec_module(real_param_init)

REFERENCE = textwrap.dedent('''
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, i, o):
            super().__init__()
            self.gemm = nn.Linear(i, o)
            self.scale = nn.Parameter(torch.randn(o))

        def forward(self, x):
            return self.gemm(x) * self.scale

    def get_inputs():
        return [torch.randn(8, 32)]

    def get_init_inputs():
        return [32, 16]
''')

CANDIDATE = textwrap.dedent('''
    import torch
    import torch.nn as nn
    from torch.utils.cpp_extension import load_inline

    src = """
    #include <torch/extension.h>
    __global__ void gemm_scale(const float* x, const float* w, const float* b, const float* s, float* y,
                               int n, int i, int o) {
        int r = blockIdx.x, c = threadIdx.x;
        if (r < n && c < o) {
            float acc = b[c];
            for (int k = 0; k < i; ++k) acc += x[r * i + k] * w[c * i + k];
            y[r * o + c] = acc * s[c];
        }
    }
    torch::Tensor forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor s) {
        auto y = torch::empty({x.size(0), w.size(0)}, x.options());
        gemm_scale<<<x.size(0), w.size(0)>>>(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
            s.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1), w.size(0));
        return y;
    }
    """
    ext = load_inline(name="gemm_scale", cpp_sources="torch::Tensor forward(torch::Tensor x, torch::Tensor w, "
                      "torch::Tensor b, torch::Tensor s);", cuda_sources=src, functions=["forward"])

    class ModelNew(nn.Module):
        def __init__(self, i, o):
            super().__init__()
            INIT

        def forward(self, x):
            return ext.forward(x, self.weight, self.bias, self.scale)
''')

OWN = ("self.weight = nn.Parameter(torch.randn(o, i))\n        self.bias = nn.Parameter(torch.zeros(o))\n"
       "        self.scale = nn.Parameter(torch.randn(o))")
AS_MODEL = ("lin = nn.Linear(i, o)\n        self.weight = nn.Parameter(lin.weight.detach().clone())\n"
            "        self.bias = nn.Parameter(lin.bias.detach().clone())\n        self.scale = nn.Parameter(torch.randn(o))")


def answer(init: str) -> SimpleNamespace:
    return SimpleNamespace(id="own/level2/1", recorded="fail", recorded_class="numerical_mismatch",
                           reference_src=REFERENCE, candidate_src=CANDIDATE.replace("INIT", init))


def test_own_init_is_found_and_the_fix_makes_every_held_tensor_models(tmp_path):
    row = real_param_init.run_one(answer(OWN), tmp_path, timeout=120)
    assert row["status"] == "ok", row
    assert {d["reference"] for d in row["differing"]} == {"gemm.weight", "gemm.bias", "scale"}
    assert row["fix"] == "right" and row["fixed_differing"] == [] and row["unheld"] == []


def test_tensors_drawn_as_model_draws_them_are_not_a_fault(tmp_path):
    row = real_param_init.run_one(answer(AS_MODEL), tmp_path, timeout=120)
    assert row["status"] == "ok" and row["differing"] == [] and "fix" not in row, row


def test_a_model_tensor_the_answer_never_holds_is_reported(tmp_path):
    dropped = ("self.weight = nn.Parameter(torch.randn(o, i))\n        self.scale = nn.Parameter(torch.randn(o))\n"
               "        self.bias = 0.0")
    row = real_param_init.run_one(answer(dropped), tmp_path, timeout=120)
    assert row["status"] == "ok", row
    assert row["unheld"] == ["gemm.bias"] and row["fix"] == "right", row


STAGED_REFERENCE = textwrap.dedent('''
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        expansion = 2

        def __init__(self, c, out):
            super().__init__()
            self.conv = nn.Conv2d(c, out * Block.expansion, 3, padding=1)
            self.bn = nn.BatchNorm2d(out * Block.expansion)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x)))

    class Model(nn.Module):
        def __init__(self, stages):
            super(Model, self).__init__()
            self.c = 3
            self.stem = nn.Conv2d(3, 3, 1)
            self.body = self._make_stage(Block, 4, stages)

        def _make_stage(self, block, out, n):
            layers = []
            for _ in range(n):
                layers.append(block(self.c, out))
                self.c = out * block.expansion
            return nn.Sequential(*layers)

        def forward(self, x):
            return self.body(self.stem(x))

    def get_inputs():
        return [torch.randn(2, 3, 8, 8)]

    def get_init_inputs():
        return [2]
''')

# ModelNew with a Block of its own (another structure, the same name) and weights drawn its own way.
STAGED_CANDIDATE = textwrap.dedent('''
    import torch
    import torch.nn as nn
    from torch.utils.cpp_extension import load_inline

    ext = load_inline(name="fused_block", cpp_sources="torch::Tensor block(torch::Tensor x, torch::Tensor w, "
                      "torch::Tensor b);", cuda_sources="", functions=["block"])

    class Block(nn.Module):
        def __init__(self, c, out):
            super().__init__()
            self.conv = nn.Conv2d(c, out * 2, 3, padding=1)
            nn.init.xavier_uniform_(self.conv.weight)
            self.bn = nn.BatchNorm2d(out * 2)

        def forward(self, x):
            return ext.block(x, self.conv.weight, self.conv.bias)

    class ModelNew(nn.Module):
        def __init__(self, stages):
            super().__init__()
            self.body = nn.Sequential(*[Block(3 if i == 0 else 8, 4) for i in range(stages)])
            self.stem = nn.Conv2d(3, 3, 1)

        def forward(self, x):
            return self.body(self.stem(x))
''')


def test_the_fix_takes_models_methods_and_the_reference_files_classes_along(tmp_path):
    row = real_param_init.run_one(SimpleNamespace(id="own/level3/1", recorded="fail",
                                                  recorded_class="numerical_mismatch", reference_src=STAGED_REFERENCE,
                                                  candidate_src=STAGED_CANDIDATE), tmp_path, timeout=120)
    assert row["status"] == "ok", row
    assert "body.0.conv.weight" in {d["candidate"] for d in row["differing"]}
    assert row["fix"] == "right" and row["fixed_differing"] == [], row


def test_the_fix_takes_a_helper_function_and_a_constant_along(tmp_path):
    reference = REFERENCE.replace("self.gemm = nn.Linear(i, o)", "self.gemm = make_gemm(i, o)").replace(
        "def get_inputs():", "GAIN = 0.5\n\ndef make_gemm(i, o):\n    lin = nn.Linear(i, o)\n"
        "    nn.init.normal_(lin.weight, std=GAIN)\n    return lin\n\ndef get_inputs():")
    row = real_param_init.run_one(SimpleNamespace(id="own/level2/2", recorded="fail",
                                                  recorded_class="numerical_mismatch", reference_src=reference,
                                                  candidate_src=CANDIDATE.replace("INIT", OWN)), tmp_path, timeout=120)
    assert row["status"] == "ok" and row["fix"] == "right", row


def test_names_a_helper_binds_itself_are_not_taken_for_the_reference_files_constants(tmp_path):
    """A UNet-like reference: module constants `in_channels`/`out_channels` and a helper class whose
    parameters, like Model's own, are named the same. Only the module-level names are renamed."""
    reference = textwrap.dedent('''
        import torch
        import torch.nn as nn

        class Twice(nn.Module):
            def __init__(self, in_channels, out_channels):
                super().__init__()
                self.seq = nn.Sequential(nn.Conv2d(in_channels, out_channels, 3, padding=1),
                                         nn.Conv2d(out_channels, out_channels, 3, padding=1))

            def forward(self, x):
                return self.seq(x)

        class Model(nn.Module):
            def __init__(self, in_channels, out_channels, features):
                super().__init__()
                self.enc = Twice(in_channels, features)
                self.dec = Twice(features, features * SCALE)
                self.head = nn.Conv2d(features * SCALE, out_channels, 1)

            def forward(self, x):
                return self.head(self.dec(self.enc(x)))

        SCALE = 2
        in_channels = 3
        out_channels = 5

        def get_inputs():
            return [torch.randn(1, in_channels, 8, 8)]

        def get_init_inputs():
            return [in_channels, out_channels, 4]
    ''')
    candidate = textwrap.dedent('''
        import torch
        import torch.nn as nn
        from torch.utils.cpp_extension import load_inline

        ext = load_inline(name="unet", cpp_sources="torch::Tensor net(torch::Tensor x);", cuda_sources="",
                          functions=["net"])

        class ModelNew(nn.Module):
            def __init__(self, in_channels, out_channels, features):
                super().__init__()
                self.w = nn.ParameterList([nn.Parameter(torch.randn(features, in_channels, 3, 3)),
                                           nn.Parameter(torch.randn(features)),
                                           nn.Parameter(torch.randn(features, features, 3, 3)),
                                           nn.Parameter(torch.randn(features))])

            def forward(self, x):
                return ext.net(x)
    ''')
    row = real_param_init.run_one(SimpleNamespace(id="own/level3/2", recorded="fail",
                                                  recorded_class="numerical_mismatch", reference_src=reference,
                                                  candidate_src=candidate), tmp_path, timeout=120)
    assert row["status"] == "ok" and row["differing"], row
    assert row["fix"] == "right" and row["unheld"], row  # the decoder and head are not held: another fault
