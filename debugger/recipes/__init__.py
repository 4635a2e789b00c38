"""Fix recipes: machine-applicable repairs over the candidate's syntax tree (the kb backend's moves).

`RECIPES` maps each recipe id (the ids knowledge-base patterns name in `fix_recipe`) to its instance.
`propose_all` asks every recipe, or those of some bug classes, for candidate patches. Kernel languages
add their own recipes with `register` when they load (debugger/lang/cuda/recipes: the CUDA ones);
this package never imports a language, so the languages can build on its syntax and base classes.
"""
from __future__ import annotations

import logging

from debugger.recipes.activations import ActivationConstant, GeluVariant, StableActivation
from debugger.recipes.axes import BroadcastAxis, SwapReductionAxis
from debugger.recipes.base import Patch, Recipe, RecipeLike
from debugger.recipes.batchnorm_train import BatchNormBatchStats
from debugger.recipes.bounds import MaskBoundNumel
from debugger.recipes.control import DropEarlyReturn
from debugger.recipes.fills import MaskPaddedLanes, OtherIdentity
from debugger.recipes.gpu_compat import MissingMathFunction, UnifyBranchTypes
from debugger.recipes.gpu_faults import AtomicReadModifyWrite, Int64OffsetTerms, TwoLaunchCarry
from debugger.recipes.grid import BlockCoversRow, GridCdiv, SwapProgramIdAxis
from debugger.recipes.layout import DotIeeePrecision, DotOperandTranspose, ContiguousView
from debugger.recipes.masks import AddMask, FixMaskBound, KTailMask
from debugger.recipes.pointers import AdvancePointers, ContiguousInputs, SwapStrides
from debugger.recipes.precision import Int64Offsets, OutputDtype, WidenAccumulator
from debugger.recipes.reductions import EpsInsideSqrt, MeanOverN, SubtractRowmax, VarianceBiased
from debugger.recipes.scan import ScanInclusive
from debugger.recipes.transforms import DropRepeatedTransform
from debugger.recipes.writes import AtomicAccumulate, StoreOffsets

log = logging.getLogger(__name__)

_ALL: list[Recipe] = [
    # masks and fills
    AddMask(), FixMaskBound(), KTailMask(), OtherIdentity(), MaskPaddedLanes(), MaskBoundNumel(),
    # grid, program ids, writes
    GridCdiv(), SwapProgramIdAxis(), BlockCoversRow(), DropEarlyReturn(), StoreOffsets(), AtomicAccumulate(),
    # reductions and normalisation
    SubtractRowmax(), MeanOverN(), VarianceBiased(), EpsInsideSqrt(), SwapReductionAxis(), ScanInclusive(),
    BatchNormBatchStats(),  # train-mode BatchNorm: batch statistics where the answer used running ones
    # pointers and layout
    AdvancePointers(), ContiguousInputs(), SwapStrides(), BroadcastAxis(), DotOperandTranspose(), ContiguousView(),
    # precision and dtypes
    WidenAccumulator(), OutputDtype(), Int64Offsets(), DotIeeePrecision(),
    # elementwise math
    ActivationConstant(), GeluVariant(), StableActivation(), DropRepeatedTransform(),
    Int64OffsetTerms(), AtomicReadModifyWrite(), TwoLaunchCarry(),  # faults only a GPU shows (gpu_faults.py)
    MissingMathFunction(), UnifyBranchTypes(),  # what only a GPU build rejects (gpu_compat.py)
]

RECIPES: dict[str, Recipe] = {r.id: r for r in _ALL}


def register(*recipes: Recipe) -> None:
    """Add recipes to the registry (a language's, at its load); one already registered is kept once."""
    for r in recipes:
        if r.id not in RECIPES:
            _ALL.append(r)
            RECIPES[r.id] = r


def get(recipe_id: str) -> Recipe:
    """The recipe with this id (KeyError naming the known ids otherwise)."""
    try:
        return RECIPES[recipe_id]
    except KeyError:
        raise KeyError(f"unknown recipe {recipe_id!r}; known: {', '.join(sorted(RECIPES))}") from None


def for_bug_class(bug_class: str) -> list[Recipe]:
    """Recipes that repair `bug_class`, in registry order."""
    return [r for r in _ALL if bug_class in r.bug_classes]


def for_symptoms(tags) -> list[Recipe]:
    """Recipes ranked by how many of the symptom tags they list (those listing none left out)."""
    tags = set(tags)
    scored = [(len(tags & set(r.symptoms)), i, r) for i, r in enumerate(_ALL)]
    return [r for n, i, r in sorted(scored, key=lambda t: (-t[0], t[1])) if n]


def propose_all(src: str, hints: dict | None = None, bug_classes=None) -> list[Patch]:
    """Patches from every recipe (or those of `bug_classes`), recipe by recipe in registry order.

    Naming `bug_classes` also tells those recipes the diagnosis suspects them, which unlocks the
    alternatives they hold back without evidence in the source (see Recipe.forced). A recipe that
    raises is skipped with a logged warning, so one faulty recipe cannot stop a repair.
    """
    out: list[Patch] = []
    if bug_classes is not None:
        hints = {**(hints or {}), "bug_classes": list(bug_classes)}
    for r in _ALL:
        if bug_classes is not None and not set(bug_classes) & set(r.bug_classes):
            continue
        try:
            out.extend(r.propose(src, hints))
        except Exception:  # noqa: BLE001 - isolate faulty recipes, keep the rest
            log.warning("recipe %s failed", r.id, exc_info=True)
    return out


def sibling_ranks(patches) -> list[int]:
    """For each patch (anything with a .recipe), how many earlier ones in the list share its recipe:
    the searches take every recipe's first variant before any recipe's second."""
    seen: dict[str, int] = {}
    ranks = []
    for p in patches:
        ranks.append(seen.get(p.recipe, 0))
        seen[p.recipe] = ranks[-1] + 1
    return ranks


__all__ = ["Patch", "Recipe", "RecipeLike", "RECIPES", "get", "register", "for_bug_class", "for_symptoms",
           "propose_all", "sibling_ranks"]
