"""Repeated-transform recipe: an elementwise function applied on the host and again in the kernel.

Real answers split an operator between host and kernel and then do one step on both sides:
`log_x = torch.log(x)` is handed to a kernel that loads it and takes `tl.log` of it again (log of a
log: NaN wherever log(x) < 0). The site is located only where the source itself shows both halves:
a host tensor defined as `torch.F(u)` (or `u.F()`) passed to a kernel parameter whose loaded values
go through `tl.F` of the same F. Two repairs, kernel side first: drop the kernel's second `tl.F`
(the masked fill stays what the kernel chose for the transformed values), or pass the untransformed
`u` so the kernel's own `tl.F` is the only one.
"""
from __future__ import annotations

from debugger.recipes.base import Recipe
from debugger.recipes.syntax import Deps, Kernel, Launch, Source
from debugger.source.edits import Edit
from debugger.source.tree import Node, call_args, line, text, unparen

# torch elementwise functions whose second application changes the values (idempotent ones such as
# abs, floor or relu are harmless twice and left out), by the tl function that repeats them.
REPEATABLE = {"log": "tl.log", "exp": "tl.exp", "sqrt": "tl.sqrt", "rsqrt": "tl.rsqrt",
              "sigmoid": "tl.sigmoid", "log2": "tl.log2", "exp2": "tl.exp2", "sin": "tl.sin",
              "cos": "tl.cos", "erf": "tl.erf", "tanh": "tl.tanh", "log1p": "tl.log1p"}


def host_transform(s: Source, launch: Launch, arg: Node) -> tuple[str, Node] | None:
    """(F, the untransformed operand) when the launch argument `arg` names a host variable whose
    last definition before the launch is `torch.F(u, ...)`, `u.F()` or `torch.nn.functional.F(u)`."""
    a = unparen(arg)
    host = launch.host
    if a.type != "identifier" or host is None:
        return None
    defs = [rhs for stmt, rhs in Deps(s, host).defs.get(text(a), []) if stmt.start_byte < launch.call.start_byte]
    if not defs or unparen(defs[-1]).type != "call":
        return None
    call = unparen(defs[-1])
    fn = call.child_by_field_name("function")
    pos, _ = call_args(call)
    if fn is None or fn.type != "attribute":
        return None
    name = text(fn.child_by_field_name("attribute"))
    if name not in REPEATABLE:
        return None
    obj = text(fn.child_by_field_name("object"))
    if obj in ("torch", "F", "torch.nn.functional", "torch.special") and pos:
        return name, pos[0]
    if obj not in ("torch", "F", "torch.nn.functional", "torch.special") and not pos:
        return name, fn.child_by_field_name("object")
    return None


def loaded_names(k: Kernel, param: str) -> set[str]:
    """Names assigned directly from a tl.load whose address depends on kernel parameter `param`."""
    out = set()
    for call in k.calls("tl.load"):
        pos, kw = call_args(call)
        addr = pos[0] if pos else kw.get("pointer")
        if addr is None or param not in k.deps.of(addr):
            continue
        stmt = call.parent
        if stmt is not None and stmt.type == "assignment" and same_node(stmt.child_by_field_name("right"), call):
            left = stmt.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                out.add(text(left))
    return out


def same_node(a: Node | None, b: Node | None) -> bool:
    return a is not None and b is not None and a.start_byte == b.start_byte and a.end_byte == b.end_byte


def repeated_calls(s: Source, k: Kernel, param: str, tl_name: str) -> list[tuple[Node, Node]]:
    """(tl.F call, its operand) for each `tl.F(v)` in the kernel whose operand is a value loaded
    from `param` (a name assigned from the load, or the load itself)."""
    names = loaded_names(k, param)
    out = []
    for call in k.calls(tl_name):
        pos, _ = call_args(call)
        if len(pos) != 1:
            continue
        operand = unparen(pos[0])
        if operand.type == "identifier" and text(operand) in names:
            out.append((call, operand))
        elif operand.type == "call" and s.call_name(operand) == "tl.load":
            addr = call_args(operand)[0]
            if addr and param in k.deps.of(addr[0]):
                out.append((call, operand))
    return out


class DropRepeatedTransform(Recipe):
    id = "drop_repeated_transform"
    bug_classes = ("operator_misread",)
    symptoms = ("all_wrong", "nan_in_output", "large_error")
    description = ("An elementwise function applied on the host and again in the kernel: apply it once "
                   "(drop the kernel's, or pass the untransformed tensor).")

    def _propose(self, s: Source, hints: dict):
        for k in s.kernels:
            for launch in k.launches():
                for pname, arg in launch.bind(k).items():
                    found = host_transform(s, launch, arg)
                    if found is None:
                        continue
                    fname, operand = found
                    sites = repeated_calls(s, k, pname, REPEATABLE[fname])
                    if not sites:
                        continue
                    yield self.patch(s, [Edit.replace(call, text(op)) for call, op in sites],
                                     f"{text(arg)} is torch.{fname} of {text(operand)} already: drop the "
                                     f"kernel's second {REPEATABLE[fname]} at line {line(sites[0][0])}")
                    yield self.patch(s, [Edit.replace(arg, text(operand))],
                                     f"pass {text(operand)} (not {text(arg)} = {fname} of it) to {k.name}: "
                                     f"the kernel applies {REPEATABLE[fname]} itself")


__all__ = ["DropRepeatedTransform", "REPEATABLE", "host_transform", "repeated_calls"]
