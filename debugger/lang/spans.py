"""Where each kernel of a candidate lies in its Python file, across the languages: a Triton kernel's
definition (decorators included), or a CUDA extension's exported function (its host function and the
kernels it launches, lang/cuda/exports.py). Localisation ties a departing launch to these lines; the
model's tools name the kernels by them.
"""
from __future__ import annotations

from debugger.recipes.syntax import Source
from debugger.source.tree import line


def extension_spans(src: str) -> dict[str, dict]:
    """A CUDA extension's exported functions: {lines, host, kernels} ({} without one)."""
    from debugger.lang.cuda.exports import export_spans

    try:
        return export_spans(src) if "load_inline" in src or "cpp_extension" in src else {}
    except Exception:  # noqa: BLE001 - unparsable CUDA: nothing to localise there
        return {}


def kernel_lines(src: str) -> dict[str, list[int]]:
    """Kernel name -> [first line, last line] of its definition (decorators included); an exported
    function of a CUDA extension -> the span of its host function and the kernels it launches."""
    out = {}
    try:
        s = Source(src)
        for k in s.kernels:
            start = k.decorators[0] if k.decorators else k.fn
            out[k.name] = [line(start), k.fn.end_point[0] + 1]
    except Exception:  # noqa: BLE001 - unparsable source: no Triton kernel to localise
        pass
    for name, span in extension_spans(src).items():
        out.setdefault(name, span["lines"])
    return out
