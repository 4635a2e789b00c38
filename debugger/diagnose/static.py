"""Static evidence from the kernel source: the facts a person would check first.

Built on the recipes' syntax layer (one tree-sitter view of kernels and launches for the whole
project) and on the recipes themselves: a recipe that locates a site is evidence that the bug shape
it repairs is present there.
"""
from __future__ import annotations

import re

from debugger.recipes import propose_all
from debugger.recipes.syntax import Source, call_args, line, number, text, walk

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


def static_facts(src: str) -> list[dict]:
    """Facts as {tag, line, message, recipe?}: unmasked accesses, grid arithmetic, accumulators..."""
    facts: list[dict] = []
    s = Source(src)
    if not s.ok:
        return [{"tag": "unparseable", "line": None, "message": "the candidate does not parse"}]
    for k in s.kernels:
        for call in k.calls("tl.load", "tl.store"):
            _, kw = call_args(call)
            name = s.call_name(call)
            if "mask" not in kw and "boundary_check" not in kw:
                facts.append({"tag": "unmasked_load" if name == "tl.load" else "unmasked_store",
                              "line": line(call), "message": f"{name} without a mask in {k.name}"})
            other = kw.get("other")
            if other is not None:
                facts.append({"tag": "other_fill", "line": line(call),
                              "message": f"{name} fills masked lanes with other={text(other)}"})
        for call in k.calls("tl.zeros", "tl.full"):
            _, kw = call_args(call)
            dt = text(kw.get("dtype"))
            if re.search(r"float16|bfloat16", dt):
                facts.append({"tag": "low_precision_accumulator", "line": line(call),
                              "message": f"accumulator allocated as {dt} in {k.name}"})
        for call in k.calls("tl.atomic_add", "tl.atomic_max", "tl.atomic_min"):
            facts.append({"tag": "uses_atomics", "line": line(call), "message": f"{s.call_name(call)} in {k.name}"})
        for call in k.calls("tl.dot"):
            _, kw = call_args(call)
            if "out_dtype" in kw and re.search(r"float16|bfloat16", text(kw["out_dtype"])):
                facts.append({"tag": "low_precision_accumulator", "line": line(call),
                              "message": f"tl.dot accumulates in {text(kw['out_dtype'])}"})
    for launch in s.launches:
        for g in launch.grid_exprs():
            for n in walk(g):
                if n.type == "binary_operator" and any(c.type == "//" for c in n.children):
                    facts.append({"tag": "floor_div_grid", "line": line(n),
                                  "message": f"grid of {launch.kernel} uses floor division: {text(n)}"})
    return facts


def recipe_sites(src: str) -> list[dict]:
    """What the fix recipes locate in this source: one entry per proposed patch."""
    out = []
    for p in propose_all(src):
        out.append({"recipe": p.recipe, "bug_class": p.bug_class, "lines": p.sites,
                    "description": p.description, "tag": RECIPE_TAGS.get(p.recipe)})
    return out
