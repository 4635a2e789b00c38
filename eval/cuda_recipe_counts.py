"""Static counts of the CUDA recipes on a real pool's answers: where each recipe's fact fires, and for how
many of those the recipe writes a valid edit. Nothing is compiled or run (no GPU): a valid edit is one
whose file parses (Python and CUDA, the recipe base's own rules) and whose fact is gone from it; whether
it repairs the answer is for a GPU run to say.

    python eval/cuda_recipe_counts.py [POOL] [--classes numerical_mismatch,...] [--recipes a,b] [--list]

POOL: ../shared/real/kernelbench-fork by default (read with ingest.answers, never copied). --classes:
the recorded ingest classes to count (default numerical_mismatch, the recorded wrong answers; `all`
for every answer). --list prints each answer the facts point at: recipe, whether a patch came, whether
the fact is gone, the patch's description.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

POOL = REPO.parent / "shared" / "real" / "kernelbench-fork"
# recipe -> the facts it repairs (debugger/lang/cuda/recipes/__init__.py has the table)
FACTS = {
    "cuda_ceil_div_grid": ("cuda_floor_div_grid",),
    "cuda_grid_stride_loop": ("cuda_grid_capped",),
    "cuda_bounds_check": ("cuda_unguarded_load", "cuda_unguarded_store"),
    "cuda_decode_on_copy": ("cuda_index_divided_in_place",),
    "cuda_float_accumulator": ("cuda_half_accumulator",),
    "cuda_bn_batch_stats": ("cuda_reads_running_stats",),
    "cuda_syncthreads": ("cuda_shared_no_sync",),
    "cuda_atomic_partials": ("cuda_block_partials_race",),
    "cuda_combine_partials": ("cuda_partials_not_combined",),
    "cuda_block_stride_row": ("cuda_block_smaller_than_row",),
}


def counts(pool: Path, classes: set[str] | None, recipes: list[str]) -> tuple[dict[str, Counter], list[tuple], int]:
    from debugger import lang
    from debugger.recipes import RECIPES
    from debugger.source.tree import parses
    from ingest.answers import read_pool

    answers = [a for a in read_pool(pool)[0] if a.candidate_src and (classes is None or a.recorded_class in classes)]
    table: dict[str, Counter] = {r: Counter() for r in recipes}
    listed = []
    for a in answers:
        tags = {f["tag"] for f in lang.static_facts(a.candidate_src)}
        for rid in recipes:
            facts = set(FACTS[rid]) & tags
            if not facts:
                continue
            row = table[rid]
            row["fact fires"] += 1
            patches = RECIPES[rid].propose(a.candidate_src)
            gone = None
            if patches:
                row["patch"] += 1
                new = patches[0].new_src
                after = {f["tag"] for f in lang.static_facts(new)}
                gone = parses(new) and not facts & after
                row["valid edit (parses, fact gone)"] += bool(gone)
            listed.append((a.id, a.recorded_class, rid, bool(patches), gone,
                           patches[0].description if patches else ""))
    return table, listed, len(answers)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pool", nargs="?", default=str(POOL))
    ap.add_argument("--classes", default="numerical_mismatch")
    ap.add_argument("--recipes", default=",".join(FACTS))
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)
    classes = None if args.classes == "all" else set(args.classes.split(","))
    recipes = [r for r in args.recipes.split(",") if r]
    unknown = [r for r in recipes if r not in FACTS]
    if unknown:
        ap.error(f"unknown recipes {unknown}")
    table, listed, n = counts(Path(args.pool), classes, recipes)
    print(f"{n} answers ({args.classes}); static counts, nothing run")
    print("| recipe | fact fires | patch | valid edit (parses, fact gone) |")
    print("| --- | --- | --- | --- |")
    for rid, row in table.items():
        print(f"| {rid} | {row['fact fires']} | {row['patch']} | {row['valid edit (parses, fact gone)']} |")
    if args.list:
        for item in listed:
            print(*item, sep="\t")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
