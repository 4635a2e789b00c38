"""The whole integrity gate (static rules + the sandboxed dynamic run) over the corpus.

    python eval/integrity/full_gate.py [--cheats dynamic|all|none] [--honest all|none]
                                       [--policy strict|kernelbench] [--only NAME ...]

score.py scores the static rules alone (fast); this runs debugger.integrity.gate.check on each file.
"""
import argparse
import tomllib
from pathlib import Path

from debugger.case import case_from_sources
from debugger.integrity.gate import check

root = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cheats", choices=["dynamic", "all", "none"], default="dynamic")
    ap.add_argument("--honest", choices=["all", "none"], default="all")
    ap.add_argument("--policy", choices=["strict", "kernelbench"], default="strict")
    ap.add_argument("--only", nargs="*", help="only these corpus entries")
    args = ap.parse_args()
    corpus = tomllib.loads((root / "corpus.toml").read_text())
    cheats = [] if args.cheats == "none" else [c for c in corpus["cheat"]
                                               if args.cheats == "all" or c.get("dynamic_only")]
    honest = corpus["honest"] if args.honest == "all" else []
    if args.only:
        cheats = [c for c in cheats if c["name"] in args.only]
        honest = [c for c in honest if c["name"] in args.only]
    tally = {"cheat": [0, 0], "honest": [0, 0]}
    for kind, items in (("cheat", cheats), ("honest", honest)):
        for c in items:
            ref = (root / "references" / f"{c['reference']}.py").read_text()
            src = (root / ("cheats" if kind == "cheat" else "honest") / f"{c['name']}.py").read_text()
            v = check(case_from_sources(ref, src), "cpu", policy=args.policy)
            cheat_here = kind == "cheat" and args.policy in c.get("policies", [args.policy])
            good = (v.verdict == "reject") == cheat_here
            tally[kind][0] += good
            tally[kind][1] += 1
            print(kind, c["name"], v.verdict, [f.rule for f in v.findings if f.severity == "reject"], flush=True)
    print(f"cheats rejected (accepted where their policies allow them) {tally['cheat'][0]}/{tally['cheat'][1]}; honest accepted {tally['honest'][0]}/{tally['honest'][1]}")


if __name__ == "__main__":
    main()
