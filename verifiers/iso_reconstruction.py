"""Isometric reconstruction verifier: read the drawn solid back and compare its three views.

The answer image is the puzzle (three orthographic views and an empty isometric floor) with
a solid of stacked unit cubes drawn on the floor in the three face shades. The verifier
samples the centre of every triangle of the isometric lattice inside the panel and classes
it by nearest palette colour (floor/background, top, front/left or right shade). Every solid
whose picture shows exactly those triangles is found by the shared front-to-back solver
(``voxels.interpretations``); a drawing may show several solids (a column can hide behind a
taller one), and it passes when one of them has all three required views. Otherwise the
checks are those of the drawn solid that matches the most views (ties: top, front, side
order). So every solid with the right views passes, however it differs from the reference.

The strict mode (``vrforge verify --strict``: SSIM >= 0.99999 against the reference solution
drawn the same way) sits with the task's drawing in ``generators/tacit/iso_reconstruction.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

import numpy as np

from vrforge.types import Verdict
from vrforge.verifiers.sampling import load_for_layout
from vrforge.verifiers.voxels import MIN_UNIT_PX, VIEWS, interpretations, projections, read_triangles, smallest_unit

CHECKS = ("top_mismatch", "front_mismatch", "side_mismatch")


def judge(meta: Mapping[str, Any], labels: np.ndarray) -> tuple[dict[str, bool], dict[str, Any]]:
    """Checks for a picture given as triangle labels: True when a drawn solid has that view."""
    n, target = meta["size"], meta["views"]
    search = interpretations(n, labels, limit=2)
    if not search.solutions and not search.truncated:
        return dict.fromkeys(CHECKS, False), {"solids": 0}
    if len(search.solutions) == 1 and not search.truncated:
        drawn = projections(search.solutions[0])
        return {f"{v}_mismatch": drawn[v] == target[v] for v in VIEWS}, {"solids": 1, "heights": search.solutions[0]}
    for size in (3, 2, 1):
        for subset in combinations(VIEWS, size):
            found = interpretations(n, labels, limit=1, views={v: target[v] for v in subset})
            if found.solutions:
                return ({f"{v}_mismatch": v in subset for v in VIEWS},
                        {"solids": "several", "heights": found.solutions[0]})
    return dict.fromkeys(CHECKS, False), {"solids": "several"}


def verify(meta: Mapping[str, Any], image: Any, puzzle: Any = None) -> Verdict:
    frame = load_for_layout(meta, image, smallest_unit(meta), MIN_UNIT_PX, "lattice unit", "iso_reconstruction", puzzle)
    if isinstance(frame, Verdict):
        return frame
    checks, details = judge(meta, read_triangles(meta, frame.image))
    details["registration"] = frame.details
    return Verdict.from_checks(checks, details=details)
