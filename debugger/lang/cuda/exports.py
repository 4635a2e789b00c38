"""The functions a candidate's extension exports, and the Python lines each call into them covers.

The sandbox records every call of an extension function as a launch named by its exported name
(sandbox/hooks.py). To localise such a call, lang/spans.py needs where it lives: the host
function bound to the name (the loader's functions=[...] or pybind11's m.def) and the kernels that
function launches, with the Python-file span from the first of their lines to the last.
"""
from __future__ import annotations


def _span(fn) -> tuple[int | None, int | None]:
    return fn.line, fn.unit.source.pyline(fn.node.end_point[0])


def export_spans(src: str) -> dict[str, dict]:
    """Exported name -> {"lines": [first, last], "host": host function, "kernels": [kernels it launches]}."""
    from debugger.lang.cuda import LANGUAGE, units

    all_units = units(src)
    out: dict[str, dict] = {}
    for exported, host_name in LANGUAGE.bound_functions(src).items():
        host = next((f for u in all_units for f in u.hosts if f.name == host_name), None)
        if host is None:
            continue
        launched = {ln.kernel for u in all_units for ln in u.launches if ln.host.name == host_name}
        kernels = [k for u in all_units for k in u.kernels if k.name in launched]
        lines = [n for f in [host, *kernels] for n in _span(f) if n]
        if lines:
            out[exported] = {"lines": [min(lines), max(lines)], "host": host_name, "kernels": sorted(launched)}
    return out
