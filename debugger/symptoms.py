"""The vocabulary of symptoms: what the diagnosis reports, and what patterns and recipes match on.

Each tag names one observable fact about a failing kernel (from the error maps, the probes or the
kernel source). Knowledge-base patterns list the tags they explain (`symptoms:` in their front
matter); the diagnosis reports the tags it saw; retrieval and the kb backend's ranking join on them.
"""

# Error-map facts (where the output is wrong).
ERROR_MAP = {
    "tail_block_wrong": "only elements in the last partial block (or past the last full block) are wrong",
    "never_written": "some output elements still hold the poison the allocator was filled with",
    "none_written": "no element of an output was written: it is all the allocation's poison",
    "mostly_unwritten": "more than half of an output's elements were never written",
    "rows_unwritten": "whole rows of the output were never written while others were",
    "slices_unwritten": "whole leading slices (batch elements) of the output were never written",
    "prefix_written": "only a flat prefix of the output (the first program's block) was written",
    "whole_rows_wrong": "the wrong elements form whole rows",
    "whole_cols_wrong": "the wrong elements form whole columns",
    "periodic_errors": "wrong elements repeat with a period that matches a block size or a stride",
    "one_tile_wrong": "the wrong elements form one program's tile (or a few tiles)",
    "all_wrong": "nearly every element is wrong",
    "sparse_wrong": "a few scattered elements are wrong",
    "nan_in_output": "the candidate produces NaN where the reference does not",
    "inf_in_output": "the candidate produces Inf where the reference does not",
    "memory_fault": "the kernel crashed its process (an out-of-bounds store or load corrupted memory)",
    "raises_exception": "the candidate raised an exception on some input sets",
}

# Magnitude structure (how the values are wrong).
MAGNITUDE = {
    "constant_factor": "candidate = c * reference for one constant c",
    "sign_flip": "candidate = -reference on the wrong elements",
    "transposed": "candidate = reference transposed",
    "shifted_by_one": "candidate equals the reference shifted by one position along an axis",
    "precision_noise": "errors are small and relative (precision-level), not structural",
    "offset_error": "candidate = reference + a constant",
    "large_error": "errors are of the order of the values themselves",
}

# Dependence on the input set (when the output is wrong).
DEPENDENCE = {
    "fails_large_magnitude": "fails only for inputs scaled up (x100)",
    "fails_small_magnitude": "fails only for inputs scaled down (x0.01)",
    "fails_negative_inputs": "fails only when inputs are negated or all negative",
    "fails_noncontiguous": "fails only for non-contiguous or transposed inputs",
    "fails_param_redraw": "fails only when the parameters are re-drawn",
    "fails_other_shapes": "fails only on shapes other than the task's",
    "run_to_run_drift": "two runs on the same inputs give different outputs",
    "inputs_mutated": "the candidate modified its inputs",
    "kernel_passes": "with Model's weights mapped into ModelNew, the kernel passes the task's own inputs",
    "kernelbench_fails": "KernelBench's trials fail (each model built with its own initialisation)",
    "passes_in_eval_mode": "the failing checks pass when both models run in eval mode",
    "says_simplified": "the candidate's comments say it simplifies, skips or approximates part of the operator",
    "dropped_term": "a parameter Model adds right after a biased layer matched no tensor of ModelNew",
}

# Probe facts (instrumented copy of the kernel).
PROBES = {
    "masked_lane_store": "a store wrote lanes outside the output's bounds",
    "out_of_bounds_load": "a load read outside its tensor's bounds",
    "programs_overlap": "several programs wrote the same output element",
    "programs_missing": "some output elements were written by no program",
    "zero_programs": "a kernel was launched with a grid of zero programs: its body never ran",
    "buffer_mostly_unwritten": "a kernel's stores reach less than half of a buffer it writes into",
    "intermediate_wrong": "a probed intermediate (row max, row sum, mean, variance, accumulator) departs from the reference's",
    "first_kernel_divergence": "the first of several kernels whose output departs from the reference",
}

# Static facts (kernel source).
STATIC = {
    "unmasked_load": "a tl.load has no mask",
    "unmasked_store": "a tl.store has no mask",
    "other_zero_before_max": "a masked load fills with 0 before a max/min reduction",
    "floor_div_grid": "the launch grid uses floor division instead of triton.cdiv",
    "low_precision_accumulator": "an accumulator is fp16/bf16",
    "no_max_subtraction": "exp of unshifted values (softmax / log-sum-exp without the max)",
    "int32_offsets": "offsets computed from program_id in 32 bits on a large tensor",
    "loop_pointer_not_advanced": "a loop's pointers or offsets do not depend on the loop variable",
    "store_without_atomic": "several programs store to the same address without atomics",
    "hardcoded_stride": "a stride is assumed (1 or a shape) instead of passed from the tensor",
    "block_smaller_than_row": "one block covers only part of the reduced axis",
    "divides_by_block": "a mean or variance divides by the block size, not N",
    "other_fill": "a masked load fills the switched-off lanes with an explicit `other=` value",
    "uses_atomics": "the kernel accumulates with tl.atomic_* operations",
    "dtype_mismatch": "an output has a different dtype from the reference's",
    "placeholder_body": "the kernel says in its own comments that it is a placeholder or not implemented",
    "tf32_dot": "a float32 tl.dot without input_precision='ieee' runs as tf32 on an NVIDIA GPU",
}

# Static facts of CUDA sources (debugger/lang/cuda/facts.py, host_facts.py).
CUDA_STATIC = {
    "cuda_unguarded_load": "a CUDA load at a thread index never compared with the size",
    "cuda_unguarded_store": "a CUDA store at a thread index never compared with the size",
    "cuda_floor_div_grid": "the CUDA grid divides the extent by the block size with floor division",
    "cuda_grid_capped": "the CUDA grid is capped (65535 blocks) and the kernel has no grid-stride loop",
    "cuda_grid_axis_single": "the CUDA grid gives one block on an axis the kernel bounds as an index by a size parameter",
    "cuda_block_capped": "the CUDA block is capped (1024 threads) and the kernel has no block-stride loop",
    "cuda_index_divided_in_place": "a CUDA index divided in place while decoding, then used as the offset",
    "cuda_guard_on_fused_axis": "a CUDA guard bounds a fused block axis (batch x channels) by one factor only",
    "cuda_tanh_gelu": "a CUDA kernel computes GELU by its tanh approximation (0.044715), not exact erf GELU",
    "cuda_index_fixed_at_zero": "a CUDA index fixed at 0 (one batch element) while its bound is never read",
    "cuda_transposed_taps_flipped": "a CUDA transposed convolution's gather reads flipped taps (K - 1 - k) or adds "
                                    "the padding twice",
    "cuda_avgpool_counts_valid": "a CUDA average pool divides by the taps inside the input, not the whole window",
    "cuda_exit_before_barrier": "CUDA threads return before a __syncthreads the rest of the block reaches: their "
                                "share of a shared tile is never loaded",
    "cuda_block_scan_no_carry": "a CUDA kernel scans a row chunk by chunk with cub::BlockScan and no carry: "
                                "each chunk restarts from zero",
    "cuda_carry_in_one_thread": "a CUDA local every thread reads is updated by one thread only (`if (tid == last) "
                                "carry += ...`): the other threads' copies never change",
    "cuda_transposed_weight_out_major": "a CUDA transposed convolution reads its weight out-channel major, a "
                                        "convolution's layout",
    "cuda_shared_no_sync": "CUDA shared memory written and read by other threads with no __syncthreads between",
    "cuda_partials_not_combined": "one partial per CUDA block is stored and never combined",
    "cuda_block_partials_race": "CUDA blocks store their partials to one element without atomics",
    "cuda_block_smaller_than_row": "a CUDA block reduces one element per thread of a longer row",
    "cuda_atomic_uninitialised_output": "CUDA atomics add into a torch::empty buffer never zeroed",
    "cuda_half_accumulator": "a CUDA half/bfloat16 local is accumulated in a loop",
    "cuda_int32_index": "a numel() is passed to an int parameter of a CUDA kernel",
    "cuda_reads_running_stats": "a CUDA BatchNorm normalises with the running statistics in a train-mode run",
    "cuda_input_assumed_dense": "a tensor reaches the CUDA extension as given (no .contiguous(), no strides read): its "
                                "kernels read it as dense",
    "cuda_uses_atomics": "the CUDA kernel updates memory with atomics",
}

# compute-sanitizer's findings on a failing check (GPU: debugger/diagnose/sanitizer_evidence.py).
SANITIZER = {
    "sanitizer_out_of_bounds": "memcheck: a kernel of the candidate read or wrote outside its allocation",
    "sanitizer_index_wrapped": "memcheck: an access far before its allocation or 2 GiB past it (an index that wrapped)",
    "sanitizer_shared_race": "racecheck: a shared-memory hazard between accesses with no barrier between them",
    "sanitizer_barrier_error": "synccheck: a barrier reached by only part of a block or warp",
    "sanitizer_uninitialised_read": "initcheck: a kernel of the candidate read memory nothing wrote",
    "sanitizer_unwritten_output": "initcheck: memory nothing wrote was copied out or read by PyTorch (an output left unwritten)",
}

# A GPU build of an interpreted kernel (debugger/gpu_check.py; debugger/diagnose/compile_evidence.py).
GPU_COMPILE = {"gpu_compile_error": "a kernel the run executed does not compile for a GPU (sm_90 code generation)"}

ALL = {**ERROR_MAP, **MAGNITUDE, **DEPENDENCE, **PROBES, **STATIC, **CUDA_STATIC, **SANITIZER, **GPU_COMPILE}


def is_symptom(tag: str) -> bool:
    """True if `tag` is in the vocabulary."""
    return tag in ALL
