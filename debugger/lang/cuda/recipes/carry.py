"""cuda_carry_in_every_thread: the update one thread made to its own copy of a running value, made by
every thread (fact `cuda_carry_in_one_thread`, debugger/lang/cuda/carry.py).

`if (tid == blockDim.x - 1) { carry += scanned[tid]; }` becomes `carry += scanned[blockDim.x - 1];`: the
thread index replaced by the value the condition tested it against, where it only indexes shared memory,
so every thread reads what that one thread read, after the same barrier.
"""
from __future__ import annotations

from debugger.lang.cuda.carry import one_thread_carries, uses_of
from debugger.lang.cuda.recipes.base import CudaRecipe
from debugger.lang.cuda.unit import Unit
from debugger.source.tree import text


class CudaCarryInEveryThread(CudaRecipe):
    id = "cuda_carry_in_every_thread"
    bug_classes = ("scan_semantics",)
    symptoms = ("cuda_carry_in_one_thread", "tail_block_wrong", "periodic_errors", "large_error")
    description = "CUDA: a running value one thread updated in its own register is updated by every thread"

    def unit_fixes(self, unit: Unit, hints):
        for fn in unit.kernels:
            for found in one_thread_carries(fn):
                update, value = found.update, found.update.child_by_field_name("right")
                equals = text(found.equals)
                equals = equals if found.equals.type in ("identifier", "number_literal") else f"({equals})"
                spliced = value.text
                for n in sorted(uses_of(value, found.thread), key=lambda n: n.start_byte, reverse=True):
                    spliced = spliced[:n.start_byte - value.start_byte] + equals.encode() + \
                        spliced[n.end_byte - value.start_byte:]
                new = (f"{text(update.child_by_field_name('left'))} {text(update.child_by_field_name('operator'))} "
                       f"{spliced.decode()};")
                yield [(found.statement.start_byte, found.statement.end_byte, new)], (
                    f"{fn.name}: `{' '.join(text(found.statement).split())}` -> `{new}`: every thread updates its "
                    f"own {found.local}")
        return []
