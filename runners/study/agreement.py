"""Agreement between people: Fleiss' kappa for choices, Krippendorff's alpha for ratings.

Both take, per item (unit), the values its raters gave; items rated by fewer than two people
say nothing about agreement and are left out. Fleiss' kappa is the form for a varying number
of raters per item (each item's agreement is the share of agreeing rater pairs). Krippendorff's
alpha uses the interval distance (squared difference), which suits scores such as 0 / 0.5 / 1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any


def fleiss_kappa(units: Mapping[Any, Sequence[Hashable]]) -> dict[str, Any]:
    """Fleiss' kappa over nominal answers; ``kappa`` is None when undefined (no item with two
    raters, or every answer in one category)."""
    rated = {u: list(v) for u, v in units.items() if len(v) >= 2}
    total = sum(len(v) for v in rated.values())
    out: dict[str, Any] = {"items": len(rated), "answers": total, "kappa": None, "observed": None, "expected": None}
    if not rated:
        return out
    categories: Counter = Counter()
    agreement = []
    for values in rated.values():
        counts = Counter(values)
        categories.update(counts)
        n = len(values)
        agreement.append((sum(c * c for c in counts.values()) - n) / (n * (n - 1)))
    observed = sum(agreement) / len(agreement)
    expected = sum((c / total) ** 2 for c in categories.values())
    out["observed"], out["expected"] = round(observed, 6), round(expected, 6)
    if expected < 1:
        out["kappa"] = round((observed - expected) / (1 - expected), 6)
    return out


def krippendorff_alpha(units: Mapping[Any, Sequence[float | None]]) -> dict[str, Any]:
    """Krippendorff's alpha, interval metric; None values (no rating) are left out. ``alpha`` is
    None when undefined (fewer than two pairable values, or all of them equal)."""
    import numpy as np

    pairable = [np.asarray([float(v) for v in values if v is not None]) for values in units.values()]
    pairable = [v for v in pairable if len(v) >= 2]
    n = int(sum(len(v) for v in pairable))
    out: dict[str, Any] = {"items": len(pairable), "values": n, "alpha": None}
    if n < 2:
        return out
    # Observed disagreement: within each unit, every ordered pair of its values, weighted 1/(m-1).
    observed = sum(float(((v[:, None] - v[None, :]) ** 2).sum()) / (len(v) - 1) for v in pairable) / n
    everything = np.concatenate(pairable)
    expected = float(((everything[:, None] - everything[None, :]) ** 2).sum()) / (n * (n - 1))
    if expected > 0:
        out["alpha"] = round(1 - observed / expected, 6)
    return out
