"""Gather the case folders the timing jobs read: `python eval/h200_next/assemble_timing.py DEST [--run OUT ...]`.

For every answer repaired on a GPU (eval/real_repair_tally.py), the CPU repair run's case folder of the repair
(OUT/repairs/<id>) goes to DEST/.timeA and the answer before repair (OUT/cases/<id>) to DEST/.timeA_originals,
from the paths the committed CPU rows name (they live in this machine's /tmp while it lasts; an answer whose
folders are gone is listed and left out); and the repairs still to judge on a GPU (unjudged_on_gpu_ids.txt:
`id source`, the folder under source/out/repairs/ or source/repairs/) go to DEST/.verifyB.

With --run OUT (one or more `eval/real_pool.py --repair` scratch folders of this machine, e.g. a CPU run that re-made
the repairs at the current code), the repairs come from OUT/rows.jsonl instead: each answer of the GPU tally whose
repair there passes both verdicts of its separate eval and the gate, whatever the committed rows name.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import real_repair_tally as tally  # noqa: E402


def run_rows(runs: list[str]):
    """The rows of fresh repair runs (OUT/rows.jsonl), only the repairs their separate eval and gate passed."""
    for out in runs:
        for line in (Path(out) / "rows.jsonl").read_text().splitlines():
            row = json.loads(line)
            if tally.passes(row):
                yield Path(out), row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dest", type=Path, help="an existing folder, e.g. .clean")
    ap.add_argument("--run", nargs="+", default=[], metavar="OUT", help="real_pool.py --repair folders with rows.jsonl")
    opts = ap.parse_args()
    dest, runs = opts.dest, opts.run
    if not dest.is_dir() or any(not (Path(r) / "rows.jsonl").is_file() for r in runs):
        ap.error("DEST must be an existing folder and each --run folder must hold rows.jsonl")
    rows = tally.tally()
    wanted = {i for i, r in rows.items() if r["gpu"]}
    found: dict[str, tuple[Path, Path]] = {}
    source = run_rows(runs) if runs else tally.committed_rows("cpu_*/*repair_rows*.jsonl")
    for _path, row in source:
        rep = row.get("repair") or {}
        if row["id"] in wanted and rep.get("status") == "repaired" and rep.get("output"):
            repaired = Path(rep["output"][: -len(".py")])
            original = Path(row.get("case_dir") or "")
            if (repaired / "candidate.py").is_file() and (original / "candidate.py").is_file():
                found[row["id"]] = (repaired, original)
    for sub in (".timeA", ".timeA_originals"):
        (dest / sub).mkdir(exist_ok=True)
    for i, (repaired, original) in sorted(found.items()):
        shutil.copytree(repaired, dest / ".timeA" / repaired.name, dirs_exist_ok=True)
        shutil.copytree(original, dest / ".timeA_originals" / repaired.name, dirs_exist_ok=True)
    (dest / ".verifyB").mkdir(exist_ok=True)
    for line in (Path(__file__).parent / "unjudged_on_gpu_ids.txt").read_text().splitlines():
        parts = line.split()
        if len(parts) != 2 or line.startswith("#"):
            continue
        name = parts[0].replace("/", "__")
        folder = next((f for f in (Path(parts[1]) / "out" / "repairs" / name, Path(parts[1]) / "repairs" / name)
                       if (f / "candidate.py").is_file()), None)
        if folder is None:
            print(f"to judge, folder gone: {parts[0]}")
        else:
            shutil.copytree(folder, dest / ".verifyB" / name, dirs_exist_ok=True)
    missing = sorted(wanted - set(found))
    print(f"{len(found)} of {len(wanted)} gathered" + (f"; missing: {', '.join(missing)}" if missing else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
