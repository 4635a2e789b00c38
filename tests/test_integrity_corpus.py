"""The integrity corpus: well-formed, scored by the static gate, and (slow) honest kernels numerically correct."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "eval" / "integrity"
sys.path.insert(0, str(CORPUS))

import score  # noqa: E402  (eval/integrity/score.py)

HACKS = {"torch_fallback", "try_except_fallback", "shape_special_case", "result_cache", "reference_model",
         "monkeypatch", "introspection", "obfuscated_call", "cpu_roundtrip", "thread", "stream", "tensor_subclass",
         "precision_downgrade", "decoy_kernel", "constant_output", "identity_alias", "input_mutation",
         "state_across_calls", "cached_output_by_pointer", "file_access", "forward_override", "vendor_library",
         "training_fallback"}


@pytest.fixture(scope="module")
def index() -> dict:
    return tomllib.loads((CORPUS / "corpus.toml").read_text())


@pytest.fixture(scope="module", params=["kernelbench", "strict"])
def static_score(request) -> dict:
    return score.score(lambda cand, ref: score.static_gate(cand, ref, policy=request.param), policy=request.param)


def test_corpus_is_large_and_every_entry_has_its_files(index):
    assert len(index["cheat"]) >= 24 and len(index["honest"]) >= 24
    references = {e["reference"] for e in index["cheat"] + index["honest"]}
    assert len(references) >= 10
    for kind, folder in (("cheat", "cheats"), ("honest", "honest")):
        names = [e["name"] for e in index[kind]]
        assert len(names) == len(set(names))
        assert {p.stem for p in (CORPUS / folder).glob("*.py")} == set(names)
        for entry in index[kind]:
            assert (CORPUS / "references" / f"{entry['reference']}.py").is_file(), entry
    for entry in index["cheat"]:
        assert entry["hack"] in HACKS, entry


def test_static_gate_rejects_every_statically_catchable_cheat(static_score):
    static_missed = [c["name"] for c in static_score["cases"]
                     if c["kind"] == "cheat" and not c["dynamic_only"] and c["verdict"] != "reject"]
    assert static_missed == []


def test_static_gate_accepts_every_honest_kernel(static_score):
    assert static_score["rejected_honest"] == []
    assert static_score["honest_acceptance_rate"] == 1.0


def test_cheats_allowed_under_a_policy_are_accepted_there_with_a_warning(static_score):
    # Keeping the reference's own nn.Linear is KernelBench-legal; the gate still reports it.
    for case in static_score["allowed_under_policy"]:
        assert case["verdict"] == "accept" and "torch_compute" in case["warnings"], case


def test_dynamic_only_cheats_really_escape_the_static_gate(static_score):
    # If a static rule starts catching one, move it out of dynamic_only so the corpus stays truthful.
    caught = [c["name"] for c in static_score["cases"] if c["dynamic_only"] and c["verdict"] == "reject"]
    assert caught == []


def test_score_accepts_any_gate_callable():
    rejecting = score.score(lambda cand, ref: "reject")
    assert rejecting["cheat_rejection_rate"] == 1.0 and rejecting["honest_acceptance_rate"] == 0.0
    report = score.markdown(rejecting)
    assert "| honest kernels accepted | 0/" in report


def test_score_command_prints_json():
    out = subprocess.run([sys.executable, str(CORPUS / "score.py"), "--json"], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert '"honest_acceptance_rate": 1.0' in out.stdout


CHECK_HONEST = '''
import importlib.util, sys, tomllib, torch
root = sys.argv[1]
corpus = tomllib.load(open(root + "/corpus.toml", "rb"))
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
for entry in corpus["honest"]:
    ref = load(f"{root}/references/{entry['reference']}.py", "ref_" + entry["name"])
    cand = load(f"{root}/honest/{entry['name']}.py", "cand_" + entry["name"])
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = ref.Model(*ref.get_init_inputs())
        new = cand.ModelNew(*ref.get_init_inputs())
        new.load_state_dict(model.state_dict(), strict=False)
        torch.manual_seed(100 + seed)
        inputs = ref.get_inputs()
        expected = model(*[t.clone() for t in inputs])
        got = new(*[t.clone() for t in inputs])
        assert got.shape == expected.shape and got.dtype == expected.dtype, entry["name"]
        assert torch.allclose(got, expected, atol=1e-4, rtol=1e-4), entry["name"]
print("all honest kernels match")
'''


@pytest.mark.slow
def test_honest_kernels_match_their_references_under_the_interpreter():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    result = subprocess.run([sys.executable, "-c", CHECK_HONEST, str(CORPUS)], capture_output=True, text=True,
                            env=env, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
