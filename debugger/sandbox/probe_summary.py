"""Inside the candidate worker: turn raw probe records into a small JSON summary.

Addresses become (tensor, element) pairs using the storage ranges of the tensors the launches
received and of the outputs; element ownership per program shows unwritten and doubly written
elements; accesses outside every tensor are out of bounds; reduction values per program are matched
against the row statistics of the first floating input; launch grids (zero-program launches included) and,
per tensor a launch received, how much of it the stores reached.
"""
from __future__ import annotations

import numpy as np
import torch

from debugger.sandbox.hooks import storage_span


def _spans(outputs: list, launches: list[dict]) -> list[tuple[int, int]]:
    spans = [tuple(t) for l in launches for t in l["tensors"]]
    spans += [storage_span(o) for o in outputs if isinstance(o, torch.Tensor)]
    return spans


def _outside(addrs: np.ndarray, spans: list[tuple[int, int]]) -> int:
    if addrs.size == 0:
        return 0
    inside = np.zeros(addrs.shape, dtype=bool)
    for a, b in spans:
        inside |= (addrs >= a) & (addrs < b)
    return int((~inside).sum())


def _row_stats(xs: list) -> dict[str, np.ndarray]:
    x = next((t for t in xs if isinstance(t, torch.Tensor) and t.is_floating_point() and t.dim() >= 1), None)
    if x is None:
        return {}
    x2 = x.detach().double().reshape(-1, x.shape[-1]).cpu()
    n = x2.shape[1]
    stats = {"row max": x2.max(1).values, "row min": x2.min(1).values, "row sum": x2.sum(1),
             "row mean": x2.mean(1), "row sum of squares": (x2 * x2).sum(1),
             "row sum of exp(x - max)": torch.exp(x2 - x2.max(1, keepdim=True).values).sum(1)}
    if n > 1:
        stats["row variance (biased)"] = x2.var(1, unbiased=False)
        stats["row variance (unbiased)"] = x2.var(1, unbiased=True)
    return {k: v.numpy() for k, v in stats.items()}


def _grids_and_buffers(probes: dict, launches: list[dict], summary: dict, symptoms: list[str]) -> None:
    """Launch grids (programs launched per kernel) and, per tensor a launch received, how many of
    its elements the stores reached: coverage of intermediates, not only of the final outputs."""
    summary["grids"] = []
    for name, grid in probes.get("grids", []):
        n = int(np.prod(grid))
        summary["grids"].append({"kernel": name, "grid": list(grid), "programs": n})
        if n == 0:
            symptoms.append("zero_programs")
    spans: dict[tuple[int, int], tuple[str, int]] = {}
    for l in launches:
        for j, (a, b) in enumerate(l["tensors"]):
            spans.setdefault((a, b), (l["kernel"], j))
    stored: dict[tuple[int, int], np.ndarray] = {}
    sizes: dict[tuple[int, int], int] = {}
    for _site, _pid, addrs, size, _off in probes.get("stores", []):
        if addrs.size == 0:
            continue
        for (a, b) in spans:
            inside = addrs[(addrs >= a) & (addrs < b)]
            if inside.size:
                idx = np.unique((inside - a) // size)
                prev = stored.get((a, b))
                stored[(a, b)] = idx if prev is None else np.union1d(prev, idx)
                sizes[(a, b)] = size
    summary["buffers"] = []
    for (a, b), idx in stored.items():
        kernel, arg = spans[(a, b)]
        n = (b - a) // sizes[(a, b)]
        summary["buffers"].append({"kernel": kernel, "arg": arg, "elements": int(n), "stored": int(idx.size)})
        if idx.size < 0.5 * n:
            symptoms.append("buffer_mostly_unwritten")


def summarise(probes: dict, outputs: list, launches: list[dict], inputs: list) -> dict:
    """The JSON summary: per output ownership, out-of-bounds accesses, reduction matches, symptoms."""
    spans = _spans(outputs, launches)
    symptoms: list[str] = []
    summary: dict = {"outputs": [], "out_of_bounds_stores": [], "out_of_bounds_loads": [], "reductions": []}
    for kind, key in (("stores", "out_of_bounds_stores"), ("loads", "out_of_bounds_loads")):
        per_site: dict[int, int] = {}
        for site, _pid, addrs, _size, _off in probes.get(kind, []):
            n = _outside(addrs, spans)
            if n:
                per_site[site] = per_site.get(site, 0) + n
        summary[key] = [{"line": s, "lanes": n} for s, n in sorted(per_site.items())]
    if summary["out_of_bounds_stores"]:
        symptoms.append("masked_lane_store")
    if summary["out_of_bounds_loads"]:
        symptoms.append("out_of_bounds_load")
    for i, out in enumerate(outputs):
        if not isinstance(out, torch.Tensor) or not out.is_contiguous() or out.numel() == 0:
            continue
        base, size = out.data_ptr(), out.element_size()
        owners: dict[int, set] = {}
        writers = np.zeros(out.numel(), dtype=np.int64)
        for site, pid, addrs, _s, _off in probes.get("stores", []):
            idx = (addrs - base) // size
            idx = idx[(addrs >= base) & (idx < out.numel())]
            if idx.size == 0:
                continue
            seen = owners.setdefault(pid, set())
            fresh = np.setdiff1d(np.unique(idx), np.fromiter(seen, dtype=np.int64, count=len(seen)))
            writers[fresh] += 1
            seen.update(fresh.tolist())
        if not owners:
            continue
        unwritten = int((writers == 0).sum())
        multiple = int((writers > 1).sum())
        entry = {"output": i, "programs": len(owners), "elements": int(out.numel()), "unwritten": unwritten,
                 "written_by_several_programs": multiple}
        if unwritten:
            entry["first_unwritten"] = int(np.argmax(writers == 0))
            symptoms.append("programs_missing")
        if multiple:
            entry["first_multiple"] = int(np.argmax(writers > 1))
            symptoms.append("programs_overlap")
        summary["outputs"].append(entry)
    _grids_and_buffers(probes, launches, summary, symptoms)
    stats = _row_stats(inputs)
    by_site: dict[tuple, dict] = {}
    for site, name, pid, arr in probes.get("values", []):
        if arr.size == 1:
            by_site.setdefault((site, name), {})[pid] = float(arr[0])
    for (site, name), per_pid in sorted(by_site.items()):
        rows = sorted(per_pid)
        vals = np.array([per_pid[p] for p in rows])
        entry = {"line": site, "name": name, "programs": len(rows), "matches": None}
        for label, ref in stats.items():
            if len(ref) == len(vals) and np.allclose(vals, ref, rtol=1e-3, atol=1e-4, equal_nan=False):
                entry["matches"] = label
                break
        if entry["matches"] is None and stats:
            close = {label: float(np.mean(np.isclose(vals, ref, rtol=1e-3, atol=1e-4)))
                     for label, ref in stats.items() if len(ref) == len(vals)}
            best = max(close.items(), key=lambda kv: kv[1], default=None)
            if best and 0.5 <= best[1] < 1.0:
                entry["partly_matches"] = f"{best[0]} in {best[1]:.0%} of programs"
                symptoms.append("intermediate_wrong")
        summary["reductions"].append(entry)
    summary["symptoms"] = sorted(set(symptoms))
    parts = []
    for o in summary["outputs"]:
        parts.append(f"output {o['output']}: {o['programs']} programs wrote it; {o['unwritten']} elements by none, "
                     f"{o['written_by_several_programs']} by several")
    for g in summary.get("grids", []):
        if g["programs"] == 0:
            parts.append(f"{g['kernel']} was launched with grid {tuple(g['grid'])}: zero programs, its body never ran")
    for b in summary.get("buffers", []):
        if b["stored"] < b["elements"]:
            parts.append(f"{b['kernel']}'s stores reach {b['stored']} of the {b['elements']} elements of its "
                         f"argument {b['arg']}")
    for key, what in (("out_of_bounds_stores", "stores"), ("out_of_bounds_loads", "loads")):
        for e in summary[key]:
            parts.append(f"{e['lanes']} {what} at line {e['line']} fell outside every tensor")
    for r in summary["reductions"]:
        if r.get("matches"):
            parts.append(f"line {r['line']} {r['name']} = {r['matches']} of the input")
        elif r.get("partly_matches"):
            parts.append(f"line {r['line']} {r['name']} matches {r['partly_matches']} only")
    summary["summary"] = "; ".join(parts)
    return summary
