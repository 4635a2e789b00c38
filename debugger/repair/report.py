"""The repair report (Markdown): diagnosis, the diff, what each iteration tried, error maps before/after."""
from __future__ import annotations

from pathlib import Path


def _plots(path: Path, ctx, case, final) -> list[tuple[str, str]]:
    """Error-map PNGs of the best evaluation held in the run's cache (failing version), if any."""
    from debugger.diagnose.plot import plot_error_map, worst_output
    from debugger.diagnose.static import block_sizes

    out = []
    for ev in list(ctx.cache.values()):
        worst = worst_output(ev)
        if not worst:
            continue
        check, idx = worst
        art = ev.artifacts[check]
        png = path.with_name(path.stem + "-errormap.png")
        plot_error_map(art["reference"][idx], art["runs"][0][idx], png, title=f"{case.name}: {check}, output {idx}",
                       block_sizes=block_sizes(final.get("best_src", case.candidate_src)))
        out.append(("error map of the best unrepaired version", png.name))
    return out


def write_report(path: Path, case, final: dict, diff: str, ctx) -> Path:
    diag = final.get("diagnosis") or {}
    lines = [f"# kdebug repair report: {case.name}", "", f"- status: **{final.get('status')}**",
             f"- iterations: {final.get('iteration', 0)}; guard: {final.get('stop') or '-'}",
             f"- tokens: {final.get('tokens')}", ""]
    before = final.get("best_report") or {}
    lines += ["## Evaluation of the candidate", "", before.get("message", ""), ""]
    if diag:
        lines += ["## Diagnosis", "", diag.get("summary", ""), ""]
        for h in diag.get("hypotheses", [])[:3]:
            lines.append(f"- {h['bug_class']} ({h['confidence']:.0%}): {'; '.join(h['evidence'][:4])}")
        lines.append("")
    lines += ["## Iterations", "", "| # | move | outcome | error before -> after |", "|---|---|---|---|"]
    for h in final.get("history", []):
        lines.append(f"| {h['iteration']} | {h.get('recipe') or h.get('origin')}: {h.get('description') or ''} | "
                     f"{h['outcome']} | {h.get('error_before')} -> {h.get('error_after')} |")
    lines.append("")
    if diff:
        lines += ["## Diff", "", "```diff", diff.rstrip(), "```", ""]
    verdict = final.get("verdict")
    if verdict:
        lines += ["## Integrity gate", "", f"verdict: **{verdict.get('verdict')}**", ""]
        for f in verdict.get("findings", []):
            lines.append(f"- {f['severity']} `{f['rule']}` line {f.get('line') or '-'}: {f['message']}")
        lines.append("")
    if final.get("status") == "repaired":
        lines += ["## Error maps", "", "After: every check passes (no wrong elements).", ""]
    try:
        for title, png in _plots(path, ctx, case, final) if final.get("status") != "repaired" else []:
            lines += [f"![{title}]({png})", ""]
    except Exception:  # noqa: BLE001 - a report without a picture is still a report
        pass
    path.write_text("\n".join(lines))
    return path
