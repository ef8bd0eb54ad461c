"""Visual-reliance metrics from answer distributions over the options.

- VSS (visual sensitivity score): Jensen-Shannon divergence (base 2, so in [0, 1]) between the
  answer distribution on the original image and on a perturbed one, averaged over repeats and
  items, per perturbation and question type.
- AVR (answer variation rate): share of items whose top answer changes when the image is
  replaced by its counterfactual.
- CFC (counterfactual consistency): share of items whose top answer changes to the
  counterfactual's correct answer.
AVR and CFC are computed over the items whose original top answer has probability at least
``min_confidence``; the others are reported apart (``low_confidence``), since a model that is
unsure anyway says little about whether it looks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def js_divergence(p: Sequence[float], q: Sequence[float]) -> float:
    """Jensen-Shannon divergence in bits (0 for equal distributions, 1 for disjoint ones)."""
    a, b = _normalised(p), _normalised(q)
    m = 0.5 * (a + b)

    def kl(x: np.ndarray, y: np.ndarray) -> float:
        nz = x > 0
        return float((x[nz] * np.log2(x[nz] / y[nz])).sum())

    return max(0.0, min(1.0, 0.5 * kl(a, m) + 0.5 * kl(b, m)))


def _normalised(p: Sequence[float]) -> np.ndarray:
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim != 1 or not len(arr) or not np.isfinite(arr).all() or (arr < 0).any() or arr.sum() <= 0:
        raise ValueError(f"not a distribution: {list(p)}")
    return arr / arr.sum()


def top(p: Sequence[float]) -> int:
    """Index of the most probable option (ties go to the earlier option)."""
    return int(np.argmax(np.asarray(p, dtype=np.float64)))


def mean(values: Sequence[float]) -> float | None:
    return float(sum(values) / len(values)) if values else None


def item_metrics(sample: dict[str, Any]) -> dict[str, Any]:
    """Per item: the top answer, correctness, VSS and answer flips per perturbation, and the counterfactual's outcome."""
    clean = sample["original"]
    out: dict[str, Any] = {"top": top(clean), "confidence": float(max(_normalised(clean))),
                           "correct": top(clean) == sample["answer_index"], "vss": {}, "flip": {}}
    for name, runs in sample["perturbed"].items():
        out["vss"][name] = mean([js_divergence(clean, p) for p in runs])
        out["flip"][name] = mean([float(top(p) != out["top"]) for p in runs])
    cf = sample.get("counterfactual")
    if cf is not None:
        out["cf_top"] = top(cf)
        out["changed"] = out["cf_top"] != out["top"]
        out["consistent"] = out["changed"] and out["cf_top"] == sample["counterfactual_answer_index"]
        out["cf_vss"] = js_divergence(clean, cf)
    return out


def summarise_type(samples: Sequence[dict[str, Any]], perturbations: Sequence[str], min_confidence: float) -> dict[str, Any]:
    """Accuracy, VSS per perturbation, flip rates, AVR and CFC (confident items, and the rest apart) for one question type."""
    metrics = [item_metrics(s) for s in samples]
    confident = [m for m in metrics if m["confidence"] >= min_confidence]
    unsure = [m for m in metrics if m["confidence"] < min_confidence]

    def rates(group: list[dict[str, Any]]) -> dict[str, Any]:
        with_cf = [m for m in group if "changed" in m]
        return {"n": len(with_cf), "avr": mean([float(m["changed"]) for m in with_cf]),
                "cfc": mean([float(m["consistent"]) for m in with_cf])}

    main, apart = rates(confident), rates(unsure)
    return {
        "items": len(metrics),
        "accuracy": mean([float(m["correct"]) for m in metrics]),
        "mean_confidence": mean([m["confidence"] for m in metrics]),
        "vss": {name: mean([m["vss"][name] for m in metrics if m["vss"].get(name) is not None]) for name in perturbations},
        "flip_rate": {name: mean([m["flip"][name] for m in metrics if m["flip"].get(name) is not None]) for name in perturbations},
        "counterfactual_vss": mean([m["cf_vss"] for m in metrics if "cf_vss" in m]),
        "avr": main["avr"], "cfc": main["cfc"], "confident_items": main["n"],
        "low_confidence": {"items": apart["n"], "avr": apart["avr"], "cfc": apart["cfc"]},
    }


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
