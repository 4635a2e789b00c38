"""Which language a candidate's kernels are written in, and where they are, for the model's prompt and tools.

A Triton candidate's kernels are `@triton.jit` functions of the Python file; a CUDA candidate keeps
them in the strings it hands to `load_inline`, found and mapped to Python lines by the CUDA source
layer (debugger/lang/cuda). This module only asks the two and words the answer.
"""
from __future__ import annotations


def language(src: str) -> str:
    """'cuda' when the file builds an extension with CUDA kernels of its own, else 'triton'."""
    if "load_inline" not in src and "__global__" not in src:
        return "triton"
    from debugger.lang import get

    return "cuda" if get("cuda").uses(src) else "triton"


def kernels(src: str) -> dict[str, int | None]:
    """Kernel name -> the Python line it is defined on: @triton.jit functions, or the __global__
    functions of the CUDA strings."""
    if language(src) == "cuda":
        from debugger.lang import get

        return {k.name: k.line for k in get("cuda").kernels(src)}
    from debugger.lang.spans import kernel_lines

    return {name: span[0] for name, span in kernel_lines(src).items()}


def kernel_names(src: str) -> list[str]:
    return list(kernels(src))


def where(src: str) -> str:
    """One sentence for the prompt: the language, and each kernel with its line."""
    found = ", ".join(f"{k} (line {n})" if n else k for k, n in kernels(src).items()) or "none found"
    if language(src) == "cuda":
        from debugger.lang.cuda.sources import find_sources

        lines = sorted({s.pyline(0) for s in find_sources(src) if s.kind == "cuda"} - {None})
        start = f" (the CUDA source starts at line {', '.join(map(str, lines))})" if lines else ""
        return f"CUDA kernels inside the load_inline strings{start}: {found}."
    return f"Triton kernels: {found}."
