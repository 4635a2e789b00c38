"""Coverage recipes: a kernel whose own code computes only the first slice of a batched launch.

- cuda_fused_axis_guard, fact `cuda_guard_on_fused_axis` (coverage.py): `if (blockIdx.z >= C) return;`
  on an axis the kernel decodes as `b = blockIdx.z / C, c = blockIdx.z % C` becomes a bound on the whole
  product, `C * batch` with the integer parameter that bounds the quotient (`batch_idx` -> `batch_size`),
  or else `gridDim.z` (the launch's own extent on that axis).
- cuda_batch_loop, fact `cuda_index_fixed_at_zero`: `int batch_idx = 0;` with `batch_size` never read
  becomes `for (int batch_idx = 0; batch_idx < batch_size; ++batch_idx) { rest of the block }`: each
  thread computes its element of every slice (the launch stays as it is).
"""
from __future__ import annotations

from debugger.lang.cuda.coverage import bound_choices, fixed_zero_indices, fused_axis_guards
from debugger.lang.cuda.recipes.base import CudaRecipe, UnitEdit, wrap_rest
from debugger.lang.cuda.recipes.grid import SIMPLE, drop_statement
from debugger.lang.cuda.unit import Function, Unit, identifiers, statements
from debugger.source.tree import text, walk

SLICE_SYMPTOMS = ("slices_unwritten", "never_written", "mostly_unwritten")


class CudaFusedAxisGuard(CudaRecipe):
    id = "cuda_fused_axis_guard"
    bug_classes = ("unwritten_output",)
    symptoms = SLICE_SYMPTOMS
    description = "CUDA: bound a fused block axis (batch x channels) by the whole product, not one factor"

    def unit_fixes(self, unit: Unit, hints):
        for fn in unit.kernels:
            for guard in fused_axis_guards(fn):
                extent = text(guard.extent)
                factor = extent if guard.extent.type in SIMPLE else f"({extent})"
                bounds = bound_choices(fn, guard.quotient, identifiers(guard.extent)) if guard.quotient else []
                for bound in [f"{factor} * {p}" for p in bounds[:2]] + [f"gridDim.{guard.axis}"]:
                    yield ([(guard.extent.start_byte, guard.extent.end_byte, bound)],
                           f"{text(guard.comparison)} in {fn.name} bounds the fused axis blockIdx.{guard.axis} "
                           f"({guard.division}) by {bound}")


def _returns_on(fn: Function, nodes, name: str) -> bool:
    """A `return` among `nodes` whose enclosing condition reads `name` (it would end every slice)."""
    for root in nodes:
        for n in walk(root):
            if n.type != "return_statement":
                continue
            parent = n.parent
            while parent is not None and parent.type != "if_statement" and parent != root.parent:
                parent = parent.parent
            if parent is not None and parent.type == "if_statement" and \
                    name in fn.deps(parent.child_by_field_name("condition")):
                return True
    return False


class CudaBatchLoop(CudaRecipe):
    id = "cuda_batch_loop"
    bug_classes = ("grid_undercount",)
    symptoms = SLICE_SYMPTOMS
    description = "CUDA: loop an index fixed at 0 over its unread bound (every batch element, not the first)"

    def unit_fixes(self, unit: Unit, hints):
        data = unit.source.text.encode()
        for fn in unit.kernels:
            for fixed in fixed_zero_indices(fn):
                block = fixed.declaration.parent
                stmts = statements(block)
                rest = stmts[stmts.index(fixed.declaration) + 1:] if fixed.declaration in stmts else []
                if not rest or _returns_on(fn, rest, fixed.name):
                    continue
                kind = text(fixed.declaration.child_by_field_name("type"))
                for bound in fixed.bounds[:2]:
                    header = f"for ({kind} {fixed.name} = 0; {fixed.name} < {bound}; ++{fixed.name})"
                    edits: list[UnitEdit] = [drop_statement(data, fixed.declaration)]
                    edits += wrap_rest(data, rest[0], block, header)
                    yield edits, f"{fixed.name} in {fn.name} was fixed at 0: loop it over {bound}"
