"""Lines of the files load_inline compiles, mapped back to the candidate's Python file.

load_inline writes `cuda.cu` as three implicit includes (`torch/types.h`, `cuda.h`, `cuda_runtime.h`)
followed by its cuda_sources joined with newlines, and `main.cpp` as one include followed by the
cpp_sources (no_implicit_headers=True leaves the includes out). A tool that names `cuda.cu:41`
(compute-sanitizer on a build with -lineinfo, a compiler message) is read back through the unit
that holds the named kernel (a line of a __device__ helper it inlined included): its row there, and
the Python line of that row (ExtensionSource.pyline). Where the compiled file's own text is at hand,
the line's text confirms the row or finds it.
"""
from __future__ import annotations

import re
from pathlib import PurePath

HEADER_LINES = {"cuda.cu": 3, "main.cpp": 1}


def _rows(unit) -> list[str]:
    return unit.source.text.split("\n")


def _has_kernel(unit, kernel: str | None) -> bool:
    return bool(kernel) and any(f.name == kernel for f in unit.functions)


def python_line(src: str, file: str | None, line: int | None, kernel: str | None = None,
                file_text: str | None = None) -> int | None:
    """The candidate's Python line of `file:line` in a compiled extension source (None: not found).

    `kernel`: the kernel the line belongs to (a sanitizer names it), which picks the unit when the
    candidate has several; `file_text`: the compiled file's text, when readable, whose line must
    match the unit's row (or be found once in the unit)."""
    from debugger.lang.cuda import units

    if not file or not line:
        return None
    name = PurePath(file).name
    kind = "cpp" if name.endswith((".cpp", ".cc", ".cxx")) else "cuda"
    offset = 0 if re.search(r"no_implicit_headers\s*=\s*True", src) else HEADER_LINES.get(name, 0)
    row = line - 1 - offset
    all_units = [u for u in units(src) if u.source.kind == kind]
    ordered = [u for u in all_units if _has_kernel(u, kernel)] + [u for u in all_units if not _has_kernel(u, kernel)]
    wanted = None
    if file_text is not None:
        lines = file_text.split("\n")
        wanted = lines[line - 1].strip() if 0 < line <= len(lines) else None
    for unit in ordered:
        rows = _rows(unit)
        if wanted is None:
            if 0 <= row < len(rows):
                return unit.source.pyline(row)
            continue
        if 0 <= row < len(rows) and rows[row].strip() == wanted:
            return unit.source.pyline(row)
        hits = [r for r, t in enumerate(rows) if t.strip() == wanted]
        if wanted and len(hits) == 1:  # the unit was assembled otherwise: its one row with that text
            return unit.source.pyline(hits[0])
    return None
