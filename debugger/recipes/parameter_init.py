"""The parameter_init fix: ModelNew takes Model's initial values, drawn as Model draws them.

KernelBench builds Model and ModelNew under one seed and copies nothing, so a right kernel whose
ModelNew makes its weights another way (`torch.randn`, xavier, another order) fails. The fix needs no
model: Model's constructor body is replayed in a small parameter holder (`_ModelParameters`) as the
first thing ModelNew's constructor does, so the RNG is drawn in Model's order, and at the end of
ModelNew's constructor each tensor the correspondence matched (debugger/params.py) takes the holder's
value. The holder's tensors are never used in forward: the kernels still compute everything.
Where Model's constructor calls Model's own methods (`self._make_layer(...)`) or reads the reference
file's classes, functions or constants (a ResNet's `Bottleneck`), those come along into the holder
(methods) and before it (definitions, renamed `_Model_<name>` so the candidate's own `Bottleneck`
stays its own).
"""
from __future__ import annotations

import ast
import builtins
import copy
import textwrap

from debugger.recipes.base import Patch

RECIPE_ID = "parameter_init"
HOLDER = "_ModelParameters"
HELPER = "_tensor_at"
COPY = "_copy_into"


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


def _locals(fn: ast.FunctionDef | ast.Lambda) -> set[str]:
    """Names a function binds: its parameters and what its body assigns (nested functions included:
    an over-approximation that only ever keeps a name local)."""
    args = fn.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a}
    if isinstance(fn, ast.FunctionDef):
        names |= {n.id for stmt in fn.body for n in ast.walk(stmt)
                  if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    return names


class _Globals(ast.NodeTransformer):
    """Visits the names a piece of code reads from module scope (a name a function binds is its own
    there), renaming those in `renames` and collecting all of them in `read`."""

    def __init__(self, renames: dict[str, str], scope: set[str] = frozenset()):
        self.renames, self.scopes, self.read, self.classes = renames, [set(scope)], set(), 0

    def _function(self, node):
        self.scopes.append(_locals(node))
        self.generic_visit(node)
        self.scopes.pop()
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        for d in node.decorator_list + node.args.defaults + node.args.kw_defaults:
            if d is not None:
                self.visit(d)
        if len(self.scopes) == 1 and not self.classes:  # a module-level function, not a method
            node.name = self.renames.get(node.name, node.name)
        self.scopes.append(_locals(node))
        for stmt in node.body:
            self.visit(stmt)
        self.scopes.pop()
        return node

    visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        if len(self.scopes) == 1 and not self.classes:
            node.name = self.renames.get(node.name, node.name)
        self.classes += 1
        self.generic_visit(node)
        self.classes -= 1
        return node

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if any(node.id in scope for scope in self.scopes[1:]) or node.id in self.scopes[0]:
            return node
        if isinstance(node.ctx, ast.Load):
            self.read.add(node.id)
        node.id = self.renames.get(node.id, node.id)
        return node


def _loads(node: ast.AST, scope: set[str] = frozenset()) -> set[str]:
    """The module-scope names a definition (or a statement run with `scope` bound) reads."""
    visitor = _Globals({}, scope)
    visitor.visit(copy.deepcopy(node))
    return visitor.read


def _target(node: ast.stmt) -> str:
    return node.name if isinstance(node, (ast.ClassDef, ast.FunctionDef)) else node.targets[0].id


def _methods_used(model: ast.ClassDef, body: list[ast.stmt]) -> list[ast.FunctionDef]:
    """Model's own methods its constructor calls (`self._make_layer(...)`), transitively, in class order."""
    defs = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef) and n.name not in ("__init__", "forward")}
    wanted, todo = set(), list(body)
    while todo:
        for node in ast.walk(todo.pop()):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
                    and node.attr in defs and node.attr not in wanted:
                wanted.add(node.attr)
                todo.append(defs[node.attr])
    return [defs[n] for n in defs if n in wanted]


def _helpers(free: set[str], ref_names: dict[str, ast.stmt]) -> list[ast.stmt] | None:
    """The reference file's classes, functions and constants the constructor reads, transitively, in file
    order; None when one of them is a definition this fix cannot take along (a tuple assignment...)."""
    found: dict[str, ast.stmt] = {}
    todo = [n for n in free if not isinstance(ref_names.get(n), (ast.Import, ast.ImportFrom, type(None)))]
    while todo:
        name = todo.pop()
        node = ref_names[name]
        if name == "Model":
            return None
        if name in found:
            continue
        if isinstance(node, ast.Assign) and (len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name)):
            return None
        found[name] = node
        todo += [n for n in _loads(node) if n not in found
                 and not isinstance(ref_names.get(n), (ast.Import, ast.ImportFrom, type(None)))]
    return sorted(found.values(), key=lambda n: n.lineno)


def _renamed(node: ast.stmt, renames: dict[str, str], scope: set[str] = frozenset()) -> str:
    """The statement's source with the module-scope names of the taken-along definitions replaced (a
    parameter or local of the same name keeps its own)."""
    return ast.unparse(_Globals(renames, scope).visit(copy.deepcopy(node)))


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
    methods = _methods_used(model, body)
    free = _free_names(model_init, body)
    for m in methods:
        free |= _free_names(m, m.body)
    helpers = _helpers(free, ref_names)
    if helpers is None:
        return None  # Model's constructor needs something of the reference file it cannot take along
    free |= {n for h in helpers for n in _loads(h) if n in ref_names}
    taken = {_target(h) for h in helpers}
    imports = []
    for name in sorted(free):
        node = ref_names.get(name)
        if name in cand_names and not isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.Assign)) or name in taken:
            continue
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            return None
        imports.append(ast.get_source_segment(reference_src, node))
    if "torch" not in cand_names:
        imports.append("import torch")
    params = ast.unparse(model_init.args).split(",", 1)
    signature = params[1].strip() if len(params) > 1 else ""
    if helpers or methods:
        # Model's constructor calls its own methods or the reference file's classes, functions or
        # constants: they come along under names of their own (the candidate may define its own Bottleneck)
        renames = {name: f"_Model_{name}" for name in taken}
        pieces = [_renamed(h, renames) for h in helpers]
        bound = _locals(model_init)
        body_text = "\n".join(_renamed(stmt, renames, bound) for stmt in body)
        extra = "".join("\n\n" + textwrap.indent(_renamed(m, renames), " " * 4) for m in methods)
        prelude = "".join(piece + "\n\n\n" for piece in pieces)
    else:
        ref_lines = reference_src.splitlines()
        body_text = "\n".join(ref_lines[body[0].lineno - 1: body[-1].end_lineno])
        extra, prelude = "", ""
    holder = (f"{prelude}class {HOLDER}(torch.nn.Module):\n"
              f'    """Model\'s parameters, built exactly as Model builds them (the parameter_init fix)."""\n\n'
              f"    def __init__(self{', ' + signature if signature else ''}):\n"
              f"        super().__init__()\n"
              f"{textwrap.indent(textwrap.dedent(body_text), ' ' * 8)}{extra}\n\n\n"
              f"def {HELPER}(module, name):\n"
              f"    for part in name.split('.'):\n"
              f"        module = getattr(module, part, None)\n"
              f"    return module\n\n\n"
              f"def {COPY}(dst, src):\n"
              f"    # other init inputs (a hidden shape, fewer layers) build other tensors: copy what corresponds\n"
              f"    if dst is not None and src is not None and dst.numel() == src.numel():\n"
              f"        dst.copy_(src.reshape(dst.shape))\n\n\n")
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
                 f"{indent}        {COPY}({HELPER}(self, _own), {HELPER}(_model_parameters, _model))\n")
    if swapped:  # held with the first two dimensions swapped (e.g. a ConvTranspose weight as (out, in, k))
        copy_pairs = ", ".join(f"({p['candidate']!r}, {p['reference']!r})" for p in swapped)
        copy += (f"{indent}    for _own, _model in ({copy_pairs},):  # held with dims 0 and 1 swapped\n"
                 f"{indent}        _src = {HELPER}(_model_parameters, _model)\n"
                 f"{indent}        {COPY}({HELPER}(self, _own), None if _src is None else _src.transpose(0, 1))\n")
    if reshaped:  # the same elements in a shape differing by size-1 dimensions (e.g. (1,) for (1, 1, 1))
        copy_pairs = ", ".join(f"({p['candidate']!r}, {p['reference']!r})" for p in reshaped)
        copy += (f"{indent}    for _own, _model in ({copy_pairs},):  # held in another shape of size-1 dims\n"
                 f"{indent}        {COPY}({HELPER}(self, _own), {HELPER}(_model_parameters, _model))\n")
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
