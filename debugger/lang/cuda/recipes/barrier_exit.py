"""cuda_exit_after_barriers: every thread takes part in the shared tiles; the exit moves after them
(fact `cuda_exit_before_barrier`, debugger/lang/cuda/barrier_exit.py).

`if (cond) return;` before the tile loop moves to just after the kernel's last statement holding a
barrier: the threads past the edge (or below the diagonal) load their share of each tile - their loads
are guarded on their own, which the fact's analysis requires - reach every barrier, then leave before
the stores, which the exit still bounds.
"""
from __future__ import annotations

from debugger.lang.cuda.barrier_exit import exit_before_barrier
from debugger.lang.cuda.recipes.base import CudaRecipe, indent_at, line_start, starts_line
from debugger.lang.cuda.unit import Unit
from debugger.source.tree import text


class CudaExitAfterBarriers(CudaRecipe):
    id = "cuda_exit_after_barriers"
    bug_classes = ("write_race",)
    symptoms = ("cuda_exit_before_barrier", "all_wrong", "run_to_run_drift")
    description = "CUDA: the early return moves after the last __syncthreads(), so every thread loads its share of the tiles"

    def unit_fixes(self, unit: Unit, hints):
        data = unit.source.text.encode()
        for fn in unit.kernels:
            found = exit_before_barrier(fn)
            if found is None or not found.movable:
                continue
            exit_text = " ".join(text(found.exit).split())
            start, end = found.exit.start_byte, found.exit.end_byte
            if starts_line(data, start) and data[end:end + 1] == b"\n":  # the exit's whole line goes
                start, end = line_start(data, start), end + 1
            last = found.last_barrier
            if starts_line(data, last.start_byte) and data[last.end_byte:last.end_byte + 1] == b"\n":
                at = last.end_byte + 1
                moved = f"{indent_at(data, found.exit.start_byte)}{exit_text}\n"
            else:
                at, moved = last.end_byte, f" {exit_text}"
            yield [(start, end, ""), (at, at, moved)], (
                f"{fn.name}: `{exit_text}` moved after the last __syncthreads(): every thread loads its share of "
                f"the tiles and reaches each barrier")
