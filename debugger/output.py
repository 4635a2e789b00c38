"""Printing results: one JSON object on stdout for --json, readable text otherwise; logs to stderr."""
from __future__ import annotations

import json
import math
import sys


def jsonable(obj):
    """Make a value strict-JSON safe: non-finite floats become strings ("inf", "nan")."""
    if isinstance(obj, float):
        if math.isnan(obj):
            return "nan"
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
        return obj
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "__fspath__"):
        return str(obj)
    return obj


def print_json(obj: dict) -> None:
    """Exactly one JSON object on stdout."""
    sys.stdout.write(json.dumps(jsonable(obj), indent=2, allow_nan=False) + "\n")
    sys.stdout.flush()


def log(msg: str) -> None:
    """A progress or log line on stderr."""
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def fmt_err(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.2e}"


def eval_text(report) -> str:
    """A human summary of an EvalReport."""
    lines = [f"status: {report.status}  ({report.message})"]
    if report.checks:
        lines.append(f"{'check':<16} {'result':<14} {'max_abs_err':>12} {'wrong':>8}  note")
        for c in report.checks:
            wrong = f"{c.frac_wrong:.1%}" if c.frac_wrong is not None else "-"
            note = c.message[:70]
            if c.spec.get("published_sizes_out_of_memory"):
                shapes = ", ".join(f"{k}={v}" for k, v in c.spec.get("shapes", {}).items())
                note = f"at {shapes}: out of memory at the published sizes" + (f"; {note}" if note else "")
            lines.append(f"{c.name:<16} {c.status:<14} {fmt_err(c.max_abs_err):>12} {wrong:>8}  {note}")
    for name, v in report.verdicts.items():
        mark = " (sets the status)" if report.semantics in (name, "both") else ""
        failed = f", failing {', '.join(v['failed'][:6])}" if v["failed"] else ""
        skipped = f", {len(v['skipped'])} skipped" if v["skipped"] else ""
        lines.append(f"{name} verdict: {v['status']}{mark} ({v['checks']} checks{failed}{skipped})")
    if report.sizes.get("reduced"):
        sz = report.sizes
        lines.append(f"sizes: {sz['mode']}: {', '.join(f'{k}={v}' for k, v in sz['shapes'].items())} "
                     f"(inputs {sz['input_bytes'] / 2**20:.1f} MiB; published {sz['published_input_bytes'] / 2**20:.1f} MiB)")
    if report.verdict_note:
        lines.append(f"why they differ: {report.verdict_note}")
    pm = report.parameter_map
    if pm and (pm["pairs"] or pm["unmatched_candidate"] or pm["unmatched_reference"]):
        by_order = [f"{p['candidate']}<-{p['reference']}" for p in pm["pairs"] if p["by"] == "order"]
        swapped = [f"{p['candidate']}<-{p['reference']}" for p in pm["pairs"] if p["by"] == "transposed"]
        lines.append(f"parameters: {len(pm['pairs'])} matched ({len(by_order)} by order and shape"
                     f"{': ' + ', '.join(by_order[:6]) if by_order else ''})"
                     + (f"; held transposed (dims 0, 1): {', '.join(swapped[:6])}" if swapped else "")
                     + (f"; unmatched in ModelNew: {', '.join(pm['unmatched_candidate'][:6])}"
                        if pm["unmatched_candidate"] else "")
                     + (f"; unmatched in Model: {', '.join(pm['unmatched_reference'][:6])}"
                        if pm["unmatched_reference"] else ""))
    for w in report.reference_warnings:
        lines.append(f"warning: {w}")
    if report.emulation:
        lines.append(f"note: {report.emulation}")
    if report.signature:
        lines.append(f"signature: {report.signature.key()}")
    return "\n".join(lines)
