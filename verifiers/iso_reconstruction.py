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

``verify(..., strict=True)`` adds the paper's strict check (SSIM >= 0.99999 against the
reference solution rendered the same way, reported as ``details["ssim"]``), which only a
pixel-faithful copy of the reference passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

import numpy as np
from PIL import Image

from vrforge.types import Verdict
from vrforge.verifiers.sampling import load_for_layout
from vrforge.verifiers.voxel_drawing import draw_scene
from vrforge.verifiers.voxels import MIN_UNIT_PX, VIEWS, interpretations, projections, read_triangles, smallest_unit, ssim

CHECKS = ("top_mismatch", "front_mismatch", "side_mismatch")
STRICT_CHECK = "reference_ssim"
STRICT_SSIM = 0.99999
SSIM_MAX_WIDTH = 512  # larger answers are compared after the same box reduction of both images


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


def reference_ssim(meta: Mapping[str, Any], rgb: np.ndarray) -> float:
    """SSIM between ``rgb`` and the reference solution drawn at the same size."""
    from vrforge.render import rasterise_cached

    height, width = rgb.shape[:2]
    reference = rasterise_cached(draw_scene(meta, heights=meta["heights"], views=meta["views"]), width)
    answer = Image.fromarray(rgb)
    if answer.size != reference.size:
        answer = answer.resize(reference.size, Image.Resampling.BILINEAR)
    if width > SSIM_MAX_WIDTH:
        size = (SSIM_MAX_WIDTH, max(1, round(reference.height * SSIM_MAX_WIDTH / width)))
        answer, reference = (im.resize(size, Image.Resampling.BOX) for im in (answer, reference))
    return ssim(np.asarray(answer), np.asarray(reference))


def verify(meta: Mapping[str, Any], image: Any, strict: bool = False, puzzle: Any = None) -> Verdict:
    frame = load_for_layout(meta, image, smallest_unit(meta), MIN_UNIT_PX, "lattice unit", "iso_reconstruction", puzzle)
    if isinstance(frame, Verdict):
        return frame
    rgb = frame.image
    checks, details = judge(meta, read_triangles(meta, rgb))
    details["registration"] = frame.details
    if strict:  # a reference render per call: only when asked for
        details["ssim"] = reference_ssim(meta, rgb)
        checks[STRICT_CHECK] = details["ssim"] >= STRICT_SSIM
    return Verdict.from_checks(checks, details=details)
