"""Does the candidate compute the operator at all? The `needs_rewrite` verdict and its evidence.

Some answers are not near-misses: a placeholder body, a kernel launched on a grid of zero programs
whose body cannot run once it is launched, stores that reach a small part of the output. No recipe
can repair those, and spending iterations on them is what made hopeless repairs slow. The verdict is
built from the run only (the poisoned allocations, the probes' grids and store coverage, the
counterfactual experiments, the kernel's own comments), never from the class prior, and names every
piece of evidence it rests on. A verdict is withheld while the kb still holds an untried proposal
of a class that could restore the coverage, so a recipe that can fix it is always tried first.
"""
from __future__ import annotations

import re

from debugger.recipes.indexing import loops
from debugger.recipes.pointers import stale_accesses
from debugger.recipes.syntax import Source
from debugger.source.tree import line, walk

PLACEHOLDER = re.compile(
    r"place-?holder|not (yet )?implemented|replace (this |it )?with (an? |the )?(actual|real|proper|correct)|"
    r"for demonstration|dummy (implementation|kernel|computation)|\bstub\b|todo:? implement|"
    r"this should be replaced|incorrect placeholder|simplified (stand-?in|approximation)",
    re.IGNORECASE)
# Classes whose recipes can restore coverage (grids, program ids, masks, store offsets); and
# advance_pointers where a loop's store stays put (stale_loop_stores).
COVERAGE_CLASSES = ("grid_undercount", "unwritten_output", "mask_missing", "program_id_axis")
MOSTLY_WRONG = 0.5


def placeholder_lines(src: str) -> list[tuple[int, str]]:
    """(line, text) of comments and strings inside kernels that call the body a placeholder."""
    s = Source(src)
    if not s.ok:
        return []
    out = []
    for k in s.kernels:
        for n in walk(k.fn):
            if n.type in ("comment", "string") and PLACEHOLDER.search(n.text.decode(errors="replace")):
                out.append((line(n), n.text.decode(errors="replace").strip()[:120]))
    return out


def stale_loop_stores(src: str) -> list[int]:
    """Lines of the stores in a kernel's loop whose address is the same on every iteration: each
    iteration overwrites the last one's elements, so most of the output stays unwritten, and
    advancing the pointer (advance_pointers) restores the coverage."""
    s = Source(src)
    if not s.ok:
        return []
    return sorted({line(c) for k in s.kernels for loop in loops(k) for c in stale_accesses(k, loop, "tl.store")})


def _restores_coverage(untried: list[dict], src: str) -> bool:
    """An untried proposal could write the part of the output the stores miss."""
    return any(p["bug_class"] in COVERAGE_CLASSES for p in untried) or \
        (any(p["recipe"] == "advance_pointers" for p in untried) and bool(stale_loop_stores(src)))


def _seed_maps(error_maps: dict) -> list[dict]:
    seeds = [m for name, maps in error_maps.items() if name.startswith("seed") for m in maps]
    return seeds or [m for maps in error_maps.values() for m in maps]


CRASH = re.compile(r"SIG[A-Z]+|killed by signal|double free|malloc|core dumped", re.IGNORECASE)


def _raised(experiments: list[dict], classes=("grid_undercount",)) -> dict | None:
    """A grid experiment after which the kernel's body ran and raised (a compile or trace error; a
    crashed worker is an out-of-bounds access of a grid that now runs, not a body that cannot)."""
    for e in experiments:
        if e.get("bug_class") in classes and e.get("status") == "runtime_error" \
                and not CRASH.search(e.get("message") or ""):
            return e
    return None


def verdict(diag, src: str, untried: list[dict]) -> dict | None:
    """{"reason", "evidence": [...]} when the run shows the code never computes the operator; else None.

    `untried`: the kb's proposals no experiment ran ({"recipe", "bug_class"}); a coverage verdict waits
    while one of a coverage class is left.
    """
    exps = diag.experiments or []
    # an experiment that helps rules the verdict out, unless all it changed was to let a kernel run (or
    # fail fewer checks) that still gets most of every output wrong: the coverage evidence stands then
    if any(e["result"] == "fixed" or (e["result"] == "better" and not e.get("mostly_wrong")) for e in exps):
        return None
    maps = _seed_maps(diag.error_maps)
    probes = diag.probes or {}
    evidence: list[str] = []
    frac = max((m.get("frac_wrong") or 0.0 for m in maps), default=0.0)
    marks = placeholder_lines(src) if frac > MOSTLY_WRONG else []
    if marks:
        evidence += [f"line {n}: {t}" for n, t in marks[:3]]
        evidence.append(f"{frac:.0%} of the output is wrong")
        return {"reason": "placeholder", "evidence": evidence}
    zero = [g for g in probes.get("grids", []) if g.get("programs") == 0]
    if zero:
        for g in zero:
            evidence.append(f"{g['kernel']} was launched with grid {tuple(g['grid'])}: zero programs, its body "
                            "never ran")
        raised = _raised(exps)
        if raised is not None:
            evidence.append(f"with the grid fixed ({raised['description']}) the body runs and fails: "
                            f"{raised.get('message', raised['status'])[:240]}")
            return {"reason": "body_cannot_run", "evidence": evidence}
        if not any(p["bug_class"] in COVERAGE_CLASSES for p in untried):
            evidence.append("no recipe makes the body run")
            return {"reason": "never_ran", "evidence": evidence}
        return None
    unwritten = [m for m in maps if "mostly_unwritten" in m.get("symptoms", []) or
                 "none_written" in m.get("symptoms", [])]
    poisoned = [b for b in probes.get("buffers", []) if b["stored"] < 0.5 * b["elements"]]
    # After a GPU crash there are no outputs: the probes' interpreted run shows where the poison went.
    nan_out = any("nan_in_output" in m.get("symptoms", []) for m in maps) or bool(probes.get("result_nan"))
    if unwritten:  # (integer outputs carry no poison: one floating output mostly unwritten is enough)
        from debugger.diagnose.errormap import describe_coverage

        cov = unwritten[0].get("coverage") or {}
        evidence.append(describe_coverage(cov, unwritten[0].get("shape", [])) if cov else
                        "most of the output was never written")
    elif poisoned and nan_out:
        b = poisoned[0]
        evidence.append(f"{b['kernel']}'s stores reach {b['stored']} of the {b['elements']} elements of its "
                        f"argument {b['arg']}; the rest keeps the allocation's poison, which reaches the result "
                        "as NaN" + (" (counted after the run)" if b.get("measured") == "run" else
                                    " (probes on the interpreter)" if probes.get("interpreter") else ""))
    else:
        return None
    if _restores_coverage(untried, src):
        return None
    tried = sorted({e["recipe"] for e in exps})
    evidence.append("no recipe restores the coverage" + (f" (tried: {', '.join(tried)})" if tried else ""))
    return {"reason": "no_store_reaches_most_of_the_output", "evidence": evidence}
