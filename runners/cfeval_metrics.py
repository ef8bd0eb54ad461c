"""CF-Eval metrics: per-image scores, gating, PRR / RRR, judge agreement and calibration.

Pure functions of plain data (no I/O), shared by the judge, the report and the calibration.

Per image (one scenario at one level) the judge gives each question a score in [0, 1].
The one weighting rule: S is the weighted mean of the question scores,

    S = sum_q w_q * score_q / sum_q w_q,

what the official scoring script computes, where w_q is the question's weight from the data
or, when ``dimension_weights`` (``--weights``) names the question's dimension, that weight.
So ``--weights assessment_point=12`` gives every assessment-point question the weight 12,
whatever the number of questions per dimension: the default and the override are the same
formula. (A dimension with two questions therefore counts twice as much as one with a single
question of the same weight; the official data have one question per dimension and level.)
The official weights are visual_integrity 3, assessment_point 15, logic_consistency 8 (the
paper gives the ranges [1, 3], [12, 16] and [7, 9]).

Gating (the paper's sequential threshold): when a scenario's S_L1 is below the threshold
(0.5), its S_L2 and S_L3 count as 0. Per model, with E[.] the mean over scenarios:

    PRR = E[S_L2] / sqrt(E[S_L1])        (Prior Resistance Rate)
    RRR = E[S_L3] / sqrt(E[S_L2])        (Reasoning Retention Rate)

Each overall summary carries 95 % bootstrap intervals (``ci95``) of E[S_L1..3], PRR and RRR,
resampling scenarios with their three gated scores (``runners/stats.py``, seeded).

These are the paper's definitions. The official repository's README writes different
formulas, PRR = S_L2 / S_L1 and RRR = (S_L3 / S_L2) * S_L3; they are provided as
``readme_prr`` / ``readme_rrr`` for comparison only.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from vrforge.errors import UserError

LEVELS = ("l1", "l2", "l3")
DIMENSIONS = ("visual_integrity", "assessment_point", "logic_consistency")
DEFAULT_THRESHOLD = 0.5
OFFICIAL_WEIGHTS = {"visual_integrity": 3.0, "assessment_point": 15.0, "logic_consistency": 8.0}
PAPER_WEIGHT_RANGES = {"visual_integrity": (1.0, 3.0), "assessment_point": (12.0, 16.0), "logic_consistency": (7.0, 9.0)}
SNAP_VALUES = (0.0, 0.5, 1.0)
CALIBRATION_THRESHOLDS = tuple(round(0.3 + 0.05 * i, 2) for i in range(9))  # 0.3 ... 0.7


class MetricsError(UserError, ValueError):
    """Input the metrics cannot use (bad weights, mismatched lengths): one line for the user."""


# --------------------------------------------------------------------------- one image


def clip_score(value: float) -> float:
    """A judge score clipped into [0, 1]."""
    return min(1.0, max(0.0, float(value)))


def snap_score(value: float) -> float:
    """The nearest of 0 / 0.5 / 1 (ties go up: 0.25 -> 0.5, 0.75 -> 1)."""
    value = clip_score(value)
    return max(SNAP_VALUES, key=lambda v: (-abs(v - value), v))


@dataclass(frozen=True)
class ScoredQuestion:
    dimension: str
    weight: float
    score: float


def dimension_scores(questions: Iterable[ScoredQuestion]) -> dict[str, dict[str, float]]:
    """dimension -> {"score": weight-averaged question score, "weight": total question weight}."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for q in questions:
        if not q.weight > 0:
            raise MetricsError(f"question weight must be positive, got {q.weight}")
        cell = totals[q.dimension]
        cell[0] += q.weight * q.score
        cell[1] += q.weight
    return {dim: {"score": s / w, "weight": w} for dim, (s, w) in sorted(totals.items())}


def image_score(questions: Sequence[ScoredQuestion], dimension_weights: Mapping[str, float] | None = None) -> float:
    """S of one image: the weighted mean of its question scores (the module's one weighting rule).

    ``dimension_weights`` sets the weight of every question of each dimension it names; the
    other questions keep their own weights.
    """
    overrides = dict(dimension_weights or {})
    for d, w in overrides.items():
        if not w > 0:
            raise MetricsError(f"dimension weight for {d} must be positive, got {w}")
    questions = [ScoredQuestion(q.dimension, float(overrides.get(q.dimension, q.weight)), q.score) for q in questions]
    dims = dimension_scores(questions)
    if not dims:
        raise MetricsError("an image needs at least one scored question")
    total = sum(v["weight"] for v in dims.values())
    return sum(v["weight"] * v["score"] for v in dims.values()) / total


# --------------------------------------------------------------------------- gating and per-model means


def gate(level_scores: Mapping[str, float | None], threshold: float = DEFAULT_THRESHOLD) -> dict[str, float | None]:
    """Apply the L1 gate to one scenario's {level: S}: S_L2 = S_L3 = 0 when S_L1 < threshold.

    A gated scenario's L2/L3 are 0 even when they were not judged (``--skip-gated``). When
    S_L1 is None the gate cannot be decided and L2/L3 become None (left out of the means); an
    ungated level whose S is None stays None.
    """
    s1 = level_scores.get("l1")
    out: dict[str, float | None] = {"l1": s1}
    for level in ("l2", "l3"):
        if s1 is None:
            out[level] = None
        elif s1 < threshold:
            out[level] = 0.0
        else:
            out[level] = level_scores.get(level)
    return out


def is_gated(s_l1: float | None, threshold: float = DEFAULT_THRESHOLD) -> bool:
    return s_l1 is not None and s_l1 < threshold


def prr(mean_l1: float | None, mean_l2: float | None) -> float | None:
    """Prior Resistance Rate E[S_L2] / sqrt(E[S_L1]) (None when undefined)."""
    if mean_l1 is None or mean_l2 is None or mean_l1 <= 0:
        return None
    return mean_l2 / math.sqrt(mean_l1)


def rrr(mean_l2: float | None, mean_l3: float | None) -> float | None:
    """Reasoning Retention Rate E[S_L3] / sqrt(E[S_L2]) (None when undefined)."""
    if mean_l2 is None or mean_l3 is None or mean_l2 <= 0:
        return None
    return mean_l3 / math.sqrt(mean_l2)


def readme_prr(mean_l1: float | None, mean_l2: float | None) -> float | None:
    """The official README's PRR = S_L2 / S_L1 (not the paper's definition)."""
    if mean_l1 is None or mean_l2 is None or mean_l1 <= 0:
        return None
    return mean_l2 / mean_l1


def readme_rrr(mean_l2: float | None, mean_l3: float | None) -> float | None:
    """The official README's RRR = (S_L3 / S_L2) * S_L3 (not the paper's definition)."""
    if mean_l2 is None or mean_l3 is None or mean_l2 <= 0:
        return None
    return mean_l3 / mean_l2 * mean_l3


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def level_summary(scenarios: Iterable[Mapping[str, float | None]]) -> dict[str, Any]:
    """Means and ratios over already-gated {level: S} dicts (None values are left out)."""
    columns: dict[str, list[float]] = {level: [] for level in LEVELS}
    count = 0
    for levels in scenarios:
        count += 1
        for level in LEVELS:
            value = levels.get(level)
            if value is not None:
                columns[level].append(float(value))
    means = {level: _mean(columns[level]) for level in LEVELS}
    return {
        "scenarios": count,
        "n": {level: len(columns[level]) for level in LEVELS},
        "l1": means["l1"], "l2": means["l2"], "l3": means["l3"],
        "prr": prr(means["l1"], means["l2"]),
        "rrr": rrr(means["l2"], means["l3"]),
        "readme_prr": readme_prr(means["l1"], means["l2"]),
        "readme_rrr": readme_rrr(means["l2"], means["l3"]),
    }


def model_summary(images: Iterable[Mapping[str, Any]], threshold: float = DEFAULT_THRESHOLD) -> dict[str, Any]:
    """Overall and per-domain E[S_L1..3], PRR and RRR for one model under one judge.

    ``images``: dicts with ``scenario_id``, ``domain``, ``level`` and ``S`` (the ungated
    score, None when the image could not be judged). Gating is applied here.
    """
    by_scenario: dict[str, dict[str, float | None]] = defaultdict(dict)
    domain_of: dict[str, str] = {}
    for image in images:
        sid = image["scenario_id"]
        if image["level"] not in LEVELS:
            raise MetricsError(f"{sid}: unknown level {image['level']!r}")
        by_scenario[sid][image["level"]] = image["S"]
        domain_of[sid] = image.get("domain", "")
    gated = {sid: gate(levels, threshold) for sid, levels in sorted(by_scenario.items())}
    per_domain: dict[str, list[dict[str, float | None]]] = defaultdict(list)
    for sid, levels in gated.items():
        per_domain[domain_of[sid]].append(levels)
    return {
        "threshold": threshold,
        "overall": {**level_summary(gated.values()), "ci95": level_intervals(list(gated.values()))},
        "per_domain": {domain: level_summary(rows) for domain, rows in sorted(per_domain.items())},
        "gated_scenarios": sum(1 for levels in by_scenario.values() if is_gated(levels.get("l1"), threshold)),
    }


def level_intervals(scenarios: Sequence[Mapping[str, float | None]], resamples: int = 1000, seed: int = 0,
                    level: float = 0.95) -> dict[str, Any]:
    """Percentile bootstrap intervals of the level means, PRR and RRR, scenarios resampled whole (seeded).

    Vectorised: one (resamples x scenarios) index draw; None scores are left out of each mean as in
    ``level_summary``; a resample where a ratio is undefined is left out of that ratio's interval."""
    import numpy as np

    if not scenarios:
        return {key: None for key in ("l1", "l2", "l3", "prr", "rrr")}
    table = np.array([[np.nan if (v := s.get(lv)) is None else float(v) for lv in LEVELS] for s in scenarios])
    picks = np.random.default_rng(seed).integers(0, len(scenarios), size=(resamples, len(scenarios)))
    sample = table[picks]  # resamples x scenarios x 3
    present = ~np.isnan(sample)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(present, sample, 0.0).sum(axis=1) / present.sum(axis=1)  # NaN where a level has no score
        l1, l2, l3 = means[:, 0], means[:, 1], means[:, 2]
        prr_values = np.where(l1 > 0, l2 / np.sqrt(l1), np.nan)
        rrr_values = np.where(l2 > 0, l3 / np.sqrt(l2), np.nan)
    alpha = (1 - level) / 2
    out: dict[str, Any] = {}
    for key, values in (("l1", l1), ("l2", l2), ("l3", l3), ("prr", prr_values), ("rrr", rrr_values)):
        defined = values[~np.isnan(values)]
        if defined.size == 0:
            out[key] = None
            continue
        low, high = np.quantile(defined, [alpha, 1 - alpha])
        out[key] = {"low": round(float(low), 6), "high": round(float(high), 6), "level": level, "resamples": resamples,
                    "undefined_resamples": int(resamples - defined.size)}
    return out


def table_ratios(mean_l1: float, mean_l2: float, mean_l3: float) -> tuple[float | None, float | None]:
    """(PRR, RRR) of a results-table row from its level means."""
    return prr(mean_l1, mean_l2), rrr(mean_l2, mean_l3)


# --------------------------------------------------------------------------- agreement between judges


def _check_pair(x: Sequence[float], y: Sequence[float]) -> None:
    if len(x) != len(y):
        raise MetricsError(f"paired scores differ in length: {len(x)} vs {len(y)}")


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson correlation (None with fewer than two pairs or a constant side)."""
    _check_pair(x, y)
    n = len(x)
    if n < 2:
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman correlation: Pearson of the tie-averaged ranks."""
    _check_pair(x, y)
    return pearson(ranks(x), ranks(y))


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa of two binary raters (None when undefined: no pairs, or chance agreement 1)."""
    _check_pair(a, b)
    n = len(a)
    if n == 0:
        return None
    observed = sum(1 for p, q in zip(a, b) if bool(p) == bool(q)) / n
    pa, pb = sum(map(bool, a)) / n, sum(map(bool, b)) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def mean_abs_diff(x: Sequence[float], y: Sequence[float]) -> float | None:
    _check_pair(x, y)
    return sum(abs(a - b) for a, b in zip(x, y)) / len(x) if x else None


def judge_agreement(scores_a: Mapping[Any, float | None], scores_b: Mapping[Any, float | None],
                    threshold: float = DEFAULT_THRESHOLD) -> dict[str, Any]:
    """Agreement of two judges on the images both scored (keys such as (scenario_id, level))."""
    keys = sorted(k for k in scores_a if k in scores_b and scores_a[k] is not None and scores_b[k] is not None)
    x = [float(cast(float, scores_a[k])) for k in keys]
    y = [float(cast(float, scores_b[k])) for k in keys]
    return {
        "n": len(keys),
        "pearson": pearson(x, y),
        "spearman": spearman(x, y),
        "kappa": cohen_kappa([v >= threshold for v in x], [v >= threshold for v in y]),
        "mean_abs_diff": mean_abs_diff(x, y),
        "threshold": threshold,
    }


# --------------------------------------------------------------------------- calibration against people


def binary_scores(predicted: Sequence[bool], truth: Sequence[bool]) -> dict[str, Any]:
    """Accuracy, precision, recall and F1 of ``predicted`` against ``truth`` (pass = positive class)."""
    _check_pair(predicted, truth)
    tp = sum(1 for p, t in zip(predicted, truth) if p and t)
    fp = sum(1 for p, t in zip(predicted, truth) if p and not t)
    fn = sum(1 for p, t in zip(predicted, truth) if not p and t)
    tn = len(truth) - tp - fp - fn
    n = len(truth)
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
    return {"n": n, "tp": tp, "fp": fp, "fn": fn, "tn": tn, "accuracy": (tp + tn) / n if n else None,
            "precision": precision, "recall": recall, "f1": f1}


def calibration_sweep(judge_scores: Mapping[Any, float | None], human_pass: Mapping[Any, bool],
                      thresholds: Sequence[float] = CALIBRATION_THRESHOLDS) -> list[dict[str, Any]]:
    """For each threshold t: judge-pass (S >= t) against the human pass/fail, on the keys both have."""
    keys = sorted(k for k in human_pass if judge_scores.get(k) is not None)
    truth = [bool(human_pass[k]) for k in keys]
    rows = []
    for t in thresholds:
        predicted = [float(cast(float, judge_scores[k])) >= t for k in keys]
        rows.append({"threshold": t, **binary_scores(predicted, truth)})
    return rows


def threshold_grid(start: float, stop: float, step: float) -> tuple[float, ...]:
    """start, start+step, ... up to stop inclusive, rounded to avoid float drift (0.3 ... 0.7 by 0.05)."""
    if not step > 0:
        raise MetricsError(f"threshold step must be positive, got {step}")
    if stop < start:
        raise MetricsError(f"threshold stop {stop} is below start {start}")
    count = int(math.floor((stop - start) / step + 1e-9)) + 1
    return tuple(round(start + i * step, 10) for i in range(count))
