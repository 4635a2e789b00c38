"""The one finder of a Python file's Triton kernels and of the sites that launch them.

Every part of kdebug that asks "which kernels does this file define, and where are they launched" asks
this module: the recipes' syntax view (recipes/syntax.py), the host model the integrity gate reads
(host.py), the Triton language (lang/triton) and, through them, localisation and the model's prompt.

A kernel is a function decorated with triton.jit, triton.autotune or triton.heuristics, at any nesting
(module, class or function level), the decorator resolved through the file's imports (`import triton as
tr; @tr.jit`, `from triton import jit`); a decorator that does not resolve counts by its spelling
(`@jit`, `@triton.jit` in a file that does not import triton). `k = triton.jit(fn)` makes `k` a kernel
whose definition is `fn`. A launch site is a call outside every kernel body of the form `k[grid](...)`,
where `k` names a kernel directly (also `obj.k`), through variables, `self.` attributes or tables assigned
kernels (`KERNELS[key][grid](...)`), through `wrap_triton(k)`, or is a parameter of the enclosing
function (a launcher handed its kernel: the kernel is then unknown); or `k.run(..., grid=...)`.
A site whose variable may name several kernels has no single kernel: `kernel` is None and `kernels`
lists them. No name resolution beyond this; nothing here imports another kdebug package.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from debugger.source.tree import Node, ancestors, call_args, inside, line, text, unparen, walk

KERNEL_DECORATORS = {"triton.jit", "triton.autotune", "triton.heuristics"}
_SPELLED = re.compile(r"^(triton\.)?(jit|autotune|heuristics)$")


@dataclass(frozen=True)
class KernelDef:
    """A kernel: the name launches use, its function definition, and its decorator nodes."""

    name: str
    fn: Node  # function_definition
    decorators: tuple[Node, ...] = ()

    @property
    def line(self) -> int:
        """The line of the `def`."""
        return line(self.fn)


@dataclass(frozen=True)
class LaunchSite:
    """A launch: the call, the kernel it runs (None when not one known kernel), every kernel it may run,
    and its grid (the subscript of `k[grid](...)`, the `grid=` argument of `k.run(...)`, or None)."""

    call: Node
    kernel: str | None
    kernels: tuple[str, ...]
    grid: Node | None

    @property
    def line(self) -> int:
        """Where the launch is."""
        return line(self.call)


def _decorator_expr(decorator: Node) -> Node:
    """What a decorator names: `triton.jit` of `@triton.jit` and of `@triton.jit(debug=True)`."""
    expr = decorator.named_children[0] if decorator.named_children else decorator
    return expr.child_by_field_name("function") or expr if expr.type == "call" else expr


def decorator_name(decorator: Node, resolve) -> str:
    """The qualified name a decorator stands for (`resolve`: node -> qualified name or None), else its text."""
    expr = _decorator_expr(decorator)
    return resolve(expr) or text(expr)


def _is_kernel_decorator(expr: Node | None, resolve) -> bool:
    if expr is None:
        return False
    resolved = resolve(expr)
    return resolved in KERNEL_DECORATORS if resolved is not None else bool(_SPELLED.match(text(expr)))


def find_kernels(root: Node, resolve) -> list[KernelDef]:
    """The file's kernels in source order, then those made by `k = triton.jit(fn)`."""
    out, made = [], []
    for n in walk(root):
        if n.type == "decorated_definition":
            fn = n.child_by_field_name("definition")
            if fn is None or fn.type != "function_definition":
                continue
            decs = tuple(c for c in n.named_children if c.type == "decorator")
            if any(_is_kernel_decorator(_decorator_expr(d), resolve) for d in decs):
                out.append(KernelDef(text(fn.child_by_field_name("name")), fn, decs))
        elif n.type == "assignment":
            left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
            if left is not None and left.type == "identifier" and right is not None:
                right = unparen(right)
                if right.type == "call" and _is_kernel_decorator(right.child_by_field_name("function"), resolve):
                    made.append((text(left), right))
    if made:
        top = {}
        for n in walk(root, skip_functions=True):
            if n.type == "function_definition" and not any(a.type in ("function_definition", "class_definition")
                                                           for a in ancestors(n)):
                top.setdefault(text(n.child_by_field_name("name")), n)
        for name, call in made:
            positional, _ = call_args(call)
            if positional and text(positional[0]) in top:
                out.append(KernelDef(name, top[text(positional[0])]))
    return out


def kernel_aliases(root: Node, names: set[str]) -> dict[str, set[str]]:
    """Names (and `self.x` attributes) bound to kernels or to tables of kernels, with those kernels."""
    table: dict[str, set[str]] = {}
    if not names:
        return table
    # each assignment's target and the names and attribute chains its right-hand side mentions
    assignments = [(text(n.child_by_field_name("left")),
                    [text(m) for m in walk(n.child_by_field_name("right")) if m.type in ("identifier", "attribute")])
                   for n in walk(root) if n.type == "assignment" and n.child_by_field_name("right")]
    changed = True
    while changed:
        changed = False
        for name, mentions in assignments:
            mentioned = set()
            for m in mentions:
                mentioned |= {m} & names or table.get(m, set())
            if mentioned - table.get(name, set()):
                table[name] = table.get(name, set()) | mentioned
                changed = True
    return table


def _parameter_names(fn: Node) -> set[str]:
    names = set()
    ps = fn.child_by_field_name("parameters")
    for p in ps.named_children if ps is not None else []:
        ident = p if p.type == "identifier" else p.child_by_field_name("name")
        if ident is None:
            ident = next((c for c in p.named_children if c.type == "identifier"), None)
        if ident is not None:
            names.add(text(ident))
    return names


def _target(call: Node, value: Node, names: set[str], aliases: dict[str, set[str]]):
    """(kernel, kernels) a subscript-call launches, or None when it is no launch."""
    value = unparen(value)
    name = text(value.child_by_field_name("attribute")) if value.type == "attribute" else text(value)
    if name in names:
        return name, (name,)
    while value.type == "subscript":  # a table of kernels: KERNELS[key][grid](...)
        value = unparen(value.child_by_field_name("value"))
    if text(value) in aliases:
        kernels = tuple(sorted(aliases[text(value)]))
        return (kernels[0] if len(kernels) == 1 else None), kernels
    if value.type == "identifier" and any(text(value) in _parameter_names(fn) for fn in ancestors(call)
                                          if fn.type == "function_definition"):
        return None, ()  # a launcher helper that receives the kernel
    if value.type == "call":  # torch.library.wrap_triton(kernel)[grid](...)
        positional, _ = call_args(value)
        named = [text(a) for a in positional if text(a) in names]
        return (named[0], (named[0],)) if named else None
    return None


def find_launches(root: Node, kernels: list[KernelDef]) -> list[LaunchSite]:
    """The launch sites of the file's kernels, in source order."""
    names = {k.name for k in kernels}
    if not names:
        return []
    bodies = [k.fn for k in kernels]
    aliases = kernel_aliases(root, names)
    out = []
    for n in walk(root):
        if n.type != "call":
            continue
        callee = n.child_by_field_name("function")
        if callee is None or callee.type not in ("subscript", "attribute") or any(inside(n, b) for b in bodies):
            continue
        if callee.type == "subscript":
            found = _target(n, callee.child_by_field_name("value"), names, aliases)
            if found is not None:
                out.append(LaunchSite(n, found[0], found[1], callee.child_by_field_name("subscript")))
        else:
            obj = callee.child_by_field_name("object")
            if text(callee.child_by_field_name("attribute")) == "run" and text(obj) in names:
                out.append(LaunchSite(n, text(obj), (text(obj),), call_args(n)[1].get("grid")))
    return out
