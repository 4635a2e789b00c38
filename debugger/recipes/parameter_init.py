"""The parameter_init fix: ModelNew takes Model's initial values, drawn as Model draws them.

KernelBench builds Model and ModelNew under one seed and copies nothing, so a right kernel whose
ModelNew makes its weights another way (`torch.randn`, xavier, another order) fails. The fix needs no
model: Model's constructor body is replayed in a small parameter holder (`_ModelParameters`) as the
first thing ModelNew's constructor does, so the RNG is drawn in Model's order, and at the end of
ModelNew's constructor each tensor the correspondence matched (debugger/params.py) takes the holder's
value. The holder's tensors are never used in forward: the kernels still compute everything.
"""
from __future__ import annotations

import ast
import builtins
import textwrap

from debugger.recipes.base import Patch

RECIPE_ID = "parameter_init"
HOLDER = "_ModelParameters"
HELPER = "_tensor_at"


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _init(cls: ast.ClassDef) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)


def _is_super_init(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr == "__init__")


def _top_level_names(tree: ast.Module) -> dict[str, ast.stmt]:
    names: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                names[(a.asname or a.name).split(".")[0]] = node
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names[t.id] = node
    return names


def _free_names(fn: ast.FunctionDef, body: list[ast.stmt]) -> set[str]:
    """Names the transplanted statements read that neither the signature nor they themselves bind."""
    bound = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    bound |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a}
    loads, stores = set(), set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name):
                (loads if isinstance(node.ctx, ast.Load) else stores).add(node.id)
    return loads - bound - stores - set(dir(builtins))


def _call_args(fn: ast.FunctionDef) -> str | None:
    """ModelNew's constructor arguments, passed on positionally (KernelBench passes them so)."""
    if fn.args.vararg or fn.args.kwonlyargs:
        return None
    return ", ".join(a.arg for a in fn.args.args[1:])


def parameter_init_patch(candidate_src: str, reference_src: str, parameter_map: dict | None) -> Patch | None:
    """The fix as a Patch, or None when there is nothing to fix or the sources do not allow it."""
    pairs = list((parameter_map or {}).get("pairs", []))
    if not any((p.get("own_init_diff") or 0.0) > 0.0 for p in pairs):
        return None
    # Every matched tensor is copied, not only those that differed: the holder draws Model's parameters
    # first, which shifts every later draw of ModelNew's own, so a tensor that happened to come out as
    # Model's (the same number of draws before it) no longer does.
    try:
        ref_tree, cand_tree = ast.parse(reference_src), ast.parse(candidate_src)
    except SyntaxError:
        return None
    model, new = _class(ref_tree, "Model"), _class(cand_tree, "ModelNew")
    if model is None or new is None or _class(cand_tree, HOLDER) is not None:
        return None
    model_init, new_init = _init(model), _init(new)
    if model_init is None or new_init is None:
        return None
    args = _call_args(new_init)
    if args is None:
        return None
    body = [s for s in model_init.body if not _is_super_init(s)
            and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body:
        return None
    ref_names, cand_names = _top_level_names(ref_tree), _top_level_names(cand_tree)
    imports = []
    for name in sorted(_free_names(model_init, body)):
        if name in cand_names:
            continue
        node = ref_names.get(name)
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            return None  # Model's constructor needs something of the reference file beyond its imports
        imports.append(ast.get_source_segment(reference_src, node))
    if "torch" not in cand_names:
        imports.append("import torch")
    ref_lines = reference_src.splitlines()
    body_text = "\n".join(ref_lines[body[0].lineno - 1: body[-1].end_lineno])
    params = ast.unparse(model_init.args).split(",", 1)
    signature = params[1].strip() if len(params) > 1 else ""
    holder = (f"class {HOLDER}(torch.nn.Module):\n"
              f'    """Model\'s parameters, built exactly as Model builds them (the parameter_init fix)."""\n\n'
              f"    def __init__(self{', ' + signature if signature else ''}):\n"
              f"        super().__init__()\n"
              f"{textwrap.indent(textwrap.dedent(body_text), ' ' * 8)}\n\n\n"
              f"def {HELPER}(module, name):\n"
              f"    for part in name.split('.'):\n"
              f"        module = getattr(module, part)\n"
              f"    return module\n\n\n")
    lines = candidate_src.splitlines(keepends=True)
    indent = " " * new_init.body[0].col_offset
    first = next((s for s in new_init.body if _is_super_init(s)), None)
    build_at = first.end_lineno if first is not None else new_init.body[0].lineno - 1
    plain = [p for p in pairs if p.get("by") not in ("transposed", "reshaped")]
    swapped = [p for p in pairs if p.get("by") == "transposed"]
    reshaped = [p for p in pairs if p.get("by") == "reshaped"]
    copy = f"{indent}with torch.no_grad():  # Model's initial values, drawn in Model's order (parameter_init)\n"
    if plain:
        copy_pairs = ", ".join(f"({p['candidate']!r}, {p['reference']!r})" for p in plain)
        copy += (f"{indent}    for _own, _model in ({copy_pairs},):\n"
                 f"{indent}        {HELPER}(self, _own).copy_({HELPER}(_model_parameters, _model))\n")
    if swapped:  # held with the first two dimensions swapped (e.g. a ConvTranspose weight as (out, in, k))
        copy_pairs = ", ".join(f"({p['candidate']!r}, {p['reference']!r})" for p in swapped)
        copy += (f"{indent}    for _own, _model in ({copy_pairs},):  # held with dims 0 and 1 swapped\n"
                 f"{indent}        {HELPER}(self, _own).copy_({HELPER}(_model_parameters, _model).transpose(0, 1))\n")
    if reshaped:  # the same elements in a shape differing by size-1 dimensions (e.g. (1,) for (1, 1, 1))
        copy_pairs = ", ".join(f"({p['candidate']!r}, {p['reference']!r})" for p in reshaped)
        copy += (f"{indent}    for _own, _model in ({copy_pairs},):  # held in another shape of size-1 dims\n"
                 f"{indent}        _dst = {HELPER}(self, _own)\n"
                 f"{indent}        _dst.copy_({HELPER}(_model_parameters, _model).reshape(_dst.shape))\n")
    build = f"{indent}_model_parameters = {HOLDER}({args})  # first: the RNG is drawn in Model's order\n"
    end = new_init.end_lineno
    out = lines[:build_at] + [build] + lines[build_at:end] + [copy] + lines[end:]
    insert_at = new.lineno - 1 - len(new.decorator_list)
    text = "".join(out[:insert_at]) + holder + "".join(out[insert_at:])
    if imports:
        text = "\n".join(dict.fromkeys(imports)) + "\n" + text
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    names = ", ".join([p["candidate"] for p in pairs if (p.get("own_init_diff") or 0.0) > 0.0][:6])
    return Patch(RECIPE_ID, f"build Model's parameters in Model's order and copy them into {names}", text,
                 [build_at + 1, end + 1], "parameter_init")
