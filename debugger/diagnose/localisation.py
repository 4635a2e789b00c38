"""Localisation across kernels: which of a multi-kernel candidate's kernels departs first.

Runs the first failing check once more with `localise` set: the candidate worker records what every
launch wrote, the reference worker records its float64 intermediates and judges each written buffer
against them (debugger/sandbox/localise.py). Here the verdicts are tied back to the source: the
departing kernel's lines, and the kernels whose outputs match the reference, so the repair can
target the one kernel. Works on the CPU interpreter and on a GPU (no source rewriting involved).
A CUDA candidate is localised by its calls into its extension (each recorded as a launch named by
the exported function): the departing call names its host function and the kernels it launches
(lang/cuda/exports.py), and their lines.
"""
from __future__ import annotations

from debugger.lang.spans import extension_spans, kernel_lines


def run_localisation(case, report, device: str = "cpu", timeout: float = 120.0,
                     launched: list[str] | None = None) -> dict:
    """{} unless the candidate launches several kernels; else the per-buffer verdicts and the kernel
    to target. `launched`: the kernels the evaluation saw launched, when known."""
    spans = kernel_lines(case.candidate_src)
    failing = [c for c in report.failed_checks if c.spec and c.status == "mismatch"]
    kernels = set(launched) if launched is not None else set(spans)
    if len(kernels) < 2 or not failing:
        return {}
    from debugger.evaluate import run_evaluation

    spec = dict(failing[0].spec, localise=True)
    ev = run_evaluation(case, device, checks=[spec], timeout=timeout)
    obs = ev.observations.get(spec["name"], {})
    loc = obs.get("localisation")
    if not loc:
        return {"error": "the localising run captured no kernel output"} if obs else {"error": ev.report.message}
    if loc.get("error"):
        return {"error": loc["error"]}
    loc["check"] = spec["name"]
    loc["kernel_lines"] = spans
    verdicts: dict[str, set] = {}
    for b in loc.get("buffers", []):
        verdicts.setdefault(b["kernel"], set()).add(b["verdict"])
    loc["matched_kernels"] = sorted(k for k, v in verdicts.items() if v == {"matches"})
    first = loc.get("first_departing")
    if first:
        unchecked = [b["kernel"] for b in loc["buffers"] if b["launch"] < first["launch"] and b["verdict"] == "unknown"]
        loc["target"] = {"kernel": first["kernel"], "launch": first["launch"], "lines": spans.get(first["kernel"]),
                         "earlier_unchecked": sorted(set(unchecked))}
        extension = extension_spans(case.candidate_src).get(first["kernel"])
        if extension:  # a call into the CUDA extension: its host function and the kernels it launches
            loc["target"].update(host=extension["host"], kernels=extension["kernels"])
    return loc


def describe(loc: dict) -> str:
    """One sentence for the summary and the prompt."""
    target = loc.get("target")
    if not target:
        return loc.get("summary", "")
    where = f" (lines {target['lines'][0]}-{target['lines'][1]})" if target.get("lines") else ""
    what = f"kernel {target['kernel']}"
    if target.get("host"):
        what = f"extension function {target['kernel']}" + \
            (f" (kernels {', '.join(target['kernels'])})" if target.get("kernels") else "")
    text = f"{what}{where} is the first whose output departs from the reference"
    if loc.get("matched_kernels"):
        text += f"; {', '.join(loc['matched_kernels'])} match the reference's intermediates"
    if target.get("earlier_unchecked"):
        text += f"; earlier {', '.join(target['earlier_unchecked'])} could not be checked"
    return text
