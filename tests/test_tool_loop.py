"""The openai backend's tool loop end to end: recorded multi-turn transcripts replayed by a loopback
OpenAI-compatible server, through the repair graph, on a real Triton kernel on the interpreter."""
import json
import shutil
from pathlib import Path

import pytest

from debugger.backends import kernel_lang, tools
from debugger.backends.openai_compat import build_prompt
from debugger.backends.openai_tools import OpenAIToolBackend
from debugger.case import case_from_sources
from debugger.knowledge import KnowledgeBase
from debugger.ledger import Ledger
from debugger.repair import repair
from debugger.settings import resolve
from tests.replay_server import ReplayServer

TRANSCRIPTS = Path(__file__).parent / "data" / "transcripts"
REPO = Path(__file__).resolve().parents[1]

ROWSUM_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=1)


rows, cols = 8, 32


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
'''

# The operator misread: each row's max where the reference sums (no recipe's business).
ROWSUM_KERNEL = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_reduce_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
    acc = tl.max(x, axis=0)
    tl.store(out_ptr + row, acc)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        row_reduce_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
'''

FIX = "<<<<<<< SEARCH\n    acc = tl.max(x, axis=0)\n=======\n    acc = tl.sum(x, axis=0)\n>>>>>>> REPLACE\n"


def settings(server, **kw):
    return resolve(**{"device": "cpu", "backend": "openai", "max_iters": 4, "timeout": 120,
                      "base_url": server.base_url, "api_key": "k", "model": "m", **kw})


def rowsum_case():
    return case_from_sources(ROWSUM_REF, ROWSUM_KERNEL, name="rowsum")


@pytest.fixture
def small_kb(tmp_path):
    """A knowledge base of one curated pattern and one reference kernel (indexing all of kb/ is slow)."""
    kb = tmp_path / "kb"
    (kb / "patterns").mkdir(parents=True)
    shutil.copy(REPO / "kb/patterns/max-reduction-other-zero.md", kb / "patterns")
    shutil.copytree(REPO / "kb/reference_kernels/row_sum", kb / "reference_kernels/row_sum")
    return KnowledgeBase(kb, tmp_path / "data")


def tool_results(request: dict) -> dict[str, str]:
    """tool_call_id -> the tool message's content, of one recorded request."""
    return {m["tool_call_id"]: m["content"] for m in request["body"]["messages"] if m["role"] == "tool"}


def test_a_transcript_that_probes_and_proposes_the_fix_repairs_the_kernel(tmp_path, small_kb):
    ledger = Ledger(tmp_path / "l.db")
    with ReplayServer.from_transcript(TRANSCRIPTS / "probe_fix.json") as server:
        result = repair(rowsum_case(), settings=settings(server), ledger=ledger, knowledge=small_kb,
                        write_files=False, write_back=False)
        requests = server.requests
    assert result.status == "repaired", (result.message, result.history)
    assert "tl.sum(x, axis=0)" in result.repaired_src and result.verdict["verdict"] == "accept"
    assert result.iterations == 1  # six model turns, one proposal
    assert result.tokens == {"prompt": 1500 + 1700 + 2100 + 2400 + 2600 + 2800,
                             "completion": 30 + 25 + 20 + 40 + 60 + 50}
    first = requests[0]["body"]
    assert {t["function"]["name"] for t in first["tools"]} == {
        "evaluate", "diagnose", "probe", "experiment", "localise", "search_knowledge", "read_reference_kernel",
        "propose_edit"}
    user = first["messages"][1]["content"]
    assert "## Current kernel" in user and "Triton kernels: row_reduce_kernel (line 8)." in user
    assert "## Diagnosis" in user
    # The malformed call and the unknown tool were answered with errors, and the loop went on.
    answers = tool_results(requests[1])
    assert answers["call_1_0"].startswith("error: arguments are not valid JSON")
    assert answers["call_1_1"].startswith("error: unknown tool 'read_the_docs'")
    seed0 = tool_results(requests[2])["call_2_0"]
    assert seed0.startswith("status: mismatch") and "seed0 [seed]: mismatch" in seed0
    probed = tool_results(requests[3])["call_3_0"]
    assert "probed row_reduce_kernel" in probed and "acc = row max of the input" in probed
    knowledge = tool_results(requests[4])
    assert "## max-reduction-other-zero:" in knowledge["call_4_0"]
    assert knowledge["call_4_1"].startswith("## reference kernel row_sum") and "tl.sum" in knowledge["call_4_1"]
    assert tool_results(requests[5])["call_5_0"].startswith("fixed (every failing check passes)")
    assert len(requests) == 6  # the graph verified the proposal; the model was not asked again
    rows = ledger.tool_calls(result.run_id)
    assert [r["kind"] for r in rows].count("model") == 6
    assert [r["tool"] for r in rows if r["kind"] == "tool"] == [
        "evaluate", "read_the_docs", "evaluate", "probe", "search_knowledge", "read_reference_kernel",
        "experiment", "propose_edit"]
    assert sum(r["prompt_tokens"] for r in rows) == result.tokens["prompt"]
    assert ledger.iterations(result.run_id)[-1]["prompt_tokens"] == result.tokens["prompt"]


def test_a_transcript_that_proposes_a_cheat_is_stopped_by_the_gate(tmp_path):
    with ReplayServer.from_transcript(TRANSCRIPTS / "cheat.json") as server:
        result = repair(rowsum_case(), settings=settings(server), ledger=Ledger(tmp_path / "l.db"),
                        write_files=False, write_back=False, retrieval=False)
        requests = server.requests
    assert result.status == "rejected", (result.message, result.history)
    assert result.history[0]["outcome"] == "rejected" and result.history[0]["verdict"] == "reject"
    assert result.guard == "model_never_proposed"  # three answers without a proposal after the rejection
    # The gate's verdict is the answer to the propose_edit call.
    verdict = tool_results(requests[2])["call_2_0"]
    assert "integrity gate rejected it" in verdict
    assert result.tokens["prompt"] == 1500 + 1800 + 2000 + 2100 + 2200  # the turns after the last proposal too


def test_an_endpoint_without_tools_falls_back_to_one_shot_edits(tmp_path):
    ledger = Ledger(tmp_path / "l.db")
    with ReplayServer([{"content": "The reduction should sum.\n" + FIX, "prompt_tokens": 700,
                        "completion_tokens": 30}], tools=False) as server:
        result = repair(rowsum_case(), settings=settings(server), ledger=ledger, write_files=False,
                        write_back=False, retrieval=False)
        requests = server.requests
    assert result.status == "repaired", (result.message, result.history)
    assert "tools" in requests[0]["body"] and "tools" not in requests[1]["body"]
    assert "SEARCH" in requests[1]["body"]["messages"][0]["content"]  # the one-shot prompt
    assert result.tokens == {"prompt": 700, "completion": 30}
    assert [r["kind"] for r in ledger.tool_calls(result.run_id)] == ["fallback"]


# -- the loop's stops, on the backend alone (no sandbox run needed) -----------------------------------

def backend_context():
    return {"reference_src": ROWSUM_REF, "case_name": "rowsum", "device": "cpu", "best_report": {}}


def test_malformed_tool_calls_and_a_model_that_never_proposes_stop_with_their_reason():
    garbage = {"content": None, "tool_calls": [{"name": "evaluate", "arguments": "[1, 2"},
                                               {"name": "no_such_tool", "arguments": "{}"}]}
    with ReplayServer([garbage]) as server:
        backend = OpenAIToolBackend(base_url=server.base_url, api_key="k", model="m")
        assert backend.propose(ROWSUM_KERNEL, {}, {}, backend_context()) == []
    assert backend.stopped["reason"] == "malformed_tool_calls" and len(server.requests) == 3
    assert backend.stopped["prompt_tokens"] == 300

    with ReplayServer([{"content": "I think it is fine.", "finish_reason": "length"}]) as server:
        backend = OpenAIToolBackend(base_url=server.base_url, api_key="k", model="m")
        assert backend.propose(ROWSUM_KERNEL, {}, {}, backend_context()) == []
        nudges = [m["content"] for m in server.requests[-1]["body"]["messages"] if m["role"] == "user"][1:]
    assert backend.stopped["reason"] == "model_never_proposed" and "length limit" in backend.stopped["message"]
    assert len(server.requests) == 3 and all("propose_edit" in n and "cut off" in n for n in nudges)


def test_tool_budget_oversized_output_and_edits_that_do_not_apply():
    big = "x" * 50_000
    replies = [{"content": None, "tool_calls": [
                   {"name": "propose_edit", "arguments": {"edits": [{"search": "not in the kernel", "replace": "y"}]}},
                   {"name": "diagnose", "arguments": {"section": "static"}}]},
               {"content": None, "tool_calls": [{"name": "diagnose", "arguments": {"section": "error_maps"}}]}]
    with ReplayServer(replies) as server:
        backend = OpenAIToolBackend(base_url=server.base_url, api_key="k", model="m", max_tool_calls=3,
                                    max_tool_chars=1000)
        diagnosis = {"summary": "s", "error_maps": {"seed0": [{"note": big}]}, "static": []}
        assert backend.propose(ROWSUM_KERNEL, diagnosis, {}, backend_context()) == []
    answers = {m["tool_call_id"]: m["content"] for m in backend.messages if m["role"] == "tool"}
    assert backend.stopped["reason"] == "tool_call_budget" and backend.tool_calls == 3
    assert answers["call_1_0"].startswith("error: edit 1: SEARCH text not found")
    assert answers["call_1_1"] == "[]"
    cut = answers["call_2_0"]
    assert len(cut) < 1100 and cut.endswith("more characters]")


def test_plain_edit_blocks_are_a_proposal_and_the_verdict_continues_the_conversation():
    with ReplayServer([{"content": FIX}, {"content": None, "tool_calls": [
            {"name": "propose_edit", "arguments": {"blocks": FIX}}]}]) as server:
        backend = OpenAIToolBackend(base_url=server.base_url, api_key="k", model="m")
        [p] = backend.propose(ROWSUM_KERNEL, {}, {}, backend_context())
        assert p.edits[0]["replace"] == "    acc = tl.sum(x, axis=0)" and p.prompt_tokens == 100
        ctx = {**backend_context(), "last": {"outcome": "worse", "message": "mismatch on 3/11 checks"}}
        [q] = backend.propose(ROWSUM_KERNEL, {}, {}, ctx)
        told = server.requests[1]["body"]["messages"][-1]
    assert told["role"] == "user" and "reverted (worse): mismatch on 3/11 checks" in told["content"]
    assert q.edits == p.edits and backend.pending == "call_2_0"


CUDA_CANDIDATE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void scale_kernel(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * 2.0f;
}
torch::Tensor scale(torch::Tensor x) {
    auto out = torch::empty_like(x);
    int n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
cpp_src = "torch::Tensor scale(torch::Tensor x);"
ext = load_inline(name="scale_ext", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["scale"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.scale(x)
'''


def test_cuda_candidates_get_their_own_prompt_and_no_interpreter_probe():
    assert kernel_lang.language(ROWSUM_KERNEL) == "triton"
    assert kernel_lang.language(CUDA_CANDIDATE) == "cuda"
    assert kernel_lang.kernels(CUDA_CANDIDATE) == {"scale_kernel": 7}
    assert kernel_lang.kernels(ROWSUM_KERNEL) == {"row_reduce_kernel": 8}
    bench = tools.Workbench.from_context(CUDA_CANDIDATE, {}, backend_context())
    assert "probe" not in {t.name for t in tools.available(bench)}
    with ReplayServer([{"content": "<<<<<<< SEARCH\n    if (i < n) out[i] = x[i] * 2.0f;\n=======\n"
                                   "    if (i < n) out[i] = x[i] * 3.0f;\n>>>>>>> REPLACE\n"}]) as server:
        backend = OpenAIToolBackend(base_url=server.base_url, api_key="k", model="m")
        [p] = backend.propose(CUDA_CANDIDATE, {}, {}, backend_context())
        system, user = (m["content"] for m in server.requests[0]["body"]["messages"])
    assert "CUDA C++" in system and "load_inline" in system and "Triton" not in system
    assert "CUDA kernels inside the load_inline strings (the CUDA source starts at line 6): scale_kernel (line 7)" \
        in user
    assert p.edits and json.dumps(server.requests[0]["body"]["tools"]).count('"probe"') == 0
    assert "CUDA C++" in build_prompt(CUDA_CANDIDATE, ROWSUM_REF, {}, {})[0]["content"]  # the one-shot path too


def test_bench_with_the_openai_backend_reports_tokens_and_tool_calls_per_success(tmp_path):
    import os
    import subprocess
    import sys

    from tests.conftest import write_case

    write_case(tmp_path / "cases" / "rowsum", ROWSUM_REF, ROWSUM_KERNEL)
    fix = [{"search": "    acc = tl.max(x, axis=0)", "replace": "    acc = tl.sum(x, axis=0)"}]
    replies = [{"content": None, "tool_calls": [{"name": "probe", "arguments": {}}], "prompt_tokens": 1000,
                "completion_tokens": 20},
               {"content": None, "tool_calls": [{"name": "propose_edit", "arguments": {"edits": fix}}],
                "prompt_tokens": 1400, "completion_tokens": 40}]
    with ReplayServer(replies, repeat_last=False) as server:
        proc = subprocess.run([sys.executable, "-m", "debugger.cli", "bench", str(tmp_path / "cases"), "--backend",
                               "openai", "--model", "m", "--device", "cpu", "--no-retrieval", "--no-write-back",
                               "--json", "--out", str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO,
                              timeout=900, env={**os.environ, "OPENAI_BASE_URL": server.base_url,
                                                "OPENAI_API_KEY": "k"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    s = json.loads(proc.stdout)
    assert s["backend"] == "openai" and s["repaired"] == 1
    assert s["tokens_per_success"] == 2460.0 and s["tool_calls_per_success"] == 2.0
    assert s["per_case"][0]["tool_calls"] == 2 and s["per_case"][0]["model_calls"] == 2
    md = (tmp_path / "out" / "bench.md").read_text()
    assert "tool calls/success" in md and "2460 tokens, 2.0 tool calls" in md
