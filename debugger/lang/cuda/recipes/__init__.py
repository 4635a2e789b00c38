"""Fix recipes over the CUDA sources a candidate hands to `load_inline`: tree-sitter edits of the CUDA
text, written back into the Python file's string literals (splice.py), everything else kept.

Each recipe repairs what one CUDA static fact (facts.py, host_facts.py) points at:

| recipe | fact | bug class |
| --- | --- | --- |
| cuda_ceil_div_grid | cuda_floor_div_grid | grid_undercount |
| cuda_grid_stride_loop | cuda_grid_capped | grid_undercount |
| cuda_grid_axis_extent | cuda_grid_axis_single | grid_undercount |
| cuda_block_stride_loop | cuda_block_capped | reduction_axis |
| cuda_bounds_check | cuda_unguarded_load / _store | mask_missing |
| cuda_decode_on_copy | cuda_index_divided_in_place | unwritten_output |
| cuda_float_accumulator | cuda_half_accumulator | low_precision_accumulator |
| cuda_bn_batch_stats | cuda_reads_running_stats | train_eval_mode |
| cuda_syncthreads | cuda_shared_no_sync | write_race |
| cuda_atomic_partials | cuda_block_partials_race | write_race |
| cuda_combine_partials | cuda_partials_not_combined | reduction_axis |
| cuda_block_stride_row | cuda_block_smaller_than_row | reduction_axis |
| cuda_contiguous_inputs | (the layout checks fail) | stride_layout |
| cuda_fused_axis_guard | cuda_guard_on_fused_axis | unwritten_output |
| cuda_batch_loop | cuda_index_fixed_at_zero | grid_undercount |
| cuda_exact_gelu | cuda_tanh_gelu (descriptive) | activation_formula |
| cuda_transposed_conv_weight | cuda_transposed_taps_flipped / _weight_out_major | operator_misread |
| cuda_avg_pool_window | cuda_avgpool_counts_valid | operator_misread |
| cuda_exit_after_barriers | cuda_exit_before_barrier | write_race |
| cuda_block_scan_carry | cuda_block_scan_no_carry | scan_semantics |
| cuda_carry_in_every_thread | cuda_carry_in_one_thread | scan_semantics |
| cuda_include_declaring_header | (a CUDA macro no include declares: nvcc's build error) | gpu_incompatible |

`RECIPES` is registered into the one recipe registry (debugger.recipes.register) when the CUDA
language loads, so the kb backend, the diagnosis's recipe sites and its experiments all see them.
"""
from __future__ import annotations

from debugger.lang.cuda.recipes.barrier_exit import CudaExitAfterBarriers
from debugger.lang.cuda.recipes.batchnorm import CudaBatchNormBatchStats
from debugger.lang.cuda.recipes.block_scan import CudaBlockScanCarry
from debugger.lang.cuda.recipes.carry import CudaCarryInEveryThread
from debugger.lang.cuda.recipes.bounds import CudaBoundsCheck
from debugger.lang.cuda.recipes.contiguous import CudaContiguousInputs
from debugger.lang.cuda.recipes.coverage import CudaBatchLoop, CudaFusedAxisGuard
from debugger.lang.cuda.recipes.decode import CudaDecodeOnCopy
from debugger.lang.cuda.recipes.gelu import CudaExactGelu
from debugger.lang.cuda.recipes.headers import CudaIncludeDeclaringHeader
from debugger.lang.cuda.recipes.grid import (CudaBlockStrideLoop, CudaCeilDivGrid, CudaGridAxisExtent,
                                            CudaGridStrideLoop)
from debugger.lang.cuda.recipes.partials import CudaAtomicPartials, CudaCombinePartials
from debugger.lang.cuda.recipes.pooling import CudaAvgPoolWindow
from debugger.lang.cuda.recipes.precision import CudaFloatAccumulator
from debugger.lang.cuda.recipes.rowloop import CudaBlockStrideRow
from debugger.lang.cuda.recipes.sync import CudaSyncThreads
from debugger.lang.cuda.recipes.transposed import CudaTransposedConvWeight

RECIPES = [CudaCeilDivGrid(), CudaGridStrideLoop(), CudaGridAxisExtent(), CudaBlockStrideLoop(), CudaBoundsCheck(), CudaDecodeOnCopy(),
           CudaFloatAccumulator(), CudaBatchNormBatchStats(), CudaSyncThreads(), CudaAtomicPartials(),
           CudaCombinePartials(), CudaBlockStrideRow(), CudaContiguousInputs(), CudaFusedAxisGuard(), CudaBatchLoop(),
           CudaExactGelu(), CudaTransposedConvWeight(), CudaAvgPoolWindow(), CudaExitAfterBarriers(),
           CudaBlockScanCarry(), CudaCarryInEveryThread(), CudaIncludeDeclaringHeader()]

__all__ = ["RECIPES", "CudaAtomicPartials", "CudaAvgPoolWindow", "CudaBatchLoop", "CudaBatchNormBatchStats",
           "CudaBlockScanCarry", "CudaBlockStrideLoop", "CudaCarryInEveryThread", "CudaBlockStrideRow", "CudaBoundsCheck", "CudaCeilDivGrid", "CudaCombinePartials",
           "CudaContiguousInputs", "CudaDecodeOnCopy", "CudaExactGelu", "CudaExitAfterBarriers", "CudaFloatAccumulator", "CudaFusedAxisGuard",
           "CudaGridAxisExtent", "CudaGridStrideLoop", "CudaIncludeDeclaringHeader", "CudaSyncThreads", "CudaTransposedConvWeight"]
