"""Re-applying a learned CUDA template (language cuda) to a candidate: inside its load_inline strings.

Each CUDA unit of the candidate (lang.cuda.units) is read as a `CudaParsedSource`; the template's rules
are matched and rendered over the unit's text exactly as templates.py does over a Python file, and the
resulting unit edits are written back into the Python file's string literals by lang.cuda.splice (an
edit that does not map voids that way of applying it). A result must still parse as Python and add no
tree-sitter-cuda error to the CUDA sources. Sites are the Python lines of the edited CUDA lines.
"""
from __future__ import annotations

import ast
from typing import Callable

from debugger.knowledge.cudasource import CudaParsedSource
from debugger.knowledge.schema import Template


def apply_cuda_template(template: Template, src: str, sweeps: Callable) -> list:
    """Every distinct rewrite of `src` by the cuda template (templates.TemplateMatch), unit by unit;
    `sweeps(template, target)` gives the edit sets to try on one unit (templates._sweeps)."""
    from debugger.knowledge.templates import TemplateMatch
    from debugger.lang.cuda import units
    from debugger.lang.cuda.splice import UnitSplice, error_count
    from debugger.source.edits import apply_edits

    if "load_inline" not in src and "__global__" not in src:
        return []
    found = units(src)
    errors = error_count(found)
    data = src.encode()
    out, seen = [], {src}
    for unit in found:
        target = CudaParsedSource(unit.source.text)
        splice = UnitSplice(src, unit)
        for edits in sweeps(template, target):
            mapped = splice.edits([(e.start, e.end, e.text) for e in edits])
            new_src = apply_edits(data, mapped) if mapped else None
            if new_src is None or new_src in seen or not _parses(new_src) or error_count(units(new_src)) > errors:
                continue
            seen.add(new_src)
            lines = sorted({unit.source.pyline(e.line - 1) for e in edits} - {None})
            out.append(TemplateMatch(new_src, lines))
    return out


def _parses(src: str) -> bool:
    try:
        ast.parse(src)
    except SyntaxError:
        return False
    return True
