"""The benchmark's outputs: Markdown tables, bench.md, bench.json and the bar chart bench.png."""
from __future__ import annotations

import json
from pathlib import Path

from debugger.output import jsonable


def _fmt(v, spec: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return format(v, spec or ".2f")
    return str(v)


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def _has_timing(summary: dict) -> bool:
    return any(isinstance(r.get("timing"), dict) for r in summary.get("per_case", []))


def class_table(summary: dict) -> str:
    """Per class and overall: the headline figures, one row each."""
    regen = summary.get("mode") == "regenerate"
    k = summary.get("samples", 1)
    cols = ["class", "cases", "solved" if regen else "repaired", "pass@1"]
    if regen:
        cols += [f"pass@{k}", "verified samples"]
    cols += ["integrity rej.", "compile", "correct"]
    if not regen:
        cols.append("diagnosis acc.")
    cols += ["tokens/success"] + ([] if regen else ["tool calls/success"]) + ["median s", "p90 s"]
    perf = _has_timing(summary)
    if perf:
        cols += ["speedup vs ref", "vs fixed", "roofline"]

    def row(name: str, g: dict) -> list[str]:
        cells = [name, str(g["cases"]), str(g["repaired"]), _pct(g.get("pass_at_1"))]
        if regen:
            cells += [_pct(g.get(f"pass_at_{k}")), f"{g.get('verified_samples', 0)}/{g.get('samples', 0)}"]
        cells += [str(g.get("integrity_rejections", 0)), _pct(g.get("compile_rate")), _pct(g.get("correct_rate"))]
        if not regen:
            cells.append(_pct(g.get("diagnosis_accuracy")))
        cells.append(_fmt(g.get("tokens_per_success"), ".0f"))
        if not regen:
            cells.append(_fmt(g.get("tool_calls_per_success"), ".1f"))
        cells += [_fmt(g.get("median_seconds"), ".1f"), _fmt(g.get("p90_seconds"), ".1f")]
        if perf:
            cells += [_fmt(g.get("speedup_vs_reference"), ".2f"), _fmt(g.get("speedup_vs_fixed"), ".2f"),
                      _pct(g.get("roofline_fraction"))]
        return cells

    rows = [row(cls, g) for cls, g in summary.get("per_class", {}).items()]
    rows.append([f"**{c}**" for c in row("overall", summary)])
    return _table(cols, rows)


def case_table(summary: dict) -> str:
    """One row per case."""
    regen = summary.get("mode") == "regenerate"
    perf = _has_timing(summary)
    cols = ["case", "class", "status"]
    cols += ["verified/samples"] if regen else ["diagnosed", "iters", "fixed by", "diff lines"]
    cols += ["tokens", "seconds"]
    if perf:
        cols += ["repaired ms", "fixed ms", "reference ms", "speedup vs ref", "roofline", "peak MiB"]
    rows = []
    for r in summary.get("per_case", []):
        cells = [r["name"], r.get("true_class") or "-", r["status"]]
        if regen:
            cells.append(f"{r.get('verified_samples', 0)}/{r.get('samples', 0)}")
        else:
            fixed_by = r.get("recipe") or r.get("fixed_by") or "-"
            if r.get("fixed_by") == "template":
                fixed_by = f"template {fixed_by}"
            cells += [r.get("diagnosed_class") or "-", str(r.get("iterations", 0)), fixed_by,
                      str(r.get("diff_lines", 0))]
        cells += [str(r.get("tokens", 0)), _fmt(r.get("seconds"), ".1f")]
        if perf:
            t = r.get("timing") or {}
            peak = (t.get("peak_bytes") or {}).get("repaired")
            cells += [_fmt(t.get("repaired_ms"), ".3f"), _fmt(t.get("fixed_ms"), ".3f"),
                      _fmt(t.get("reference_ms"), ".3f"), _fmt(t.get("speedup_vs_reference"), ".2f"),
                      _pct((t.get("roofline") or {}).get("repaired")),
                      _fmt(peak / 2**20 if isinstance(peak, (int, float)) else None, ".1f")]
        rows.append(cells)
    return _table(cols, rows)


def _table(cols: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join(" --- " for _ in cols) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def headline(summary: dict) -> str:
    """One sentence: what ran and the overall result."""
    s = summary
    what = f"{s['mode']} mode, backend {s['backend']}, device {s['device']}"
    if s.get("scale"):
        what += f", scale {s['scale']}"
    off = [k for k, v in (s.get("ablations") or {}).items() if v]
    if off:
        what += ", ablations: " + ", ".join(off)
    text = (f"{s['repaired']}/{s['cases']} cases {'solved' if s['mode'] == 'regenerate' else 'repaired and verified'} "
            f"(pass@1 {_pct(s['pass_at_1'])}), {s['integrity_rejections']} integrity rejection(s), "
            f"median {_fmt(s.get('median_seconds'), '.1f')} s per case ({what}).")
    if s.get("tokens"):
        text += f" Per success: {_fmt(s.get('tokens_per_success'), '.0f')} tokens"
        text += "." if s["mode"] == "regenerate" else f", {_fmt(s.get('tool_calls_per_success'), '.1f')} tool calls."
    across = s.get("write_back_across_run")
    if across:
        text += (f" Write-back across the run: {across['learned_patterns']} pattern(s) learned, "
                 f"{across['fixed_by_learned_template']} later case(s) fixed by a template learned in this run.")
    return text


def markdown(summary: dict) -> str:
    """The whole bench.md."""
    parts = ["# kdebug bench", "", f"`{summary.get('command', 'kdebug bench')}`", "", headline(summary), "",
             "## Per class", "", class_table(summary), "", "## Per case", "", case_table(summary), ""]
    ceilings = summary.get("ceilings")
    if isinstance(ceilings, dict) and ceilings.get("ok"):
        parts += ["## Device ceilings", "",
                  f"{ceilings.get('device')}: copy {ceilings['copy_bytes_per_s'] / 1e9:.0f} GB/s (read + write), "
                  f"matmul {ceilings['matmul_flops_per_s'] / 1e12:.1f} TFLOP/s (float32, tf32 allowed).", ""]
    return "\n".join(parts)


def bar_chart(summary: dict, path: Path) -> Path:
    """pass@1 per class (and overall) as a horizontal bar chart, PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    classes = list(summary.get("per_class", {}).items())
    names = [c for c, _ in classes] + ["overall"]
    values = [100 * (g.get("pass_at_1") or 0.0) for _, g in classes] + [100 * (summary.get("pass_at_1") or 0.0)]
    counts = [f"{g['repaired']}/{g['cases']}" for _, g in classes] + [f"{summary['repaired']}/{summary['cases']}"]
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(names) + 1.5))
    colors = ["#4c72b0"] * len(classes) + ["#dd8452"]
    bars = ax.barh(range(len(names)), values, color=colors)
    for bar, label in zip(bars, counts):
        ax.text(bar.get_width() + 1, bar.get_y() + bar.get_height() / 2, label, va="center", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 110)
    ax.set_xlabel("pass@1 (%)")
    ax.set_title(f"kdebug bench: {summary['mode']}, {summary['backend']}, {summary['device']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_outputs(summary: dict, out_dir: Path) -> dict:
    """bench.json, bench.md and bench.png under out_dir; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "bench.json", "markdown": out_dir / "bench.md", "chart": out_dir / "bench.png"}
    paths["json"].write_text(json.dumps(jsonable(summary), indent=2, allow_nan=False) + "\n")
    paths["markdown"].write_text(markdown(summary))
    bar_chart(summary, paths["chart"])
    return {k: str(v) for k, v in paths.items()}
