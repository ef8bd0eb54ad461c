"""Orthographic projection verifier: read the three view grids and compare them with the solid's views.

The answer image is the puzzle (the isometric drawing of a stacked-cube solid) with its top,
front and side views filled in on the three empty grids. Each grid cell is sampled at its
centre: it counts as filled when the sample is nearer one of the face shades (or the line
colour) than the white of an empty cell, so any dark or coloured fill is read as filled.
The positions come from ``meta["layout"]``, so the reading works at any resolution.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vrforge.types import Verdict
from vrforge.verifiers.sampling import load_for_layout
from vrforge.verifiers.voxels import MIN_UNIT_PX, VIEWS, read_grid, smallest_unit

CHECKS = ("top_view", "front_view", "side_view")


def judge(meta: Mapping[str, Any], grids: Mapping[str, Sequence[str]]) -> dict[str, bool]:
    """Each check is True when that view grid equals the solid's view."""
    return {f"{view}_view": list(grids[view]) == list(meta["views"][view]) for view in VIEWS}


def verify(meta: Mapping[str, Any], image: Any, puzzle: Any = None) -> Verdict:
    frame = load_for_layout(meta, image, smallest_unit(meta), MIN_UNIT_PX, "lattice unit", "ortho_projection", puzzle)
    if isinstance(frame, Verdict):
        return frame
    rgb = frame.image
    grids = {view: read_grid(meta, rgb, view) for view in VIEWS}
    wrong = {view: sum(a != b for r1, r2 in zip(grids[view], meta["views"][view]) for a, b in zip(r1, r2)) for view in VIEWS}
    return Verdict.from_checks(judge(meta, grids), details={"grids": grids, "wrong_cells": wrong,
                                                                "registration": frame.details})
