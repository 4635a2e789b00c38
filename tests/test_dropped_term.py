"""The dropped_term fix on kernels of our own: Model adds a parameter right after a biased layer, the
answer's fused kernel takes the layer's bias alone (the fault of qwencoder level2/95 and level2/2)."""
from __future__ import annotations

import pytest

from debugger.case import case_from_sources
from debugger.evaluate import evaluate, kernelbench_checks, standard_checks
from debugger.recipes.dropped_term import dropped_term_patch, dropped_terms
from tests.conftest import write_case

KERNEL = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_act_kernel(x_ptr, w_ptr, b_ptr, out_ptr, K, N, TANH: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + row * K + ks, mask=ks < K, other=0.0)
        w = tl.load(w_ptr + cols[:, None] * K + ks[None, :], mask=(cols[:, None] < N) & (ks[None, :] < K), other=0.0)
        acc += tl.sum(w * x[None, :], axis=1)
    acc += tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    if TANH:
        e = tl.exp(-2.0 * tl.abs(acc))
        t = (1.0 - e) / (1.0 + e)
        acc = tl.where(acc >= 0, t, -t)
    else:
        acc = tl.maximum(acc, 0.0)
    tl.store(out_ptr + row * N + cols, acc, mask=cols < N)


def linear_act(x, w, b, tanh):
    x = x.contiguous()
    M, K = x.shape
    N = w.shape[0]
    out = torch.empty(M, N, device=x.device, dtype=x.dtype)
    linear_act_kernel[(M, triton.cdiv(N, 16))](x, w, b, out, K, N, TANH=tanh, BLOCK_N=16, BLOCK_K=16)
    return out
'''

# Model: Linear, then its own (o,) term, then ReLU. The answer holds weight and bias only.
ADD_VALUE_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, add_shape):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.add_value = nn.Parameter(torch.randn(add_shape))

    def forward(self, x):
        x = self.matmul(x)
        x = x + self.add_value
        return torch.relu(x)


batch, in_features, out_features = 6, 40, 24
add_shape = (out_features,)


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features, add_shape]
'''

ADD_VALUE_ANSWER = KERNEL + '''

class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, add_shape):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x):
        return linear_act(x, self.weight, self.bias, False)
'''

# Model: Linear, then `x += self.offset` of shape (1, o), then tanh. The answer keeps an nn.Linear module and
# hands a contiguous view of its bias to the kernel; its own attribute `offset` is something else, so the term
# takes another name.
OFFSET_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
        self.offset = nn.Parameter(torch.randn(1, n_out) * 0.5)

    def forward(self, x):
        y = self.fc(x)
        y += self.offset
        return torch.tanh(y)


n_in, n_out = 33, 20


def get_inputs():
    return [torch.randn(5, n_in)]


def get_init_inputs():
    return [n_in, n_out]
'''

OFFSET_ANSWER = KERNEL + '''

class ModelNew(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
        self.offset = 0  # the answer's own bookkeeping, not Model's offset

    def forward(self, x):
        return linear_act(x, self.fc.weight, self.fc.bias.contiguous(), True)
'''


def _verdicts(reference: str, candidate: str):
    return evaluate(case_from_sources(reference, candidate), "cpu",
                    checks=standard_checks()[:3] + kernelbench_checks()[:2], semantics="kernelbench")


@pytest.mark.parametrize("reference, answer, term, bias", [
    (ADD_VALUE_REF, ADD_VALUE_ANSWER, "add_value", "bias"),
    (OFFSET_REF, OFFSET_ANSWER, "offset", "fc.bias"),
], ids=["add_value", "offset_inplace"])
def test_the_dropped_term_is_found_and_the_fix_passes_both_verdicts(reference, answer, term, bias):
    before = _verdicts(reference, answer)
    assert before.verdicts["kernel"]["status"] == "mismatch" and before.verdicts["kernelbench"]["status"] == "mismatch"
    assert term in before.parameter_map["unmatched_reference"]
    found = dropped_terms(reference, before.parameter_map)
    assert [(t.term, t.bias) for t in found] == [(term, bias)]
    patch = dropped_term_patch(answer, reference, before.parameter_map)
    assert patch is not None and patch.recipe == "dropped_term" and patch.bug_class == "operator_misread"
    after = _verdicts(reference, patch.new_src)
    assert after.verdicts["kernel"]["status"] == "pass", after.message
    assert after.verdicts["kernelbench"]["status"] == "pass", after.message
    assert after.parameter_map["unmatched_reference"] == []


def test_a_term_after_an_activation_is_not_folded_into_the_bias():
    """bias + term is what Model computes only where nothing lies between them."""
    reference = ADD_VALUE_REF.replace("x = self.matmul(x)\n        x = x + self.add_value",
                                      "x = torch.sigmoid(self.matmul(x))\n        x = x + self.add_value")
    pm = {"pairs": [{"candidate": "weight", "reference": "matmul.weight", "by": "order", "own_init_diff": 1.0},
                    {"candidate": "bias", "reference": "matmul.bias", "by": "order", "own_init_diff": 1.0}],
          "unmatched_candidate": [], "unmatched_reference": ["add_value"]}
    assert dropped_terms(reference, pm) == []
    assert dropped_term_patch(ADD_VALUE_ANSWER, reference, pm) is None
    # adjacent, but the layer's bias is not one the answer holds: nothing to hand the sum to
    pm_no_bias = dict(pm, pairs=pm["pairs"][:1])
    assert dropped_term_patch(ADD_VALUE_ANSWER, ADD_VALUE_REF, pm_no_bias) is None


def test_kb_repair_restores_the_dropped_term_and_the_gate_accepts(tmp_path, monkeypatch):
    from debugger.case import load_case
    from debugger.diagnose import diagnose
    from debugger.repair import repair

    monkeypatch.setenv("KDEBUG_DATA_DIR", str(tmp_path / "data"))
    case = load_case(write_case(tmp_path / "case", ADD_VALUE_REF, ADD_VALUE_ANSWER))
    diag = diagnose(case, "cpu", experiments=False, probes=False, localise=False)
    misread = next(h for h in diag.hypotheses if h["bug_class"] == "operator_misread")
    assert any("add_value, added right after matmul" in e for e in misread["evidence"])
    result = repair(case, backend="kb", write_files=False, semantics="kernelbench", write_back=False)
    assert result.status == "repaired", result.message
    assert [h["recipe"] for h in result.history if h.get("outcome") == "fixed"][:1] == ["dropped_term"]
    assert result.verdict["verdict"] == "accept"
