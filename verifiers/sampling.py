"""Reading a picture back: sample small windows at normalised points, classify to a palette.

Positions are fractions of the image size, so the same meta reads the picture at any
resolution, after resizing and after mild JPEG compression.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def sample_colours(image: np.ndarray, points: np.ndarray, radius: int) -> np.ndarray:
    """Median RGB over a (2r+1)^2 window at each normalised (x, y) point; returns (N, 3) float."""
    height, width = image.shape[:2]
    xs = np.clip(np.round(points[:, 0] * width - 0.5).astype(np.int64), 0, width - 1)
    ys = np.clip(np.round(points[:, 1] * height - 0.5).astype(np.int64), 0, height - 1)
    offsets = np.arange(-radius, radius + 1)
    wx = np.clip(xs[:, None] + offsets[None, :], 0, width - 1)  # (N, k)
    wy = np.clip(ys[:, None] + offsets[None, :], 0, height - 1)
    windows = image[wy[:, :, None], wx[:, None, :]]  # (N, k, k, 3)
    return np.median(windows.reshape(len(points), -1, 3).astype(np.float32), axis=1)


def nearest_palette(colours: np.ndarray, palette: Sequence[Sequence[int]]) -> np.ndarray:
    """Index of the nearest palette colour (Euclidean in RGB) for each sampled colour."""
    reference = np.asarray(palette, dtype=np.float32)
    distances = ((colours[:, None, :] - reference[None, :, :]) ** 2).sum(axis=2)
    return distances.argmin(axis=1)


def hex_to_rgb(value: str) -> tuple[int, int, int]:
    value = value.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)
