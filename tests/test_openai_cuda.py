"""The openai backend on CUDA candidates: recorded CUDA replies replayed by the loopback server
(tests/replay_server.py), edits applied inside the load_inline strings, malformed replies ending with
their reason, cheats refused by the gate's static rules, and prompts that carry the CUDA facts, the host
wrapper, compute-sanitizer's findings and CUDA patterns. The kernels are the tests' own; nothing here
compiles CUDA except the one GPU test."""
import ast
import json
import shutil
from pathlib import Path

import pytest

from debugger import lang
from debugger.backends import kernel_lang, tools
from debugger.backends.edits import apply_edits
from debugger.backends.openai_compat import OpenAIBackend, build_prompt
from debugger.backends.openai_tools import OpenAIToolBackend
from debugger.case import Case
from debugger.diagnose import Diagnosis
from debugger.integrity.gate import check
from debugger.lang.cuda.sources import find_sources
from tests.replay_server import ReplayServer

REPO = Path(__file__).resolve().parents[1]

SHIFT_REF = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x + 1.0


n = 4099  # no multiple of 256; the gate's hidden shapes vary it


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
'''

# Two faults: an off-by-one bounds check (thread n writes past the end) and a floor-division grid (the
# last 4099 % 256 elements are never launched and keep torch::zeros_like's zeros).
SHIFT = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>

__global__ void shift_kernel(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        out[i] = x[i] + 1.0f;
    }
}

torch::Tensor shift(torch::Tensor x) {
    auto out = torch::zeros_like(x);
    int n = x.numel();
    shift_kernel<<<n / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
cpp_src = "torch::Tensor shift(torch::Tensor x);"
ext = load_inline(name="kd_openai_cuda_shift", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["shift"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.shift(x.contiguous())
'''

# An index divided in place while decoding the channel, then used as the store offset.
CHANNEL = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>

__global__ void channel_bias_kernel(const float* x, const float* b, float* y, int C, int HW, int total) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    idx /= HW;
    int c = idx % C;
    y[idx] = x[idx] + b[c];
}

torch::Tensor channel_bias(torch::Tensor x, torch::Tensor b) {
    auto y = torch::empty_like(x);
    int total = x.numel();
    int C = x.size(1);
    int HW = x.size(2) * x.size(3);
    channel_bias_kernel<<<(total + 127) / 128, 128>>>(x.data_ptr<float>(), b.data_ptr<float>(),
                                                    y.data_ptr<float>(), C, HW, total);
    return y;
}
"""
ext = load_inline(name="kd_openai_cuda_channel", cpp_sources="torch::Tensor channel_bias(torch::Tensor x, torch::Tensor b);",
                  cuda_sources=source, functions=["channel_bias"])


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(channels))

    def forward(self, x):
        return ext.channel_bias(x.contiguous(), self.bias)
'''

BOUNDS_FIX = {"search": "    if (i <= n) {", "replace": "    if (i < n) {"}
GRID_FIX = {"search": "    shift_kernel<<<n / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);",
            "replace": "    int blocks = (n + 255) / 256;  // ceil: the tail gets a block\n"
                       "    shift_kernel<<<blocks, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);"}


def line_of(src: str, needle: str) -> int:
    return next(n for n, text in enumerate(src.split("\n"), 1) if needle in text)


def context(**kw):
    return {"reference_src": SHIFT_REF, "case_name": "shift", "device": "cpu", "best_report": {}, **kw}


def tool_backend(server, **kw):
    return OpenAIToolBackend(base_url=server.base_url, api_key="k", model="m", backoff=0.01, **kw)


def propose_call(edits, explanation="the bounds check"):
    return {"content": None, "tool_calls": [{"name": "propose_edit",
                                             "arguments": {"edits": edits, "explanation": explanation}}]}


def blocks(*edits) -> str:
    return "".join(f"<<<<<<< SEARCH\n{e['search']}\n=======\n{e['replace']}\n>>>>>>> REPLACE\n" for e in edits)


# -- 1a: a recorded CUDA fix becomes a proposal that edits the string and nothing else ------------------

def test_a_propose_edit_inside_the_cuda_string_changes_only_that_line():
    assert kernel_lang.language(SHIFT) == "cuda" and kernel_lang.kernels(SHIFT) == {"shift_kernel": 8}
    with ReplayServer([propose_call([BOUNDS_FIX])]) as server:
        backend = tool_backend(server)
        [p] = backend.propose(SHIFT, {}, {}, context())
    assert p.origin == "model" and p.edits == [BOUNDS_FIX] and "the bounds check" in p.description
    assert backend.pending == "call_1_0" and backend.stopped is None
    new, why = apply_edits(SHIFT, p.edits)
    assert why == "" and new == SHIFT.replace("    if (i <= n) {", "    if (i < n) {", 1)
    before, after = SHIFT.split("\n"), new.split("\n")
    changed = [n for n, (a, b) in enumerate(zip(before, after), 1) if a != b]
    assert len(before) == len(after) and changed == [10]  # the rest byte for byte
    ast.parse(new)
    [cuda] = [s for s in find_sources(new) if s.kind == "cuda"]
    assert "if (i < n) {" in cuda.text and "if (i <= n)" not in cuda.text  # the fix is in the string
    assert kernel_lang.kernels(new) == {"shift_kernel": 8}
    # the floor-division grid it left is still seen, at the launch's line
    assert [(f["tag"], f["line"]) for f in lang.static_facts(new)] == [("cuda_floor_div_grid", 18)]


def test_edit_blocks_that_add_a_line_inside_the_string_keep_the_line_map():
    # a server without tools: the one-shot path parses SEARCH/REPLACE blocks from the text
    reply = {"content": "Two faults.\n" + blocks(BOUNDS_FIX, GRID_FIX), "prompt_tokens": 800,
             "completion_tokens": 90}
    with ReplayServer([reply], tools=False) as server:
        backend = tool_backend(server)
        [p] = backend.propose(SHIFT, {}, {}, context())
        one_shot = server.requests[-1]["body"]
    assert "tools" not in one_shot and "CUDA C++" in one_shot["messages"][0]["content"]
    assert (p.prompt_tokens, p.completion_tokens) == (800, 90) and len(p.edits) == 2
    new, why = apply_edits(SHIFT, p.edits)
    assert why == ""
    assert new == SHIFT.replace(BOUNDS_FIX["search"], BOUNDS_FIX["replace"]).replace(
        GRID_FIX["search"], GRID_FIX["replace"])
    ast.parse(new)
    assert kernel_lang.kernels(new) == {"shift_kernel": 8}
    [launch] = lang.get("cuda").launches(new)
    assert (launch.grid, launch.line) == ("blocks", line_of(new, "shift_kernel<<<blocks")) and launch.line == 19
    assert lang.static_facts(new) == []  # both faults gone
    assert lang.get("cuda").bound_functions(new) == {"shift": "shift"}


# -- 1b: malformed replies end with their reason and no proposal ---------------------------------------

NOT_IN_FILE = {"search": "    if (i <= N) {", "replace": "    if (i < N) {"}
# the CUDA comment closes the r\"\"\" literal: the file is no longer Python
CLOSES_STRING = {"search": "    if (i <= n) {", "replace": '    if (i < n) {  // was """i <= n"""'}
# `__global__` dropped: the string still compiles as C++, but no kernel is left to launch
NO_KERNEL = {"search": "__global__ void shift_kernel(", "replace": "void shift_kernel("}

MALFORMED = {
    "search_not_in_file": ([propose_call([NOT_IN_FILE])], "edits_do_not_apply", "SEARCH text not found"),
    "breaks_the_string_literal": ([propose_call([CLOSES_STRING])], "edits_do_not_apply", "not valid Python"),
    "drops_the_kernel": ([propose_call([NO_KERNEL])], "edits_do_not_apply", "no CUDA kernel left"),
    "no_edit_at_all": ([{"content": "The bounds check looks fine to me."}], "model_never_proposed",
                       "without a tool call or an edit"),
    "bad_json": ([{"content": None, "tool_calls": [
        {"name": "propose_edit", "arguments": '{"edits": [{"search": "    if (i <= n) {", "replace": '}]}],
        "malformed_tool_calls", "malformed"),
    "plain_blocks_that_break_python": ([{"content": blocks(CLOSES_STRING)}], "edits_do_not_apply",
                                       "not valid Python"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_cuda_replies_stop_with_their_reason_and_no_proposal(name):
    replies, reason, words = MALFORMED[name]
    with ReplayServer(replies) as server:
        backend = tool_backend(server)
        assert backend.propose(SHIFT, {}, {}, context()) == []
        requests = server.requests
    assert backend.stopped["reason"] == reason, backend.stopped
    assert words in backend.stopped["message"]
    assert len(requests) == 3 and backend.stopped["prompt_tokens"] == 300
    # each refusal went back to the model (as the tool's answer, or as a user turn), and it was asked again
    if name in ("no_edit_at_all", "plain_blocks_that_break_python"):
        told = [m["content"] for m in backend.messages if m["role"] == "user"][1:]
        assert len(told) == 2 and all("propose_edit" in t for t in told)
        assert name == "no_edit_at_all" or all(t.startswith("Your edits were not applied: the edited file is "
                                                             "not valid Python") for t in told)
    else:
        told = [m["content"] for m in backend.messages if m["role"] == "tool"]
        assert len(told) == 3 and all(t.startswith("error: ") for t in told)
        assert all(("arguments are not valid JSON" if name == "bad_json" else words) in t for t in told)


@pytest.mark.parametrize("name", ["search_not_in_file", "breaks_the_string_literal", "no_edit_at_all", "bad_json"])
def test_through_the_repair_graph_a_malformed_reply_is_the_runs_stop_not_an_exception(name, tmp_path, monkeypatch):
    import debugger.diagnose
    import debugger.evaluate
    from debugger.case import case_from_sources
    from debugger.ledger import Ledger
    from debugger.repair import repair
    from debugger.settings import resolve

    replies, reason, words = MALFORMED[name]
    ledger = Ledger(tmp_path / "l.db")
    with ReplayServer(replies) as server:
        # On the CPU a CUDA candidate is not judged (invalid_input); here the evaluation is let through to
        # the build, which fails (compile_error), so that the graph goes on to diagnose it and ask the model.
        monkeypatch.setattr(debugger.evaluate, "is_cuda_candidate", lambda src: False)
        # The diagnosis's experiments would each build a patched copy (about 30 s on the CPU) and bear on nothing
        # asked here: what the graph does with the model's replies.
        monkeypatch.setattr(debugger.diagnose, "run_experiments", lambda *a, **kw: [])
        settings = resolve(device="cpu", backend="openai", max_iters=3, timeout=120, base_url=server.base_url,
                           api_key="k", model="m")
        result = repair(case_from_sources(SHIFT_REF, SHIFT, name="shift"), settings=settings, ledger=ledger,
                        write_files=False, write_back=False, retrieval=False)
        assert len(server.requests) == 3
    assert (result.status, result.guard) == ("unrepaired", reason)
    assert result.history == [] and result.repaired_src is None  # nothing was proposed, nothing applied
    assert result.tokens == {"prompt": 300, "completion": 60}
    [stop] = [r for r in ledger.tool_calls(result.run_id) if r["kind"] == "stop"]
    assert stop["detail"].startswith(reason) and words in stop["detail"]


@pytest.mark.parametrize("content,reason,words", [
    (blocks(NOT_IN_FILE), "edits_do_not_apply", "SEARCH text not found"),
    (blocks(CLOSES_STRING), "edits_do_not_apply", "not valid Python"),
    ("I would rewrite the whole kernel.", "model_never_proposed", "no SEARCH/REPLACE block"),
])
def test_the_one_shot_path_refuses_the_same_replies(content, reason, words):
    with ReplayServer([{"content": content}], tools=False) as server:
        backend = OpenAIBackend(base_url=server.base_url, api_key="k", model="m", backoff=0.01)
        assert backend.propose(SHIFT, {}, {}, context()) == []
        requests = server.requests
    assert backend.stopped["reason"] == reason and words in backend.stopped["message"]
    assert len(requests) == 3 and backend.stopped["completion_tokens"] == 60
    last = requests[-1]["body"]["messages"]
    assert last[-2] == {"role": "assistant", "content": content} and words in last[-1]["content"]


def test_a_refused_edit_then_a_good_one_is_proposed():
    with ReplayServer([propose_call([CLOSES_STRING]), propose_call([BOUNDS_FIX])]) as server:
        backend = tool_backend(server)
        [p] = backend.propose(SHIFT, {}, {}, context())
        told = tools_answers(server.requests[1])
    assert p.edits == [BOUNDS_FIX] and backend.stopped is None
    assert told["call_1_0"].startswith("error: the edited file is not valid Python")


def tools_answers(request: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["body"]["messages"] if m["role"] == "tool"}


# -- 1c: a cheat for CUDA is refused by the same integrity rules ---------------------------------------

CHEATS = {
    "torch_computes_the_operator": {"search": "        return ext.shift(x.contiguous())",
                                    "replace": "        return x + 1.0"},
    "torch_op_instead_of_the_extension": {"search": "        return ext.shift(x.contiguous())",
                                          "replace": "        return torch.add(x, 1.0)"},
}


@pytest.mark.parametrize("name", list(CHEATS))
def test_a_cuda_cheat_is_rejected_by_the_gates_static_rules(name):
    with ReplayServer([propose_call([CHEATS[name]], "let PyTorch add")]) as server:
        backend = tool_backend(server)
        [p] = backend.propose(SHIFT, {}, {}, context())
    cheat, _ = apply_edits(SHIFT, p.edits)
    # the gate as the repair graph runs it (nodes.integrity), without the sandboxed run
    verdict = check(Case(name="shift", reference_src=SHIFT_REF, candidate_src=cheat), dynamic=False,
                    baseline_src=SHIFT)
    rules = {r.split(":")[0] for r in verdict.reasons()}
    assert verdict.verdict == "reject" and {"no_kernel_launch", "torch_compute"} <= rules, verdict.reasons()
    # the honest fix of the same file passes the same rules
    fixed, _ = apply_edits(SHIFT, [BOUNDS_FIX, GRID_FIX])
    assert check(Case(name="shift", reference_src=SHIFT_REF, candidate_src=fixed), dynamic=False,
                 baseline_src=SHIFT).verdict == "accept"
    # the verdict is the answer to the propose_edit call, and the model goes on from it
    with ReplayServer([propose_call([CHEATS[name]]), {"content": None, "tool_calls": [
            {"name": "propose_edit", "arguments": {"edits": [BOUNDS_FIX]}}]}]) as server:
        backend = tool_backend(server)
        backend.propose(SHIFT, {}, {}, context())
        last = {"outcome": "rejected", "reasons": verdict.reasons()}
        [q] = backend.propose(SHIFT, {}, {}, context(last=last))
        answer = tools_answers(server.requests[1])["call_1_0"]
    assert "integrity gate rejected it" in answer and "torch_compute" in answer
    assert q.edits == [BOUNDS_FIX]


# -- 2: the prompt carries the CUDA facts, the host wrapper, sanitizer findings, CUDA knowledge ---------

MEMCHECK = {"tools": [{"tool": "memcheck", "status": "ran", "message": "", "findings": [
    {"tool": "memcheck", "kind": "invalid_write", "space": "global", "size": 4, "kernel": "shift_kernel",
     "pyline": 11, "in_candidate": True, "oob_bytes": 0, "oob_side": "after", "allocation_size": 16396,
     "thread": "3,0,0", "block": "16,0,0", "count": 1},
    {"tool": "memcheck", "kind": "api_error", "kernel": None, "pyline": None, "in_candidate": False}]}]}


def diagnosis_of(src: str, sanitizer: dict | None = None) -> dict:
    diag = Diagnosis(status="diagnosed", static=lang.static_facts(src), sanitizer=sanitizer or {},
                     evaluation={"message": "mismatch on 9/11 checks"}, symptoms=["tail_block_wrong"])
    return {**diag.to_dict(), "prompt_text": diag.prompt_text()}


def first_prompt(src: str, diagnosis: dict, retrieved: dict | None = None) -> tuple[str, str]:
    with ReplayServer([propose_call([BOUNDS_FIX])]) as server:
        tool_backend(server).propose(src, diagnosis, retrieved or {}, context())
        system, user = (m["content"] for m in server.requests[0]["body"]["messages"])
    return system, user


def test_the_prompt_carries_the_host_wrapper_facts_with_lines_and_sanitizer_findings():
    system, user = first_prompt(SHIFT, diagnosis_of(SHIFT, MEMCHECK))
    assert "CUDA C++" in system and "Triton" not in system
    assert "CUDA kernels inside the load_inline strings (the CUDA source starts at line 5): shift_kernel (line 8)" \
        in user
    assert "if (i <= n) {" in user  # the whole file: the kernel source and the host code
    assert "- shift (bound to Python as 'shift'), line 15: launches shift_kernel<<<n / 256, 256>>> (line 18)" in user
    # the CUDA fact once, with its Python line: the diagnosis text has it, the facts section does not repeat it
    assert "static: line 18: grid of shift_kernel uses floor division n / 256" in user
    assert user.count("uses floor division n / 256") == 1 and "## CUDA facts" not in user
    assert "## compute-sanitizer findings in the candidate's kernels" in user
    assert ("- memcheck: invalid write of 4 bytes (global memory) in shift_kernel at line 11: 0 bytes after an "
            "allocation of 16396 bytes, thread (3,0,0) block (16,0,0)") in user
    assert "api error" not in user  # not the candidate's


def test_facts_the_diagnosis_text_lacks_are_given_with_their_lines():
    assert kernel_lang.kernels(CHANNEL) == {"channel_bias_kernel": 8}
    store = line_of(CHANNEL, "y[idx] = x[idx] + b[c];")
    _, user = first_prompt(CHANNEL, {"summary": "most of the output is never written"})
    assert "## CUDA facts (static; lines of this file)" in user
    assert (f"- line {store} (channel_bias_kernel): cuda_index_divided_in_place: idx is divided in place "
            f"(idx /= HW, line {line_of(CHANNEL, 'idx /= HW;')})") in user
    assert "launches channel_bias_kernel<<<(total + 127) / 128, 128>>> (line 21)" in user
    # the one-shot prompt too
    one_shot = build_prompt(CHANNEL, SHIFT_REF, {"summary": "s"}, {})[1]["content"]
    assert f"- line {store} (channel_bias_kernel): cuda_index_divided_in_place" in one_shot
    # and a Triton candidate's prompt has none of it
    from tests.test_tool_loop import ROWSUM_KERNEL
    assert kernel_lang.cuda_context(ROWSUM_KERNEL, {}) == []


def pattern_hit(name: str) -> dict:
    path = REPO / "kb" / "patterns" / f"{name}.md"
    text = path.read_text()
    title = next(l for l in text.splitlines() if l.startswith("title:")).split(":", 1)[1].strip().strip('"')
    cls = next(l for l in text.splitlines() if l.startswith("bug_class:")).split(":", 1)[1].strip()
    return {"id": name, "kind": "pattern", "title": title, "bug_class": cls, "path": str(path), "text": text}


def test_cuda_patterns_come_first_and_the_reference_kernel_is_named():
    triton = pattern_hit("max-reduction-other-zero")
    cuda = pattern_hit("cuda-grid-floor-division")
    ref_src = (REPO / "kb/reference_kernels/cuda_row_sum/kernel.py").read_text()
    retrieved = {"patterns": [triton, cuda], "reference_kernel": {"id": "cuda_row_sum", "source": ref_src}}
    _, user = first_prompt(SHIFT, diagnosis_of(SHIFT), retrieved)
    titles = user.split("## Known failure patterns that may apply (search_knowledge reads them)\n")[1].split("\n")
    assert titles[0].startswith("- cuda-grid-floor-division: ") and titles[1].startswith("- max-reduction-other-zero")
    assert "## The closest correct kernel in the knowledge base: cuda_row_sum (read_reference_kernel reads it)" \
        in user
    one_shot = build_prompt(SHIFT, SHIFT_REF, diagnosis_of(SHIFT), retrieved)[1]["content"]
    first = one_shot.index("## Known failure pattern: ")
    assert one_shot[first:].startswith(f"## Known failure pattern: {cuda['title']}")
    assert "cuda_ceil_div_grid" in one_shot  # the pattern's text, with its fix
    assert "## A correct kernel for a similar operator (cuda_row_sum)" in one_shot and "load_inline" in ref_src
    assert ref_src.strip()[:200] in one_shot


@pytest.fixture
def mixed_kb(tmp_path):
    """A knowledge base of a Triton and a CUDA pattern, and a Triton and a CUDA reference kernel."""
    from debugger.knowledge import KnowledgeBase

    kb = tmp_path / "kb"
    (kb / "patterns").mkdir(parents=True)
    for name in ("max-reduction-other-zero", "cuda-grid-floor-division"):
        shutil.copy(REPO / f"kb/patterns/{name}.md", kb / "patterns")
    for name in ("row_sum", "cuda_row_sum"):
        shutil.copytree(REPO / f"kb/reference_kernels/{name}", kb / f"reference_kernels/{name}")
    return KnowledgeBase(kb, tmp_path / "data")


def test_the_knowledge_tools_answer_a_cuda_candidate_in_cuda(mixed_kb):
    bench = tools.Workbench(case=Case(name="shift", reference_src=SHIFT_REF, candidate_src=SHIFT),
                            knowledge=mixed_kb)
    # words of the Triton pattern: a CUDA candidate still gets the CUDA one
    found = tools.search_knowledge(bench, {"query": "row max wrong for all-negative rows", "k": 1})
    assert found.startswith("## cuda-grid-floor-division:"), found[:200]
    ref = tools.read_reference_kernel(bench, {"query": "tl.max masked lanes other=0.0 negative rows"})
    assert ref.startswith("## reference kernel cuda_row_sum") and "load_inline" in ref
    assert tools.read_reference_kernel(bench, {}).startswith("## reference kernel cuda_row_sum")


# -- 3: the whole repair loop on a CUDA GPU --------------------------------------------------------------

def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="the CUDA candidate is built and run on a GPU")
def test_the_repair_loop_repairs_a_cuda_candidate_from_a_recorded_reply(tmp_path):
    from debugger.case import case_from_sources
    from debugger.ledger import Ledger
    from debugger.repair import repair
    from debugger.settings import resolve

    fix = propose_call([BOUNDS_FIX, GRID_FIX], "off-by-one bounds check and a floor-division grid")
    give_up = {"content": "I have no other idea."}
    with ReplayServer([fix, give_up]) as server:
        settings = resolve(device="cuda", backend="openai", max_iters=3, timeout=600, base_url=server.base_url,
                           api_key="k", model="m")
        result = repair(case_from_sources(SHIFT_REF, SHIFT, name="openai_cuda_shift"), settings=settings,
                        ledger=Ledger(tmp_path / "l.db"), write_files=False, write_back=False, retrieval=False)
        requests = server.requests
    assert result.status == "repaired", (result.message, json.dumps(result.history, default=str)[:3000])
    assert "if (i < n) {" in result.repaired_src and "shift_kernel<<<blocks, 256>>>" in result.repaired_src
    assert result.verdict["verdict"] == "accept"
    assert len(requests) == 1  # one proposal, verified and accepted: the model is not asked again
    user = requests[0]["body"]["messages"][1]["content"]
    assert "CUDA kernels inside the load_inline strings" in user and "launches shift_kernel<<<n / 256, 256>>>" in user
