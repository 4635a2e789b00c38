"""Lines of the files load_inline compiles, mapped back to the candidate's Python file.

load_inline writes `cuda.cu` as three implicit includes (`torch/types.h`, `cuda.h`, `cuda_runtime.h`)
followed by its cuda_sources joined with newlines, and `main.cpp` as one include followed by the
cpp_sources (no_implicit_headers=True leaves the includes out). A tool that names `cuda.cu:41`
(compute-sanitizer on a build with -lineinfo, a compiler message) is read back through the unit
that holds the named kernel: its row there, and the Python line of that row (ExtensionSource.pyline).
Where the compiled file's own text is at hand, the line's text confirms the row or finds it.
"""
from __future__ import annotations

from pathlib import PurePath

HEADER_LINES = {"cuda.cu": 3, "main.cpp": 1}


def _rows(unit) -> list[str]:
    return unit.source.text.split("\n")


def _kernel_rows(unit, kernel: str | None) -> tuple[int, int] | None:
    f = next((k for k in unit.functions if k.name == kernel), None) if kernel else None
    return (f.node.start_point[0], f.node.end_point[0]) if f is not None else None


def python_line(src: str, file: str | None, line: int | None, kernel: str | None = None,
                file_text: str | None = None) -> int | None:
    """The candidate's Python line of `file:line` in a compiled extension source (None: not found).

    `kernel`: the kernel the line belongs to (a sanitizer names it), which picks the unit when the
    candidate has several and checks the row; `file_text`: the compiled file's text, when readable."""
    from debugger.lang.cuda import units

    if not file or not line:
        return None
    name = PurePath(file).name
    kind = "cpp" if name.endswith((".cpp", ".cc", ".cxx")) else "cuda"
    all_units = [u for u in units(src) if u.source.kind == kind]
    with_kernel = [u for u in all_units if _kernel_rows(u, kernel) is not None]
    wanted = None
    if file_text is not None:
        lines = file_text.split("\n")
        wanted = lines[line - 1].strip() if 0 < line <= len(lines) else None
    offsets = [HEADER_LINES.get(name, 0)] + ([0] if HEADER_LINES.get(name) else [])
    for unit in with_kernel + [u for u in all_units if u not in with_kernel]:
        rows = _rows(unit)
        span = _kernel_rows(unit, kernel)
        for offset in offsets:
            row = line - 1 - offset
            if not 0 <= row < len(rows):
                continue
            if wanted is not None and rows[row].strip() != wanted:
                continue
            if wanted is None and span is not None and not span[0] <= row <= span[1]:
                continue
            return unit.source.pyline(row)
        if wanted:  # the text moved (a unit assembled differently): its one row with that text
            hits = [r for r, t in enumerate(rows) if t.strip() == wanted
                    and (span is None or span[0] <= r <= span[1])]
            if len(hits) == 1:
                return unit.source.pyline(hits[0])
    return None
