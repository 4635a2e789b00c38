"""Does each GPU-only case's own fix pass what a repair is judged on, at the case's [gpu] sizes?

A repair can only come out `repaired` if the case's fixed.py passes the checks the loop, the gate and
the bench's verification run: the fresh checks (the standard ones plus the bench's seeds) and the
gate's hidden checks (other seeds, x7 negated, grown and shrunk shapes). This evaluates fixed.py (and,
with --candidate, candidate.py) on all of them on the device and prints one row per check, so that a
case whose own fix fails its checks is told apart from a repair that went wrong.

    python eval/gpu_fixed_checks.py eval/cases NAME [NAME ...] [--candidate] [--device cuda] > fixed_checks.md
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def checks_for(reference_src: str) -> list[dict]:
    """The bench's fresh checks and the gate's hidden ones (names are unique across the two)."""
    from debugger.bench.verify import fresh_checks
    from debugger.evaluate import hidden_checks
    from debugger.integrity.dynamic import shape_variants

    return fresh_checks() + hidden_checks(shape_variants(reference_src))


def rows(case, label: str, src: str, device: str, timeout: float) -> list[str]:
    from debugger.evaluate import evaluate

    t0 = time.time()
    rep = evaluate(case.with_candidate(src), device, checks=checks_for(case.reference_src), timeout=timeout)
    out = [f"| {case.name} | {label} | {rep.status} ({time.time() - t0:.0f} s) | | | |"]
    for c in rep.checks:
        err = f"{c.max_abs_err:.3g}" if getattr(c, "max_abs_err", None) is not None else ""
        frac = f"{c.frac_wrong:.2%}" if getattr(c, "frac_wrong", None) is not None else ""
        msg = (c.message or "").replace("|", "/").replace("\n", " ")[:140]
        out.append(f"| | {c.name} | {c.status} | {frac} | {err} | {msg} |")
    return out


def main(argv: list[str] | None = None) -> int:
    from debugger.bench.cases import load_bench_case

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cases_dir")
    p.add_argument("names", nargs="+")
    p.add_argument("--candidate", action="store_true", help="evaluate candidate.py too")
    p.add_argument("--device", default="cuda")
    p.add_argument("--timeout", type=float, default=120.0)
    a = p.parse_args(argv)
    print("| case | check | status | wrong | max abs err | message |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in a.names:
        folder = Path(a.cases_dir) / name
        case, scaled = load_bench_case(folder, "gpu")
        todo = [("fixed.py", case.fixed_path.read_text())] if case.fixed_path else []
        if a.candidate:
            todo.append(("candidate.py", case.candidate_src))
        for label, src in todo:
            try:
                lines = rows(case, label + ("" if scaled else " (own sizes)"), src, a.device, a.timeout)
            except Exception as e:  # noqa: BLE001 - one case's failure must not hide the others
                lines = [f"| {name} | {label} | error: {type(e).__name__}: {str(e)[:200]} | | | |"]
            print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
