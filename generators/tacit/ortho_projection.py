"""Orthographic projection (domain: geometry).

The puzzle shows an isometric drawing of a solid made of unit cubes stacked on an n x n
floor, and three empty grids in third-angle layout (top view above the front view, right
side view beside it; a glyph by each grid shows the viewing direction). The answer fills
the grids with the solid's top, front and side views.

Uniqueness: the drawing is read back by the shared solver (every heightmap whose picture
shows exactly the same face shades on the isometric lattice); an attempt whose drawing
admits more than one solid is rejected, so the three views follow from the picture.

Distractors each get exactly one view wrong (and so fail exactly that check), and each is the
views of a solid, only not the drawn one. The options are the views of a fair set of five
solids (``_voxels.fair_solids``, as in ``iso_reconstruction``): three edits of a random solid
(a cube added to or taken from a column, or a top cube moved onto another), each wrong in one
view and in different aspects (a top-view cell, or a front or side view column: what a solver
checks), composed into a code in which each edit is carried by two or three of the five, so
ruling out four takes at least two aspects checked. The set is kept only when every one of the
five could be the drawn solid (connected, within the level's parameters, drawn unambiguously,
wrong in exactly one view against every other member); only then is the solution drawn,
uniformly among them. Option sets built around the solution (1.5.0: mistakes of its views,
the set's ink signs a coin) were found by the learners where some signs composed more easily
than others (the solution's ink was the set's extreme 0.071 of the time on ``easy``, and a
learned logit found it 0.30 of the time); a set whose keeping never depends on which member is
the solution leaves nothing to find.
"""

from __future__ import annotations

import numpy as np

from vrforge.generators.tacit import _voxels
from vrforge.registry import TaskSpec, register_task
from vrforge.types import Puzzle
from vrforge.verifiers import ortho_projection as verifier
from vrforge.verifiers.voxels import projections, render

VERSION = "1.6.0"
DIFFICULTIES = _voxels.VOXEL_DIFFICULTIES


def generate(config: _voxels.VoxelConfig, rng: np.random.Generator) -> Puzzle:
    heights, others, wrong = _voxels.draw_solution(_voxels.fair_solids(config, rng), rng)
    h = np.asarray(heights)
    labels, _ = render(heights)
    meta = {
        "task": "ortho_projection",
        "size": config.size,
        "heights": heights,
        "views": projections(heights),
        "layout": _voxels.layout(config.size),
        "palette": dict(_voxels.PALETTE),
    }
    stats = {
        "cubes": float(h.sum()),
        "columns": float((h > 0).sum()),
        "max_height": float(h.max()),
        "visible_unit_faces": float((labels > 0).sum() / 2),
        "aspects_in_play": _voxels.aspects_in_play(heights, others),
    }
    return Puzzle(
        meta=meta,
        solution=meta["views"],
        distractors=tuple(projections(o) for o in others),
        violations=tuple(verifier.CHECKS[view] for view in wrong),
        answer_index=int(rng.integers(5)),
        stats=stats,
    )


def draw(meta: dict, answer: dict | None) -> str:
    """The isometric drawing with empty grids, or with ``answer`` ({"top", "front", "side"} grids) filled in."""
    return _voxels.draw_scene(meta, heights=meta["heights"], views=answer)


register_task(
    TaskSpec(
        name="ortho_projection",
        domain="geometry",
        version=VERSION,
        checks=verifier.CHECKS,
        difficulties=DIFFICULTIES,
        generate=generate,
        draw=draw,
        verify=verifier.verify,
        description="Orthographic projection: fill in the top, front and side views of the solid drawn in isometric.",
        instruction="Fill in the top, front and side view grids of the solid of stacked cubes drawn in isometric.",
        answer_hint="the top, front and side view grids filled in",
        difficulty_stat="cubes",
        legibility=_voxels.legibility,
        legibility_floors=_voxels.LEGIBILITY_FLOORS,
        conventions=_voxels.CONVENTIONS,
    )
)
