"""Isometric reconstruction (domain: geometry).

The puzzle shows the top, front and side views of a solid of unit cubes stacked on an n x n
floor (third-angle layout, a glyph by each grid shows the viewing direction, filled cells
in the shade of the faces that view sees) and an empty isometric floor. The answer draws,
on that floor, a solid with those three views. Several solids usually share three views;
the verifier reads the drawn solid back from the isometric lattice and accepts every one
whose views match (see verifiers/iso_reconstruction.py), not only the reference drawing.

The options are a fair set of five solids (``_voxels.fair_solids``): three edits of a random
solid (a cube added to or taken from the top of a column, or the top cube of a column moved
onto another), each wrong in one view and in different aspects (a top-view cell, or a front or
side view column: what a solver compares), composed into a code in which each edit is carried by
two or three of the five, so ruling out four takes at least two aspects checked. The set is kept
only when every one of the five could be the solution (connected, within the level's
parameters, drawn unambiguously, wrong in exactly one view against every other member); only
then is the solution drawn, uniformly among them, so the options alone cannot tell which it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from PIL import Image

from vrforge.generators.tacit import _voxels
from vrforge.imagemetrics import ssim
from vrforge.registry import StrictMode, TaskSpec, register_task
from vrforge.render import rasterise_cached
from vrforge.types import Puzzle
from vrforge.verifiers import iso_reconstruction as verifier
from vrforge.verifiers.voxels import EMPTY, projections, render

VERSION = "1.5.0"
STRICT_SSIM = 0.99999  # verify --strict: only a pixel-faithful drawing of the reference solid passes
SSIM_MAX_WIDTH = 512  # larger answers are compared after the same box reduction of both images


DIFFICULTIES = _voxels.VOXEL_DIFFICULTIES


def generate(config: _voxels.VoxelConfig, rng: np.random.Generator) -> Puzzle:
    heights, others, wrong = _voxels.draw_solution(_voxels.fair_solids(config, rng), rng)
    reference = np.asarray(heights)
    meta = {
        "task": "iso_reconstruction",
        "size": config.size,
        "views": projections(heights),
        "heights": heights,
        "layout": _voxels.layout(config.size),
        "palette": dict(_voxels.PALETTE),
    }
    labels, _ = render(heights)
    stats = {
        "cubes": float(reference.sum()),
        "columns": float((reference > 0).sum()),
        "max_height": float(reference.max()),
        "visible_unit_faces": float((labels != EMPTY).sum() / 2),
        "aspects_in_play": _voxels.aspects_in_play(heights, others),
    }
    return Puzzle(
        meta=meta,
        solution=heights,
        distractors=tuple(others),
        violations=tuple(verifier.CHECKS[view] for view in wrong),
        answer_index=int(rng.integers(5)),
        stats=stats,
    )


def draw(meta: Mapping[str, Any], answer: list[list[int]] | None) -> str:
    """The three views and the floor, with the solid ``answer`` (heights[y][x]) drawn on it."""
    return _voxels.draw_scene(meta, heights=answer, views=meta["views"])


def reference_ssim(meta: Mapping[str, Any], rgb: np.ndarray) -> float:
    """SSIM between ``rgb`` and the reference solution drawn at the same size (verify --strict)."""
    height, width = rgb.shape[:2]
    reference = rasterise_cached(draw(meta, meta["heights"]), width)
    answer = Image.fromarray(rgb)
    if answer.size != reference.size:
        answer = answer.resize(reference.size, Image.Resampling.BILINEAR)
    if width > SSIM_MAX_WIDTH:
        size = (SSIM_MAX_WIDTH, max(1, round(reference.height * SSIM_MAX_WIDTH / width)))
        answer, reference = (im.resize(size, Image.Resampling.BOX) for im in (answer, reference))
    return ssim(np.asarray(answer), np.asarray(reference))


register_task(
    TaskSpec(
        name="iso_reconstruction",
        domain="geometry",
        version=VERSION,
        checks=verifier.CHECKS,
        difficulties=DIFFICULTIES,
        generate=generate,
        draw=draw,
        verify=verifier.verify,
        description="Isometric reconstruction: draw, on the isometric floor, a solid of stacked cubes with the three given views.",
        instruction=("On the isometric floor, draw a solid of stacked cubes "
                     "whose top, front and side views match the three given views."),
        answer_hint="an isometric drawing of a solid that has the three views shown",
        difficulty_stat="cubes",
        legibility=_voxels.legibility,
        legibility_floors=_voxels.LEGIBILITY_FLOORS,
        conventions=_voxels.CONVENTIONS,
        strict=StrictMode(reference_ssim, STRICT_SSIM),
    )
)
