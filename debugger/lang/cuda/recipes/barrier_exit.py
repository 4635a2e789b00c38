"""cuda_exit_after_barriers: every thread takes part in the shared tiles; the exit guards the stores only
(fact `cuda_exit_before_barrier`, debugger/lang/cuda/barrier_exit.py).

`if (cond) return;` before the tile loop becomes `const bool kd_active = !(cond);`, and the kernel's
statements after its last barrier go inside `if (kd_active) { ... }`: the threads past the edge (or
below the diagonal) load their share of each tile - their loads are guarded on their own, which the
fact's analysis requires - reach every barrier, and write nothing.
"""
from __future__ import annotations

from debugger.lang.cuda.barrier_exit import exit_before_barrier
from debugger.lang.cuda.recipes.base import CudaRecipe, statements, wrap_rest
from debugger.lang.cuda.unit import Unit
from debugger.source.tree import text

FLAG = "kd_active"


class CudaExitAfterBarriers(CudaRecipe):
    id = "cuda_exit_after_barriers"
    bug_classes = ("write_race",)
    symptoms = ("cuda_exit_before_barrier", "all_wrong", "run_to_run_drift")
    description = "CUDA: no early return before __syncthreads(); the exit condition guards the stores after the tiles"

    def unit_fixes(self, unit: Unit, hints):
        data = unit.source.text.encode()
        for fn in unit.kernels:
            found = exit_before_barrier(fn)
            if found is None or not found.movable or FLAG in text(fn.body):
                continue
            stmts = statements(fn.body)
            rest = stmts[stmts.index(found.last_barrier) + 1:]
            if not rest:
                continue
            cond = text(found.condition)
            edits = [(found.exit.start_byte, found.exit.end_byte, f"const bool {FLAG} = !{cond};")]
            edits += wrap_rest(data, rest[0], fn.body, f"if ({FLAG})")
            yield edits, (f"{fn.name}: every thread loads its share of the tiles and reaches each barrier; "
                          f"`{' '.join(text(found.exit).split())}` now guards the stores after them")
