"""CUDA candidates on the CPU: `load_inline`/`load` stand-ins that build the candidate's CUDA sources with
the host C++ compiler against kdebug's CPU runtime (include/kdebug_cuda_cpu.h, translate.py), the way
Triton's interpreter runs Triton kernels without a GPU.

What it shows and what it cannot: the values a kernel computes (index arithmetic, bounds, grid and block
coverage, reductions through shared memory and warp shuffles, invalid launch configurations, the
host code and its parameters) come out as on a GPU, up to float rounding; races, memory-model and
timing faults never show (threads interleave only at barriers), nor does anything the runtime does not
stand in for (`translate.blocker`: PTX, wmma, cuBLAS...). A verdict reached here says "emulated".

    from debugger.lang.cuda import emulate
    emulate.blocker(candidate_src)   # None, or what keeps it from running on the CPU
    emulate.header_pch()             # in kdebug's process: torch/extension.h precompiled (or None)
    emulate.install(pch_dir)         # in a sandbox worker, before the candidate is imported
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from debugger.lang.cuda.emulate.headers import build_error
from debugger.lang.cuda.emulate.translate import Untranslatable, blocker as code_blocker, translate, unit_prelude

INCLUDE_DIR = Path(__file__).parent / "include"
CFLAGS = ["-O2", "-w", "-fno-strict-aliasing"]
# Linker flags of GPU libraries the CPU build has no use for (the runtime stands in for cudart and cublasSgemm).
GPU_LIBS = ("-lcuda", "-lcudart", "-lc10_cuda", "-ltorch_cuda", "-lnvrtc", "-lnvToolsExt", "-lcublas", "-L/usr/local/cuda")
EMULATED = "CUDA emulated on the CPU (kdebug's runtime): values as on a GPU; races and timing do not show"


def _as_list(sources) -> list[str]:
    if sources is None:
        return []
    return [sources] if isinstance(sources, str) else list(sources)


def builds_extension(src: str | None) -> bool:
    """The candidate builds a C++/CUDA extension when imported (load_inline / load)."""
    return bool(src) and ("load_inline" in src or "cpp_extension" in src)


def blocker(candidate_src: str) -> str | None:
    """What keeps the candidate's CUDA from running on the CPU (None: it can be emulated)."""
    from debugger.lang.cuda.sources import find_sources

    for source in find_sources(candidate_src):
        what = code_blocker(source.text)
        if what:
            return f"they use {what}, which kdebug's CPU emulation of CUDA does not run"
    return None


def emulated_unit(cpp_sources, cuda_sources) -> list[str]:
    """The C++ sources load_inline compiles in place of the candidate's CUDA and C++ sources."""
    cpp, cuda = _as_list(cpp_sources), _as_list(cuda_sources)
    codes = cpp + cuda
    translated = [translate(c) for c in codes]
    return [unit_prelude(translated)] + translated


def _flags(given, extra: list[str]) -> list[str]:
    return [f for f in _as_list(given) if not any(f.startswith(lib) for lib in GPU_LIBS)] + extra


def make_load_inline(original, pch_dir: str | None = None):
    """A load_inline that compiles CUDA sources for the CPU runtime (signature of torch's); `pch_dir`: a
    folder of pch.header_pch(CFLAGS), searched first for torch/extension.h."""

    def load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None,
                    extra_cuda_cflags=None, extra_ldflags=None, extra_include_paths=None,
                    build_directory=None, verbose=False, with_cuda=None, is_python_module=True,
                    with_pytorch_error_handling=True, keep_intermediates=True, **kwargs):
        if not _as_list(cuda_sources) and not any("__global__" in c or "<<<" in c for c in _as_list(cpp_sources)):
            # a C++-only extension builds and runs on the CPU as it is
            return original(name=name, cpp_sources=cpp_sources, functions=functions, extra_cflags=extra_cflags,
                            extra_ldflags=extra_ldflags, extra_include_paths=extra_include_paths,
                            build_directory=build_directory, verbose=verbose, with_cuda=with_cuda,
                            is_python_module=is_python_module,
                            with_pytorch_error_handling=with_pytorch_error_handling,
                            keep_intermediates=keep_intermediates, **kwargs)
        undeclared = build_error(name, _as_list(cpp_sources), _as_list(cuda_sources))
        if undeclared:  # nvcc would stop here: the runtime header below declares everything
            raise RuntimeError(undeclared)
        try:
            sources = emulated_unit(cpp_sources, cuda_sources)
        except Untranslatable as e:
            raise RuntimeError(f"kdebug CUDA emulation: {e}") from None
        digest = hashlib.sha256("\0".join(sources).encode()).hexdigest()[:10]
        kwargs.pop("use_pch", None)
        return original(name=f"{name}_cpu{digest}", cpp_sources=sources, functions=functions,
                        extra_cflags=_flags(extra_cflags, CFLAGS),
                        extra_ldflags=_flags(extra_ldflags, []),
                        extra_include_paths=[*([pch_dir] if pch_dir else []), str(INCLUDE_DIR),
                                             *_as_list(extra_include_paths)],
                        build_directory=build_directory, verbose=verbose, with_cuda=False,
                        is_python_module=is_python_module, with_pytorch_error_handling=with_pytorch_error_handling,
                        keep_intermediates=keep_intermediates)

    load_inline.__kdebug_emulated__ = True
    return load_inline


def make_load(original_inline, pch_dir: str | None = None):
    """A load (sources given as files) that reads them and builds through the emulated load_inline."""
    emulated = make_load_inline(original_inline, pch_dir)

    def load(name, sources, extra_cflags=None, extra_cuda_cflags=None, extra_ldflags=None,
             extra_include_paths=None, build_directory=None, verbose=False, with_cuda=None,
             is_python_module=True, **kwargs):
        cpp, cuda, dirs = [], [], []
        for path in _as_list(sources):
            text = Path(path).read_text()
            (cuda if str(path).endswith((".cu", ".cuh")) else cpp).append(text)
            dirs.append(str(Path(path).resolve().parent))
        return emulated(name, cpp, cuda, extra_cflags=extra_cflags, extra_ldflags=extra_ldflags,
                        extra_include_paths=[*dirs, *_as_list(extra_include_paths)],
                        build_directory=build_directory, verbose=verbose, is_python_module=is_python_module)

    load.__kdebug_emulated__ = True
    return load


def header_pch() -> str | None:
    """The folder of torch/extension.h precompiled for the emulated builds' flags (pch.py), built on
    first use; call it in kdebug's own process, never in a sandboxed worker."""
    from debugger.lang.cuda.emulate.pch import header_pch as build

    return build(CFLAGS)


def install(pch_dir: str | None = None) -> None:
    """Replace torch.utils.cpp_extension's load_inline and load by the emulating ones (once); `pch_dir`
    from header_pch(), made by the process that spawned this one."""
    import torch
    from torch.utils import cpp_extension

    from debugger.lang.cuda.emulate import device

    if getattr(cpp_extension.load_inline, "__kdebug_emulated__", False):
        return
    original = cpp_extension.load_inline
    cpp_extension.load_inline = make_load_inline(original, pch_dir)
    cpp_extension.load = make_load(original, pch_dir)
    os.environ.setdefault("MAX_JOBS", "1")
    if not torch.cuda.is_available():
        device.install()
