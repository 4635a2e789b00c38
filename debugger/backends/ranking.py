"""The kb backend's recipe ranking: a small additive model over the diagnosis's features.

score(recipe | features) = prior(recipe | hypotheses, retrieval, experiments)
                         + bias(recipe) + sum over features f of weight(recipe, f)
bias and weights are log-odds of 'fixed' learned from the ledger's past outcomes (which recipe fixed
which symptoms), with add-one smoothing, so the ranking improves with use and starts neutral.
"""
from __future__ import annotations

import math
from collections import defaultdict


class RecipeRanker:
    """Learned weights over (recipe, feature) pairs from outcome records."""

    def __init__(self, outcomes: list[dict] | None = None):
        self.tried: dict[str, int] = defaultdict(int)
        self.fixed: dict[str, int] = defaultdict(int)
        self.tried_f: dict[tuple[str, str], int] = defaultdict(int)
        self.fixed_f: dict[tuple[str, str], int] = defaultdict(int)
        for o in outcomes or []:
            self.learn(o["recipe"], o["features"], o["result"])

    def learn(self, recipe: str, features, result: str) -> None:
        ok = result == "fixed"
        self.tried[recipe] += 1
        self.fixed[recipe] += ok
        for f in features:
            self.tried_f[(recipe, f)] += 1
            self.fixed_f[(recipe, f)] += ok

    @staticmethod
    def _log_odds(fixed: int, tried: int) -> float:
        return math.log((fixed + 1) / (tried - fixed + 1))

    def weight(self, recipe: str, feature: str) -> float:
        t = self.tried_f.get((recipe, feature), 0)
        return self._log_odds(self.fixed_f.get((recipe, feature), 0), t) if t else 0.0

    def score(self, recipe: str, features) -> float:
        bias = self._log_odds(self.fixed[recipe], self.tried[recipe]) if self.tried[recipe] else 0.0
        return bias + sum(self.weight(recipe, f) for f in features)


def diagnosis_features(diagnosis: dict) -> list[str]:
    """The features the ranking reads: symptoms, and the top hypothesis's class."""
    feats = [f"sym:{s}" for s in diagnosis.get("symptoms", [])]
    hyps = diagnosis.get("hypotheses") or []
    if hyps:
        feats.append(f"class:{hyps[0]['bug_class']}")
    return feats
