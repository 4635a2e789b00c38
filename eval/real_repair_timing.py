"""Speed of repaired real answers against their reference, on a GPU at the published sizes.

    python eval/real_repair_timing.py DIR [--originals CASES] [--match GLOB,...] [--jobs 12] [--deadline S]
        [--resume] [--build-only | --skip-build] --out OUT

DIR holds repaired case folders (reference.py, candidate.py = the repair), as `eval/real_pool.py --repair`
leaves them in OUT/repairs/ and `--verify-repairs` reads them. First every repair is built side by side (the
nvcc builds of load_inline, about a minute each, into kdebug's extensions cache, where an evaluation with the
same KDEBUG_DATA_DIR finds them too; --skip-build trusts a --build-only command that ran before with that
KDEBUG_DATA_DIR); then each case is timed alone, one after the other
(debugger/bench/timing.py: the reference and the repair on the same fresh inputs drawn from the reference's
get_inputs(), interleaved rounds of triton's do_bench, medians). The repairs are a pipeline's code: the
timing and build processes are confined as sandbox workers are (`case_timing(..., sandbox=...)`).

With --originals (the case folders of the answers before repair, OUT/cases/ of the repair run), the original
answer is timed beside them: what a repair cost, apart from what the answer's own design costs. An original whose
extension sources the repair left as they were (a host-side fix) runs the same kernels and is not timed again (the
row says so), and the repairs that changed a kernel are timed first.

Writes OUT/rows.jsonl (one row a case: reference_ms, repaired_ms, speedup_vs_reference = reference /
repaired, candidate_ms with --originals, the rounds' spread, max_abs_err against the reference, peak bytes,
errors) and OUT/table.md.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from debugger.bench.perf import case_timing, measure_ceilings, run_timing  # noqa: E402
from debugger.bench.scores import geomean  # noqa: E402
from debugger.evaluate import sandbox_cache_dir  # noqa: E402


def case_folders(root: Path, match: str | None) -> list[Path]:
    folders = sorted(d for d in root.iterdir()
                     if d.is_dir() and (d / "candidate.py").is_file() and (d / "reference.py").is_file())
    if match:
        pats = match.split(",")
        folders = [d for d in folders if any(fnmatch.fnmatch(d.name.replace("__", "/"), p) for p in pats)]
    return folders


def sandbox_for(folder: Path) -> dict:
    cache = sandbox_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    return {"deny_read": [str(folder.resolve())], "cache": str(cache)}


def original_source(folder: Path, originals: Path | None) -> str | None:
    original = originals / folder.name / "candidate.py" if originals else None
    return original.read_text() if original is not None and original.is_file() else None


def same_kernels(folder: Path, originals: Path | None) -> bool:
    """The repair left the answer's extension sources as they were (a host-side fix: parameters, wrappers):
    the original runs the same kernels on the same shapes, so timing it again tells nothing."""
    from debugger.lang.cuda.sources import build_key

    original = original_source(folder, originals)
    if original is None:
        return False
    key = build_key((folder / "candidate.py").read_text())
    return key is not None and key == build_key(original)


def implementations(folder: Path, originals: Path | None) -> dict[str, str]:
    impls = {"repaired": (folder / "candidate.py").read_text()}
    original = original_source(folder, originals)
    if original is not None and not same_kernels(folder, originals):
        impls["candidate"] = original
    return impls


def timing_order(folders: list[Path], originals: Path | None) -> list[Path]:
    """Repairs that changed a kernel first: their timing says what the repair cost; a host-side repair's
    kernels are the answer's own."""
    return sorted(folders, key=lambda d: same_kernels(d, originals))


def build(folder: Path, originals: Path | None, timeout: float) -> dict:
    """The repair's build result (the original's, when timed too, is only warmed)."""
    out = run_timing({"op": "build", "device": "cuda", "reference_src": (folder / "reference.py").read_text(),
                      "implementations": implementations(folder, originals), "sandbox": sandbox_for(folder)}, timeout)
    return out.get("repaired") or {"error": out.get("error", "build failed")}


def row_of(folder: Path, timing: dict, seconds: float, originals: Path | None = None) -> dict:
    keep = ("device", "reference_ms", "repaired_ms", "candidate_ms", "speedup_vs_reference", "spread", "max_abs_err",
            "peak_bytes", "errors", "error")
    row = {"id": folder.name.replace("__", "/"), **{k: timing.get(k) for k in keep if timing.get(k) is not None},
           "seconds": round(seconds, 1)}
    if same_kernels(folder, originals):
        row["original"] = "same kernels as the repair"
    return row


def table(rows: list[dict], command: str) -> str:
    timed = [r for r in rows if r.get("speedup_vs_reference")]
    lines = ["    " + command, "",
             f"{len(timed)} of {len(rows)} repairs timed; geometric mean speedup against the reference: "
             f"{(geomean([r['speedup_vs_reference'] for r in timed]) or 0):.2f}x; faster than the reference: "
             f"{sum(1 for r in timed if r['speedup_vs_reference'] > 1)}.", "",
             "| answer | reference ms | repaired ms | speedup | original answer ms | spread (ref / repaired) | note |",
             "| --- | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in sorted(rows, key=lambda r: r["id"]):
        spread = r.get("spread") or {}
        note = r.get("error") or "; ".join(f"{k}: {v}" for k, v in (r.get("errors") or {}).items()) \
            or r.get("original", "")
        speedup = r.get("speedup_vs_reference")
        lines.append(f"| {r['id']} | {_ms(r.get('reference_ms'))} | {_ms(r.get('repaired_ms'))} | "
                     f"{f'{speedup:.2f}x' if speedup else ''} | {_ms(r.get('candidate_ms'))} | "
                     f"{_pct(spread.get('reference'))} / {_pct(spread.get('repaired'))} | {note[:160]} |")
    return "\n".join(lines) + "\n"


def _ms(v) -> str:
    return f"{v:.3f}" if isinstance(v, (int, float)) else ""


def _pct(v) -> str:
    return f"{100 * v:.1f}%" if isinstance(v, (int, float)) else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--originals", type=Path, help="case folders of the answers before repair, timed beside")
    ap.add_argument("--match", help="comma-separated globs over answer ids (a/level1/19)")
    ap.add_argument("--jobs", type=int, default=12, help="builds side by side (timing is always one at a time)")
    ap.add_argument("--timeout", type=float, default=400, help="seconds per build or timing process")
    ap.add_argument("--deadline", type=float, help="stop starting builds or timings after this many seconds")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds per case")
    ap.add_argument("--build-only", action="store_true", help="build every repair, time nothing (a first command)")
    ap.add_argument("--resume", action="store_true", help="keep OUT/rows.jsonl's rows and time only the rest")
    ap.add_argument("--skip-build", action="store_true",
                    help="time at once: the builds are in the extensions cache already (a --build-only command ran)")
    opts = ap.parse_args(argv)
    if not opts.dir.is_dir():
        print(f"real_repair_timing: {opts.dir} is not a folder", file=sys.stderr)
        return 2
    t0 = time.time()
    late = lambda: opts.deadline is not None and time.time() - t0 > opts.deadline  # noqa: E731
    opts.out.mkdir(parents=True, exist_ok=True)
    rows_path = opts.out / "rows.jsonl"
    done = {}
    if opts.resume and rows_path.is_file():
        done = {r["id"]: r for r in map(json.loads, rows_path.read_text().splitlines()) if r.get("repaired_ms")}
    rows_path.write_text("".join(json.dumps(r) + "\n" for r in done.values()))
    todo = timing_order([d for d in case_folders(opts.dir, opts.match) if d.name.replace("__", "/") not in done],
                        opts.originals)
    print(f"real_repair_timing: {len(todo)} to time, {len(done)} kept", file=sys.stderr)
    built: dict[Path, dict] = {}

    def one_build(folder: Path) -> None:
        if not late():
            built[folder] = build(folder, opts.originals, opts.timeout)
            print(f"  built {folder.name}: {built[folder]}", file=sys.stderr)
    if not opts.skip_build:
        with ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
            list(pool.map(one_build, todo))
    if opts.build_only:
        return 0
    ceilings = measure_ceilings(opts.timeout) if todo and not late() else {}
    for folder in todo:
        if late():
            break
        if "error" in built.get(folder, {}):
            row = {"id": folder.name.replace("__", "/"), "error": f"build: {built[folder]['error']}"}
        else:
            t = time.time()
            timing = case_timing((folder / "reference.py").read_text(), implementations(folder, opts.originals),
                                 ceilings,
                                 timeout=opts.timeout, sandbox=sandbox_for(folder), rounds=opts.rounds)
            row = row_of(folder, timing, time.time() - t, opts.originals)
        done[row["id"]] = row
        with rows_path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        print(f"  {json.dumps(row)}", file=sys.stderr)  # the log keeps the row should the run be cut
    command = "python eval/real_repair_timing.py " + " ".join(sys.argv[1:] if argv is None else argv)
    (opts.out / "table.md").write_text(table(list(done.values()), command))
    print((opts.out / "table.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
