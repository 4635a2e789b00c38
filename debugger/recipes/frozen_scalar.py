"""The frozen-scalar fix: a learnable scalar of Model's that ModelNew keeps as a plain Python number.

Model builds `self.constant = nn.Parameter(torch.tensor(constant))` from an init argument; real answers
store `self.constant = constant` and hand the number to the kernel (qwencoder level2/68). Under the
task's own initialisation both hold the same value, so KernelBench's verdict cannot tell; with re-drawn
parameters (the kernel verdict's `params_redrawn`, the gate's full checks) Model's scalar moves and the
answer's does not, and the parameter correspondence leaves it unmatched. The fix, with no model:
- ModelNew holds the scalar as a parameter, `torch.nn.Parameter(torch.tensor(float(arg)))`, which the
  correspondence then matches (a 0-d tensor, by name or by order);
- forward and the other methods read it as `float(self.constant)`, so the kernel still gets a number;
- where ModelNew's other tensors are built differently from Model's too, the parameter_init fix is
  applied to the edited source, so one patch carries both.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from debugger.recipes.base import Patch
from debugger.recipes.dropped_term import _replace_spans, _self_attr
from debugger.recipes.parameter_init import _class, _init, parameter_init_patch

RECIPE_ID = "frozen_scalar"


@dataclass
class FrozenScalar:
    """Model's scalar parameter `term`, built from init argument number `position`, held by ModelNew as
    the plain number `attr`."""

    term: str
    position: int
    attr: str


def _args(fn: ast.FunctionDef) -> list[str]:
    return [a.arg for a in fn.args.args[1:]]  # without self


def _scalar_parameter(value: ast.expr) -> str | None:
    """`nn.Parameter(torch.tensor(NAME))` (also `torch.nn.Parameter`, `torch.tensor(float(NAME))`) -> NAME."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, (ast.Attribute, ast.Name))
            and (value.func.attr if isinstance(value.func, ast.Attribute) else value.func.id) == "Parameter"
            and len(value.args) == 1):
        return None
    inner = value.args[0]
    if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "tensor"
            and len(inner.args) == 1):
        return None
    arg = inner.args[0]
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "float" and len(arg.args) == 1:
        arg = arg.args[0]
    return arg.id if isinstance(arg, ast.Name) else None


def _assignments(init: ast.FunctionDef):
    for stmt in init.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            name = _self_attr(stmt.targets[0])
            if name and "." not in name:
                yield stmt, name


def frozen_scalars(candidate_src: str, reference_src: str, parameter_map: dict | None) -> list[FrozenScalar]:
    """Model's unmatched scalar parameters made from an init argument, which ModelNew stores as that
    argument (the same position in its own __init__)."""
    unmatched = set((parameter_map or {}).get("unmatched_reference") or [])
    if not unmatched:
        return []
    try:
        ref, cand = ast.parse(reference_src), ast.parse(candidate_src)
    except SyntaxError:
        return []
    ref_init, new_init = _init(_class(ref, "Model")), _init(_class(cand, "ModelNew"))
    if ref_init is None or new_init is None:
        return []
    ref_args, new_args = _args(ref_init), _args(new_init)
    found = []
    for stmt, term in _assignments(ref_init):
        arg = _scalar_parameter(stmt.value)
        if term not in unmatched or arg not in ref_args:
            continue
        position = ref_args.index(arg)
        if position >= len(new_args):
            continue
        held = [name for s, name in _assignments(new_init)
                if isinstance(s.value, ast.Name) and s.value.id == new_args[position]]
        if len(held) == 1:
            found.append(FrozenScalar(term, position, held[0]))
    return found


def frozen_scalar_patch(candidate_src: str, reference_src: str, parameter_map: dict | None) -> Patch | None:
    """The fix as a Patch, or None where no frozen scalar is found or the sources do not allow it."""
    scalars = frozen_scalars(candidate_src, reference_src, parameter_map)
    if not scalars:
        return None
    tree = ast.parse(candidate_src)
    new = _class(tree, "ModelNew")
    init = _init(new)
    attrs = {s.attr for s in scalars}
    spans = []
    for stmt, name in _assignments(init):
        if name in attrs and stmt.value.lineno == stmt.value.end_lineno:
            v = stmt.value
            spans.append((v.lineno, v.col_offset, v.end_col_offset,
                          f"torch.nn.Parameter(torch.tensor(float({v.id})))"))
    if len(spans) != len(attrs):
        return None
    for fn in new.body:
        if not isinstance(fn, ast.FunctionDef) or fn is init:
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and _self_attr(node.value) in attrs:
                return None  # used as an object (`self.constant.item()`): not a plain number there
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and _self_attr(node) in attrs:
                if node.lineno != node.end_lineno:
                    return None
                spans.append((node.lineno, node.col_offset, node.end_col_offset, f"float(self.{node.attr})"))
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _self_attr(node) in attrs:
                return None  # reassigned outside __init__: not a constant of the model
    text = _replace_spans(candidate_src, spans)
    pairs = (parameter_map or {}).get("pairs") or []
    init_differs = any((p.get("own_init_diff") or 0.0) > 0.0 for p in pairs)
    if init_differs:  # the other tensors are built differently too
        base = parameter_init_patch(text, reference_src, parameter_map)
        if base is None:
            return None
        text = base.new_src
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    what = ", ".join(f"{s.attr} (Model's {s.term})" for s in scalars)
    # Alone, the model computes the operator for one value of a parameter: a misread operator (the kernel
    # verdict fails); with the weights built differently too, the initialisation is what KernelBench sees.
    return Patch(RECIPE_ID, f"hold {what} as a parameter, read as a number where it was one",
                 text, sorted({s[0] for s in spans}), "parameter_init" if init_differs else "operator_misread")
