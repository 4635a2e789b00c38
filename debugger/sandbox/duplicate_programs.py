"""Inside the candidate worker: run one copy of the programs an interpreted launch only repeats.

debugger/lang/triton/duplicates.py reads the kernel (which grid axes no program reads, which parameters
its stores and loads derive from); this module checks the launch itself: the tensors bound to stored
parameters share no storage with those bound to loaded ones, and every module-level name the kernel reads
is a constant, a dtype, a triton module or a kernel. Then the grid's unread axes are narrowed to one, which
leaves memory as the full grid leaves it (the last copy of each program rewrites what the first wrote)
and spares the interpreter the copies: `kernel[grid, BLOCK_SIZE]` runs 1024 copies of each program.
A kernel instrumented with probes (debugger/diagnose/probes.py) runs every copy: the probes count
programs and writers.
"""
from __future__ import annotations

import math
import types

import torch

from debugger.sandbox.hooks import overlaps

_plans: dict = {}  # code object -> Plan or None


def _plan(py):
    code = getattr(py, "__code__", None)
    if code is None:
        return None
    if code not in _plans:
        from debugger.lang.triton.duplicates import plan
        try:
            with open(code.co_filename, encoding="utf-8") as f:
                src = f.read()
            _plans[code] = plan(src, py.__name__, code.co_firstlineno)
        except (OSError, UnicodeDecodeError, ValueError):
            _plans[code] = None
    return _plans[code]


def _constant(value) -> bool:
    """A module-level value a kernel may read without telling its programs apart."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, types.ModuleType):
        return value is math or value.__name__.split(".")[0] == "triton"
    return type(value).__module__.split(".")[0] == "triton"  # tl.constexpr, tl.float32, a @jit helper


def _tensors(names, bound: dict) -> list[torch.Tensor] | None:
    """The tensors bound to `names`; None when one is bound to something else that may point to memory."""
    out = []
    for n in names:
        v = bound.get(n)
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif not _constant(v):
            return None
    return out


def narrowed_grid(fn, args: tuple, kwargs: dict):
    """The grid to run an interpreted launch of `fn` (an InterpretedFunction) with: its `grid` with the axes
    only copies fill narrowed to one (a callable grid wrapped to narrow what it returns), or None to run it
    as given."""
    py = getattr(fn, "fn", None)
    grid = kwargs.get("grid")
    if py is None or grid is None or "__kdebug_probes__" in getattr(py, "__globals__", {}):
        return None
    p = _plan(py)
    if p is None:
        return None
    bound = dict(zip(getattr(fn, "arg_names", []), args))
    bound.update({k: v for k, v in kwargs.items() if k in bound or k in getattr(fn, "arg_names", [])})
    stored, loaded = _tensors(p.stored, bound), _tensors(p.loaded, bound)
    if not stored or loaded is None or any(overlaps(a, b) for a in stored for b in loaded):
        return None
    g = py.__globals__
    if any(name not in g or not _constant(g[name]) for name in p.global_names - set(bound)):
        return None

    def narrow(dims):
        if not isinstance(dims, (tuple, list)):
            return dims  # not a grid the interpreter takes: left for it to refuse
        return tuple(min(d, 1) if i in p.unread_axes else d for i, d in enumerate(dims))  # an empty axis stays 0

    if callable(grid):
        return lambda meta: narrow(grid(meta))
    narrowed = narrow(grid)
    return narrowed if isinstance(grid, (tuple, list)) and narrowed != tuple(grid) else None
