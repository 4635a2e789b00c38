"""CUDA facts of the launches and the host code: grid and block arithmetic, output buffers.

- cuda_floor_div_grid: the grid divides an extent by the block size with floor division
  (`n / threads`, `dim3 grid(W / 16, H / 16)`) instead of `(n + t - 1) / t`: the tail is never computed.
- cuda_grid_capped: the grid is capped (`min(blocks, 65535)`, a literal 65535) and the kernel has no
  grid-stride loop (a step over gridDim): elements past the cap are never computed.
- cuda_block_capped: the block is capped (`min(n, 1024)`) and the kernel has no block-stride loop.
- cuda_atomic_uninitialised_output: a buffer from torch::empty the kernel only accumulates into with
  atomics, never zeroed (no zero_/fill_/cudaMemset, no earlier launch writing it).
- cuda_int32_index: a `numel()` handed to an `int` parameter (32-bit offsets on a large tensor).
- cuda_grid_axis_single: the grid gives one block on an axis (`dim3 grid(1, ...)`) that the kernel reads
  as an index it bounds by a size parameter (`int b = blockIdx.x; if (b < batch_size ...)`): only the
  first slice (b = 0) is ever computed.
Grid and block expressions are followed through the host function's declarations (`int blocks =
...`, `dim3 grid(a, b)`, `grid.x = ...`) and `#define` constants.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from debugger.lang import Fact
from debugger.lang.cuda.access import accesses
from debugger.lang.cuda.unit import Function, KernelLaunch, Unit, call_args, identifiers
from debugger.source.tree import text, unparen, walk

_CEIL = re.compile(r"ceil|div_?up|cdiv|round_?up", re.I)
_CAP = re.compile(r"\b(?:std::)?(?:min|fminf?|MIN)\s*\(")
_INT32 = re.compile(r"^(?:const\s+)?(?:unsigned\s+)?(?:int|int32_t|uint32_t|unsigned)$")
_ZEROED = re.compile(r"\.(?:zero_|fill_)\s*\(|cudaMemset\w*\s*\(")
_MAX_DEPTH = 6


def expansion(host: Function, node: Node | None, macros: dict[str, str], depth: int = 0) -> list[Node]:
    """`node` and, through the host function's assignments, every expression it is built from."""
    if node is None or depth > _MAX_DEPTH:
        return []
    out = [node]
    for name in identifiers(node):
        for value in host.defs.get(name, []):
            out += expansion(host, value, macros, depth + 1)
        for a in host.nodes("assignment_expression"):  # grid.x = ...
            left = unparen(a.child_by_field_name("left"))
            if left.type == "field_expression" and text(left.child_by_field_name("argument")) == name:
                out += expansion(host, a.child_by_field_name("right"), macros, depth + 1)
    return out


def _leaves(nodes: list[Node], macros: dict[str, str]) -> set[str]:
    """The names and numbers an expansion is made of, macros resolved."""
    out = set()
    for root in nodes:
        for n in walk(root):
            if n.type in ("identifier", "number_literal", "type_identifier"):
                out.add(text(n))
                if text(n) in macros:
                    out.add(macros[text(n)])
    return out


def _floor_divisions(nodes: list[Node], block: set[str], macros: dict[str, str]) -> list[Node]:
    found = []
    for root in nodes:
        for b in walk(root):
            if b.type != "binary_expression" or text(b.child_by_field_name("operator")) != "/":
                continue
            right = unparen(b.child_by_field_name("right"))
            divisor = {text(right), macros.get(text(right), text(right))}
            if not divisor & block:
                continue
            left = b.child_by_field_name("left")
            if any(n.type == "binary_expression" and text(n.child_by_field_name("operator")) == "+"
                   for n in walk(left)):
                continue
            parent = b.parent
            while parent is not None and parent.type == "parenthesized_expression":
                parent = parent.parent
            if parent is not None and parent.type == "binary_expression" and \
                    text(parent.child_by_field_name("operator")) in ("+", "-"):
                continue  # n / t + (n % t != 0), n / t + 1
            if parent is not None and parent.type == "argument_list" and \
                    _CEIL.search(text(parent.parent.child_by_field_name("function"))):
                continue
            found.append(b)
    return found


def _steps_over(fn: Function, builtin: str) -> bool:
    """A loop in the kernel steps by an expression of `builtin` (gridDim: grid-stride; blockDim: block-stride)."""
    for lp in fn.nodes("for_statement", "while_statement", "do_statement"):
        for a in walk(lp):
            if a.type == "assignment_expression" and text(a.child_by_field_name("operator")) in ("+=", "="):
                if builtin in fn.closure(identifiers(a.child_by_field_name("right"))) and \
                        fn.thread_derived(text(unparen(a.child_by_field_name("left")))):
                    return True
    return False


def _capped(nodes: list[Node], limit: int) -> Node | None:
    """The cap on a launch extent: `min(n, 1024)`, `n > 1024 ? 1024 : n` (a literal on either side), or
    for grids a literal 65535."""
    for root in nodes:
        for n in walk(root):
            if n.type == "call_expression" and _CAP.match(text(n)) and any(
                    c.type == "number_literal" for a in call_args(n) for c in walk(a)):
                return n
            if n.type == "conditional_expression" and _ternary_cap(n):
                return n
            if limit == 65535 and n.type == "number_literal" and text(n) in ("65535", "65535u", "0xFFFF"):
                return n
    return None


def _ternary_cap(n: Node) -> bool:
    """`a > L ? L : a` or `a < L ? a : L` (L a literal): min(a, L) written as a conditional."""
    cond = unparen(n.child_by_field_name("condition"))
    yes, no = unparen(n.child_by_field_name("consequence")), unparen(n.child_by_field_name("alternative"))
    if cond.type != "binary_expression" or yes is None or no is None:
        return False
    op = text(cond.child_by_field_name("operator"))
    left, right = unparen(cond.child_by_field_name("left")), unparen(cond.child_by_field_name("right"))
    if right.type != "number_literal":
        return False
    if op in (">", ">="):
        return text(yes) == text(right) and text(no) == text(left)
    if op in ("<", "<="):
        return text(yes) == text(left) and text(no) == text(right)
    return False


def _buffer(arg: Node) -> str | None:
    """The tensor a launch argument points into: `t.data_ptr<float>()`, `(float*)t.data_ptr()`, `t.data<T>()`."""
    for n in walk(arg):
        if n.type == "field_expression" and re.match(r"(data_ptr|data|const_data_ptr|mutable_data_ptr)\b",
                                                     text(n.child_by_field_name("field"))):
            obj = unparen(n.child_by_field_name("argument"))
            if obj.type == "identifier":
                return text(obj)
    return None


def _param(kernel: Function, index: int):
    return kernel.params[index] if index < len(kernel.params) else None


def launch_facts(unit: Unit, launch: KernelLaunch, kernel: Function | None) -> list[Fact]:
    """Facts of one launch (the kernel may be None when it is defined elsewhere)."""
    host, macros = launch.host, unit.macros
    grid = expansion(host, launch.grid, macros)
    block = expansion(host, launch.block, macros)
    line = unit.pyline(launch.node)
    out = []
    for b in _floor_divisions(grid, _leaves(block, macros) if block else set(), macros)[:1]:
        out.append(Fact("cuda_floor_div_grid", f"grid of {launch.kernel} uses floor division {text(b)} "
                                               f"(the tail past a whole block is never launched)",
                        unit.pyline(b), "cuda", launch.kernel))
    if kernel is None:
        return out
    cap = _capped(grid, 65535)
    if cap is not None and not _steps_over(kernel, "gridDim"):
        out.append(Fact("cuda_grid_capped", f"grid of {launch.kernel} is capped ({text(cap)}) and {kernel.name} "
                                            f"has no grid-stride loop", unit.pyline(cap), "cuda", kernel.name))
    cap = _capped(block, 1024)
    if cap is not None and not _steps_over(kernel, "blockDim") and not _steps_over(kernel, "gridDim"):
        out.append(Fact("cuda_block_capped", f"block of {launch.kernel} is capped ({text(cap)}) and {kernel.name} "
                                             f"has no block-stride loop", unit.pyline(cap), "cuda", kernel.name))
    for axis in single_block_axes(launch, kernel):
        out.append(Fact("cuda_grid_axis_single", f"grid of {launch.kernel} launches one block on {axis.axis} while "
                                                 f"{kernel.name} bounds {axis.index} = blockIdx.{axis.axis} by "
                                                 f"{axis.bound}: only {axis.index} = 0 is computed",
                        unit.pyline(axis.literal), "cuda", kernel.name))
    out += _buffer_facts(unit, launch, kernel, line)
    return out


@dataclass
class SingleBlockAxis:
    """A grid axis given one block (`literal`, the `1`) while the kernel reads blockIdx.<axis> as `index`, bounded
    by its parameter `bound`, which the launch passes as `extent`."""

    axis: str
    literal: Node
    index: str
    bound: str
    extent: Node


def _grid_dims(host: Function, grid: Node | None) -> list[Node] | None:
    """The (x, y, z) expressions of a dim3 grid: `dim3 g(a, b)` declared in the host function, or `dim3(a, b)`."""
    grid = unparen(grid) if grid is not None else None
    if grid is None:
        return None
    if grid.type == "call_expression" and text(grid.child_by_field_name("function")) == "dim3":
        return list(call_args(grid))
    if grid.type != "identifier":
        return None
    for value in host.defs.get(text(grid), []):
        if value.type in ("parameter_list", "argument_list"):  # `dim3 g(a, b);` parses as a declaration
            return [c for c in value.named_children if c.type != "comment"]
    return None


def single_block_axes(launch: KernelLaunch, kernel: Function) -> list[SingleBlockAxis]:
    """Grid axes of one block that the kernel bounds as an index by a size parameter the launch passes."""
    dims = _grid_dims(launch.host, launch.grid)
    if not dims:
        return []
    params = {p.name: i for i, p in enumerate(kernel.params) if not p.pointer}
    out = []
    for axis, dim in zip("xyz", dims):
        if text(dim).strip() not in ("1", "1u"):
            continue
        indices = {name for name, values in kernel.defs.items()
                   if any(re.sub(r"\s+", "", text(v)) == f"blockIdx.{axis}" for v in values)}
        for cmp in kernel.nodes("binary_expression"):
            op = text(cmp.child_by_field_name("operator"))
            left, right = unparen(cmp.child_by_field_name("left")), unparen(cmp.child_by_field_name("right"))
            if op not in ("<", ">=") or left.type not in ("identifier", "field_expression") \
                    or right.type != "identifier":
                continue
            index, bound = text(left), text(right)
            if (index in indices or index == f"blockIdx.{axis}") and bound in params \
                    and params[bound] < len(launch.args):
                out.append(SingleBlockAxis(axis, dim, index, bound, launch.args[params[bound]]))
                break
    return out


def _buffer_facts(unit: Unit, launch: KernelLaunch, kernel: Function, line) -> list[Fact]:
    out = []
    acc = accesses(kernel)
    host_text = text(launch.host.body)
    for i, arg in enumerate(launch.args):
        p = _param(kernel, i)
        if p is None:
            continue
        if "numel()" in text(arg) and _INT32.match(p.type.strip()) and not p.pointer:
            out.append(Fact("cuda_int32_index", f"{text(arg)} is passed to the int parameter {p.name} of "
                                                f"{kernel.name}: 32-bit offsets on a large tensor", line, "cuda",
                            kernel.name))
        buf = _buffer(arg)
        if buf is None or not p.pointer:
            continue
        mine = [a for a in acc if a.base == p.name]
        if not mine or not all(a.atomic for a in mine if a.store) or not any(a.store for a in mine):
            continue
        decl = next((v for v in launch.host.defs.get(buf, []) if re.search(r"\bempty(_like|_strided)?\b", text(v))),
                    None)
        if decl is None or re.search(rf"\b{re.escape(buf)}\s*{_ZEROED.pattern}", host_text) or \
                re.search(r"cudaMemset\w*\s*\([^;]*\b" + re.escape(buf) + r"\b", host_text):
            continue
        earlier = any(l.node.start_byte < launch.node.start_byte and any(_buffer(x) == buf for x in l.args)
                      for l in unit.launches if l.host is launch.host)
        if not earlier:
            out.append(Fact("cuda_atomic_uninitialised_output",
                            f"{buf} comes from {text(decl)} (never zeroed) and {kernel.name} only adds into it "
                            f"with atomics", unit.pyline(decl), "cuda", kernel.name))
    return out


def combines(unit: Unit, kernel: Function, pointer: str, python_src: str) -> bool:
    """Whether the per-block partials `kernel` writes through `pointer` are combined somewhere: a later
    launch or a sum over the buffer in the host code, atomics, or a sum on the Python side."""
    if re.search(r"\.\s*(sum|mean)\s*\(", python_src):  # (tokens are space-separated)
        return True
    index = next((i for i, p in enumerate(kernel.params) if p.name == pointer), None)
    for launch in unit.launches:
        if launch.kernel != kernel.name or index is None or index >= len(launch.args):
            continue
        buf = _buffer(launch.args[index])
        if buf is None:
            return True  # cannot tell what it points into
        rest = text(launch.host.body)[launch.node.end_byte - launch.host.body.start_byte:]
        if re.search(rf"<<<[^;]*>>>\s*\([^;]*\b{re.escape(buf)}\b", rest) or \
                re.search(rf"\b{re.escape(buf)}\s*\.\s*(sum|mean|amax|max)\s*\(|\b(sum|mean)\s*\(\s*{re.escape(buf)}\b",
                          rest):
            return True
        if re.search(rf"\b\w+\s*\([^;]*\b{re.escape(buf)}\b", rest.replace("return", "")):
            return True  # handed to another host function
        return False
    return True

