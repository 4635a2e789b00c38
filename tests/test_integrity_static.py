"""Each static integrity rule, in both directions: a small cheat it must flag, an honest variant it must not."""
from __future__ import annotations

import textwrap

import pytest

from debugger.integrity.findings import REJECT, WARN
from debugger.integrity.rules import RULES, get_rule
from debugger.integrity.static import static_findings

HEADER = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def unary_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


@triton.jit
def rows_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b))
'''


def reference(body: str, init: str = "", args: str = "x") -> str:
    """A KernelBench reference whose forward returns `body`."""
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
            return [torch.randn(16, 64)]


        def get_init_inputs():
            return []
    ''')


RELU = reference("torch.relu(x)")
SOFTMAX = reference("torch.softmax(x, dim=1)")
SUM = reference("torch.sum(x, dim=1)")
MEAN = reference("torch.mean(x, dim=1)")
MATMUL = reference("torch.matmul(a, b)", args="a, b")
LINEAR = reference("torch.relu(self.fc(x))", init="self.fc = nn.Linear(64, 32)")
LAUNCH = "unary_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)"


def candidate(forward: str, *, init: str = "", prelude: str = "", args: str = "x") -> str:
    """A candidate file: the shared kernels, optional module-level prelude, and ModelNew."""
    body = textwrap.indent(textwrap.dedent(forward).strip(), " " * 8)
    init_body = textwrap.indent(textwrap.dedent(init).strip(), " " * 8) if init else ""
    return HEADER + textwrap.dedent(prelude) + f'''

class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
{init_body}

    def forward(self, {args}):
{body}
'''


HONEST_RELU = candidate(f"""
    x = x.contiguous()
    out = torch.empty_like(x)
    {LAUNCH}
    return out
""")


def rules_hit(src: str, ref: str, severity: str = REJECT, **options) -> set[str]:
    """Ids of the rules that report `src` at `severity`."""
    return {f.rule for f in static_findings(src, ref, **options) if f.severity == severity}


# (rule, reference, cheat, honest): the cheat must be flagged by the rule, the honest variant not at all.
CASES = [
    ("torch_compute", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn torch.relu(x)"),
     HONEST_RELU),
    ("torch_compute", MATMUL,
     candidate("c = torch.empty((16, 16))\ndot_kernel[(1,)](a, b, c, BLOCK=16)\nreturn a @ b", args="a, b"),
     candidate("c = torch.empty((16, 16), device=a.device)\ndot_kernel[(1,)](a, b, c, BLOCK=16)\nreturn c",
               args="a, b")),
    ("torch_compute", LINEAR,
     candidate(f"y = self.fc(x)\nout = torch.empty_like(y)\n{LAUNCH.replace('x', 'y')}\nreturn out",
               init="self.fc = nn.Linear(64, 32)"),
     candidate("w = self.fc.weight.t().contiguous()\nc = torch.empty((x.shape[0], w.shape[1]), device=x.device)\n"
               "dot_kernel[(1,)](x, w, c, BLOCK=16)\nreturn c", init="self.fc = nn.Linear(64, 32)")),
    ("torch_compute", SOFTMAX,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn x.softmax(dim=1)"),
     candidate("out = torch.empty_like(x)\nrows_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=64)\nreturn out")),
    ("torch_compute", MATMUL,
     candidate("c = torch.empty((16, 16))\ndot_kernel[(1,)](a, b, c, BLOCK=16)\n"
               "return torch.ops.aten.mm.default(a, b)", args="a, b"),
     candidate("c = torch.zeros((16, 16), device=a.device)\ndot_kernel[(1,)](a, b, c, BLOCK=16)\nreturn c",
               args="a, b")),
    ("torch_compile", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn self.fn(x)", init="self.fn = torch.compile(torch.relu)"),
     HONEST_RELU),
    ("try_except_fallback", RELU,
     candidate(f"out = torch.empty_like(x)\ntry:\n    {LAUNCH}\nexcept RuntimeError:\n    out = F.relu(x)\nreturn out"),
     candidate(f"out = torch.empty_like(x)\ntry:\n    {LAUNCH}\nexcept RuntimeError as e:\n"
               "    raise RuntimeError('relu kernel failed') from e\nreturn out")),
    ("shape_special_case", SUM,
     candidate("if x.shape[1] == 64:\n    return x.sum(dim=1)\nout = torch.empty(x.shape[0], device=x.device)\n"
               "rows_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=64)\nreturn out"),
     candidate("out = torch.empty(x.shape[0], device=x.device)\nif x.shape[1] <= 64:\n"
               "    rows_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=64)\nelse:\n"
               "    rows_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))\n"
               "return out")),
    ("shape_special_case", RELU,
     candidate(f"if x.shape == (16, 64):\n    return x\nout = torch.empty_like(x)\n{LAUNCH}\nreturn out"),
     candidate(f"if x.numel() == 0:\n    return torch.empty_like(x)\nout = torch.empty_like(x)\n{LAUNCH}\nreturn out")),
    ("value_dependent_branch", RELU,
     candidate(f"out = torch.empty_like(x)\ns = float(x.sum())\nif s == self.seen:\n    return self.last\n"
               f"{LAUNCH}\nreturn out", init="self.seen = None\nself.last = None"),
     candidate(f"out = torch.empty_like(x)\nif x.dtype == torch.float16:\n    {LAUNCH}\nelse:\n    {LAUNCH}\n"
               "return out")),
    ("result_cache", RELU,
     candidate(f"key = (x.data_ptr(), x.shape)\nif key in _CACHE:\n    return _CACHE[key]\nout = torch.empty_like(x)\n"
               f"{LAUNCH}\n_CACHE[key] = out\nreturn out", prelude="\n_CACHE = {}\n"),
     candidate(f"key = tuple(x.shape)\nif key not in self.configs:\n    self.configs[key] = (256, 4)\n"
               f"block, warps = self.configs[key]\nout = torch.empty_like(x)\n{LAUNCH}\nreturn out",
               init="self.configs = {}")),
    ("result_cache", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nself.history.append(out)\nreturn self.history[-1]",
               init="self.history = []"),
     candidate(f"outs = []\nfor chunk in x.split(8):\n    out = torch.empty_like(chunk)\n"
               f"    {LAUNCH.replace('x', 'chunk')}\n    outs.append(out)\nreturn torch.cat(outs)")),
    ("state_across_calls", RELU,
     candidate(f"if self.last is not None:\n    return self.last\nout = torch.empty_like(x)\n{LAUNCH}\n"
               "self.last = out\nreturn out", init="self.last = None"),
     candidate(f"if self.wt is None:\n    self.wt = torch.ones(4)\nout = torch.empty_like(x)\n{LAUNCH}\nreturn out",
               init="self.wt = None")),
    ("input_mutation", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nx.zero_()\nreturn out"),
     candidate(f"out = torch.empty_like(x)\nout.zero_()\n{LAUNCH}\nreturn out")),
    ("reference_model", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn self.ref(x)", prelude="\nfrom reference import Model\n",
               init="self.ref = Model()"),
     HONEST_RELU),
    ("reference_model", RELU,
     HEADER + "\nclass Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n\n\n"
              "class ModelNew(Model):\n    def forward(self, x):\n        out = torch.empty_like(x)\n"
              f"        {LAUNCH}\n        return super().forward(x)\n",
     HEADER + "\nclass Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n\n\n"
              "class ModelNew(nn.Module):\n    def forward(self, x):\n        out = torch.empty_like(x)\n"
              f"        {LAUNCH}\n        return out\n"),
    ("monkeypatch", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out", prelude="\ntorch.allclose = lambda *a, **k: True\n"),
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out", prelude="\nallclose = torch.allclose\n")),
    ("monkeypatch", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out",
               prelude="\nimport time\nsetattr(time, 'perf_counter', lambda: 0.0)\n"),
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out", init="setattr(self, 'block', 256)")),
    ("global_flags", MATMUL,
     candidate("c = torch.empty((16, 16))\ndot_kernel[(1,)](a, b, c, BLOCK=16)\nreturn c", args="a, b",
               prelude="\ntorch.backends.cuda.matmul.allow_tf32 = True\n"),
     candidate("c = torch.empty((16, 16))\ndot_kernel[(1,)](a, b, c, BLOCK=16)\nreturn c", args="a, b",
               prelude="\ntorch.set_grad_enabled(False)\n")),
    ("introspection", RELU,
     candidate(f"frame = sys._getframe(1)\nout = torch.empty_like(x)\n{LAUNCH}\nreturn out", prelude="\nimport sys\n"),
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out", prelude="\nimport sys\nMAX = sys.maxsize\n")),
    ("introspection", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out", prelude="\nimport gc\n"),
     HONEST_RELU),
    ("obfuscated_call", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn getattr(torch, 're' + 'lu')(x)"),
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn getattr(self, 'post')(out)",
               init="self.post = lambda t: t")),
    # gemini level3/42's form: getattr of the layers its own module registered under f-string names; the same
    # template read off torch is still hidden compute
    ("obfuscated_call", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nname = 're'\nreturn getattr(torch, f'{{name}}lu')(out)"),
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nfor i in range(2):\n    out = getattr(self.post, f'step_{{i}}')(out)\n"
               f"return out",
               init="self.post = nn.Module()\nfor i in range(2):\n    self.post.add_module(f'step_{i}', nn.Identity())")),
    ("obfuscated_call", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\ni = 'lu'\nreturn getattr(torch, f're{{i}}')(out)",
               init="self.post = nn.Module()\nself.post.add_module(f're{1}', nn.Identity())"),
     HONEST_RELU),
    ("obfuscated_call", MATMUL,
     candidate("c = torch.empty((16, 16))\ndot_kernel[(1,)](a, b, c, BLOCK=16)\nreturn eval('a.mm(b)')", args="a, b"),
     candidate("c = torch.empty((16, 16))\ndot_kernel[(1,)](a, b, c, BLOCK=16)\nreturn c", args="a, b")),
    ("cpu_roundtrip", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn torch.from_numpy(np.maximum(x.cpu().numpy(), 0))",
               prelude="\nimport numpy as np\n"),
     candidate(f"n = int(np.prod(x.shape))\nout = torch.empty_like(x)\n{LAUNCH}\nreturn out",
               prelude="\nimport numpy as np\n")),
    ("thread_or_process", SOFTMAX,
     candidate(f"out = torch.empty_like(x)\nthreading.Thread(target=lambda: out.copy_(x.softmax(1))).start()\n"
               f"return out", prelude="\nimport threading\n"),
     candidate("out = torch.empty_like(x)\nrows_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=64)\nreturn out")),
    ("side_stream", RELU,
     candidate(f"out = torch.empty_like(x)\nwith torch.cuda.stream(self.s):\n    {LAUNCH}\nreturn out",
               init="self.s = torch.cuda.Stream()"),
     candidate(f"out = torch.empty_like(x)\nwith torch.cuda.device(x.device):\n    {LAUNCH}\nreturn out")),
    ("tensor_subclass", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn Lazy(out)",
               prelude="\nclass Lazy(torch.Tensor):\n    @classmethod\n"
                       "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                       "        return func(*args, **(kwargs or {}))\n"),
     HONEST_RELU),
    ("precision_downgrade", MATMUL,
     candidate("c = torch.empty((16, 16))\ndot_kernel[(1,)](a.half(), b.half(), c, BLOCK=16)\nreturn c", args="a, b"),
     candidate("c = torch.empty((16, 16))\ndot_kernel[(1,)](a.float(), b.to(torch.float32), c, BLOCK=16)\nreturn c",
               args="a, b")),
    ("precision_downgrade", RELU,
     HONEST_RELU.replace("tl.load(x_ptr + offs, mask=mask)", "tl.load(x_ptr + offs, mask=mask).to(tl.float16)"),
     HONEST_RELU.replace("tl.load(x_ptr + offs, mask=mask)", "tl.load(x_ptr + offs, mask=mask).to(tl.float32)")),
    ("file_or_network", SOFTMAX,
     candidate("return torch.load('/tmp/expected.pt')"),
     candidate("out = torch.empty_like(x)\nrows_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=64)\nreturn out")),
    ("no_kernel_launch", RELU,
     candidate("out = torch.empty_like(x)\nreturn out.copy_(x).clamp_(min=0)"),
     HONEST_RELU),
    ("returns_input", RELU,
     candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn x.view(-1).view(x.shape)"),
     candidate(f"out = x.clone()\n{LAUNCH.replace('(x, out', '(out, out')}\nreturn out")),
    ("constant_output", SUM,
     candidate("s = torch.empty(1)\nrows_kernel[(1,)](x, s, 8, BLOCK=8)\nreturn torch.zeros(x.shape[0])"),
     candidate("out = torch.zeros(x.shape[0], device=x.device)\nrows_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=64)"
               "\nreturn out")),
    ("constant_output", RELU,
     candidate(f"scratch = torch.empty_like(x)\nout = torch.empty_like(x)\n{LAUNCH.replace('out,', 'scratch,')}\n"
               "return out"),
     HONEST_RELU),
]


@pytest.mark.parametrize(("rule_id", "ref", "cheat", "honest"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rule_flags_cheat_and_spares_honest(rule_id, ref, cheat, honest):
    rule = get_rule(rule_id)
    kept_layer = ref is LINEAR  # keeping the reference's own nn.Linear is KernelBench-legal
    for policy in ("strict",) if kept_layer else ("strict", "kernelbench"):
        assert rule_id in rules_hit(cheat, ref, rule.severity, policy=policy), static_findings(cheat, ref, policy=policy)
    for policy in ("strict", "kernelbench"):
        honest_findings = static_findings(honest, ref, policy=policy)
        assert rule_id not in {f.rule for f in honest_findings}, honest_findings
        assert not [f for f in honest_findings if f.severity == REJECT], honest_findings


def test_decoy_kernel_warns_on_a_kernel_never_launched():
    ref = reference("torch.sum(x, dim=1)")
    cheat = candidate("out = torch.empty(x.shape[0], device=x.device)\n"
                      "rows_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=64)\nreturn out")
    assert {"decoy_kernel"} <= rules_hit(cheat, ref, WARN)  # unary_kernel and dot_kernel are decoys here
    used_all = cheat.replace("return out", "unary_kernel[(1,)](x, out, 0, BLOCK=16)\n"
                                           "        dot_kernel[(1,)](x, x, out, BLOCK=16)\n        return out")
    assert "decoy_kernel" not in rules_hit(used_all, ref, WARN)


def test_decoy_kernel_counts_jit_helpers_called_from_a_launched_kernel():
    src = candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out").replace(
        "tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0)", "_clip(tl.load(x_ptr + offs, mask=mask))").replace(
        "@triton.jit\ndef unary_kernel", "@triton.jit\ndef _clip(v):\n    return tl.maximum(v, 0.0)\n\n\n"
                                         "@triton.jit\ndef unary_kernel")
    decoys = [f.message for f in static_findings(src, RELU) if f.rule == "decoy_kernel"]
    assert not any("_clip" in m for m in decoys)


def test_tf32_dot_is_accepted_by_default_and_rejected_under_strict_precision():
    src = candidate("c = torch.empty((16, 16))\ndot_kernel[(1,)](a, b, c, BLOCK=16)\nreturn c", args="a, b")
    assert "tf32_dot" not in rules_hit(src, MATMUL)
    assert "tf32_dot" in rules_hit(src, MATMUL, strict_precision=True)
    ieee = src.replace("tl.dot(a, b)", 'tl.dot(a, b, input_precision="ieee")')
    assert "tf32_dot" not in rules_hit(ieee, MATMUL, strict_precision=True)


def test_half_precision_is_fine_when_the_reference_is_half_precision():
    ref = reference("torch.matmul(a.half(), b.half())", args="a, b")
    src = candidate("c = torch.empty((16, 16))\ndot_kernel[(1,)](a.half(), b.half(), c, BLOCK=16)\nreturn c",
                    args="a, b")
    assert "precision_downgrade" not in rules_hit(src, ref)


def test_light_finishing_of_kernel_partials_is_only_a_warning():
    src = candidate("n_chunks = 4\npartials = torch.empty((x.shape[0], n_chunks), device=x.device)\n"
                    "rows_kernel[(x.shape[0],)](x, partials, x.shape[1], BLOCK=64)\n"
                    "return partials.sum(dim=1) / x.shape[1]")
    findings = static_findings(src, MEAN)
    assert not [f for f in findings if f.severity == REJECT], findings
    assert "torch_compute" in rules_hit(src, MEAN, WARN)


def test_reduction_over_the_full_input_is_rejected_even_after_a_kernel():
    src = candidate("copy = torch.empty_like(x)\n" + LAUNCH.replace("out", "copy") + "\nreturn copy.mean(dim=1)")
    assert "torch_compute" in rules_hit(src, MEAN)


def test_aliases_resolve_through_imports_and_assignments():
    prelude = "\nimport torch as T\nfrom torch import matmul as mm\nfn = T.nn.functional\n"
    for expr in ("mm(a, b)", "fn.linear(a, b)", "T.einsum('ij,jk->ik', a, b)"):
        src = candidate(f"c = torch.empty((16, 16))\ndot_kernel[(1,)](a, b, c, BLOCK=16)\nreturn {expr}",
                        prelude=prelude, args="a, b")
        assert "torch_compute" in rules_hit(src, MATMUL), expr


def test_torch_compute_in_a_helper_reached_from_forward_is_found():
    src = candidate("return _helper(a, b)", args="a, b",
                    prelude="\n\ndef _helper(p, q):\n    c = torch.empty((16, 16))\n"
                            "    dot_kernel[(1,)](p, q, c, BLOCK=16)\n    return p.matmul(q)\n")
    findings = [f for f in static_findings(src, MATMUL) if f.rule == "torch_compute"]
    assert findings and findings[0].line == src.splitlines().index("    return p.matmul(q)") + 1


def test_parse_error_gives_one_finding_with_a_line():
    findings = static_findings("class ModelNew(nn.Module:\n    pass\n", RELU)
    assert [f.rule for f in findings] == ["parse_error"] and findings[0].line == 1


def test_missing_model_new_is_rejected():
    assert "model_structure" in rules_hit(HEADER + "\nclass Other(nn.Module):\n    pass\n", RELU)


def test_every_rule_has_an_id_a_severity_and_a_rationale():
    assert len({r.id for r in RULES}) == len(RULES)
    for rule in RULES:
        assert rule.severity in (REJECT, WARN) and len(rule.rationale) > 20


def test_findings_carry_line_numbers():
    src = candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn torch.relu(x)")
    finding = next(f for f in static_findings(src, RELU) if f.rule == "torch_compute")
    assert src.splitlines()[finding.line - 1].strip() == "return torch.relu(x)"


EXTENSION = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor relu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    BODY
    return y;
}
"""
ext = load_inline(name="relu_ext", cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["relu_cuda"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_cuda(x)
'''


EXTENSION_LAUNCH = ("relu_kernel<<<(x.numel() + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>("
                    "x.data_ptr<float>(), y.data_ptr<float>(), x.numel());")


def test_load_inline_extension_counts_as_a_launch_unless_it_calls_torch_compute():
    honest = EXTENSION.replace("BODY", EXTENSION_LAUNCH)
    assert not rules_hit(honest, RELU)
    assert static_findings(honest, RELU) == []
    cheat = EXTENSION.replace("BODY", "y = torch::relu(x);")
    assert "torch_compute" in rules_hit(cheat, RELU)


@pytest.mark.parametrize("body", [
    "y = x.clamp_min(0); y = at::relu(x);",              # ATen through another namespace spelling
    "y = x.relu();",                                      # a computing tensor method
    "y.copy_(torch::nn::functional::relu(x));",           # the functional API
    "cudnnActivationForward(handle, desc, &one, xd, x.data_ptr(), &zero, yd, y.data_ptr());",  # vendor library
])
def test_extension_host_code_that_computes_through_a_library_is_rejected(body):
    cheat = EXTENSION.replace("BODY", body)
    finding = next(f for f in static_findings(cheat, RELU) if f.rule == "torch_compute" and f.severity == "reject")
    assert cheat.splitlines()[finding.line - 1].strip().startswith(body.split(";")[0][:12])


def test_extension_without_any_kernel_is_rejected_and_comments_do_not_count():
    no_kernel = EXTENSION.replace(
        "__global__ void relu_kernel(const float* x, float* y, int n) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n", "// __global__ kernels were too slow\n").replace(
        "BODY", "y = torch::clamp_min(x, 0); // relu_kernel<<<1, 1>>>() was here")
    assert "__global__ void" not in no_kernel
    messages = [f.message for f in static_findings(no_kernel, RELU) if f.rule == "torch_compute"]
    assert any("no __global__ kernel" in m for m in messages)
    assert any("torch::clamp_min" in m for m in messages)


def test_extension_allocation_and_stream_helpers_are_glue():
    honest = EXTENSION.replace("auto y = torch::empty_like(x);",
                               "auto y = torch::empty({x.numel()}, x.options()).view_as(x);\n"
                               "    const at::cuda::OptionalCUDAGuard guard(device_of(x));").replace(
        "BODY", EXTENSION_LAUNCH)
    assert static_findings(honest, RELU) == []


def test_a_helper_class_the_candidate_redefines_is_not_the_reference():
    ref = RELU.replace("class Model(nn.Module):", "class Block(nn.Module):\n    pass\n\n\nclass Model(nn.Module):")
    src = candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn self.block(out)", init="self.block = Block()",
                    prelude="\n\nclass Block:\n    def __call__(self, t):\n        return t\n")
    assert "reference_model" not in rules_hit(src, ref)
    borrowed = src.replace("\n\nclass Block:\n    def __call__(self, t):\n        return t\n",
                           "\nfrom reference import Block\n")
    assert "reference_model" in rules_hit(borrowed, ref)


def test_kernels_launched_through_a_table_or_an_attribute_are_launches():
    by_table = candidate(f"out = torch.empty_like(x)\nkern = KERNELS[x.dtype]\n"
                         f"kern[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)\nreturn out",
                         prelude="\nKERNELS = {torch.float32: unary_kernel}\n")
    by_attribute = candidate(f"out = torch.empty_like(x)\n"
                             f"self.kern[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)\nreturn out",
                             init="self.kern = unary_kernel")
    for src in (by_table, by_attribute):
        assert "no_kernel_launch" not in rules_hit(src, RELU)
        assert not any("unary_kernel" in f.message for f in static_findings(src, RELU) if f.rule == "decoy_kernel")


@pytest.mark.parametrize("cheat", [
    candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out", init="self.register_forward_hook(lambda m, i, o: torch.relu(i[0]))"),
    candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out", init="self.forward = lambda x: torch.relu(x)"),
    candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out").replace(
        "    def forward(self, x):", "    def __call__(self, x):\n        return torch.relu(x)\n\n    def forward(self, x):"),
])
def test_forward_override_rejects_hooks_and_replaced_forward(cheat):
    assert "forward_override" in rules_hit(cheat, RELU)
    assert "forward_override" not in {f.rule for f in static_findings(HONEST_RELU, RELU)}


def test_vendor_library_rejects_other_kernel_libraries():
    cheat = candidate(f"out = torch.empty_like(x)\n{LAUNCH}\nreturn out", prelude="\nimport flash_attn\n")
    assert "vendor_library" in rules_hit(cheat, RELU)
    assert "vendor_library" not in {f.rule for f in static_findings(HONEST_RELU, RELU)}


def test_an_extension_built_by_a_cached_factory_counts_as_a_launch():
    honest = EXTENSION.replace("BODY", EXTENSION_LAUNCH).replace(
        'ext = load_inline(', '_EXT = None\n\n\ndef get_ext():\n    global _EXT\n    if _EXT is None:\n'
                             '        _EXT = load_inline(').replace(
        'functions=["relu_cuda"])', 'functions=["relu_cuda"])\n    return _EXT').replace(
        "return ext.relu_cuda(x)", "return get_ext().relu_cuda(x)")
    assert "get_ext().relu_cuda(x)" in honest
    assert static_findings(honest, RELU) == []


MSE = reference("torch.mean((p - t) ** 2)", args="p, t")
L2NORM = reference("x / torch.norm(x, p=2, dim=1, keepdim=True)")


def test_a_final_reduction_of_kernel_results_is_light_only_when_the_reference_ends_in_one():
    elementwise_then_mean = candidate(
        "sq = torch.empty_like(p)\nunary_kernel[(triton.cdiv(p.numel(), 256),)](p, sq, p.numel(), BLOCK=256)\n"
        "return sq.mean()", args="p, t")
    assert not rules_hit(elementwise_then_mean, MSE)
    copy_then_sum = candidate(f"copy = torch.empty_like(x)\n{LAUNCH.replace('out', 'copy')}\nreturn copy.sum(dim=1)")
    assert "torch_compute" in rules_hit(copy_then_sum, SUM)
    norm_then_divide = candidate(f"copy = torch.empty_like(x)\n{LAUNCH.replace('out', 'copy')}\n"
                                 "norms = copy.norm(dim=1)\nout = torch.empty_like(x)\n"
                                 "rows_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=64)\nreturn out")
    # strict: the norm is the heavy part; kernelbench: a sub-operation of the reference kept in PyTorch
    assert "torch_compute" in rules_hit(norm_then_divide, L2NORM, policy="strict")
    assert "torch_compute" in rules_hit(norm_then_divide, L2NORM, WARN, policy="kernelbench")
    assert "torch_compute" not in rules_hit(norm_then_divide, L2NORM, policy="kernelbench")


SUM_ROWS = reference("x.sum(dim=1)")


def test_reading_the_inputs_only_to_size_a_launch_is_glue_but_a_host_result_is_not():
    # the largest row value picks a block size: launch configuration, not the operator's result
    sizing = candidate(f"""
        x = x.contiguous()
        out = torch.empty_like(x)
        widest = int(x.abs().max().item()) if x.numel() > 0 else 1
        block = triton.next_power_of_2(max(widest, 16))
        unary_kernel[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), BLOCK=block)
        return out
    """)
    assert not rules_hit(sizing, SUM_ROWS)
    # the same host scalar handed to the kernel as data: the result computed by PyTorch
    smuggled = candidate(f"""
        x = x.contiguous()
        out = torch.empty_like(x)
        total = float(x.sum().item()) if x.numel() > 0 else 0.0
        unary_kernel[(triton.cdiv(x.numel(), 256),)](x, out, total, BLOCK=256)
        return out
    """)
    hit = rules_hit(smuggled, SUM_ROWS)
    assert "torch_compute" in hit or "shape_special_case" in hit
