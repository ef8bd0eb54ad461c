"""Grey levels and structural similarity, one definition each for generators, verifiers and pickers."""

from __future__ import annotations

from typing import Any

import numpy as np


def luminance(rgb: Any) -> Any:
    """ITU-R 601 luma (0.299 R + 0.587 G + 0.114 B) over the last axis: a float for one colour,
    an array for an image or a list of colours."""
    values = np.asarray(rgb, dtype=np.float64)
    grey = values[..., 0] * 0.299 + values[..., 1] * 0.587 + values[..., 2] * 0.114
    return float(grey) if grey.ndim == 0 else grey


def _box_sums(values: np.ndarray, window: int) -> np.ndarray:
    """Sum over every ``window`` x ``window`` window (the 'valid' region), from an integral image."""
    c = np.zeros((values.shape[0] + 1, values.shape[1] + 1), dtype=np.float64)
    np.cumsum(np.cumsum(values, axis=0), axis=1, out=c[1:, 1:])
    return c[window:, window:] - c[:-window, window:] - c[window:, :-window] + c[:-window, :-window]


def ssim(a: np.ndarray, b: np.ndarray, window: int = 7) -> float:
    """Mean structural similarity (Wang et al. 2004) of two equally sized images, RGB (compared
    on luminance) or grey, on the 0..255 scale, with a uniform ``window`` x ``window`` window and
    population variances. Identical images give exactly 1; images of different shapes, or
    smaller than the window, give 0."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a, b = (luminance(x) if x.ndim == 3 else x for x in (a, b))
    if a.shape != b.shape or min(a.shape) < window:
        return 0.0
    area = window * window
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    sa, sb = _box_sums(a, window), _box_sums(b, window)
    mu_a, mu_b = sa / area, sb / area
    # (n * sum(x^2) - sum(x)^2) / n^2 keeps the variance free of the cancellation of E[x^2] - E[x]^2
    var_a = (_box_sums(a * a, window) * area - sa * sa) / area**2
    var_b = (_box_sums(b * b, window) * area - sb * sb) / area**2
    cov = (_box_sums(a * b, window) * area - sa * sb) / area**2
    values = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a * mu_a + mu_b * mu_b + c1) * (var_a + var_b + c2))
    return float(values.mean())
