"""Settings, resolved in one place: flag > environment (KDEBUG_*, OPENAI_*) > config file > default."""
from __future__ import annotations

import importlib.resources
import os
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import platformdirs

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent


def data_dir() -> Path:
    """Where kdebug keeps its index, ledger and queue (KDEBUG_DATA_DIR overrides)."""
    d = os.environ.get("KDEBUG_DATA_DIR")
    path = Path(d) if d else Path(platformdirs.user_data_dir("kdebug"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def curated_kb_dir() -> Path:
    """The curated knowledge base shipped with kdebug: package data `debugger.kb` (the checkout's kb/).

    pyproject maps the package `debugger.kb` onto the repository's kb/ folder, so an editable install
    finds the checkout's files and a wheel its own copy; a source tree put on PYTHONPATH without
    installing falls back to the kb/ beside the package. Read-only at run time.
    """
    try:
        root = importlib.resources.files("debugger.kb")
    except ModuleNotFoundError:
        return REPO_DIR / "kb"
    return Path(str(root))


def kb_dir() -> Path:
    """The curated knowledge base's files (KDEBUG_KB_DIR overrides; default: curated_kb_dir())."""
    d = os.environ.get("KDEBUG_KB_DIR")
    return Path(d) if d else curated_kb_dir()


def user_kb_dir(data: Path | None = None) -> Path:
    """The user's own layer of the knowledge base, under the data folder: learned patterns
    (patterns/learned/) and what `kdebug kb add` adds; merged with the curated files at load."""
    return Path(data if data is not None else data_dir()) / "kb"


@lru_cache(maxsize=1)
def bug_classes() -> dict[str, str]:
    """The root-cause classes: id -> one-line summary (bug_classes.toml, a copy of shared/)."""
    text = importlib.resources.files("debugger").joinpath("bug_classes.toml").read_text()
    data = tomllib.loads(text)
    return {k: v["summary"] for k, v in data.items()}


def config_file() -> Path:
    """The optional user config file (TOML)."""
    return Path(os.environ.get("KDEBUG_CONFIG", Path(platformdirs.user_config_dir("kdebug")) / "config.toml"))


def _config() -> dict:
    path = config_file()
    if path.exists():
        try:
            return tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError:
            return {}
    return {}


@dataclass
class Settings:
    """Run settings for one command; build with `resolve()`."""

    device: str = "cpu"
    timeout: float = 120.0
    memory_limit_gb: float = 16.0
    backend: str = "kb"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    max_iters: int = 12
    token_budget: int = 200_000
    wall_budget: float = 600.0
    tools: bool = True  # the openai backend calls tools (False: one-shot edits, as for an endpoint without tools)
    max_tool_calls: int = 40  # per repair run
    extra: dict = field(default_factory=dict)


def default_device() -> str:
    """cuda when a GPU is visible, else cpu (without initialising CUDA in this process)."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def default_memory_limit_gb(cfg: dict | None = None) -> float:
    """The sandbox's resident-memory limit where no flag sets one: KDEBUG_MEMORY_LIMIT_GB, the config
    file, else 16 GiB. Every evaluation a command starts uses it, the gate's included (which, left at
    16 GiB under KDEBUG_MEMORY_LIMIT_GB=48, killed a 32768 x 32768 Linear's hidden-shape checks on a GPU)."""
    cfg = _config() if cfg is None else cfg
    return float(os.environ.get("KDEBUG_MEMORY_LIMIT_GB") or cfg.get("memory_limit_gb") or Settings.memory_limit_gb)


def resolve(**flags) -> Settings:
    """Merge flags (non-None) over KDEBUG_*/OPENAI_* environment over the config file over defaults."""
    cfg = _config()
    env = os.environ
    s = Settings()
    s.device = flags.get("device") or env.get("KDEBUG_DEVICE") or cfg.get("device") or default_device()
    s.timeout = float(flags.get("timeout") or env.get("KDEBUG_TIMEOUT") or cfg.get("timeout") or s.timeout)
    s.memory_limit_gb = float(flags.get("memory_limit_gb") or default_memory_limit_gb(cfg))
    s.base_url = flags.get("base_url") or env.get("OPENAI_BASE_URL") or cfg.get("base_url")
    s.api_key = flags.get("api_key") or env.get("OPENAI_API_KEY") or cfg.get("api_key")
    s.model = flags.get("model") or env.get("KDEBUG_MODEL") or cfg.get("model")
    s.backend = flags.get("backend") or env.get("KDEBUG_BACKEND") or cfg.get("backend") or (
        "auto" if s.base_url else "kb")
    for key in ("max_iters", "token_budget"):
        v = flags.get(key) or env.get(f"KDEBUG_{key.upper()}") or cfg.get(key)
        if v is not None:
            setattr(s, key, int(v))
    v = flags.get("wall_budget") or env.get("KDEBUG_WALL_BUDGET") or cfg.get("wall_budget")
    if v is not None:
        s.wall_budget = float(v)
    v = flags.get("max_tool_calls") or env.get("KDEBUG_MAX_TOOL_CALLS") or cfg.get("max_tool_calls")
    if v is not None:
        s.max_tool_calls = int(v)
    v = flags.get("tools")
    v = v if v is not None else env.get("KDEBUG_TOOLS", cfg.get("tools"))
    if v is not None:
        s.tools = v if isinstance(v, bool) else str(v).strip().lower() not in ("0", "false", "off", "no")
    return s
