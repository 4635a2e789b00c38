"""The MCP server driven by the SDK's own client: in memory (every tool, real kernels) and over stdio."""
import os
import sys
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from debugger.mcp_server import mcp

REPO = Path(__file__).resolve().parents[1]
SOFTMAX = REPO / "examples" / "softmax"
KERNELS = REPO / "tests" / "data" / "kernels"
ADD_REF = (KERNELS / "add_reference.py").read_text()
ADD_OK = (KERNELS / "add_kernel.py").read_text()
ADD_MINUS = ADD_OK.replace("a + b, mask=mask", "a - b, mask=mask")  # the near miss
ADD_TIMES = ADD_OK.replace("a + b, mask=mask", "a * b, mask=mask")  # a "fix" that is still wrong

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
async def client():
    async with Client(mcp) as c:
        yield c


def softmax(name: str) -> str:
    return (SOFTMAX / name).read_text()


async def call(client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def test_tools_have_typed_inputs_and_structured_results(client):
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"evaluate_kernel", "diagnose_kernel", "check_integrity", "search_knowledge",
                          "repair_kernel", "record_fix"}
    for t in tools.values():
        assert t.output_schema and t.description
        assert all(p.get("description") for p in t.input_schema["properties"].values()), t.name
    repair_inputs = set(tools["repair_kernel"].input_schema["properties"])
    assert {"reference_src", "candidate_src", "reference_path", "case_dir", "device", "backend"} <= repair_inputs
    assert tools["search_knowledge"].annotations.read_only_hint


async def test_evaluate_finds_the_failing_softmax(client):
    r = await call(client, "evaluate_kernel", reference_src=softmax("reference.py"),
                   candidate_src=softmax("candidate.py"), device="cpu")
    assert r["status"] == "mismatch" and not r["passed"]
    failed = [c["name"] for c in r["checks"] if not c["passed"]]
    assert "x100" in failed and "seed0" not in failed
    # KernelBench's own trials pass: the two verdicts and why they differ come back
    assert r["verdicts"]["kernelbench"]["status"] == "pass" and r["verdicts"]["kernel"]["status"] == "mismatch"
    assert "x100" in r["verdict_note"]
    pipeline = await call(client, "evaluate_kernel", reference_src=softmax("reference.py"),
                          candidate_src=softmax("candidate.py"), device="cpu", semantics="kernelbench")
    assert pipeline["status"] == "pass" and pipeline["semantics"] == "kernelbench"


async def test_diagnose_names_the_overflow(client):
    r = await call(client, "diagnose_kernel", case_dir=str(SOFTMAX), device="cpu", experiments=False, probes=False)
    assert r["status"] == "diagnosed"
    assert r["hypotheses"][0]["bug_class"] == "numerical_overflow" == r["bug_class"]
    assert r["evaluation"]["status"] == "mismatch"


async def test_gate_accepts_the_fix_and_rejects_a_cheat(client):
    r = await call(client, "check_integrity", reference_path=str(SOFTMAX / "reference.py"),
                   candidate_path=str(SOFTMAX / "fixed.py"), device="cpu")
    assert r["verdict"] == "accept" and r["evaluation"]["status"] == "pass", r["reasons"]
    cheat = softmax("fixed.py").replace("        return out", "        return torch.softmax(x, dim=-1)")
    r = await call(client, "check_integrity", reference_src=softmax("reference.py"), candidate_src=cheat,
                   static_only=True)
    assert r["verdict"] == "reject" and r["reasons"] and r["evaluation"] is None


async def test_gate_names_the_policy_it_judged_under(client):
    for policy in ("kernelbench", "strict"):
        r = await call(client, "check_integrity", reference_path=str(SOFTMAX / "reference.py"),
                       candidate_path=str(SOFTMAX / "fixed.py"), static_only=True, policy=policy)
        assert r["policy"] == policy and r["verdict"] == "accept", r["reasons"]


async def test_gate_on_the_cpu_says_a_cuda_candidate_it_cannot_emulate_was_not_run(client):
    from tests.test_evaluate import ADD_ONE_REF, CUDA_PTX_ADD_ONE  # PTX: not run by the CPU emulation

    r = await call(client, "check_integrity", reference_src=ADD_ONE_REF, candidate_src=CUDA_PTX_ADD_ONE, device="cpu")
    assert r["verdict"] == "accept" and r["evaluation"] is None and "--device cuda" in r["dynamic_not_run"]
    assert not any(f["rule"] == "does_not_run" for f in r["findings"])


async def test_search_by_symptom(client):
    r = await call(client, "search_knowledge", symptoms=["no_max_subtraction", "fails_large_magnitude"],
                   operator="softmax", k=3)
    top = r["hits"][0]
    assert top["kind"] == "pattern" and top["bug_class"] == "numerical_overflow"
    assert "## Fix" in top["text"]


async def test_repair_reports_progress_and_returns_the_source(client):
    seen = []

    async def progress(value, total, message):
        seen.append((value, message))

    result = await client.call_tool("repair_kernel", {"reference_src": softmax("reference.py"),
                                                      "candidate_src": softmax("candidate.py"),
                                                      "device": "cpu", "backend": "kb"}, progress_callback=progress)
    assert not result.is_error, result.content[0].text
    r = result.structured_content
    assert r["status"] == "repaired", r["message"]
    assert "tl.max" in r["repaired_src"] and "tl.max" in r["diff"] and r["guard"] is None
    assert r["tokens"] == {"prompt": 0, "completion": 0} and r["iterations"] >= 1
    assert r["bug_class"] == "numerical_overflow"
    assert len(seen) >= 2 and [v for v, _ in seen] == sorted(v for v, _ in seen)
    assert any("integrity" in m for _, m in seen)


async def test_record_fix_verifies_before_recording(client):
    case = dict(reference_src=ADD_REF, candidate_src=ADD_MINUS, device="cpu", bug_class="activation_formula")
    r = await call(client, "record_fix", fixed_src=ADD_TIMES, **case)
    assert r["status"] == "refused" and "does not pass" in r["reason"] and r["pattern_id"] is None
    r = await call(client, "record_fix", fixed_src=ADD_OK, agent="test-agent", **case)
    assert r["status"] == "recorded", r["reason"]
    path = Path(r["path"])
    assert path.is_relative_to(Path(os.environ["KDEBUG_DATA_DIR"]) / "kb" / "patterns" / "learned") and path.exists()
    assert r["verdict"]["verdict"] == "accept" and r["evaluation"]["passed"]


async def test_bad_input_is_a_tool_error_and_the_server_keeps_answering(client):
    result = await client.call_tool("evaluate_kernel", {"reference_src": "x = 1\n", "candidate_src": ADD_OK})
    assert result.is_error and "does not define Model" in result.content[0].text
    result = await client.call_tool("evaluate_kernel", {"candidate_path": "/nonexistent/candidate.py",
                                                        "reference_src": ADD_REF})
    assert result.is_error and "not found" in result.content[0].text
    result = await client.call_tool("record_fix", {"reference_src": ADD_REF, "candidate_src": ADD_MINUS,
                                                   "fixed_src": ADD_OK, "bug_class": "no_such_class"})
    assert result.is_error and "unknown bug_class" in result.content[0].text
    r = await call(client, "search_knowledge", query="softmax overflow", k=1)
    assert len(r["hits"]) == 1


async def test_stdio_subprocess():
    env = {k: v for k, v in os.environ.items() if k.startswith(("KDEBUG_", "HF_", "TRANSFORMERS_"))}
    params = StdioServerParameters(command=sys.executable, args=["-m", "debugger.cli", "mcp"], cwd=str(REPO),
                                   env={**env, "PYTHONPATH": str(REPO)})
    async with Client(params, read_timeout_seconds=900) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert "repair_kernel" in names and "evaluate_kernel" in names
        r = await call(c, "evaluate_kernel", reference_src=ADD_REF, candidate_src=ADD_OK, device="cpu")
    assert r["status"] == "pass" and all(ch["passed"] for ch in r["checks"])
