"""kdebug ingest: the three log formats (built here, malformed records included), classification,
queueing with case folders, re-ingest idempotence, and failed -> passing pairs distilled into drafts.
No kernel runs: ingest trusts what the logs recorded."""
import json
import tomllib
from pathlib import Path

import pytest

from debugger.cli import main
from ingest import ingest
from ingest.attempt import Attempt
from ingest.classify import classify
from ingest.kernelbench import _results_by_sample
from debugger.batch.queue import Queue

REPO = Path(__file__).resolve().parents[1]
REF = (REPO / "examples/softmax/reference.py").read_text()
BAD = (REPO / "examples/softmax/candidate.py").read_text()
FIXED = (REPO / "examples/softmax/fixed.py").read_text()
ADD_REF = (REPO / "tests/data/kernels/add_reference.py").read_text()
ADD = (REPO / "tests/data/kernels/add_kernel.py").read_text()
SYNTAX_ERROR = "import torch\nclass ModelNew(:\n    pass\n"


def run(path, tmp_path, **kw):
    return ingest(path, queue_dir=tmp_path / "queue", drafts_dir=tmp_path / "drafts", **kw)


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def jsonl_log(folder: Path) -> Path:
    (folder / "problems").mkdir(parents=True, exist_ok=True)
    (folder / "problems" / "add.py").write_text(ADD_REF)
    return write_jsonl(folder / "attempts.jsonl", [
        {"problem_id": "softmax", "reference_src": REF, "candidate_src": BAD, "compiled": True, "correct": False,
         "max_difference": ["1.017", "0.5"], "model": "m", "tokens": {"prompt": 10, "completion": 20}, "attempt": 1},
        {"problem_id": "softmax", "reference_src": REF, "candidate_src": FIXED, "compiled": True, "correct": True,
         "model": "m", "tokens": 40, "attempt": 2},
        {"problem_id": "add", "reference_path": "problems/add.py", "candidate_src": ADD, "compiled": True,
         "correct": True},
        {"problem_id": "add", "reference_path": "problems/add.py", "candidate_src": SYNTAX_ERROR, "compiled": False,
         "error": "SyntaxError: invalid syntax (line 2)"},
        {"problem_id": "add", "reference_src": ADD_REF, "candidate_src": ADD.replace("mask=mask)", ")"),
         "compiled": True, "correct": False, "error": "RuntimeError: CUDA error: an illegal memory access"},
        {"problem_id": "add", "reference_src": ADD_REF, "candidate_src": ADD + "\n# v2\n", "compiled": True,
         "correct": False, "error": "Output shape mismatch: Expected torch.Size([1000]), got torch.Size([1])"},
        {"problem_id": "add", "reference_src": ADD_REF, "candidate_src": ADD + "\n# v3\n", "timed_out": True},
        {"problem_id": "add", "reference_src": ADD_REF, "candidate_src": ADD + "\n# v4\n"},
        "",
        "{this is not json",
        {"problem_id": "add", "compiled": True},
        {"problem_id": "add", "candidate_src": ADD, "compiled": "maybe"},
        {"problem_id": "add", "candidate_src": ADD, "reference_path": "problems/missing.py"},
        ["a", "list"],
    ])


# -- our JSONL schema ----------------------------------------------------------------------------
def test_jsonl_classes_queue_drafts_and_malformed(tmp_path):
    log = jsonl_log(tmp_path)
    r = run(log, tmp_path)
    assert r.classes == {"compile_error": 1, "runtime_error": 1, "interface_error": 1, "numerical_mismatch": 1,
                         "timeout": 1, "correct": 2, "unverifiable": 1}
    assert (r.attempts, r.new, r.duplicates_skipped, r.queued, r.drafts) == (8, 8, 0, 1, 1)
    where = {m.location: m.reason for m in r.malformed}
    assert set(where) == {f"{log}:{n}" for n in (10, 11, 12, 13, 14)}
    assert "not valid JSON" in where[f"{log}:10"]
    assert "candidate_src" in where[f"{log}:11"]
    assert "compiled" in where[f"{log}:12"]
    assert "reference_path" in where[f"{log}:13"]
    assert "JSON object" in where[f"{log}:14"]

    queue = Queue(tmp_path / "queue")
    [entry] = queue.entries()
    assert entry["status"] == "queued" and entry["problem_id"] == "softmax"
    case = Path(entry["case_dir"])
    assert (case / "reference.py").read_text() == REF and (case / "candidate.py").read_text() == BAD
    meta = tomllib.loads((case / "case.toml").read_text())
    prov = meta["provenance"]
    assert prov["location"] == f"{log}:1" and prov["class"] == "numerical_mismatch" and prov["model"] == "m"
    assert prov["max_difference"] == pytest.approx(1.017) and prov["tokens"] == 30

    from debugger.case import load_case
    assert load_case(case).candidate_src == BAD  # an ordinary case folder


def test_reingest_adds_nothing_twice(tmp_path):
    log = jsonl_log(tmp_path)
    first = run(log, tmp_path)
    again = run(log, tmp_path)
    assert again.attempts == first.attempts and again.new == 0 and again.duplicates_skipped == first.attempts
    assert again.queued == 0 and again.drafts == 0
    assert len(Queue(tmp_path / "queue").entries()) == 1
    assert len(list((tmp_path / "drafts").glob("*.md"))) == 1
    # a copy of the same log elsewhere is the same attempts
    copy = tmp_path / "copy" / "attempts.jsonl"
    copy.parent.mkdir()
    copy.write_text(log.read_text())
    (copy.parent / "problems").mkdir()
    (copy.parent / "problems" / "add.py").write_text(ADD_REF)
    third = run(copy, tmp_path)
    assert third.new == 0 and third.queued == 0 and third.drafts == 0


def test_pair_distilled_into_a_valid_draft(tmp_path):
    from debugger.knowledge.loader import load_pattern

    r = run(jsonl_log(tmp_path), tmp_path)
    [path] = r.draft_paths
    assert Path(path).parent == tmp_path / "drafts"
    pattern = load_pattern(Path(path))
    assert pattern.status == "draft" and pattern.bug_class == "numerical_overflow"
    assert "no_max_subtraction" in pattern.symptoms and pattern.operators == ["softmax"]
    prov = pattern.provenance[0]
    assert prov.case.endswith(":1 -> " + str(tmp_path / "attempts.jsonl") + ":2")
    assert "tl.max" in prov.diff and prov.backend == "log:m" and prov.tokens == 40
    assert pattern.example.before == BAD.rstrip() + "\n" or pattern.example.before.strip() == BAD.strip()
    assert pattern.example.after.strip() == FIXED.strip()
    # the draft never lands in the repository's knowledge base
    assert not any(p.name == Path(path).name for p in (REPO / "kb").rglob("*.md"))


REWRITE = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _vec_add(x, y, z, count, TILE: tl.constexpr):
    start = tl.program_id(axis=0) * TILE
    idx = start + tl.arange(0, TILE)
    valid = idx < count
    tl.store(z + idx, tl.load(x + idx, mask=valid) + tl.load(y + idx, mask=valid), mask=valid)


def launch(x, y):
    z = torch.empty_like(x)
    _vec_add[(triton.cdiv(x.numel(), 128),)](x, y, z, x.numel(), TILE=128)
    return z


class ModelNew(nn.Module):
    def forward(self, a, b):
        return launch(a.contiguous(), b.contiguous())
"""


def test_rewrite_is_not_a_draft(tmp_path):
    rewrite = REWRITE
    log = write_jsonl(tmp_path / "l.jsonl", [
        {"problem_id": "add", "reference_src": ADD_REF, "candidate_src": ADD.replace("a + b", "a - b"),
         "compiled": True, "correct": False},
        {"problem_id": "add", "reference_src": ADD_REF, "candidate_src": rewrite, "compiled": True, "correct": True},
    ])
    r = run(log, tmp_path)
    assert r.drafts == 0 and r.drafts_skipped == {"the passing attempt is a rewrite, not a fix": 1}
    assert r.queued == 1


# -- KernelBench run folders ---------------------------------------------------------------------
def kernelbench_tree(root: Path, shape: str = "list") -> tuple[Path, Path]:
    problems = root / "KernelBench-checkout"
    level = problems / "KernelBench" / "level1"
    level.mkdir(parents=True)
    (level / "19_Softmax.py").write_text(REF)
    (level / "20_Add.py").write_text(ADD_REF)
    run_dir = root / "runs" / "my_run"
    run_dir.mkdir(parents=True)
    for name, src in {"level_1_problem_19_sample_0_kernel.py": BAD, "level_1_problem_19_sample_1_kernel.py": FIXED,
                      "level_1_problem_20_sample_0_kernel.py": SYNTAX_ERROR,
                      "level_1_problem_21_sample_0_kernel.py": ADD}.items():
        (run_dir / name).write_text(src)
    (run_dir / "generation_config.yaml").write_text("model_name: deepseek-coder\nlevel: 1\n")
    bad = {"sample_id": 0, "compiled": True, "correctness": False, "runtime": -1.0,
           "metadata": {"hardware": "H100", "max_difference": ["1.017000", "0.900000"],
                        "avg_difference": ["0.1", "0.1"], "correctness_issue": "Output mismatch",
                        "correctness_trials": "(0 / 5)"}}
    good = {"sample_id": 1, "compiled": True, "correctness": True, "runtime": 12.5,
            "metadata": {"correctness_trials": "(5 / 5)"}}
    compile_fail = {"sample_id": 0, "compiled": False, "correctness": False,
                    "metadata": {"compilation_error_name": "SyntaxError",
                                 "compilation_error": "invalid syntax (line 2)"}}
    if shape == "list":
        results = {"19": [bad, good], "20": [compile_fail], "22": [good], "23": ["not an object"]}
    elif shape == "nested":
        results = {"19": {"0": bad, "1": good}, "20": {"0": compile_fail}}
    else:  # one result per problem (older KernelBench)
        results = {"19": bad, "20": compile_fail}
    (run_dir / "eval_results.json").write_text(json.dumps(results, indent=2))
    return run_dir, problems


def test_kernelbench_run_folder(tmp_path):
    run_dir, problems = kernelbench_tree(tmp_path)
    r = run(run_dir, tmp_path, problems=problems)
    assert r.units == {"kernelbench": 1}
    assert r.classes["numerical_mismatch"] == 1 and r.classes["correct"] == 1
    assert r.classes["compile_error"] == 1 and r.classes["unverifiable"] == 1  # problem 21: no eval result
    assert r.queued == 1 and r.drafts == 1
    where = {m.location: m.reason for m in r.malformed}
    eval_file = run_dir / "eval_results.json"
    assert "no kernel file" in where[f"{eval_file}#22/1"]
    assert "result object" in where[f"{eval_file}#23[0]"]
    [entry] = Queue(tmp_path / "queue").entries()
    assert entry["problem_id"] == "level1/19"
    prov = tomllib.loads((Path(entry["case_dir"]) / "case.toml").read_text())["provenance"]
    assert prov["model"] == "deepseek-coder" and prov["max_difference"] == pytest.approx(1.017)
    assert prov["reference_path"].endswith("19_Softmax.py")


def test_kernelbench_without_problems_is_classified_but_not_queued(tmp_path):
    run_dir, _ = kernelbench_tree(tmp_path)
    r = run(run_dir, tmp_path)
    assert r.classes["numerical_mismatch"] == 1 and r.queued == 0
    assert list(r.not_queued) == ["no reference (for KernelBench runs pass --problems DIR)"]


@pytest.mark.parametrize("shape", ["nested", "single"])
def test_kernelbench_eval_result_shapes(tmp_path, shape):
    run_dir, problems = kernelbench_tree(tmp_path, shape)
    r = run(tmp_path / "runs", tmp_path, problems=problems)  # the runs/ folder above the run
    assert r.classes["numerical_mismatch"] == 1 and r.classes["compile_error"] == 1 and r.queued == 1
    assert not r.malformed


def test_kernelbench_shapes_parse_alike():
    one = {"sample_id": 2, "compiled": True, "correctness": True}
    assert list(_results_by_sample(one, "w")) == [(2, one)]
    assert list(_results_by_sample([one], "w")) == [(2, one)]
    assert list(_results_by_sample({"2": one}, "w")) == [(2, one)]


def test_broken_eval_results_is_reported_not_fatal(tmp_path):
    run_dir, problems = kernelbench_tree(tmp_path)
    (run_dir / "eval_results.json").write_text("{broken")
    r = run(run_dir, tmp_path, problems=problems)
    assert [m.location for m in r.malformed] == [f"{run_dir / 'eval_results.json'}:1"]
    assert r.classes["unverifiable"] == 4 and r.queued == 0


def detailed_run(root: Path, results_name: str = "detailed_results.json", run_info: dict | None = None,
                 folder: str = "opus_level1_20250903") -> Path:
    """A run folder of the other layout: problem_<P>_kernel.py beside detailed_results.json."""
    run_dir = root / "runs" / folder
    run_dir.mkdir(parents=True)
    for pid, src in {19: BAD, 20: SYNTAX_ERROR, 21: FIXED, 22: ADD, 23: ADD + "\n# v2\n"}.items():
        (run_dir / f"problem_{pid}_kernel.py").write_text(src)
    mismatch = {"compiled": True, "correctness": False, "runtime": -1.0,
                "metadata": {"hardware": "NVIDIA A100-SXM4-40GB", "device": "0",
                             "max_difference": "['1.017000', '0.900000']", "avg_difference": "['0.1', '0.1']",
                             "correctness_issue": "Output mismatch", "correctness_trials": "(0 / 5)"}}
    results = [
        {"problem_id": 19, "success": True, "eval_result": mismatch},
        {"problem_id": 20, "success": True, "eval_result": {"compiled": False, "correctness": False, "metadata": {
            "compilation_error": "Error building extension 'fused_op'"}}},
        {"problem_id": 21, "success": True, "eval_result": {"compiled": True, "correctness": True, "runtime": 6.8,
                                                            "metadata": {"correctness_trials": "(5 / 5)"}}},
        {"problem_id": 23, "success": False, "eval_time": 0,
         "error": "Error processing problem 23: 'NoneType' object has no attribute 'compiled'"},
        {"problem_id": 24, "success": True, "eval_result": mismatch},
        "not an object",
    ]
    info = {"level": 1, "model": "claude-opus-test"} if run_info is None else run_info
    data = {"results": results} if results_name == "checkpoint.json" else {
        "run_info": info, "config": {"model_name": "config-model"}, "results": results, "summary": {}}
    (run_dir / results_name).write_text(json.dumps(data))
    return run_dir


def test_detailed_results_layout(tmp_path):
    _, problems = kernelbench_tree(tmp_path)  # references 19 (softmax) and 20 (add) at level 1
    run_dir = detailed_run(tmp_path)
    r = run(run_dir, tmp_path, problems=problems)
    assert r.units == {"kernelbench": 1} and r.attempts == 5
    assert r.classes == {"compile_error": 1, "runtime_error": 0, "interface_error": 0, "numerical_mismatch": 1,
                         "timeout": 0, "correct": 1, "unverifiable": 2}
    where = {m.location: m.reason for m in r.malformed}
    results = run_dir / "detailed_results.json"
    assert set(where) == {f"{results}#24/0", f"{results}#results[5]"}
    assert "no kernel file for problem 24" in where[f"{results}#24/0"]
    [entry] = Queue(tmp_path / "queue").entries()
    assert entry["problem_id"] == "level1/19"
    case = Path(entry["case_dir"])
    assert (case / "candidate.py").read_text() == BAD and (case / "reference.py").read_text() == REF
    prov = tomllib.loads((case / "case.toml").read_text())["provenance"]
    assert prov["model"] == "claude-opus-test" and prov["max_difference"] == pytest.approx(1.017)
    assert prov["location"] == str(run_dir / "problem_19_kernel.py")
    # the harness error is no verdict on the kernel; problem 22 has no result at all
    rows = {row["problem_id"]: row for row in Queue(tmp_path / "queue").db["attempts"].rows}
    assert rows["level1/23"]["class"] == "unverifiable" and "evaluation itself failed" in rows["level1/23"]["reason"]
    assert rows["level1/22"]["class"] == "unverifiable" and rows["level1/20"]["class"] == "compile_error"


def test_detailed_layout_found_under_runs_and_from_its_results_file(tmp_path):
    _, problems = kernelbench_tree(tmp_path)  # runs/my_run (the eval_results.json layout) as well
    run_dir = detailed_run(tmp_path)
    r = run(tmp_path / "runs", tmp_path / "a", problems=problems)
    assert r.units == {"kernelbench": 2} and r.attempts == 4 + 5 and not r.skipped_files
    # the same softmax answer with the same verdict in both runs is one attempt, queued once
    assert r.duplicates_skipped == 1 and r.queued == 1
    r = run(run_dir / "detailed_results.json", tmp_path / "b", problems=problems)
    assert r.units == {"kernelbench": 1} and r.attempts == 5 and r.queued == 1


def test_detailed_layout_checkpoint_and_level_from_the_folder_name(tmp_path):
    _, problems = kernelbench_tree(tmp_path)
    run_dir = detailed_run(tmp_path, "checkpoint.json", folder="opus4_level1_20250903_065424")
    r = run(run_dir, tmp_path, problems=problems)
    assert r.attempts == 5 and r.queued == 1 and r.classes["numerical_mismatch"] == 1
    assert Queue(tmp_path / "queue").entries()[0]["problem_id"] == "level1/19"


def test_detailed_layout_without_a_level_is_reported(tmp_path):
    run_dir = detailed_run(tmp_path, run_info={"model": "m"}, folder="opus_run")
    r = run(run_dir, tmp_path)
    assert r.attempts == 0
    assert {m.location for m in r.malformed} >= {str(run_dir / f"problem_{p}_kernel.py") for p in (19, 20, 21)}
    assert all("no level" in m.reason for m in r.malformed if m.location.endswith("_kernel.py"))


def test_max_difference_written_as_a_list_repr():
    from ingest.fields import FieldError, as_float

    assert as_float("['1.024952', '0.958375', '1.066720']", "m") == pytest.approx(1.06672)
    assert as_float("[]", "m") is None
    with pytest.raises(FieldError):
        as_float("[1, oops", "m")


# -- multi-turn traces ---------------------------------------------------------------------------
def traces_file(path: Path) -> Path:
    records = [
        {"sample_key": "kernelbench_19", "source": "kernelbench", "level": 1, "problem_id": 19, "pytorch_code": REF,
         "num_turns": 2, "stop_reason": "success",
         "turns": [
             {"turn": 1, "thinking": "...", "triton_code": BAD, "feedback_given": "Incorrect output: Output mismatch",
              "result": {"correctness": False, "speedup": 0.0, "error": None}},
             {"turn": 2, "full_completion": f"Here it is:\n<triton>\n```python\n{FIXED}```\n</triton>",
              "feedback_given": None, "result": {"correctness": True, "speedup": 1.3, "error": None}},
         ]},
        {"instance_id": "add_1", "messages": [
            {"role": "system", "content": "You write Triton kernels."},
            {"role": "user", "content": f"Optimise this:\n```python\n{ADD_REF}```"},
            {"role": "assistant", "content": f"```python\n{SYNTAX_ERROR}```"},
            {"role": "user", "content": "## Evaluation Results\nCompilation Failed: SyntaxError"},
            {"role": "assistant", "content": f"```python\n{ADD}```"}],
         "turn_history": [{"turn": 1, "compiled": False, "correct": False, "compilation_error": "SyntaxError: bad"},
                          {"turn": 2, "compiled": True, "correct": True}]},
        "a string, not a record",
        {"problem_id": 7, "turns": "not a list"},
        {"problem_id": 8, "pytorch_code": ADD_REF, "turns": [42, {"code": ADD, "result": "not an object"}]},
    ]
    path.write_text(json.dumps(records, indent=1))
    return path


def test_traces_turns_classified_queued_and_paired(tmp_path):
    path = traces_file(tmp_path / "traces.json")
    r = run(path, tmp_path)
    assert r.units == {"traces": 1}
    assert r.classes["numerical_mismatch"] == 1 and r.classes["correct"] == 2 and r.classes["compile_error"] == 1
    assert r.queued == 1
    # both pairs are found; the syntax-error turn cannot be a draft (it does not parse)
    assert r.drafts == 1 and r.drafts_skipped == {"a source does not parse or defines no ModelNew": 1}
    where = {m.location: m.reason for m in r.malformed}
    assert set(where) == {f"{path}#2", f"{path}#3", f"{path}#4.turns[0]", f"{path}#4.turns[1]"}
    [entry] = Queue(tmp_path / "queue").entries()
    assert entry["problem_id"] == "level1/19"
    prov = tomllib.loads((Path(entry["case_dir"]) / "case.toml").read_text())["provenance"]
    assert prov["location"] == f"{path}#0.turns[0]" and "Incorrect output" in prov["feedback"]


def test_traces_as_jsonl_and_invalid_json(tmp_path):
    path = tmp_path / "traces.jsonl"
    rec = json.loads(traces_file(tmp_path / "t.json").read_text())[0]
    path.write_text(json.dumps(rec) + "\n{oops\n")
    r = run(path, tmp_path)
    assert r.units == {"traces": 1} and r.attempts == 2 and r.queued == 1
    assert [m.location for m in r.malformed] == [f"{path}:2"]
    broken = tmp_path / "broken.json"
    broken.write_text('[{"problem_id": 1,')
    r = run(broken, tmp_path)
    assert r.attempts == 0 and r.malformed[0].location.startswith(f"{broken}:")


def test_kernelbook_class_names_are_renamed(tmp_path):
    ref = ADD_REF.replace("class Model(", "class AddLayer(")
    cand = ADD.replace("class ModelNew(", "class AddLayerNew(").replace("a + b", "a * b")
    log = write_jsonl(tmp_path / "k.jsonl", [{"problem_id": "p", "reference_src": ref, "candidate_src": cand,
                                             "compiled": True, "correct": False}])
    r = run(log, tmp_path)
    assert r.queued == 1
    case = Path(Queue(tmp_path / "queue").entries()[0]["case_dir"])
    assert "class Model(" in (case / "reference.py").read_text()
    assert "class ModelNew(" in (case / "candidate.py").read_text()
    assert tomllib.loads((case / "case.toml").read_text())["provenance"]["renamed"] == {
        "reference": "AddLayer", "candidate": "AddLayerNew"}


# -- detection, the command ----------------------------------------------------------------------
def test_auto_reads_a_folder_of_mixed_logs(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    kernelbench_tree(logs)
    jsonl_log(logs)
    traces_file(logs / "traces.json")
    (logs / "notes.json").write_text('{"unrelated": true}')
    r = run(logs, tmp_path, problems=logs / "KernelBench-checkout")
    assert r.units == {"kernelbench": 1, "jsonl": 1, "traces": 1}
    assert r.skipped_files == [str(logs / "notes.json")]
    assert r.queued == 3


def test_cli_json_and_unusable_path(tmp_path, capsys):
    log = jsonl_log(tmp_path)
    code = main(["ingest", str(log), "--queue", str(tmp_path / "q"), "--drafts", str(tmp_path / "d"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["queued"] == 1 and out["drafts"] == 1 and out["malformed_count"] == 5
    assert out["duplicates_skipped"] == 0 and out["classes"]["numerical_mismatch"] == 1
    assert {"location", "reason"} <= set(out["malformed"][0])

    code = main(["ingest", str(tmp_path / "nope"), "--queue", str(tmp_path / "q")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"kdebug: no such file or folder: {tmp_path / 'nope'}"]

    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["ingest", str(empty), "--queue", str(tmp_path / "q")]) == 2
    assert "no generation logs" in capsys.readouterr().err
    assert main(["ingest", str(log), "--format", "kernelbench", "--queue", str(tmp_path / "q")]) == 2
    assert main(["ingest", str(log), "--problems", str(tmp_path / "nope"), "--queue", str(tmp_path / "q")]) == 2


# -- classification ------------------------------------------------------------------------------
def attempt(**kw) -> Attempt:
    base = dict(location="x", source="x", format="jsonl", problem_id="p", history="h", candidate_src=ADD)
    return Attempt(**{**base, **kw})


@pytest.mark.parametrize("fields, expected", [
    ({"correct": True}, "correct"),
    ({"compiled": False, "error": "triton.compiler.errors.CompilationError: at 3:4"}, "compile_error"),
    ({"compiled": False, "error": "CUDA error: an illegal memory access was encountered"}, "runtime_error"),
    ({"compiled": False, "error": "Syntax error in custom generated code or ModelNew not found"}, "interface_error"),
    ({"error": "CompilationError: at 19:12:\nAssertionError()\nTraceback (most recent call last): ..."}, "compile_error"),
    ({"compiled": True, "correct": False, "error": "RuntimeError: shape '[4, 4]' is invalid"}, "runtime_error"),
    ({"compiled": True, "correct": False, "error": "TypeError: forward() takes 2 positional arguments but 3 were given"},
     "interface_error"),
    ({"compiled": True, "correct": False, "error": "Output mismatch"}, "numerical_mismatch"),
    ({"compiled": True, "correct": False, "max_difference": 3.5}, "numerical_mismatch"),
    ({"correct": False}, "numerical_mismatch"),
    ({"error": "Evaluation timed out after 180s"}, "timeout"),
    ({"timed_out": True}, "timeout"),
    ({"candidate_src": None, "error": "No code extracted"}, "interface_error"),
    ({}, "unverifiable"),
])
def test_classify(fields, expected):
    assert classify(attempt(**fields))[0] == expected
