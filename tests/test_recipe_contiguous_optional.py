"""contiguous_inputs leaves an optional tensor (`bias=None`) optional: it is made contiguous only when
given, so the repaired wrapper still runs without it (TritonBench's elu_linear repair called
bias.contiguous() unconditionally)."""
from __future__ import annotations

import os
import subprocess
import sys

from debugger.recipes import RECIPES

SRC = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_bias_kernel(x_ptr, b_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs % cols, mask=mask)
    tl.store(out_ptr + offs, x + b, mask=mask)


def add_bias(x, bias=None):
    if bias is None:
        bias = torch.zeros(x.shape[-1], dtype=x.dtype)
    out = torch.empty(x.shape, dtype=x.dtype)
    n = x.numel()
    add_bias_kernel[(triton.cdiv(n, 64),)](x, bias, out, n, x.shape[-1], BLOCK=64)
    return out
'''


CHECK = """
import importlib.util, sys
import torch


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


before, after = load(sys.argv[1], "before"), load(sys.argv[2], "after")
x = torch.randn(8, 16).t()  # a transposed view: the flat kernel misreads it before the fix
b = torch.randn(8)
assert not torch.allclose(before.add_bias(x, b), x + b)
assert torch.allclose(after.add_bias(x, b), x + b)
assert torch.allclose(after.add_bias(x), x)  # and it still runs without the bias
print("ok")
"""


def test_optional_bias_is_made_contiguous_only_when_given(tmp_path):
    patches = [p for p in RECIPES["contiguous_inputs"].propose(SRC, {"bug_class": "stride_layout"}) if p]
    assert patches
    new = patches[0].new_src
    assert "bias = bias.contiguous() if bias is not None else None" in new
    assert "x = x.contiguous()\n" in new
    (tmp_path / "before.py").write_text(SRC)
    (tmp_path / "after.py").write_text(new)
    (tmp_path / "check.py").write_text(CHECK)
    out = subprocess.run([sys.executable, str(tmp_path / "check.py"), str(tmp_path / "before.py"),
                          str(tmp_path / "after.py")], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TRITON_INTERPRET": "1"})  # the interpreter in its own process
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
