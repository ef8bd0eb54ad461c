"""Unknot verifier: find which knot diagrams carry a selection frame.

The puzzle is a grid of knot diagrams; exactly one is the unknot (certified by the
generator with knot Floer homology, recorded in ``meta["unknot"]``). An answer marks one
diagram with a frame in the frame colour drawn around its grid cell. The verifier samples
a ring of points on each cell's frame line and counts a cell as marked when most of them
are nearest the frame colour; it also samples points on every knot's strands to make sure
the diagrams are still there. Positions come from ``meta["layout"]`` as fractions of the
picture, so reading works at any resolution, after resizing and after JPEG compression.

It needs only ``meta``: no knot library is imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vrforge.types import Verdict
from vrforge.verifiers.sampling import hex_to_rgb, load_for_layout, nearest_palette, sample_colours

CHECKS = ("diagrams_missing", "no_mark", "several_marks", "marked_knotted")
MIN_CELL_PX = 24.0
RING_SAMPLES_PER_SIDE = 5
MARKED_FRACTION = 0.6  # of a cell's ring samples in the frame colour
INK_FRACTION = 0.5  # of a diagram's strand samples in the ink colour


def ring_points(cell: list[float], inset: float) -> list[tuple[float, float]]:
    """Points on the frame line of one cell ``[x, y, size]`` (SVG units), away from the corners."""
    x, y, size = cell
    lo, hi = x + inset, x + size - inset
    fractions = [(k + 0.5) / RING_SAMPLES_PER_SIDE for k in range(RING_SAMPLES_PER_SIDE)]
    points = []
    for f in fractions:
        t = lo + f * (hi - lo)
        points += [(t, lo - x + y), (t, hi - x + y), (lo, t - x + y), (hi, t - x + y)]
    return points


def judge(meta: Mapping[str, Any], marked: list[int], intact: list[bool]) -> dict[str, bool]:
    """Checks for an abstract answer: the marked cells and which diagrams are still drawn.

    Each check is True when the answer does NOT commit that violation; the marked-diagram
    check is judged only when exactly one diagram is marked (otherwise the mark count is
    the one fault), so every wrong answer fails one named check.
    """
    return {
        "diagrams_missing": all(intact),
        "no_mark": len(marked) >= 1,
        "several_marks": len(marked) <= 1,
        "marked_knotted": len(marked) != 1 or marked[0] == meta["unknot"],
    }


def read_answer(meta: Mapping[str, Any], image: np.ndarray) -> tuple[list[int], list[bool]]:
    """The marked cells and, per diagram, whether its strands are still visible."""
    layout, palette = meta["layout"], meta["palette"]
    height, width = image.shape[:2]
    scale = min(width / layout["width"], height / layout["height"])
    colours = [hex_to_rgb(palette[name]) for name in ("background", "ink", "frame")]
    size = np.asarray([layout["width"], layout["height"]], dtype=np.float64)

    ring, owners = [], []
    for index, cell in enumerate(layout["cells"]):
        points = ring_points(cell, layout["frame_inset"])
        ring += points
        owners += [index] * len(points)
    frame_px = layout["frame_width"] * scale
    classes = nearest_palette(sample_colours(image, np.asarray(ring) / size, max(0, int(frame_px * 0.2))), colours)
    owners_arr = np.asarray(owners)
    marked = [index for index in range(len(layout["cells"]))
              if np.mean(classes[owners_arr == index] == 2) >= MARKED_FRACTION]

    ink_points, ink_owners = [], []
    for index, points in enumerate(layout["ink_samples"]):
        ink_points += points
        ink_owners += [index] * len(points)
    stroke_px = layout["stroke_width"] * scale
    ink_classes = nearest_palette(sample_colours(image, np.asarray(ink_points) / size, max(0, int(stroke_px * 0.25))),
                                  colours)
    ink_owners_arr = np.asarray(ink_owners)
    intact = [bool(np.mean(ink_classes[ink_owners_arr == index] == 1) >= INK_FRACTION)
              for index in range(len(layout["cells"]))]
    return marked, intact


def verify(meta: Mapping[str, Any], image: Any, puzzle: Any = None) -> Verdict:
    """Verdict for an answer image: the puzzle with a frame around the one unknot."""
    frame = load_for_layout(meta, image, meta["layout"]["cells"][0][2], MIN_CELL_PX, "diagram", "unknot", puzzle)
    if isinstance(frame, Verdict):
        return frame
    rgb = frame.image
    marked, intact = read_answer(meta, rgb)
    checks = judge(meta, marked, intact)
    return Verdict.from_checks(checks, details={"marked": marked, "intact": intact,
                                                                 "registration": frame.details})
