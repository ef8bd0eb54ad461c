"""Context-blind pickers: choose an option from the five option images alone.

A fair option set gives each of them about chance (0.20). If every distractor is one edit
of the solution, the solution becomes the medoid; if four options look alike, the odd one
out gives it away. The audit and the task tests hold each picker at or below 0.30.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

PICKERS = ("medoid", "closest_to_mean", "odd_one_out")
THUMBNAIL = 128  # longest side; enough to see layout differences, cheap to compare


def _vectors(options: Sequence[np.ndarray]) -> np.ndarray:
    vectors = []
    for rgb in options:
        image = Image.fromarray(rgb).convert("L")
        scale = THUMBNAIL / max(image.size)
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        vectors.append(np.asarray(image.resize(size, Image.Resampling.BOX), dtype=np.float32).ravel())
    return np.stack(vectors)


def pick_all(options: Sequence[np.ndarray]) -> dict[str, int]:
    """The index each picker chooses among ``options`` (RGB arrays of one size)."""
    x = _vectors(options)
    distances = np.abs(x[:, None, :] - x[None, :, :]).sum(axis=2)
    totals = distances.sum(axis=1)
    mean = x.mean(axis=0)
    return {
        "medoid": int(np.argmin(totals)),
        "closest_to_mean": int(np.argmin(np.abs(x - mean).sum(axis=1))),
        "odd_one_out": int(np.argmax(totals)),
    }


def picker_accuracy(choices: Sequence[dict[str, int]], answers: Sequence[int]) -> dict[str, float]:
    """Fraction of puzzles each picker gets right."""
    return {name: float(np.mean([c[name] == a for c, a in zip(choices, answers)])) for name in PICKERS}
