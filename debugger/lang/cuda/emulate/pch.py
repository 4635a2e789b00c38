"""torch/extension.h precompiled once for the emulated CUDA builds.

Every emulated build (a candidate, each repair's patch) compiles one C++ file that opens with
`#include <torch/extension.h>`: most of its ~35 s on this project's 2-core machine go to that header.
GCC takes a precompiled `extension.h.gch` instead where it finds one beside the header in an include
folder searched first, built with the same flags; it then compiles the rest only (~14 s).

`header_pch()` returns such a folder - `torch/extension.h.gch` beside a link to the real header - under
the extension builds' cache (`<base>/kdebug_pch/<key>`, base as debugger/sandbox/roles.py keys candidate
builds, key: compiler, torch and flags), building it on first use. It runs in kdebug's own process,
never in a candidate's sandbox (the header is ~800 MB, over the sandbox's file-size limit); the
sandboxed worker only reads it (`install(pch_dir)`). One process builds while the others go on
without it (a lock taken without waiting); a build that fails or that GCC would not use is recorded
and not tried again for that key. KDEBUG_EMULATION_PCH=0 turns it off. A flag of the candidate's own
that changes what the header means makes GCC skip the .gch silently: the build is then as slow as
before, never wrong.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sysconfig
import tempfile
from functools import lru_cache
from pathlib import Path

HEADER = Path("torch") / "extension.h"
READY, FAILED = "ready", "failed"


@lru_cache(maxsize=1)
def _compiler() -> str | None:
    """GCC's version line (the key of its precompiled headers), or None for another compiler."""
    from torch.utils import cpp_extension

    compiler = cpp_extension.get_cxx_compiler()
    try:
        version = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return version if ("g++" in version or "GCC" in version or "Free Software" in version) else None


def build_flags(cflags: list[str]) -> list[str]:
    """The flags torch's load_inline compiles an extension's C++ with (CPU build), `cflags` last."""
    from torch.utils import cpp_extension

    includes = [*cpp_extension.include_paths(), sysconfig.get_paths()["include"]]
    return ["-DTORCH_API_INCLUDE_EXTENSION_H", *[f for p in includes for f in ("-isystem", p)],
            "-fPIC", "-std=c++20", *cflags]


def _base() -> Path:
    """Where the candidates' builds go (debugger/sandbox/roles.py: the user's TORCH_EXTENSIONS_DIR, else
    the cache the sandbox may write)."""
    from debugger.settings import data_dir

    base = os.environ.get("KDEBUG_TORCH_EXTENSIONS_BASE") or os.environ.get("TORCH_EXTENSIONS_DIR")
    return Path(base) if base else data_dir() / "triton-cache" / "torch_extensions"


def pch_folder(cflags: list[str]) -> Path | None:
    """Where the header precompiled for `cflags` lives (ready or not); None where GCC is not the compiler
    or the precompiled header is turned off."""
    if os.environ.get("KDEBUG_EMULATION_PCH", "1") == "0" or not sysconfig.get_platform().startswith("linux"):
        return None
    import torch

    compiler = _compiler()
    if compiler is None:
        return None
    key = hashlib.sha256("\0".join([compiler, torch.__version__, *build_flags(cflags)]).encode()).hexdigest()[:16]
    return _base() / "kdebug_pch" / key


def header_pch(cflags: list[str]) -> str | None:
    """A folder to put first on the include path of an emulated build compiled with `cflags`, whose
    torch/extension.h comes precompiled; None where there is none (yet, or at all)."""
    from torch.utils import cpp_extension

    folder = pch_folder(cflags)
    if folder is None:
        return None
    if (folder / READY).exists():
        return str(folder)
    if (folder / FAILED).exists():
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = open(folder / ".lock", "w")
    except OSError:
        return None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # another process is building it: this build goes on without
        if (folder / READY).exists():
            return str(folder)
        ok = _build(cpp_extension.get_cxx_compiler(), build_flags(cflags), folder)
        (folder / (READY if ok else FAILED)).write_text("")
        return str(folder) if ok else None


def _build(compiler: str, flags: list[str], folder: Path) -> bool:
    """Precompile the header into folder/torch/extension.h.gch and check that GCC takes it."""
    real = Path(next(p for p in _include_paths() if (Path(p) / HEADER).is_file())) / HEADER
    (folder / "torch").mkdir(exist_ok=True)
    link = folder / HEADER
    if not link.exists():
        os.symlink(real, link)  # the header itself, for the includes after the first
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        gch = Path(tmp) / "extension.h.gch"
        try:
            subprocess.run([compiler, *flags, "-x", "c++-header", str(real), "-o", str(gch)], check=True,
                           capture_output=True, timeout=900)
            probe = Path(tmp) / "probe.cpp"
            probe.write_text("#include <torch/extension.h>\n")
            shutil.move(str(gch), str(folder / HEADER) + ".gch")
            used = subprocess.run([compiler, *flags, f"-I{folder}", "-H", "-fsyntax-only", str(probe)],
                                  capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError):
            used = None
    if used is not None and used.returncode == 0 and used.stderr.lstrip().startswith("!"):  # -H: "!" marks a .gch used
        return True
    Path(str(folder / HEADER) + ".gch").unlink(missing_ok=True)  # 800 MB GCC would not take
    return False


def _include_paths() -> list[str]:
    from torch.utils import cpp_extension

    return cpp_extension.include_paths()
