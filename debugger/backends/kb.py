"""The kb backend: repair with no language model, from fix recipes and learned templates.

Proposals are every patch the recipes (and the knowledge base's learned templates) can make to the
current best candidate, ranked by: the diagnosis (confidence of the patch's bug class, the recipe
that fixed the failing checks in an experiment), retrieval (patterns naming the recipe), and a small
additive model learned from the ledger's past outcomes. Only proposals the run's evidence backs are
returned (a class the diagnosis marks supported, or an experiment that helped): when none is left,
the repair stops instead of spending iterations on guesses.
"""
from __future__ import annotations

import re

from debugger import lang  # noqa: F401 - loading the languages registers their recipes (CUDA's)
from debugger.backends.base import Proposal
from debugger.backends.ranking import RecipeRanker, diagnosis_features
from debugger.recipes import propose_all, sibling_ranks
from debugger.recipes.mutations import mutations
from debugger.recipes.dropped_term import dropped_term_patch
from debugger.recipes.frozen_scalar import frozen_scalar_patch
from debugger.recipes.parameter_init import parameter_init_patch

CLASS_WEIGHT = 6.0
EXPERIMENT_FIXED = 50.0
EXPERIMENT_BETTER = 5.0
RETRIEVED_WEIGHT = 3.0
SITE_MATCH = 1.0
LOCALISED = 1.5  # edits inside the kernel that departs first (multi-kernel candidates)
FALLBACK = 3  # proposals tried when the run backs no class (then the repair stops: no_applicable_recipe)
SIBLING = 0.5  # less for each better-ranked patch of the same recipe: try other recipes before a fifth sibling


class KBBackend:
    """Recipes + learned templates, ranked."""

    name = "kb"

    def __init__(self, ranker: RecipeRanker | None = None, knowledge=None):
        self.ranker = ranker or RecipeRanker()
        self.knowledge = knowledge
        self.dropped = 0  # proposals of the last call that no evidence of the run backed

    def _templates(self, src: str) -> list:
        if self.knowledge is None:
            return []
        out = []
        try:
            for recipe in self.knowledge.learned_recipes():
                out.extend(recipe.propose(src))
        except Exception:  # noqa: BLE001 - a broken learned pattern must not stop the repair
            return out
        return out

    def propose(self, candidate_src: str, diagnosis: dict, retrieved: dict, context: dict) -> list[Proposal]:
        hyps = diagnosis.get("hypotheses") or []
        class_conf: dict[str, float] = {}
        hyp_lines: dict[str, set] = {}
        for h in hyps:
            class_conf[h["bug_class"]] = class_conf.get(h["bug_class"], 0.0) + h["confidence"]
            hyp_lines.setdefault(h["bug_class"], set()).update(h.get("lines") or [])
        exp = {(e["recipe"], e["result"]) for e in diagnosis.get("experiments", [])}
        retrieved_recipes: dict[str, float] = {}
        for hit in retrieved.get("patterns", []):
            if hit.get("fix_recipe"):
                retrieved_recipes[hit["fix_recipe"]] = max(retrieved_recipes.get(hit["fix_recipe"], 0.0),
                                                           float(hit.get("score", 0.0)))
        features = diagnosis_features(diagnosis)
        loc = diagnosis.get("localisation") or {}
        target = loc.get("target") or {}
        # When an earlier kernel's output could not be checked, the bug may lie there: no boost then.
        target = None if target.get("earlier_unchecked") else target.get("lines")
        matched = [loc.get("kernel_lines", {}).get(k) for k in loc.get("matched_kernels", [])]
        proposals = []
        hints = run_hints(diagnosis, context)
        base = list(propose_all(candidate_src, hints=hints))
        # The diagnosis's top classes unlock the recipes' more speculative alternatives for those classes.
        seen = {p.new_src for p in base}
        for cls in list(dict.fromkeys(h["bug_class"] for h in hyps))[:2]:
            for p in propose_all(candidate_src, hints={**hints, "bug_class": cls}, bug_classes=[cls]):
                if p.new_src not in seen:
                    seen.add(p.new_src)
                    base.append(p)
        parameter_map = (diagnosis.get("evaluation") or {}).get("parameter_map")
        reference_src = context.get("reference_src") or ""
        host_fixes = [dropped_term_patch(candidate_src, reference_src, parameter_map)]
        frozen = frozen_scalar_patch(candidate_src, reference_src, parameter_map)
        host_fixes.append(frozen)  # it carries parameter_init too: the plain one alone would leave the scalar
        if "parameter_init" in class_conf and frozen is None:  # host-side fixes need the reference and the map
            host_fixes.append(parameter_init_patch(candidate_src, reference_src, parameter_map))
        for fix in host_fixes:
            if fix is not None and fix.new_src not in seen:
                seen.add(fix.new_src)
                base.append(fix)
        patches = (base + [(p, "template") for p in self._templates(candidate_src)]
                   + [(p, "mutation") for p in mutations(candidate_src)])
        for item in patches:
            patch, origin = (item if isinstance(item, tuple) else (item, "recipe"))
            score = CLASS_WEIGHT * class_conf.get(patch.bug_class, 0.0)
            if (patch.recipe, "fixed") in exp:
                score += EXPERIMENT_FIXED
            elif (patch.recipe, "better") in exp:
                score += EXPERIMENT_BETTER
            score += RETRIEVED_WEIGHT * retrieved_recipes.get(patch.recipe, 0.0)
            if hyp_lines.get(patch.bug_class) and set(patch.sites) & hyp_lines[patch.bug_class]:
                score += SITE_MATCH
            score += self.ranker.score(patch.recipe, features)
            score += LOCALISED * _localised(patch.sites, target, [m for m in matched if m])
            if origin == "template":
                score += 0.5  # a learned fix of this exact shape has worked before
            elif origin == "mutation":
                score -= 2.0  # a guess, tried after the recipes that recognise a bug shape
            proposals.append(Proposal(origin=origin, description=patch.description, new_src=patch.new_src,
                                      recipe=patch.recipe, bug_class=patch.bug_class, sites=list(patch.sites),
                                      score=score))
        proposals.sort(key=lambda p: -p.score)
        kept = [p for p in proposals if _applies(p, hyps, exp)]
        self.dropped = len(proposals) - len(kept)
        if not kept:  # no class the run backs: a few of the best-ranked guesses, then stop
            kept = _spread_siblings(proposals)[:FALLBACK]
        return _spread_siblings(kept)


DTYPE_PROBLEM = re.compile(r"has dtype (\w+), expected (\w+)")


def run_hints(diagnosis: dict, context: dict) -> dict:
    """What the run tells the recipes beyond the source: the dtype the reference returns (from a
    dtype mismatch), the task's tolerance and its inputs' dtype (for tf32 in tl.dot on a GPU)."""
    hints: dict = {}
    for check in (diagnosis.get("evaluation") or {}).get("checks", []):
        if not check.get("passed") and check.get("message"):
            hints.setdefault("errors", []).append(check["message"][:300])
        for o in check.get("outputs") or []:
            m = DTYPE_PROBLEM.search(o.get("problem") or "")
            if m:
                hints.setdefault("expected_dtype", m.group(2))
            elif o.get("dtype") and "dtype" not in hints:
                hints["dtype"] = o["dtype"]
    if context.get("atol") is not None:
        hints["tolerance"] = float(context["atol"])
    gpu = [f.get("error") or "" for f in (diagnosis.get("evaluation") or {}).get("gpu_compile") or []]
    if gpu:  # kernels the interpreter ran that a GPU build rejects (debugger/gpu_check.py)
        hints["gpu_errors"] = gpu
    return hints


def _applies(p: Proposal, hyps: list[dict], exp: set) -> bool:
    """The evidence of the run backs this proposal: an experiment with its recipe fixed or reduced
    the failures, or its bug class is one the run supports (diagnose/ranking.py). Diagnoses from
    before support was recorded back every class."""
    if (p.recipe, "fixed") in exp or (p.recipe, "better") in exp:
        return True
    if not any("supported" in h for h in hyps):
        return True
    return any(h["bug_class"] == p.bug_class and h.get("supported") for h in hyps)


def _spread_siblings(proposals: list[Proposal]) -> list[Proposal]:
    """Lower the k-th patch of each recipe by k * SIBLING, so that one recipe's many equal-scored
    variants (five axis swaps in one kernel) do not use up the iterations before a different recipe
    of the same class is tried. Expects proposals sorted best first; returns them re-sorted."""
    for p, k in zip(proposals, sibling_ranks(proposals)):
        p.score -= SIBLING * k
    return sorted(proposals, key=lambda p: -p.score)


def _localised(sites: list[int], target: list[int] | None, matched: list[list[int]]) -> int:
    """+1 for a patch inside the kernel that departs first, -1 for one only inside kernels that match."""
    if not sites or not target:
        return 0
    if any(target[0] <= n <= target[1] for n in sites):
        return 1
    if matched and all(any(a <= n <= b for a, b in matched) for n in sites):
        return -1
    return 0
