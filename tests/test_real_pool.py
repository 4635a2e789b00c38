"""eval/real_pool.py: reading both kinds of pool into case folders outside them, selecting, the rows'
verdicts (CUDA not runnable on the CPU), the agreement matrix and repair table, and one end-to-end run
on a tiny pool of pure-PyTorch answers (one real `kdebug eval` subprocess)."""
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from ingest.answers import pool_kind, read_pool
from tests.test_semantics import LINEAR_WIDE_REF

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("real_pool", REPO / "eval" / "real_pool.py")
real_pool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(real_pool)

REF = (REPO / "tests/data/kernels/add_reference.py").read_text()
TORCH_ADD = ("import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
             "    def forward(self, a, b):\n        return a + b\n")
TORCH_SUB = TORCH_ADD.replace("a + b", "a - b")
# inline PTX: CUDA that kdebug's CPU emulation does not run (not_runnable on --device cpu)
CUDA_ADD = ('import torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n'
            'src = """__global__ void add(const float* a, const float* b, float* c, int n) { asm("trap;"); }"""\n\n\n'
            'class ModelNew(nn.Module):\n    def forward(self, a, b):\n        return a + b\n')


def case(folder: Path, candidate: str, toml: str = "") -> Path:
    folder.mkdir(parents=True)
    (folder / "reference.py").write_text(REF)
    (folder / "candidate.py").write_text(candidate)
    if toml:
        (folder / "case.toml").write_text(toml)
    return folder


def cases_pool(root: Path) -> Path:
    pool = root / "pool"
    case(pool / "honest" / "add__m1", TORCH_ADD,
         'kind = "honest"\natol = 1e-3\n[provenance]\nmodel = "m1"\nop = "add"\n')
    case(pool / "nearmiss" / "sub__m2", TORCH_SUB)
    case(pool / "nearmiss" / "cuda_add__m2", CUDA_ADD)
    (pool / "README.md").write_text("a pool\n")
    return pool


def kernelbench_pool(root: Path) -> Path:
    pool = root / "kb"
    (pool / "KernelBench" / "level1").mkdir(parents=True)
    (pool / "KernelBench" / "level1" / "1_Add.py").write_text(REF)
    run = pool / "runs" / "gemini_level1_run"
    run.mkdir(parents=True)
    (run / "level_1_problem_1_sample_0_kernel.py").write_text(CUDA_ADD)
    (run / "level_1_problem_2_sample_0_kernel.py").write_text(CUDA_ADD)  # no reference for problem 2
    (run / "eval_results.json").write_text(json.dumps({"1": [{"sample_id": 0, "compiled": True, "correctness": False,
                                                              "metadata": {"correctness_issue": "Output mismatch",
                                                                           "max_difference": ["2.0"]}}]}))
    opus = pool / "runs" / "opus4_level1_20250903"
    opus.mkdir()
    (opus / "problem_1_kernel.py").write_text(TORCH_ADD)
    (opus / "detailed_results.json").write_text(json.dumps({"run_info": {"level": 1, "model": "opus"}, "results": [
        {"problem_id": 1, "success": True, "eval_result": {"compiled": True, "correctness": True, "metadata": {}}}]}))
    return pool


def test_cases_pool_read_and_written_outside_it(tmp_path):
    pool = cases_pool(tmp_path)
    assert pool_kind(pool) == "cases"
    answers, unread = read_pool(pool)
    by_id = {a.id: a for a in answers}
    assert set(by_id) == {"honest/add__m1", "nearmiss/sub__m2", "nearmiss/cuda_add__m2"} and unread == []
    assert [(by_id[i].recorded, by_id[i].language) for i in sorted(by_id)] == [
        ("pass", "torch"), ("fail", "cuda"), ("fail", "torch")]
    assert by_id["honest/add__m1"].model == "m1" and by_id["honest/add__m1"].problem == "add"
    before = sorted(p.relative_to(pool) for p in pool.rglob("*"))
    folder = by_id["honest/add__m1"].write(tmp_path / "out" / "cases")
    assert folder == tmp_path / "out" / "cases" / "honest__add__m1"
    assert (folder / "candidate.py").read_text() == TORCH_ADD and "atol = 1e-3" in (folder / "case.toml").read_text()
    assert sorted(p.relative_to(pool) for p in pool.rglob("*")) == before
    with pytest.raises(SystemExit):
        real_pool.check_out(pool / "scratch", pool)
    with pytest.raises(SystemExit):
        real_pool.check_out(REPO / "eval" / "scratch", pool)


def test_kernelbench_pool_both_layouts_and_selection(tmp_path):
    pool = kernelbench_pool(tmp_path)
    assert pool_kind(pool) == "kernelbench"
    answers, _ = read_pool(pool)
    by_id = {a.id: a for a in answers}
    assert set(by_id) == {"gemini-level1-run/level1/1", "gemini-level1-run/level1/2", "opus4-level1-20250903/level1/1"}
    gem, opus = by_id["gemini-level1-run/level1/1"], by_id["opus4-level1-20250903/level1/1"]
    assert (gem.recorded, gem.recorded_class, gem.language) == ("fail", "numerical_mismatch", "cuda")
    assert (opus.recorded, opus.recorded_class, opus.language, opus.model) == ("pass", "correct", "torch", "opus")
    assert by_id["gemini-level1-run/level1/2"].usable() == "no reference for this problem"
    assert [a.id for a in real_pool.select(answers, "mismatch", None)] == [gem.id]
    assert [a.id for a in real_pool.select(answers, "correct", None)] == [opus.id]
    assert len(real_pool.select(answers, "all", None)) == 2  # the one without a reference is left out
    assert [a.id for a in real_pool.select(answers, "all", None, "opus4*")] == [opus.id]
    folder = gem.write(tmp_path / "out")
    assert (folder / "reference.py").read_text() == REF and "numerical_mismatch" in (folder / "case.toml").read_text()


class FakeKdebug:
    """Canned JSON per command; takes no optional flag but --policy."""

    def __init__(self, replies):
        self.replies, self.calls = replies, []

    def takes(self, command, flag):
        return flag == "--policy"

    def run(self, args, timeout, cwd):
        self.calls.append(args)
        return {"exit": 0, "json": self.replies[args[0]], "seconds": 2.0, "timed_out": False, "stderr_tail": ""}


def opts(**kw):
    base = dict(device="cpu", semantics=None, sizes="auto", diagnose=True, repair=True, max_iters="4",
                wall_budget=None, policy="kernelbench", timeout=10, repair_timeout=10)
    return SimpleNamespace(**{**base, **kw})


def test_rows_repair_flow_and_the_table(tmp_path):
    answers = {a.id: a for a in read_pool(cases_pool(tmp_path))[0]}
    out = tmp_path / "out"
    fake = FakeKdebug({
        "eval": {"status": "mismatch", "message": "mismatch on 3/16 checks",
                 "checks": [{"name": "seed0", "passed": False, "seconds": 1.25}, {"name": "x3", "passed": True}],
                 "verdicts": {"kernel": {"status": "mismatch", "failed": ["seed0"]},
                              "kernelbench": {"status": "mismatch", "failed": ["kb_trial0"]}},
                 "parameter_map": {"pairs": [["w", "w"]], "unmatched_candidate": [], "unmatched_reference": ["b"]}},
        "diagnose": {"status": "diagnosed", "hypotheses": [{"bug_class": "operator_misread", "confidence": 0.8}]},
        "repair": {"status": "repaired", "iterations": 2, "bug_class": "operator_misread",
                   "output": str(tmp_path / "fixed.py")},
        "check": {"verdict": "accept", "findings": []}})
    (tmp_path / "fixed.py").write_text(TORCH_ADD)
    a = answers["nearmiss/sub__m2"]
    row = real_pool.run_answer(a, a.write(out / "cases"), fake, opts(), out)
    assert [c[0] for c in fake.calls] == ["eval", "diagnose", "repair", "eval", "check"]
    assert "--sizes" not in fake.calls[0] and fake.calls[4][-2:] == ["--policy", "kernelbench"]
    # the repair is judged as a case of its own: the task's reference and case.toml beside it
    repaired = Path(fake.calls[3][1])
    assert fake.calls[4][1] == str(repaired) and (repaired / "candidate.py").read_text() == TORCH_ADD
    assert (repaired / "reference.py").read_text() == REF
    assert row["flags"]["left_out"] == ["eval --sizes auto", "diagnose --sizes auto", "repair --sizes auto",
                                        "repair --max-iters 4", "eval --sizes auto"]
    assert row["eval"]["slowest_check"] == {"name": "seed0", "seconds": 1.2} and row["eval"]["checks"] == 2
    assert row["eval"]["parameter_map"] == {"pairs": 1, "unmatched_candidate": [], "unmatched_reference": ["b"]}
    assert row["diagnose"]["top"] == "operator_misread" and row["check"]["verdict"] == "accept"
    cuda = answers["nearmiss/cuda_add__m2"]  # CUDA the CPU emulation does not run: kdebug eval says so
    blocked = FakeKdebug({"eval": {"status": "invalid_input",
                                   "message": real_pool.CUDA_ON_CPU + ": they use inline PTX assembly, ..."}})
    cuda_row = real_pool.run_answer(cuda, cuda.write(out / "cases"), blocked, opts(), out)
    assert [c[0] for c in blocked.calls] == ["eval"] and "PTX" in cuda_row["not_runnable"]
    assert real_pool.verdict(cuda_row, "kernel") == "not_runnable"
    honest = {**answers["honest/add__m1"].row(), "flags": {},
              "eval": {"status": "mismatch", "message": "mismatch on 2/16 checks", "seconds": 4.0,
                       "kernel": {"status": "mismatch", "failed": ["noncontiguous"]},
                       "kernelbench": {"status": "pass", "failed": []}}}
    old = {**honest, "id": "honest/old", "eval": {"status": "pass", "seconds": 6.0}}  # a kdebug with one verdict
    slow = {**honest, "id": "honest/slow", "eval": {"exit": None, "seconds": 900.2, "error": "timed out"}}
    # beside other processes' jobs on the H100 (run 43), four of five trials could not run: not judged, not failed
    crowded = {**honest, "id": "honest/crowded", "eval": {
        "status": "runtime_error", "seconds": 85.1,
        "message": "not judged: 4 of 5 checks could not run (first: kb_trial1: reference failed: out of GPU memory)",
        "kernel": {"status": "pass", "failed": [], "skipped": {}},
        "kernelbench": {"status": "runtime_error", "failed": [], "skipped": {"kb_trial1": "out of GPU memory"}}}}
    assert real_pool.verdict(crowded, "kernelbench") == "no_result" and real_pool.verdict(crowded, "kernel") == "pass"
    assert real_pool.summary([crowded], {})["rows_no_result"][0][:2] == ("honest/crowded", crowded["eval"]["message"])
    rows = [row, cuda_row, honest, old, slow]
    s = real_pool.summary(rows, {"pool": "P", "device": "cpu", "selection": "--only all", "command": "python x",
                                 "date": "d", "commit": "c", "wall_seconds": 1})
    k, kb = s["agreement"]["kernel"], s["agreement"]["kernelbench"]
    assert k["matrix"] == {"fail (nearmiss)": {"mismatch": 1, "not_runnable": 1},
                           "pass (honest)": {"mismatch": 1, "pass": 1, "no_result": 1}}
    assert (k["agree"], k["judged"]) == (2, 3) and [d["id"] for d in k["disagreements"]] == ["honest/add__m1"]
    assert kb["matrix"]["pass (honest)"] == {"pass": 1, "no_result": 2} and (kb["agree"], kb["judged"]) == (2, 2)
    assert s["repairs"]["operator_misread"]["repaired_failed_verify"] == 1 and s["not_runnable"] == 1
    md = real_pool.markdown(s)
    assert "agrees with the recorded verdict on 2 of 3 answers" in md
    assert "| pass (honest) | 1 | 1 | 0 | 1 | 3 |" in md  # columns pass, mismatch, not_runnable, no_result
    assert "could not run the checks that would decide): " in md and "`honest/slow` (timed out, 900.2 s)" in md
    assert "- `honest/add__m1`: recorded pass, kdebug mismatch: fails noncontiguous" in md
    assert "| operator_misread | 1 | 0 | 1 | 0 | 0 | 0 | 0 | 2.0 | 2 |" in md  # the canned re-eval says mismatch
    row["verify"] = {"status": "pass", "kernel": {"status": "pass"}}
    assert real_pool.repair_counts([row])["operator_misread"]["repaired_accepted"] == 1
    assert "1 answers not runnable here" in md and "`eval --sizes auto`" in md


def test_end_to_end_on_a_tiny_pool(tmp_path):
    pool = tmp_path / "pool"
    case(pool / "honest" / "add__m1", TORCH_ADD)
    case(pool / "nearmiss" / "cuda_add__m2", CUDA_ADD)
    out = tmp_path / "out"
    assert real_pool.main([str(pool), "--device", "cpu", "--out", str(out), "--timeout", "300"]) == 0
    data = json.loads((out / "rows.json").read_text())
    rows = {r["id"]: r for r in data["rows"]}
    assert real_pool.verdict(rows["honest/add__m1"], "kernel") == "pass"
    assert rows["honest/add__m1"]["eval"]["exit"] == 0 and rows["honest/add__m1"]["eval"]["checks"] > 5
    assert real_pool.verdict(rows["nearmiss/cuda_add__m2"], "kernel") == "not_runnable"
    assert data["summary"]["agreement"]["kernel"]["agree"] == data["summary"]["agreement"]["kernel"]["judged"] == 1
    assert "python eval/real_pool.py" in (out / "table.md").read_text()
    assert len((out / "rows.jsonl").read_text().splitlines()) == 2
    assert not list((pool / "honest" / "add__m1").glob("*.repaired.py"))


def test_no_answer_starts_after_the_deadline(tmp_path):
    """Case folders are written ahead of the evaluations (on a GPU, builds too): the deadline holds where an
    evaluation starts. One answer at a time, a deadline shorter than one evaluation: the second never starts."""
    pool = tmp_path / "pool"
    case(pool / "honest" / "add__m1", TORCH_ADD)
    case(pool / "honest" / "add__m2", TORCH_ADD)
    out = tmp_path / "out"
    assert real_pool.main([str(pool), "--device", "cpu", "--out", str(out), "--timeout", "300", "--jobs", "1",
                           "--deadline", "1"]) == 0
    data = json.loads((out / "rows.json").read_text())
    assert [r["id"] for r in data["rows"]] == ["honest/add__m1"] and data["summary"]["left_by_deadline"] == 1


def test_shards_cover_the_selection_once_and_merge(tmp_path):
    answers = read_pool(cases_pool(tmp_path))[0]
    slices = [real_pool.shard(answers, f"{k}/2") for k in (1, 2)]
    assert sorted(a.id for s in slices for a in s) == sorted(a.id for a in answers) and all(slices)
    with pytest.raises(SystemExit):
        real_pool.shard(answers, "3/2")
    # two shards' rows.json merged into one table; the later row of an id wins
    base = {"pool": "cases", "recorded_class": "honest", "recorded": "pass", "flags": {}}
    one = {"summary": {"command": "python eval/real_pool.py P --shard 1/2", "pool": "P", "device": "cuda",
                       "wall_seconds": 10}, "rows": [{**base, "id": "a", "eval": {"status": "mismatch"}}]}
    two = {"summary": {"command": "python eval/real_pool.py P --shard 2/2", "wall_seconds": 5},
           "rows": [{**base, "id": "b", "eval": {"status": "pass"}}]}
    (tmp_path / "1.json").write_text(json.dumps(one))
    (tmp_path / "2.json").write_text(json.dumps(two))
    (tmp_path / "3.jsonl").write_text(json.dumps({**base, "id": "a", "eval": {"status": "pass"}}) + "\n")
    out = tmp_path / "merged"
    assert real_pool.main(["--from-rows", str(tmp_path / "1.json"), str(tmp_path / "2.json"),
                           str(tmp_path / "3.jsonl"), "--out", str(out)]) == 0
    s = json.loads((out / "rows.json").read_text())["summary"]
    assert s["answers"] == 2 and s["agreement"]["kernel"]["agree"] == 2 and s["wall_seconds"] == 15
    assert s["command"].startswith("python eval/real_pool.py P --shard 1/2; python eval/real_pool.py P --shard 2/2")


def test_a_timed_out_command_is_killed_with_its_children(tmp_path):
    fake = tmp_path / "python"
    marker = tmp_path / "child-ran-on"
    fake.write_text(f"#!/bin/sh\n(sleep 3; touch {marker}) &\nsleep 3\n")
    fake.chmod(0o755)
    kd = real_pool.Kdebug(tmp_path / "data", python=str(fake))
    res = kd.run(["eval", "x"], 0.5, tmp_path)
    assert res["timed_out"] and res["json"] is None and res["exit"] is None
    import time
    time.sleep(3.5)
    assert not marker.exists()  # the background child went with the command


def test_verify_repairs_judges_each_repaired_folder(tmp_path, monkeypatch):
    """--verify-repairs runs only eval and check on the case folders a --repair run wrote (the CPU's
    repairs judged on the GPU), with the gate's sizes apart from the eval's."""
    repairs = tmp_path / "repairs"
    for name, src in (("runA__level2__7", TORCH_ADD), ("runB__level1__3", TORCH_ADD)):
        case(repairs / name, src)
    (repairs / "runA__level2__7.py").write_text(TORCH_ADD)  # the repair file beside its folder: not a case
    replies = {"eval": {"status": "pass", "message": "pass on 9 checks",
                        "verdicts": {"kernel": {"status": "mismatch", "failed": ["noncontiguous"]},
                                     "kernelbench": {"status": "pass", "failed": []}}},
               "check": {"verdict": "accept", "findings": []}}
    fakes = []

    class Fake(FakeKdebug):
        def __init__(self, data_dir):
            super().__init__(replies)
            fakes.append(self)

        def takes(self, command, flag):
            return True

    monkeypatch.setattr(real_pool, "Kdebug", Fake)
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)  # a relative DIR: kdebug runs in OUT, so the folders go by absolute paths
    assert real_pool.main(["--verify-repairs", "repairs", "--match", "runA*", "--sizes", "published",
                           "--checks", "quick", "--semantics", "kernelbench", "--check-sizes", "small",
                           "--out", str(out)]) == 0
    calls = fakes[0].calls
    assert [c[0] for c in calls] == ["eval", "check"] and calls[0][1] == str(repairs / "runA__level2__7")
    assert calls[0][-6:] == ["--semantics", "kernelbench", "--sizes", "published", "--checks", "quick"]
    assert calls[1][-4:] == ["--policy", "kernelbench", "--sizes", "small"]
    rows = json.loads((out / "rows.json").read_text())["rows"]
    assert [r["id"] for r in rows] == ["runA/level2/7"]
    table = (out / "table.md").read_text()
    assert "passes and the gate accepts: 1 of 1; the kernel verdict passes too: 0" in table
    assert "| runA/level2/7 | pass | mismatch | accept |" in table
    with pytest.raises(SystemExit):
        real_pool.parse(["--verify-repairs", str(tmp_path / "nowhere")])


def test_on_a_gpu_verify_gates_first_with_more_jobs_then_evaluates_each_gated_folder(tmp_path, monkeypatch):
    """--device cuda: the gate (reduced sizes, where the builds happen) runs with twice the jobs, and each
    folder's published-size eval starts once its gate has ended; every folder gets one row, in id order."""
    import threading

    repairs = tmp_path / "repairs"
    names = [f"run{c}__level1__{i}" for c in "AB" for i in (1, 2, 3)]
    for name in names:
        case(repairs / name, TORCH_ADD)
    replies = {"eval": {"status": "pass", "message": "pass", "verdicts": {"kernel": {"status": "pass"},
                                                                         "kernelbench": {"status": "pass"}}},
               "check": {"verdict": "accept", "findings": []}}
    lock, running, peak, order = threading.Lock(), {"check": 0, "eval": 0}, {"check": 0, "eval": 0}, []

    class Fake(FakeKdebug):
        def __init__(self, data_dir):
            super().__init__(replies)

        def run(self, args, timeout, cwd):
            import time
            with lock:
                running[args[0]] += 1
                peak[args[0]] = max(peak[args[0]], running[args[0]])
                order.append((args[0], Path(args[1]).name))
            time.sleep(0.2)
            with lock:
                running[args[0]] -= 1
            return super().run(args, timeout, cwd)

    monkeypatch.setattr(real_pool, "Kdebug", Fake)
    out = tmp_path / "out"
    assert real_pool.main(["--verify-repairs", str(repairs), "--device", "cuda", "--jobs", "2",
                           "--gpu-memory-gb", "100", "--out", str(out)]) == 0
    rows = json.loads((out / "rows.json").read_text())["rows"]
    assert [r["id"] for r in rows] == sorted(n.replace("__", "/") for n in names)
    assert all(r["check"]["verdict"] == "accept" and r["verify"]["status"] == "pass" for r in rows)
    for name in names:  # each folder: its gate, then its eval
        assert [c for c, n in order if n == name] == ["check", "eval"]
    assert peak["check"] == 4 and peak["eval"] <= 2


# tests/test_semantics.py's wide Linear task at 16384 features: 1 GiB of weights, 8 MiB of inputs
WIDE_LINEAR_REF = LINEAR_WIDE_REF.replace("batch_size = 64", "batch_size = 128").replace("features = 4096",
                                                                                        "features = 16384")


def test_a_task_s_gpu_memory_need_counts_its_weights_as_well_as_its_inputs(tmp_path):
    """A 16384 x 16384 Linear is 1 GiB of weights beside 8 MiB of inputs: the scheduler that shares a
    GPU between jobs counts both (nothing is allocated to size them)."""
    from debugger.sizes import EVALUATION_OVERHEAD_BYTES, check_memory_estimate

    (tmp_path / "reference.py").write_text(WIDE_LINEAR_REF)
    inputs, params, results = real_pool.task_bytes(tmp_path / "reference.py")
    assert inputs == 128 * 16384 * 4 and params == (16384 * 16384 + 16384) * 4 and results == inputs
    memory = real_pool.DeviceMemory(100 << 30)
    assert memory.need(tmp_path / "reference.py") == (check_memory_estimate(inputs, results)
                                                      + real_pool.PARAM_COPIES * params + EVALUATION_OVERHEAD_BYTES)
    (tmp_path / "broken.py").write_text("raise RuntimeError('no')\n")
    assert memory.need(tmp_path / "broken.py") == 100 << 30  # unsized: the whole budget
    # KernelBench's trials alone hold fewer copies of the inputs and results (no float64 copy, one run) and of the
    # weights (Model's and ModelNew's): what the workers held on an H200 (run 51), with a margin
    trials = memory.need(tmp_path / "reference.py", trials_only=True)
    assert trials == 6 * (inputs + results) + 3 * params + EVALUATION_OVERHEAD_BYTES
    assert trials < memory.need(tmp_path / "reference.py") * 2 // 3


UPSAMPLING_REF = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose3d(4, 8, kernel_size=3, stride=4)

    def forward(self, x):
        return torch.relu(self.up(x))


def get_inputs():
    return [torch.randn(2, 4, 16, 16, 16)]


def get_init_inputs():
    return []
"""


def test_a_task_s_gpu_memory_need_counts_an_output_much_larger_than_its_inputs(tmp_path):
    """A stride-4 transposed 3D convolution makes 8 x 63^3 values of each 4 x 16^3: its checks hold that
    output (several copies), not the inputs' few hundred KiB (such level-1 tasks ran out of memory on an H100
    shared by estimates of the inputs alone)."""
    from debugger.sizes import EVALUATION_OVERHEAD_BYTES

    (tmp_path / "reference.py").write_text(UPSAMPLING_REF)
    inputs, params, results = real_pool.task_bytes(tmp_path / "reference.py")
    assert inputs == 2 * 4 * 16 ** 3 * 4 and results == 2 * 8 * 63 ** 3 * 4
    assert real_pool.DeviceMemory(100 << 30).need(tmp_path / "reference.py") >= 8 * results
    # 512 MiB of inputs: the gate's reduced sizes hold half of them (the GPU's 256 MiB budget), and half the output
    (tmp_path / "big.py").write_text(UPSAMPLING_REF.replace("randn(2, 4, 16, 16, 16)", "randn(8192, 4, 16, 16, 16)"))
    memory = real_pool.DeviceMemory(100 << 30)
    fixed = real_pool.PARAM_COPIES * (4 * 8 * 27 + 8) * 4 + EVALUATION_OVERHEAD_BYTES
    published, small = memory.need(tmp_path / "big.py"), memory.need(tmp_path / "big.py", "small")
    assert published - fixed == 8 * 4096 * (inputs + results) and small - fixed == (published - fixed) // 2


def test_an_evaluation_out_of_gpu_memory_is_judged_again_alone(tmp_path, monkeypatch):
    """--verify-repairs on a GPU: a folder whose published-size eval or gate ran out of memory beside
    others (CUDA's words or kdebug's "crowded out") is judged again once nothing else runs, and later
    folders wait for it; the row keeps the first result."""
    import threading

    repairs = tmp_path / "repairs"
    names = [f"run__level1__{i}" for i in (1, 2, 3, 4)]
    for name in names:
        case(repairs / name, TORCH_ADD)
    oom = {"status": "invalid_input", "message": "reference fails on its own inputs: OutOfMemoryError: CUDA out "
                                                 "of memory. Tried to allocate 11.64 GiB.",
           "verdicts": {"kernel": {"status": "invalid_input"}, "kernelbench": {"status": "invalid_input"}}}
    fine = {"status": "pass", "message": "pass", "verdicts": {"kernel": {"status": "pass"},
                                                              "kernelbench": {"status": "pass"}}}
    lock, state = threading.Lock(), {"running": 0, "evals": [], "alone": []}

    crowded = {"status": "runtime_error", "message": "not judged: 5 of 9 checks could not run (first: kb_trial0: "
                                                     "reference failed: out of GPU memory while other processes held "
                                                     "45.9 of 79.2 GiB", "verdicts": {}}
    gate_oom = {"verdict": "reject", "findings": [{"rule": "fails_evaluation", "severity": "reject", "message":
                                                   "fails the standard checks: runtime_error on 8/8 checks (first: "
                                                   "seed0: candidate raised OutOfMemoryError: CUDA out of memory."}]}
    first = {("eval", "2"): oom, ("eval", "4"): crowded, ("check", "3"): gate_oom}

    class Fake(FakeKdebug):
        def __init__(self, data_dir):
            super().__init__({"check": {"verdict": "accept", "findings": []}, "eval": fine})

        def run(self, args, timeout, cwd):
            import time
            name = Path(args[1]).name
            with lock:
                state["running"] += 1
                again = (args[0], name) in state["evals"]
                state["evals"].append((args[0], name))
                if again:
                    state["alone"].append(state["running"])
            time.sleep(0.3)
            with lock:
                state["running"] -= 1
            reply = self.replies[args[0]] if again else first.get((args[0], name[-1]), self.replies[args[0]])
            return {"exit": 0, "json": reply, "seconds": 0.3, "timed_out": False, "stderr_tail": ""}

    monkeypatch.setattr(real_pool, "Kdebug", Fake)
    out = tmp_path / "out"
    assert real_pool.main(["--verify-repairs", str(repairs), "--device", "cuda", "--jobs", "4",
                           "--gpu-memory-gb", "100", "--out", str(out)]) == 0
    rows = {r["id"]: r for r in json.loads((out / "rows.json").read_text())["rows"]}
    assert all(r["verify"]["status"] == "pass" and r["check"]["verdict"] == "accept" for r in rows.values())
    assert rows["run/level1/2"]["verify"]["alone_after"]["status"] == "invalid_input"
    assert rows["run/level1/4"]["verify"]["alone_after"]["status"] == "runtime_error"
    assert rows["run/level1/3"]["check"]["alone_after"]["verdict"] == "reject"
    assert "alone_after" not in rows["run/level1/1"]["verify"] and "alone_after" not in rows["run/level1/1"]["check"]
    assert len(state["evals"]) == 8 + 3 and state["alone"] == [1, 1, 1]


def test_a_rejected_iteration_keeps_the_gate_s_reasons_in_the_row():
    step = real_pool._step({"recipe": "parameter_init", "outcome": "rejected", "status": "pass", "error_after": 0.0,
                            "message": "pass on 16 checks", "reasons": ["torch_compute: nn.Linear in PyTorch"] * 6})
    assert step["reasons"] == ["torch_compute: nn.Linear in PyTorch"] * 4 and step["message"] == "pass on 16 checks"
    assert "reasons" not in real_pool._step({"recipe": "x", "outcome": "fixed", "message": "m" * 400})


def test_the_row_keeps_what_each_failing_check_said():
    fields = real_pool.eval_fields({"status": "pass", "message": "pass on 9 checks", "checks": [
        {"name": "seed0", "passed": True, "status": "pass"},
        {"name": "noncontiguous", "passed": False, "status": "runtime_error", "message": "candidate raised OOM"},
        {"name": "x100", "passed": False, "status": "skipped", "message": "not applicable"}]})
    assert fields["failed_messages"] == {"noncontiguous": "candidate raised OOM"}
    assert "failed_messages" not in real_pool.eval_fields({"status": "pass", "checks": [{"name": "a", "passed": True}]})



def test_the_row_keeps_the_slowest_checks_phases_and_each_workers_peak_gpu_memory():
    fields = real_pool.eval_fields({"status": "pass", "checks": [
        {"name": "kb_trial0", "passed": True, "seconds": 12.0, "phases": {"compare": 6.0},
         "peak_bytes": {"candidate": 9, "reference": 4}},
        {"name": "kb_trial1", "passed": True, "seconds": 15.0, "phases": {"compare": 7.5},
         "peak_bytes": {"candidate": 8, "reference": 6}}]})
    assert fields["slowest_check"] == {"name": "kb_trial1", "seconds": 15.0, "phases": {"compare": 7.5}}
    assert fields["peak_bytes"] == {"candidate": 9, "reference": 6}


def test_verify_resume_judges_only_the_folders_an_earlier_command_left(tmp_path, monkeypatch):
    """--verify-repairs --resume (a second 10-minute device command on the same machine, OUT and its builds
    kept): folders with a row in OUT/rows.jsonl are not judged again, and the table holds them all."""
    repairs = tmp_path / "repairs"
    for i in (1, 2):
        case(repairs / f"run__level1__{i}", TORCH_ADD)
    out = tmp_path / "out"
    out.mkdir()
    earlier = {"id": "run/level1/1", "case_dir": "x", "flags": {}, "semantics": "kernelbench",
               "verify": {"status": "pass", "verdicts": {}}, "check": {"verdict": "accept"}}
    (out / "rows.jsonl").write_text(json.dumps(earlier) + "\n")
    fakes = []

    class Fake(FakeKdebug):
        def __init__(self, data_dir):
            super().__init__({"check": {"verdict": "accept", "findings": []},
                              "eval": {"status": "pass", "message": "pass", "verdicts": {"kernel": {"status": "pass"}}}})
            fakes.append(self)

    monkeypatch.setattr(real_pool, "Kdebug", Fake)
    assert real_pool.main(["--verify-repairs", str(repairs), "--device", "cuda", "--resume", "--out", str(out)]) == 0
    assert {Path(c[1]).name for c in fakes[0].calls} == {"run__level1__2"}
    rows = json.loads((out / "rows.json").read_text())["rows"]
    assert [r["id"] for r in rows] == ["run/level1/1", "run/level1/2"]
    assert len((out / "rows.jsonl").read_text().splitlines()) == 2


def test_a_waiting_evaluation_goes_before_a_new_gate_that_would_fit():
    """The shared GPU's admission: a gate that would fit beside those running still waits while an
    evaluation (its gate ended, its build done) waits for memory, so the pipeline drains in order."""
    import threading
    import time

    memory = real_pool.DeviceMemory(10)
    order, first = [], memory.hold(6, real_pool.GATE)
    first.__enter__()

    def take(name, need, rank):
        with memory.hold(need, rank):
            order.append(name)
            time.sleep(0.05)

    evaluation = threading.Thread(target=take, args=("eval", 6, real_pool.EVAL))
    evaluation.start()
    while memory.waiting[real_pool.EVAL] == 0:
        time.sleep(0.01)
    gate = threading.Thread(target=take, args=("gate", 2, real_pool.GATE))
    gate.start()
    time.sleep(0.2)
    assert order == []  # the gate of 2 fits beside the first (6 + 2 <= 10) but the evaluation waits
    first.__exit__(None, None, None)
    evaluation.join(5), gate.join(5)
    assert order == ["eval", "gate"]
    assert memory.need(Path("/nonexistent/reference.py")) == 10


def test_a_campaign_leaves_out_what_earlier_runs_judged_and_runs_again_what_they_could_not(tmp_path):
    base = {"pool": "cases", "recorded_class": "nearmiss", "recorded": "fail", "flags": {}}

    def row(id_, status, message="", **kb):
        return {**base, "id": id_, "eval": {"status": status, "message": message,
                                            "kernelbench": {"status": kb.get("kb", status)}}}
    earlier = [row("a", "pass"), row("b", "mismatch"), row("c", "compile_error"),
               row("d", "runtime_error", "CUDA error: out of memory"), row("e", "invalid_input"),
               {**base, "id": "f", "eval": {"error": "timed out"}}, row("g", "mismatch", kb="pass"),
               # only PyTorch's advice kept of a CUDA error (a kdebug before 2026-12-07): it says nothing of the answer
               row("h", "runtime_error", "candidate raised AcceleratorError: Compile with `TORCH_USE_CUDA_DSA` to "
                                         "enable device-side assertions.")]
    rows = tmp_path / "earlier.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in earlier))
    assert real_pool.judged_ids([rows], "kernelbench") == {"a", "b", "c", "g"}
    assert real_pool.verdict(earlier[3], "kernelbench") == real_pool.verdict(earlier[7], "kernelbench") == "no_result"
    # a later run that judged d wins over the earlier out-of-memory row
    later = tmp_path / "later.json"
    later.write_text(json.dumps({"summary": {}, "rows": [row("d", "mismatch")]}))
    assert real_pool.judged_ids([rows, later], "kernelbench") == {"a", "b", "c", "d", "g"}
    # nor does a later file that could not judge an answer undo an earlier verdict
    cpu = tmp_path / "cpu.jsonl"
    cpu.write_text(json.dumps({**base, "id": "a", "not_runnable": "inline PTX"}) + "\n")
    assert "a" in real_pool.judged_ids([rows, cpu], "kernelbench")
    # the selection: the tiny pool's answers less those its earlier rows judged
    pool = cases_pool(tmp_path)
    ids = sorted(a.id for a in read_pool(pool)[0])
    judged = tmp_path / "pool_rows.jsonl"
    judged.write_text(json.dumps(row(ids[0], "pass")) + "\n")
    out = tmp_path / "out"
    # --deadline 0: no answer starts, and the summary counts what was chosen
    assert real_pool.main([str(pool), "--skip-judged", str(judged), "--deadline", "0", "--out", str(out)]) == 0
    summary = json.loads((out / "rows.json").read_text())["summary"]
    assert summary["left_by_deadline"] == len(ids) - 1
    assert "less 1 earlier runs' judged answers" in summary["selection"]
    with pytest.raises(SystemExit):  # a rows file that is not there: a one-line error, nothing run
        real_pool.parse([str(pool), "--skip-judged", str(tmp_path / "missing.jsonl")])


def test_memory_fit_lists_the_rows_that_held_more_than_they_are_admitted_by(tmp_path):
    """eval/memory_fit.py: each agreement row's summed worker peaks against the task's admission need now."""
    spec = importlib.util.spec_from_file_location("memory_fit", REPO / "eval" / "memory_fit.py")
    memory_fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(memory_fit)
    (tmp_path / "KernelBench" / "level1").mkdir(parents=True)
    reference = tmp_path / "KernelBench" / "level1" / "1_Wide.py"
    reference.write_text(WIDE_LINEAR_REF)
    need = real_pool.DeviceMemory(100 << 30).need(reference, trials_only=True)

    def row(name, peak):
        return {"id": name, "problem": "level1/1 1_Wide", "memory_estimate_bytes": 1,
                "eval": {"peak_bytes": {"candidate": peak - peak // 2, "reference": peak // 2}}}

    rows = [row("fits", need - 1), row("over", need + 1), {"id": "no_peak", "problem": "level1/1 1_Wide", "eval": {}}]
    result = memory_fit.fit(rows, tmp_path)
    assert [r["id"] for r in result["rows"]] == ["fits", "over"] and [r["id"] for r in result["short"]] == ["over"]
    assert result["rows"][0]["need"] == need and result["unsized"] == []
    assert [r["id"] for r in result["over_recorded"]] == ["fits", "over"]  # both ran under an estimate of 1 byte
    assert memory_fit.main([str(tmp_path / "nowhere"), str(tmp_path / "rows.jsonl")]) == 2
