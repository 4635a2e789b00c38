"""Duplicate programs: which grid axes of a Triton kernel's launch only repeat the same program.

A kernel that never reads `tl.program_id(k)` or `tl.num_programs(k)` runs the same program at every index of
axis k; Qwen's `kernel[grid, BLOCK_SIZE](...)` launches 1024 copies of every program that way. On a GPU the
copies run side by side and cost little; the interpreter runs them one after another, so such an answer
takes minutes per forward on the CPU (TritonBench-T softmax_mul: 372 s for one evaluation).

The copies leave memory as one copy would when no program can see what another stored: every store's
pointer and every load's pointer derive from kernel parameters, no parameter feeds both (the sandbox also
checks that the tensors bound to them share no storage), no atomics, no block pointers or descriptors, no
call the kernel cannot be read through (only triton.language, a few builtins and the file's own @jit
helpers, which are read the same way), no nested function, no assignment to anything but a local name.
Then the last copy of each program rewrites exactly what the first wrote, and the interpreter may run one.
`plan` answers the static half; debugger/sandbox/hooks.py does the run-time half (what the arguments bind
to, which module globals the kernel reads) before it narrows an interpreted launch's grid.
"""
from __future__ import annotations

from dataclasses import dataclass

from debugger.recipes.syntax import Kernel, Source
from debugger.source.tree import call_arg, identifiers, target_names, text, walk

_BUILTINS = {"range", "min", "max", "int", "float", "bool", "len", "abs", "isinstance", "print"}
_UNSAFE_TL = ("tl.atomic_", "tl.debug_barrier", "tl.make_block_ptr", "tl.make_tensor_descriptor",
              "tl.inline_asm_elementwise", "tl.advance")
_UNSAFE_METHODS = {"store", "load", "advance", "append", "extend", "update", "pop", "insert", "add",
                   "__setitem__", "fill_", "copy_", "zero_"}


@dataclass(frozen=True)
class Plan:
    """What the run-time check needs: the axes no program reads, the parameters store pointers derive from
    and those load pointers (and helper calls) derive from, and the module-level names the kernel reads."""

    unread_axes: frozenset[int]
    stored: frozenset[str]
    loaded: frozenset[str]
    global_names: frozenset[str]


def _locals_of(k: Kernel) -> set[str] | None:
    """Parameter and local names of a kernel; None when it assigns anything but a local name, declares a
    global, or defines a nested function."""
    names = set(k.param_names)
    for n in walk(k.body):
        if n.type in ("function_definition", "lambda", "class_definition", "global_statement",
                      "nonlocal_statement", "named_expression", "delete_statement"):
            return None
        if n.type in ("assignment", "augmented_assignment", "for_statement"):
            left = n.child_by_field_name("left")
            if left is None or left.type not in ("identifier", "pattern_list", "tuple_pattern", "tuple") \
                    or any(c.type in ("attribute", "subscript") for c in walk(left)):
                return None
            names.update(target_names(left))
        elif n.type in ("list_comprehension", "generator_expression", "dictionary_comprehension",
                        "set_comprehension"):
            return None
    return names


def _read(s: Source, k: Kernel, helpers: dict[str, Kernel], seen: set[str], out: dict) -> bool:
    """Accumulate into `out` what kernel `k` (and the helpers it calls) reads; False when it cannot be read
    through."""
    if k.name in seen:
        return True
    seen.add(k.name)
    own = _locals_of(k)
    if own is None:
        return False
    deps = k.deps
    params = set(k.param_names)
    for call in s.calls(k.body):
        fn = call.child_by_field_name("function")
        name = s.call_name(call)
        if name is None:
            if fn is not None and fn.type == "attribute" and \
                    text(fn.child_by_field_name("attribute")) not in _UNSAFE_METHODS:
                continue  # a method of a value computed here (tl.load(...).to(tl.float32)); its object is read too
            return False  # a call of a call, a subscript...: nothing to read it through
        if name in ("tl.program_id", "tl.num_programs"):
            axis = call_arg(call, 0, "axis")
            value = text(axis).strip() if axis is not None else "0"
            if value not in ("0", "1", "2"):
                return False
            out["axes"].add(int(value))
        elif name in ("tl.store", "tl.load"):
            ptr = call_arg(call, 0, "pointer")
            if ptr is None:
                return False
            derived = deps.of(ptr) & params
            if not derived:
                return False
            out["stored" if name == "tl.store" else "loaded"].update((k.name, p) for p in derived)
        elif name.startswith(_UNSAFE_TL):
            return False
        elif name.startswith(("tl.", "triton.")) or name in _BUILTINS:
            continue
        elif name in helpers:
            # a helper's pointer use is read in the helper; its arguments count as loaded here, so a
            # buffer handed to it and stored to here is never taken as unread
            for arg in call.child_by_field_name("arguments").named_children:
                out["loaded"].update((k.name, p) for p in deps.of(arg) & params)
            if not _read(s, helpers[name], helpers, seen, out):
                return False
        elif fn is not None and fn.type == "attribute" and name.split(".")[0] in own:
            if name.rsplit(".", 1)[-1] in _UNSAFE_METHODS:
                return False  # x.to(...), acc.reshape(...): methods of the kernel's own values
        else:
            return False
    out["globals"].update(identifiers(k.body) - own - set(s.aliases) - _BUILTINS - set(helpers))
    return True


def plan(src: str, def_name: str, first_line: int | None = None) -> Plan | None:
    """The duplicate-program plan of the kernel whose `def` is named `def_name` (its decorators starting at
    `first_line`, when given, to tell same-named kernels apart); None when any part of it cannot be read
    as above or no axis is left unread."""
    s = Source(src)
    if not s.ok:
        return None
    own = [k for k in s.kernels if text(k.fn.child_by_field_name("name")) == def_name]
    if first_line is not None and len(own) > 1:
        own = [k for k in own if (k.decorators[0] if k.decorators else k.fn).start_point[0] + 1 == first_line]
    if len(own) != 1:
        return None
    helpers = {k.name: k for k in s.kernels if k is not own[0]}
    out: dict = {"axes": set(), "stored": set(), "loaded": set(), "globals": set()}
    if not _read(s, own[0], helpers, set(), out):
        return None
    unread = frozenset({0, 1, 2} - out["axes"])
    stored = {p for kn, p in out["stored"] if kn == own[0].name}
    loaded = {p for kn, p in out["loaded"] if kn == own[0].name}
    helper_stores = {kn for kn, _ in out["stored"] if kn != own[0].name}
    if not unread or not out["stored"] or helper_stores:
        return None  # stores inside helpers would need their arguments mapped back: not attempted
    return Plan(unread, frozenset(stored), frozenset(loaded), frozenset(out["globals"]))
