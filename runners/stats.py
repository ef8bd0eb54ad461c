"""Uncertainty for the evaluation reports: bootstrap confidence intervals and McNemar's test.

- **Bootstrap** (percentile method): the items (puzzles, scenarios) are resampled with
  replacement ``resamples`` times with a ``numpy.random.Generator`` seeded from ``seed``, the
  statistic is recomputed on each resample, and the interval is its (α/2, 1 − α/2)
  percentiles. The same seed gives the same interval, so reports stay byte-identical.
  For PRR and RRR the resampled unit is the scenario with its three gated level scores, so
  the ratio's numerator and denominator move together.
- **McNemar's test** for paired binary outcomes (the same puzzles, generative vs
  discriminative): only the discordant pairs count; the p-value is the exact two-sided
  binomial test of b against b + c at ½ (small counts are common per task).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
DEFAULT_LEVEL = 0.95


def bootstrap_ci(values: Sequence[Any], statistic: Callable[[Sequence[Any]], float | None], *,
                 resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL,
                 seed: int = DEFAULT_SEED) -> dict[str, Any] | None:
    """Percentile bootstrap interval of ``statistic`` over ``values`` (None for no values or an undefined statistic)."""
    import numpy as np

    n = len(values)
    if n == 0 or statistic(values) is None:
        return None
    rng = np.random.default_rng(seed)
    estimates = []
    for _ in range(resamples):
        picked = rng.integers(0, n, size=n)
        value = statistic([values[i] for i in picked])
        if value is not None:
            estimates.append(value)
    if not estimates:
        return None
    alpha = (1 - level) / 2
    low, high = np.quantile(np.asarray(estimates, dtype=float), [alpha, 1 - alpha])
    return {"low": round(float(low), 6), "high": round(float(high), 6), "level": level, "resamples": resamples,
            "undefined_resamples": resamples - len(estimates)}


def mean_or_none(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def accuracy_ci(outcomes: Sequence[bool], **options: Any) -> dict[str, Any] | None:
    """Bootstrap interval of the fraction of True outcomes."""
    numbers = [1.0 if o else 0.0 for o in outcomes]
    return bootstrap_ci(numbers, mean_or_none, **options)


def mcnemar(pairs: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    """McNemar's exact test on paired outcomes (a, b): b01 = only b correct, b10 = only a correct."""
    only_a = sum(1 for a, b in pairs if a and not b)
    only_b = sum(1 for a, b in pairs if b and not a)
    discordant = only_a + only_b
    if discordant == 0:
        p_value = 1.0
    else:
        k = min(only_a, only_b)
        tail = sum(math.comb(discordant, i) for i in range(k + 1)) / 2**discordant
        p_value = min(1.0, 2 * tail)
    return {"n": len(pairs), "only_first": only_a, "only_second": only_b, "discordant": discordant,
            "p_value": round(p_value, 6), "test": "McNemar exact (two-sided binomial on discordant pairs)"}
