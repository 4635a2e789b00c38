"""Diagnostic probes: an instrumented copy of the kernel, run in the sandbox (CPU interpreter).

The candidate's source is rewritten over its syntax tree (tree-sitter): before every tl.store and
tl.load a probe records the program id, the addresses of the active lanes and how many lanes the
mask switched off; after every reduction assigned to a name (tl.max/min/sum/argmax...) a probe
records the value. The worker summarises what the probes saw against the tensors the launches
received: which programs wrote which output elements, elements written by no program or by several,
stores and loads outside every tensor, and what each reduction computed per program against the
row statistics of the input. The candidate's own file is never modified.
"""
from __future__ import annotations

from debugger.recipes.syntax import Source
from debugger.source.tree import call_args, line, text, walk

REDUCTIONS = ("tl.max", "tl.min", "tl.sum", "tl.argmax", "tl.argmin", "tl.reduce", "tl.xor_sum")

PRELUDE = '''

# ---- kdebug diagnostic probes (instrumented copy; never written to the candidate's file) ----
import numpy as _kdebug_np

__kdebug_probes__ = {"stores": [], "loads": [], "values": [], "grids": []}


def _kdebug_pid():
    from triton.runtime.interpreter import interpreter_builder
    return tuple(int(v) for v in interpreter_builder.grid_idx)


def _kdebug_data(t):
    h = getattr(t, "handle", None)
    return None if h is None else getattr(h, "data", None)


def __kdebug_probe_access__(kind, site, ptr, mask=None):
    try:
        rec = __kdebug_probes__[kind]
        if len(rec) >= 50000:
            return
        addrs = _kdebug_data(ptr)
        if addrs is None:
            return
        addrs = _kdebug_np.asarray(addrs)
        ety = ptr.dtype.element_ty
        size = max(1, getattr(ety, "primitive_bitwidth", 32) // 8)
        active = _kdebug_np.ones(addrs.shape, dtype=bool)
        if mask is not None:
            m = _kdebug_data(mask) if not isinstance(mask, (bool, int)) else _kdebug_np.asarray(bool(mask))
            if m is not None:
                active = _kdebug_np.broadcast_to(_kdebug_np.asarray(m).astype(bool), addrs.shape)
        rec.append((site, _kdebug_pid(), addrs[active].astype(_kdebug_np.int64).ravel(), size,
                    int((~active).sum())))
    except Exception:
        pass


def _kdebug_watch_grids():
    """Record every launch's grid (zero-program launches included, whose body never runs): a
    pre-run hook names the kernel, the interpreter's set_grid_dim then gives its grid."""
    try:
        from triton.runtime.interpreter import interpreter_builder as _b
    except Exception:
        return
    current = [None]
    for _name, _obj in list(globals().items()):
        fn = _obj
        for _ in range(4):
            if hasattr(fn, "add_pre_run_hook"):
                fn.add_pre_run_hook(lambda *a, __n=_name, **k: current.__setitem__(0, __n))
                break
            fn = getattr(fn, "fn", None)
            if fn is None:
                break
    original = _b.set_grid_dim

    def set_grid_dim(nx, ny, nz):
        if len(__kdebug_probes__["grids"]) < 1000:
            __kdebug_probes__["grids"].append((current[0], (int(nx), int(ny), int(nz))))
        return original(nx, ny, nz)

    _b.set_grid_dim = set_grid_dim


def __kdebug_probe_value__(site, name, value):
    try:
        rec = __kdebug_probes__["values"]
        if len(rec) >= 50000:
            return
        data = _kdebug_data(value)
        if data is None:
            return
        arr = _kdebug_np.asarray(data, dtype=_kdebug_np.float64).ravel()
        if arr.size <= 64:
            rec.append((site, name, _kdebug_pid(), arr))
    except Exception:
        pass
'''


def _indent_of(src_bytes: bytes, node) -> str:
    start = src_bytes.rfind(b"\n", 0, node.start_byte) + 1
    return src_bytes[start:node.start_byte].decode()


def instrument(src: str, kernel: str | None = None) -> str | None:
    """The source with probes inserted in every kernel (only `kernel`, when named); None when it
    cannot be parsed or names no such kernel."""
    s = Source(src)
    if not s.ok or not s.kernels or (kernel is not None and kernel not in {k.name for k in s.kernels}):
        return None
    data = src.encode()
    inserts: list[tuple[int, str]] = []  # (byte offset, text)
    for k in s.kernels:
        if kernel is not None and k.name != kernel:
            continue
        for call in k.calls("tl.load", "tl.store"):
            stmt = call
            while stmt.parent is not None and stmt.type not in ("expression_statement", "return_statement"):
                stmt = stmt.parent
            if stmt.parent is None or stmt.type == "return_statement":
                continue
            pos, kw = call_args(call)
            ptr = kw.get("pointer") or (pos[0] if pos else None)
            if ptr is None:
                continue
            mask = kw.get("mask") or (pos[2] if len(pos) > 2 else None)
            kind = "stores" if s.call_name(call) == "tl.store" else "loads"
            indent = _indent_of(data, stmt)
            probe = (f"__kdebug_probe_access__({kind!r}, {line(call)}, {text(ptr)}, "
                     f"{text(mask) if mask is not None else 'None'})\n{indent}")
            inserts.append((stmt.start_byte, probe))
        for n in walk(k.body):
            if n.type != "expression_statement" or not n.named_children:
                continue
            a = n.named_children[0]
            if a.type != "assignment":
                continue
            left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
            if left is None or right is None or left.type != "identifier" or right.type != "call":
                continue
            if s.call_name(right) not in REDUCTIONS:
                continue
            indent = _indent_of(data, n)
            inserts.append((n.end_byte, f"\n{indent}__kdebug_probe_value__({line(n)}, {text(left)!r}, {text(left)})"))
    out = data
    for pos, txt in sorted(inserts, key=lambda t: -t[0]):
        out = out[:pos] + txt.encode() + out[pos:]
    return out.decode() + PRELUDE + "\n_kdebug_watch_grids()\n"


def run_probes(case, report, timeout: float = 120.0, kernel: str | None = None, device: str = "cpu") -> dict:
    """Run the instrumented copy (every kernel, or only `kernel`) on the first failing check, on the CPU
    interpreter; summarise what the probes saw.

    `device`: where `report` ran. After a GPU run the probes still run on the interpreter, at kdebug's
    small sizes (a GPU's sizes take the interpreter minutes): they are how a kernel that crashed or did
    not compile there shows which elements its stores reach. `result_nan` says the interpreted run's
    output held NaN where the reference's did not (the poison reaching the result)."""
    from debugger.evaluate import run_evaluation

    instrumented = instrument(case.candidate_src, kernel)
    failing = [c for c in report.failed_checks if c.spec]
    if instrumented is None or not failing:
        return {}
    spec = dict(failing[0].spec, probes=True)
    sizes = "published"
    if device != "cpu":
        sizes = "small"
        if spec.pop("plan_shapes", False):  # the GPU's own reduced sizes: the CPU plans its own
            spec.pop("shapes", None)
    ev = run_evaluation(case.with_candidate(instrumented), "cpu", checks=[spec], timeout=timeout, sizes=sizes)
    obs = ev.observations.get(spec["name"], {})
    summary = obs.get("probes") or {}
    if not summary:
        return {"error": ev.report.message} if ev.report.status != "mismatch" else {}
    summary["check"] = spec["name"]
    if device != "cpu":
        summary["interpreter"] = True
        summary["result_nan"] = any(o.nan_mismatch for c in ev.report.checks for o in c.outputs)
    return summary
