"""Check sizes: the task's published sizes, or reduced ones that fit the device and the time.

KernelBench's published inputs reach 16 GB: a check takes 10-15 s on an H200 and the interpreter
cannot run them at all. `small` scales the module-level int constants that get_inputs() reads (batch-
like names first, then the largest) by halving, until the inputs fit a byte budget: halving keeps
the divisibility a reference usually relies on, and constants only get_init_inputs() reads (channels,
kernel sizes, heads) are the operator's hyperparameters and stay, unless the reference's parameters
exceed their own budget (a Linear of 32768 x 32768 features: 4 GiB of weights, which no reduced batch
makes smaller): then the constants get_init_inputs() reads are halved too, largest first, until they
fit. The input and parameter bytes are measured by the reference worker, which draws get_inputs() and
builds Model on the meta device (nothing is allocated).

`auto` means: reduced sizes for the repair loop, published sizes for the final verdict where they fit
the device; `published` never reduces.
"""
from __future__ import annotations

import ast
import re

SIZES = ("auto", "published", "small")
BUDGET_BYTES = {"cpu": 1 << 20, "cuda": 256 << 20}  # inputs of one check at reduced sizes
# The reference's matmul/convolution FLOPs per forward at reduced sizes on the CPU, where the candidate's
# kernels are interpreted (Triton) or emulated (CUDA) at well under a GFLOP/s: a 3-D convolution whose
# inputs fit 1 MiB still took minutes a check. On a GPU the bytes alone decide.
BUDGET_FLOPS = {"cpu": 100_000_000, "cuda": None}
# The reference's parameters and buffers: beyond this, the widths its layers are built with shrink too (an 8192 x
# 8192 Linear, 256 MiB, as in many level-2 tasks, stays).
# Every check holds Model's and ModelNew's weights, and the parameter map a third copy; qwencoder level2/56's
# 32768 x 32768 Linear could not be allocated on a 23 GB CPU host, nor beside other jobs on a GPU.
BUDGET_PARAM_BYTES = {"cpu": 512 << 20, "cuda": 2 << 30}
BATCH_LIKE = re.compile(r"batch|^b$|^bs$|^n$|^m$|num_samples|samples", re.I)
# Per check the workers hold the inputs about five times over (pristine, clone, float64 copies) plus
# outputs of similar size: the estimate a scheduler can pack by.
CHECK_MEMORY_FACTOR = 8
# KernelBench's trials alone (`--checks kernelbench`) hold less: no float64 copy, one candidate run (d06a0d9). Both
# workers' peaks (`peak_bytes`) over the inputs and largest result, at the published sizes: on an H100 (run 49) 3.25x
# and 2.75x (gemini level1/53, level1/94); on an H200 (run 51, 39 answers) 2.2x to 5.5x, 7.4x for one of 0.25 GB
# (level2/19: 22.2 GB for 4.0; level1/96: 37 for 8), where factor 4 left 16 of its 38 sized evaluations 28 GiB short
# between them and four ran out of memory. Six, with EVALUATION_OVERHEAD, covers every one of them
# (`python eval/memory_fit.py POOL ROWS.jsonl`).
TRIAL_MEMORY_FACTOR = 6
# What an evaluation holds whatever its sizes (cuDNN/cuBLAS workspaces, the allocator's rounding): the 0.25 GB task
# above held 1.85 GB.
EVALUATION_OVERHEAD_BYTES = 512 << 20


def input_constants(reference_src: str) -> dict[str, int]:
    """Module-level int constants (> 1) that get_inputs() reads, in the order to scale them."""
    tree = ast.parse(reference_src)
    consts = {k: v for k, v in _int_constants(tree).items() if v > 1}
    used = _names_read(tree, "get_inputs")
    if used is None:
        return {}
    hyper = _names_read(tree, "get_init_inputs") or set()
    keep = {k: v for k, v in consts.items() if k in used and k not in hyper}
    return dict(sorted(keep.items(), key=lambda kv: (not BATCH_LIKE.search(kv[0]), -kv[1])))


def init_constants(reference_src: str) -> dict[str, int | list[int]]:
    """Module-level int constants (> 1) and lists of them get_init_inputs() reads (the widths Model's layers are
    built with: `hidden_layer_sizes = [32768, 32768]` in KernelBench's MLPs), largest first: what shrinks a
    reference's parameters."""
    tree = ast.parse(reference_src)
    read = _names_read(tree, "get_init_inputs")
    if read is None:
        return {}
    ints = _int_constants(tree)
    keep: dict[str, int | list[int]] = {k: v for k, v in ints.items() if k in read and v > 1}
    keep.update({k: v for k, v in _int_list_constants(tree, ints).items() if k in read and max(v) > 1})
    return dict(sorted(keep.items(), key=lambda kv: -extent(kv[1])))


def extent(value: int | list[int]) -> int:
    """A size constant's magnitude: the int, or a list's largest element (`hidden_layer_sizes = [32768, 32768]`)."""
    return max(value) if isinstance(value, list) else value


def halved(value: int | list[int]) -> int | list[int]:
    """A size constant at half its value (each element of a list of widths), never below 2."""
    if isinstance(value, list):
        return [max(2, v // 2) if v > 2 else v for v in value]
    return max(2, value // 2)


def _names_read(tree: ast.Module, function: str) -> set[str] | None:
    """The names a module-level function reads, or None where the module has no such function."""
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function), None)
    return None if fn is None else {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}


def _int_constants(tree: ast.Module) -> dict[str, int]:
    """The module's int constants in order, each expression read with the ones before (`N = 2048 * 2`)."""
    known: dict[str, int] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        pairs = [(target, node.value)] if isinstance(target, ast.Name) else (
            list(zip(target.elts, node.value.elts))
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) else [])
        for t, v in pairs:
            value = _int_value(v, known) if isinstance(t, ast.Name) else None
            if value is not None:
                known[t.id] = value
    return known


def _int_list_constants(tree: ast.Module, known: dict[str, int]) -> dict[str, list[int]]:
    """The module's list constants of ints (`[16384, 16384]`, `[1024] * 16`), read with its int constants `known`."""
    found: dict[str, list[int]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _int_list_value(node.value, known)
            if value:
                found[node.targets[0].id] = value
    return found


def _int_list_value(node: ast.AST, known: dict[str, int]) -> list[int] | None:
    if isinstance(node, ast.List):
        values = [_int_value(e, known) for e in node.elts]
        return None if not values or any(v is None for v in values) else values
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        items, times = _int_list_value(node.left, known), _int_value(node.right, known)
        return items * times if items is not None and times is not None and 0 < times <= 4096 else None
    return None


_INT_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
            ast.FloorDiv: lambda a, b: a // b if b else None, ast.LShift: lambda a, b: a << b if 0 <= b < 63 else None,
            ast.Pow: lambda a, b: a ** b if 0 <= b < 63 else None}


def _int_value(node: ast.AST, known: dict[str, int]) -> int | None:
    """The value of an int constant expression (literals, names of earlier int constants, + - * // ** <<)."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _INT_OPS:
        a, b = _int_value(node.left, known), _int_value(node.right, known)
        return None if a is None or b is None else _INT_OPS[type(node.op)](a, b)
    return None


def reduce_shapes(reference_src: str, measure, budget: int, max_steps: int = 40,
                  flop_budget: int | None = None, param_budget: int | None = None) -> tuple[dict, int, int]:
    """(shapes, bytes at published sizes, bytes at the returned shapes). `measure(shapes)` returns
    the input bytes for a shapes override, or (bytes, reference FLOPs or None[, parameter bytes or None]),
    or None when get_inputs() cannot be drawn so. With `flop_budget`, shapes are halved until the
    reference's FLOPs fit it too; with `param_budget`, the constants get_init_inputs() reads are halved
    (largest first) while the parameters exceed it."""
    consts = input_constants(reference_src)
    widths = init_constants(reference_src) if param_budget is not None else {}

    def sized(shapes: dict):
        got = measure(shapes)
        if got is None:
            return None
        got = got if isinstance(got, tuple) else (got,)
        return (tuple(got) + (None, None))[:3]

    def params_fit(m) -> bool:
        return param_budget is None or m[2] is None or m[2] <= param_budget

    def inputs_fit(m) -> bool:
        return m[0] <= budget and (flop_budget is None or m[1] is None or m[1] <= flop_budget)

    def fits(m) -> bool:
        return inputs_fit(m) and params_fit(m)

    first = sized({})
    published = first[0] if first else None
    if first is None or fits(first) or not (consts or widths):
        return {}, published or 0, published or 0
    shapes: dict[str, int] = {}
    now = first
    for _ in range(max_steps):
        if fits(now):
            break
        name = None
        if not params_fit(now):  # the weights: halve the largest width they are built with
            name = max((k for k in widths if extent(shapes.get(k, widths[k])) >= 4),
                       key=lambda k: extent(shapes.get(k, widths[k])), default=None)
        if name is None and not inputs_fit(now):  # halve the first constant (in scaling order) that can shrink
            name = next((k for k in consts if shapes.get(k, consts[k]) >= 4), None)
        if name is None:
            break
        base = consts if name in consts else widths
        trial = dict(shapes, **{name: halved(shapes.get(name, base[name]))})
        got = sized(trial)
        if got is None:
            base.pop(name)
            continue
        shapes, now = trial, got
    return shapes, published, now[0]


def module_bytes(model) -> int:
    """Bytes of a module's parameters and buffers (on the meta device too: nothing is read)."""
    return sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))


def largest_result_bytes(fn, *args) -> int:
    """Bytes of the largest tensor any operator allocates for its result while fn(*args) runs (on meta
    tensors: nothing is computed). A convolution's output can be many times its input (a transposed 3D one 20x)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class _Largest(TorchDispatchMode):
        largest = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            schema = getattr(func, "_schema", None)
            if schema is not None and any(r.alias_info is not None for r in schema.returns):
                return out  # a view or an in-place result: nothing new is allocated
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor):
                    self.largest = max(self.largest, t.numel() * t.element_size())
            return out

    with _Largest() as mode:
        fn(*args)
    return mode.largest


def check_memory_estimate(input_bytes: int, result_bytes: int = 0, trials_only: bool = False) -> int:
    """Bytes one check is expected to hold on the device (for scheduling evaluations that share it): the
    inputs and the largest intermediate or output (largest_result_bytes), several copies of each (the
    candidate's two runs, the reference's native and float64 ones, the comparison's; fewer where only
    KernelBench's trials run)."""
    return (TRIAL_MEMORY_FACTOR if trials_only else CHECK_MEMORY_FACTOR) * (input_bytes + result_bytes)
