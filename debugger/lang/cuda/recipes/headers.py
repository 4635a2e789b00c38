"""`cuda_include_declaring_header`: PyTorch's CUDA macros get the header that declares them (class gpu_incompatible).

`C10_CUDA_KERNEL_LAUNCH_CHECK()` after only `<torch/extension.h>` is a compile error for nvcc ("identifier
... is undefined"): the header that defines it, `<c10/cuda/CUDAException.h>`, is not among the headers
torch/extension.h includes. In the kernelbench fork, 94 answers use such a macro with no include declaring
it, 91 of them recorded as failing to build and one whose try/except around load_inline ran its PyTorch
fallback instead (debugger/lang/cuda/emulate/headers.py reads PyTorch's own include graph to find them).
The fix adds the declaring header after the unit's last `#include` (at its top when it has none); the
kernel is unchanged, so whether the answer is then right is for the evaluation to say.
"""
from __future__ import annotations

import re

from debugger.lang.cuda.emulate.headers import CPP_UNIT_PREAMBLE, CUDA_UNIT_PREAMBLE, DECLARED_IN, undeclared
from debugger.lang.cuda.recipes.base import CudaRecipe
from debugger.lang.cuda.unit import Unit

_LAST_INCLUDE = re.compile(rb"^[ \t]*#[ \t]*include[^\n]*\n", re.M)
_LEADING_BLANK = re.compile(rb"(?:[ \t]*\n)+")


class CudaIncludeDeclaringHeader(CudaRecipe):
    id = "cuda_include_declaring_header"
    bug_classes = ("gpu_incompatible",)
    description = ("PyTorch CUDA macros (C10_CUDA_KERNEL_LAUNCH_CHECK, C10_CUDA_CHECK, AT_CUDA_CHECK) used with no "
                   "include that declares them, which nvcc rejects: include the header that defines them.")

    def unit_fixes(self, unit: Unit, hints: dict):
        preamble = CUDA_UNIT_PREAMBLE if unit.source.kind == "cuda" else CPP_UNIT_PREAMBLE
        missing = undeclared(unit.source.text, preamble)
        if not missing:
            return
        headers = sorted({DECLARED_IN[m] for m in missing})
        data = unit.source.text.encode()
        includes = list(_LAST_INCLUDE.finditer(data))
        blank = _LEADING_BLANK.match(data)  # a source opening on the line of its quotes keeps that line
        at = includes[-1].end() if includes else (blank.end() if blank else 0)
        yield ([(at, at, "".join(f"#include <{h}>\n" for h in headers))],
               f"{', '.join(missing)} used with no include declaring it: #include <{'>, <'.join(headers)}>")
