"""cuda_block_scan_carry: each chunk of a row scanned with cub::BlockScan adds the totals of the chunks
before it (fact `cuda_block_scan_no_carry`, debugger/lang/cuda/block_scan.py).

In the loop over the row's chunks:
- before the loop, `T scan_carry = T(0);` (T: the BlockScan's value type);
- the scan hands back its chunk's total (`InclusiveSum(v, out)` -> `InclusiveSum(v, out, scan_total)`,
  `ExclusiveSum` alike), then `out += scan_carry; scan_carry += scan_total;`, and a `__syncthreads()`
  before the next chunk reuses the scan's storage where the loop body had none after the scan;
- a block-stride loop (`for (int i = threadIdx.x; i < n; i += blockDim.x)`) runs the same number of
  chunks in every thread (`i - threadIdx.x < n`): the scan is a collective of the whole block, and the
  threads past the row's end take part in the last chunk with their guarded loads and stores (the
  fact's analysis requires every access indexed by the counter to be guarded on its own).
"""
from __future__ import annotations

from debugger.lang.cuda.block_scan import chunked_scans
from debugger.lang.cuda.recipes.base import CudaRecipe, indent_at
from debugger.lang.cuda.unit import Unit, identifiers, statements, syncs_in
from debugger.source.tree import text

CARRY, TOTAL = "scan_carry", "scan_total"


class CudaBlockScanCarry(CudaRecipe):
    id = "cuda_block_scan_carry"
    bug_classes = ("scan_semantics",)
    symptoms = ("cuda_block_scan_no_carry", "tail_block_wrong", "periodic_errors", "large_error")
    description = "CUDA: a row scanned chunk by chunk with cub::BlockScan carries the earlier chunks' total"

    def unit_fixes(self, unit: Unit, hints):
        data = unit.source.text.encode()
        for fn in unit.kernels:
            used = identifiers(fn.body)
            if CARRY in used or TOTAL in used:
                continue
            for found in chunked_scans(fn):
                if not found.patchable:
                    continue
                t, out = found.value_type, text(found.output)
                loop_indent = indent_at(data, found.loop.start_byte)
                stmt_indent = indent_at(data, found.statement.start_byte)
                args = found.call.child_by_field_name("arguments")
                body = found.loop.child_by_field_name("body")
                later = [s for s in statements(body) if s.start_byte > found.statement.start_byte]
                barrier = "" if syncs_in(fn, later) else f"\n{stmt_indent}__syncthreads();"
                edits = [(found.loop.start_byte, found.loop.start_byte, f"{t} {CARRY} = {t}(0);\n{loop_indent}"),
                         (found.statement.start_byte, found.statement.start_byte, f"{t} {TOTAL};\n{stmt_indent}"),
                         (args.end_byte - 1, args.end_byte - 1, f", {TOTAL}"),
                         (found.statement.end_byte, found.statement.end_byte,
                          f"\n{stmt_indent}{out} += {CARRY};\n{stmt_indent}{CARRY} += {TOTAL};{barrier}")]
                what = "carries the earlier chunks' total"
                if found.per_thread_start:
                    left = found.condition.child_by_field_name("left")
                    start = text(found.start)
                    start = start if found.start.type in ("identifier", "field_expression") else f"({start})"
                    edits.append((left.end_byte, left.end_byte, f" - {start}"))
                    what += f"; every thread runs every chunk (`{found.counter} - {start}` bounds the loop)"
                yield sorted(edits), f"{fn.name}: the scan {what}"
        return []
