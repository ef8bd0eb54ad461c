"""Orthographic projection (domain: geometry).

The puzzle shows an isometric drawing of a solid made of unit cubes stacked on an n x n
floor, and three empty grids in third-angle layout (top view above the front view, right
side view beside it; a glyph by each grid shows the viewing direction). The answer fills
the grids with the solid's top, front and side views.

Uniqueness: the drawing is read back by the shared solver (every heightmap whose picture
shows exactly the same face shades on the isometric lattice); an attempt whose drawing
admits more than one solid is rejected, so the three views follow from the picture.

Distractors each get exactly one view wrong (and so fail exactly that check). The near misses
of an answer (the solution or a distractor) are plausible one-edit mistakes on one of its
grids: the view mirrored (seen from the opposite side; the top view also flipped front to
back or transposed), a top view with one column added or missing, a front or side view with
one column miscounted by one; every mistake's reverse is a mistake on the result. They are
balanced: every mistake that fills cells is paired with one that empties about as many, so
undoing a mistake looks like making one. The four distractors are a star of near misses
chosen by ``_option_set.choose_star``: one time in five around the solution, otherwise
around one of its near misses, with the solution (one mistake back) among the options; then
all four usually get the same view wrong.
"""

from __future__ import annotations

import numpy as np

from vrforge.generators.tacit import _option_set, _voxel_drawing, _voxels
from vrforge.registry import TaskSpec, register_task
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import ortho_projection as verifier
from vrforge.verifiers.sampling import hex_luminance
from vrforge.verifiers.voxels import VIEWS, projections, render

VERSION = "1.3.1"
VARIANTS = 16  # near misses kept per answer
Grid = list[str]
Views = dict[str, Grid]


DIFFICULTIES = _voxels.VOXEL_DIFFICULTIES


def _to_grid(array: np.ndarray) -> Grid:
    return ["".join("1" if v else "0" for v in row) for row in array]


def _from_grid(grid: Grid) -> np.ndarray:
    return np.asarray([[ch == "1" for ch in row] for row in grid], dtype=bool)


def _key(option: Views) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(option[v]) for v in VIEWS)


def _skyline_grid(heights: np.ndarray, n: int) -> Grid:
    return _to_grid(np.asarray([[heights[j] > n - 1 - i for j in range(n)] for i in range(n)]))


def _grid_edits(view: str, grid: Grid) -> list[Grid]:
    """Every plausible one-edit mistake on a view grid: the view mirrored (seen from the
    opposite side; the top view also flipped front to back or transposed), a top view with
    one column added or taken away, a front or side view with one column miscounted by one.
    Each has its reverse among the mistakes on the result; empty grids are left out."""
    n = len(grid)
    a = _from_grid(grid)
    out: list[np.ndarray] = [a[:, ::-1]]
    if view == "top":
        out += [a[::-1, :], a.T]
        for y in range(n):
            for x in range(n):
                b = a.copy()
                b[y, x] = not b[y, x]
                out.append(b)
    else:
        sky = a.sum(axis=0)
        for j in range(n):
            for step in (-1, 1):
                if 0 <= sky[j] + step <= n:
                    b = sky.copy()
                    b[j] += step
                    out.append(_from_grid(_skyline_grid(b, n)))
    return [_to_grid(b) for b in out if b.any()]


class _NearMisses:
    """The near misses of any answer for one puzzle: options one mistake away (``_grid_edits``)
    that the verifier's judge fails on exactly one view, balanced in ink (``balanced_edits``)."""

    def __init__(self, meta: dict, rng: np.random.Generator) -> None:
        self.meta, self.rng = meta, rng
        n = meta["size"]
        # The ground line under the front and side views hides part of their bottom row, so a
        # cell there adds less ink than another: weigh each cell's ink by its visible share.
        cell = meta["layout"]["grids"]["front"]["cell"]
        hidden = (_voxel_drawing.GROUND_STROKE - _voxel_drawing.GRID_STROKE) / 2 / (cell - _voxel_drawing.GRID_STROKE)
        visible = {v: np.ones((n, n)) for v in VIEWS}
        for v in ("front", "side"):
            visible[v][-1, :] = 1 - hidden
        self.filled = {v: 255.0 - visible[v] * (255.0 - hex_luminance(_voxels.PALETTE[_voxels.VIEW_SHADE[v]])) for v in VIEWS}

    def stand_in(self, option: Views) -> np.ndarray:
        """The view cells' grey levels."""
        return np.concatenate([np.where(_from_grid(option[v]), self.filled[v], 255.0).ravel() for v in VIEWS])

    def variants(self, option: Views) -> list[tuple[str, Views]]:
        found: list[tuple[str, Views]] = []
        seen = {_key(option)}
        for view in VIEWS:
            for grid in _grid_edits(view, option[view]):
                other = {**option, view: grid}
                failed = [name for name, ok in verifier.judge(self.meta, other).items() if not ok]
                if len(failed) == 1 and _key(other) not in seen:
                    seen.add(_key(other))
                    found.append((failed[0], other))
        base = self.stand_in(option)
        inks = [float((base - self.stand_in(other)).sum()) for _, other in found]
        return [found[i] for i in _voxels.balanced_edits(inks, self.rng, lambda i: True, VARIANTS)]


def view_aspects(option: Views) -> tuple[bytes, ...]:
    """An answer's aspects: its three views."""
    return tuple(repr(option[v]).encode() for v in VIEWS)


def generate(config: _voxels.VoxelConfig, rng: np.random.Generator) -> Puzzle:
    n = config.size
    heights = _voxels.drawable_solid(config, rng)
    h = np.asarray(heights)
    labels, _ = render(heights)
    views = projections(heights)
    meta = {
        "task": "ortho_projection",
        "size": n,
        "heights": heights,
        "views": views,
        "layout": _voxels.layout(n),
        "palette": dict(_voxels.PALETTE),
    }

    near = _NearMisses(meta, rng)
    try:
        chosen = _option_set.choose_star(views, near.variants, near.stand_in, rng)
    except ValueError as exc:
        raise RejectedPuzzle(f"distractors: {exc}") from None

    stats = {
        "cubes": float(h.sum()),
        "columns": float((h > 0).sum()),
        "max_height": float(h.max()),
        "visible_unit_faces": float((labels > 0).sum() / 2),
        "aspects_in_play": _option_set.set_aspects(views, chosen, view_aspects),  # the views a solver must check
    }
    return Puzzle(
        meta=meta,
        solution=views,
        distractors=tuple(option for _, option in chosen),
        violations=tuple(name for name, _ in chosen),
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
