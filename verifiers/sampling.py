"""Reading a picture back: sample small windows at normalised points, classify to a palette.

Positions are fractions of the image size, so the same meta reads the picture at any
resolution, after resizing and after mild JPEG compression.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vrforge.imagemetrics import luminance
from vrforge.types import Verdict
from vrforge.verifiers.registration import Registration, answer_in_frame


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


def nearest_palette(colours: np.ndarray, palette: Sequence[Sequence[int]] | np.ndarray) -> np.ndarray:
    """Index of the nearest palette colour (Euclidean in RGB) for each sampled colour."""
    reference = np.asarray(palette, dtype=np.float32)
    distances = ((colours[:, None, :] - reference[None, :, :]) ** 2).sum(axis=2)
    return distances.argmin(axis=1)


def hex_to_rgb(value: str) -> tuple[int, int, int]:
    value = value.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def hex_luminance(value: str) -> float:
    """The grey level of a ``#rrggbb`` colour (``vrforge.imagemetrics.luminance``)."""
    return luminance(hex_to_rgb(value))


ASPECT_TOLERANCE = 0.06


def layout_problem(layout: Mapping[str, Any], image: np.ndarray, unit: float, min_unit_px: float, unit_name: str) -> str | None:
    """Why ``image`` cannot be read against ``layout`` (another aspect ratio, or ``unit`` layout
    units drawn smaller than ``min_unit_px`` pixels), or None when it can."""
    height, width = image.shape[:2]
    expected = layout["width"] / layout["height"]
    if abs((width / height) / expected - 1) > ASPECT_TOLERANCE:
        return f"aspect ratio {width}x{height} does not match the puzzle ({expected:.3f}:1)"
    unit_px = unit * width / layout["width"]
    if unit_px < min_unit_px:
        return f"image too small to read: {unit_px:.1f} px per {unit_name}"
    return None


def load_for_layout(meta: Mapping[str, Any], image: Any, unit: float, min_unit_px: float, unit_name: str,
                    task: str, puzzle: Any = None) -> Registration | Verdict:
    """The answer registered into the puzzle's frame (see verifiers/registration.py), or the
    unusable verdict that says why it cannot be read."""
    registered = answer_in_frame(task, meta, image, puzzle, unit)
    if isinstance(registered, Verdict):
        return registered
    problem = layout_problem(meta["layout"], registered.image, unit, min_unit_px, unit_name)
    return Verdict.unusable(problem) if problem else registered
