"""Context-blind pickers: choose an option from the five option images (and at most the bare
puzzle image) without solving anything.

A fair option set gives each of them about chance (0.20). If every distractor is one edit
of the solution, the solution becomes the medoid; if four options look alike, the odd one
out gives it away; if every distractor adds a stroke, "least ink" finds the solution. The
audit and the task tests hold every picker, and a learned probe over all of these features
(``probe_accuracy``), at or below 0.30 per task.

Each picker scores the options on one feature and takes the highest; when several options
tie, it picks one of them at random, which we count as the expected hit (1/k when the answer
is among k tied options) rather than by the order of the options.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from PIL import Image

THUMBNAIL = 128  # longest side; enough to see layout differences, cheap to compare
COLOUR_SIDE = 128  # colours are counted on a nearest-neighbour subsample of about this side
COLOUR_BITS = 3  # per channel: 512 colour bins, so anti-aliasing shades of one colour share a bin
COLOUR_MIN_SHARE = 0.001  # a bin counts as a colour when it covers this share of the pixels

# Per option, as ``option_features`` returns them (one column each).
FEATURES = ("ink", "colours", "puzzle_distance", "total_distance", "mean_distance", "nearest_other")

# picker -> (feature, sign): the picker takes the option with the highest sign * feature.
PICKER_RULES: dict[str, tuple[str, float]] = {
    "medoid": ("total_distance", -1.0),
    "closest_to_mean": ("mean_distance", -1.0),
    "odd_one_out": ("total_distance", 1.0),
    "most_ink": ("ink", 1.0),
    "least_ink": ("ink", -1.0),
    "most_colours": ("colours", 1.0),
    "least_colours": ("colours", -1.0),
    "nearest_puzzle": ("puzzle_distance", -1.0),
    "farthest_puzzle": ("puzzle_distance", 1.0),
}
PICKERS = tuple(PICKER_RULES)
PROBE = "probe"
TIE_DECIMALS = 6  # features equal to this many decimals are a tie


def _grey_thumbnail(rgb: np.ndarray, size: tuple[int, int] | None = None) -> np.ndarray:
    """Grey levels box-averaged to THUMBNAIL px on the longest side (or to ``size``): an integer
    reduction in RGB first, which is ~100x cheaper than resampling, then the grey conversion."""
    image = Image.fromarray(rgb)
    factor = max(1, max(image.size) // THUMBNAIL)
    reduced = image.reduce(factor) if factor > 1 else image
    if size is not None and reduced.size != size:
        reduced = image.resize(size, Image.Resampling.BOX)
    return np.asarray(reduced.convert("L"), dtype=np.float32)


def colour_count(rgb: np.ndarray) -> int:
    """Distinct colours of a picture: pixels (a subsample) in coarse colour bins, counting the
    bins that cover at least COLOUR_MIN_SHARE of them, so anti-aliased edges add few colours."""
    step = max(1, max(rgb.shape[:2]) // COLOUR_SIDE)
    sample = rgb[::step, ::step, :3] >> (8 - COLOUR_BITS)
    codes = ((sample[..., 0].astype(np.uint16) << (2 * COLOUR_BITS)) | (sample[..., 1].astype(np.uint16) << COLOUR_BITS)
             | sample[..., 2])
    counts = np.bincount(codes.ravel(), minlength=1 << (3 * COLOUR_BITS))
    return int((counts >= max(1.0, COLOUR_MIN_SHARE * codes.size)).sum())


def option_features(options: Sequence[np.ndarray], puzzle: np.ndarray | None = None) -> np.ndarray:
    """(5, len(FEATURES)) features of the options (RGB arrays of one size): mean darkness,
    colour count, mean distance to the puzzle image (0 without one), and the mean grey-level
    distances to the other options (summed, to the set's mean, to the nearest one)."""
    thumbs = [_grey_thumbnail(rgb) for rgb in options]
    x = np.stack([t.ravel() for t in thumbs]).astype(np.float64)
    pixels = x.shape[1]
    distances = np.abs(x[:, None, :] - x[None, :, :]).sum(axis=2) / pixels
    others = distances + np.diag(np.full(len(x), np.inf))
    if puzzle is not None:
        bare = _grey_thumbnail(puzzle, (thumbs[0].shape[1], thumbs[0].shape[0])).ravel().astype(np.float64)
        to_puzzle = np.abs(x - bare).mean(axis=1)
    else:
        to_puzzle = np.zeros(len(x))
    return np.stack([
        (255.0 - x).mean(axis=1),
        np.asarray([colour_count(rgb) for rgb in options], dtype=np.float64),
        to_puzzle,
        distances.sum(axis=1),
        np.abs(x - x.mean(axis=0)).mean(axis=1),
        others.min(axis=1),
    ], axis=1)


def _winners(values: np.ndarray) -> tuple[int, ...]:
    rounded = np.round(values, TIE_DECIMALS)
    return tuple(int(i) for i in np.flatnonzero(rounded == rounded.max()))


def pick_all(options: Sequence[np.ndarray], puzzle: np.ndarray | None = None) -> dict[str, tuple[int, ...]]:
    """The options each picker would choose among (several on a tie). Without ``puzzle`` the
    pickers that compare with it are left out."""
    return picks_from_features(option_features(options, puzzle), with_puzzle=puzzle is not None)


def picks_from_features(features: np.ndarray, with_puzzle: bool = True) -> dict[str, tuple[int, ...]]:
    column = {name: k for k, name in enumerate(FEATURES)}
    return {name: _winners(sign * features[:, column[feature]]) for name, (feature, sign) in PICKER_RULES.items()
            if with_puzzle or feature != "puzzle_distance"}


def credit(chosen: int | Sequence[int], answer: int) -> float:
    """A picker's expected hit: 1/k when the answer is among its k tied choices."""
    tied = (chosen,) if isinstance(chosen, (int, np.integer)) else tuple(chosen)
    return 1.0 / len(tied) if answer in tied else 0.0


def picker_accuracy(choices: Sequence[Mapping[str, int | Sequence[int]]], answers: Sequence[int]) -> dict[str, float]:
    """Expected fraction of puzzles each picker gets right (ties split fairly)."""
    names = [name for name in PICKERS if choices and all(name in c for c in choices)]
    return {name: float(np.mean([credit(c[name], a) for c, a in zip(choices, answers)])) for name in names}


# ---------------------------------------------------------------- the learned probe

PROBE_RIDGE = 1.0  # L2 penalty: ~40 weights fitted on a few hundred sets
PROBE_STEPS = 25  # Newton steps; the loss is convex and converges in fewer


def relative_features(features: np.ndarray) -> np.ndarray:
    """Per option, features relative to its set of five: z-score within the set, its square
    (so "the middle one" is learnable), and the option's rank (ties averaged) one-hot.
    ``features``: (sets, 5, F) -> (sets, 5, 7F)."""
    mean = features.mean(axis=1, keepdims=True)
    spread = features.std(axis=1, keepdims=True)
    z = np.where(spread > 1e-9, (features - mean) / np.where(spread > 1e-9, spread, 1.0), 0.0)
    rounded = np.round(features, TIE_DECIMALS)
    below = (rounded[:, None, :, :] < rounded[:, :, None, :]).sum(axis=2)
    equal = (rounded[:, None, :, :] == rounded[:, :, None, :]).sum(axis=2)
    rank = below + (equal - 1) / 2.0  # 0..4, average over ties
    onehot = np.clip(1.0 - np.abs(rank[..., None] - np.arange(5)), 0.0, None)  # a half rank splits
    return np.concatenate([z, z ** 2, onehot.reshape(*rank.shape[:2], -1)], axis=2)


def fit_probe(x: np.ndarray, answers: np.ndarray, ridge: float = PROBE_RIDGE) -> np.ndarray:
    """Weights of a conditional logit (softmax over each set's five options) fitted by Newton's
    method with an L2 penalty ``ridge``. ``x``: (sets, 5, D); ``answers``: (sets,)."""
    sets, _, dims = x.shape
    w = np.zeros(dims)
    target = np.zeros((sets, 5))
    target[np.arange(sets), answers] = 1.0
    for _ in range(PROBE_STEPS):
        logits = x @ w
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        gradient = np.einsum("so,sod->d", p - target, x) + ridge * w
        expected = np.einsum("so,sod->sd", p, x)
        hessian = (np.einsum("so,sod,soe->de", p, x, x) - np.einsum("sd,se->de", expected, expected)
                   + ridge * np.eye(dims))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def probe_accuracy(features: np.ndarray, answers: Sequence[int]) -> float:
    """Held-out accuracy of the learned context-blind probe: fitted on one half of the sets
    (alternate sets in the given order) and scored on the other, then the halves swapped, so
    every set is scored once by a probe that never saw it. ``features``: (sets, 5, F)."""
    labels = np.asarray(answers, dtype=np.int64)
    if len(labels) < 4:
        return float("nan")
    x = relative_features(np.asarray(features, dtype=np.float64))
    halves = np.arange(len(labels)) % 2
    hits = []
    for held in (0, 1):
        w = fit_probe(x[halves != held], labels[halves != held])
        scores = x[halves == held] @ w
        hits += [credit(_winners(s), a) for s, a in zip(scores, labels[halves == held])]
    return float(np.mean(hits))


def gate_figures(features: np.ndarray, answers: Sequence[int], with_puzzle: bool = True) -> dict[str, float]:
    """Every picker's and the probe's accuracy over the sets of one task (``features``: (sets, 5, F))."""
    choices = [picks_from_features(f, with_puzzle) for f in features]
    figures = picker_accuracy(choices, answers)
    figures[PROBE] = probe_accuracy(features, answers)
    return figures
