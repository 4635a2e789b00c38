"""Static evidence beside the languages' facts (debugger/lang: Triton's and CUDA's): the operator
families the reference computes, the BLOCK sizes a candidate launches with, and the sites the fix
recipes locate (a recipe that locates a site is evidence that the bug shape it repairs is there).
"""
from __future__ import annotations

import re

from debugger.recipes import propose_all
from debugger.recipes.syntax import Source
from debugger.source.tree import call_args, number

# Which static tag a recipe's located site stands for.
RECIPE_TAGS = {
    "add_mask": "unmasked_load",
    "other_identity": "other_zero_before_max",
    "grid_cdiv": "floor_div_grid",
    "widen_accumulator": "low_precision_accumulator",
    "subtract_rowmax": "no_max_subtraction",
    "int64_offsets": "int32_offsets",
    "advance_pointers": "loop_pointer_not_advanced",
    "atomic_accumulate": "store_without_atomic",
    "contiguous_inputs": "hardcoded_stride",
    "swap_strides": "hardcoded_stride",
    "block_covers_row": "block_smaller_than_row",
    "mean_over_n": "divides_by_block",
}

REFERENCE_OPS = {
    "softmax": "softmax", "log_softmax": "softmax", "logsumexp": "softmax", "cross_entropy": "softmax",
    "layer_norm": "norm", "LayerNorm": "norm", "rms_norm": "norm", "group_norm": "norm", "GroupNorm": "norm",
    "batch_norm": "norm", "BatchNorm": "norm", "instance_norm": "norm", "InstanceNorm": "norm", "var": "norm",
    "std": "norm", "normalize": "norm",
    "matmul": "matmul", "mm": "matmul", "bmm": "matmul", "Linear": "matmul", "linear": "matmul",
    "conv1d": "conv", "conv2d": "conv", "Conv1d": "conv", "Conv2d": "conv", "einsum": "matmul", "@": "matmul",
    "cumsum": "scan", "cumprod": "scan", "cummax": "scan", "cummin": "scan",
    "gelu": "activation", "silu": "activation", "relu": "activation", "sigmoid": "activation", "tanh": "activation",
    "elu": "activation", "selu": "activation", "leaky_relu": "activation", "hardswish": "activation",
    "hardsigmoid": "activation", "softplus": "activation", "mish": "activation", "GELU": "activation",
    "sum": "reduction", "mean": "reduction", "amax": "reduction", "max": "reduction", "min": "reduction",
    "argmax": "reduction", "argmin": "reduction", "prod": "reduction", "norm": "reduction",
    "gather": "gather", "index_select": "gather", "embedding": "gather", "scatter_add": "scatter",
    "index_add": "scatter", "bincount": "scatter", "histc": "scatter",
    "max_pool": "pool", "avg_pool": "pool", "MaxPool": "pool", "AvgPool": "pool", "adaptive_avg_pool": "pool",
}


def code_only(src: str) -> str:
    """The source without comments and string literals (docstrings, provenance headers): an `@` in
    "TritonBench @ 603e28a" or "matmul" in a docstring says nothing about what the code computes."""
    import io
    import tokenize

    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(src).readline)
                if t.type not in (tokenize.COMMENT, tokenize.STRING)]
        return tokenize.untokenize(toks)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return src


def reference_families(reference_src: str) -> set[str]:
    """Operator families the reference computes (softmax, norm, matmul, scan, activation, ...)."""
    fams = set()
    code = code_only(reference_src)
    for name, fam in REFERENCE_OPS.items():
        pattern = re.escape(name) if not name.isidentifier() else rf"\b{name}\b"
        if re.search(pattern, code):
            fams.add(fam)
    return fams


def block_sizes(src: str) -> list[int]:
    """Integer values passed for BLOCK-like launch parameters (for periodicity checks)."""
    out = []
    s = Source(src)
    if not s.ok:
        return out
    for launch in s.launches:
        _, kw = call_args(launch.call)
        for name, node in kw.items():
            v = number(node)
            if v and "BLOCK" in name.upper() and float(v).is_integer():
                out.append(int(v))
    for m in re.finditer(r"BLOCK\w*\s*=\s*(\d+)", src):
        out.append(int(m.group(1)))
    return sorted(set(out))


def recipe_sites(src: str) -> list[dict]:
    """What the fix recipes locate in this source: one entry per proposed patch."""
    out = []
    for p in propose_all(src):
        out.append({"recipe": p.recipe, "bug_class": p.bug_class, "lines": p.sites,
                    "description": p.description, "tag": RECIPE_TAGS.get(p.recipe)})
    return out
