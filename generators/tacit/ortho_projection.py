"""Orthographic projection (domain: geometry).

The puzzle shows an isometric drawing of a solid made of unit cubes stacked on an n x n
floor, and three empty grids in third-angle layout (top view above the front view, right
side view beside it; a glyph by each grid shows the viewing direction). The answer fills
the grids with the solid's top, front and side views.

Uniqueness: the drawing is read back by the shared solver (every heightmap whose picture
shows exactly the same face shades on the isometric lattice); an attempt whose drawing
admits more than one solid is rejected, so the three views follow from the picture.

Distractors each get exactly one view wrong (and so fail exactly that check), and each is a
realizable set of views: the views of some solid, only not the drawn one. The near
misses of an answer are plausible one-edit mistakes on one of its grids: the view mirrored
(seen from the opposite side; the top view also flipped front to back or transposed), a top
view with one column added, missing or drawn one cell off, a front or side view with one
column miscounted by one; every mistake's reverse is a mistake on the result.

The four distractors come from ``_option_set.choose_set``: three mistakes on one view, in
different cells of the top view or different columns of the front or side view (the aspects
a solver checks), each filling or emptying cells as a fair coin says (tossed once for the set:
cells are added more freely than taken away, and a coin tossed again until its signs could
be had would leave the solution with the least ink too often), combined into a code in
which every mistake is carried by two or three of the five options; options that carry two
or three mistakes are made by applying them together (``_NearMisses.combine``), kept only
when still realizable and wrong in that one view. A solver must then check at least two
cells or columns to rule out the four, whichever option is the solution; an attempt whose
mistakes do not compose into a code is rejected rather than given a star of single edits.
Since 1.5.0, on floors of ``COMPACT_FLOOR`` and up, every option's top view is one connected
piece, like every drawn solid's (``footprint_connected``), and every option's views have the
solution's perimeters (``perimeters``): a mistake that split the top view, or lengthened a view's
outline, marked its option as no solution (a set CNN found it in 0.49 of hard sets). The set's
signs (filling, emptying, or neither: a moved or mirrored mark) are drawn with the first solid
and kept for the solids drawn after it (``SOLID_DRAWS``).
"""

from __future__ import annotations

import numpy as np

from vrforge.generators.tacit import _option_set, _voxel_drawing, _voxels
from vrforge.registry import TaskSpec, register_task
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import ortho_projection as verifier
from vrforge.verifiers.sampling import hex_luminance
from vrforge.verifiers.voxels import VIEWS, is_connected, projections, render

VERSION = "1.5.0"
CODE_TRIES = 30  # triples of mistakes tried on one solid
SOLID_DRAWS = 40  # solids drawn for one set's signs before the attempt is rejected
# Floors from this size on (hard, expert) keep every option's top view connected and every view's
# perimeter: smaller floors (easy, medium) have too few cells whose removal keeps both, so their
# removals were mostly drawn as moves, and their sets stay those of 1.4.0.
COMPACT_FLOOR = 5
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
    one column added, taken away or moved to a free neighbouring cell, a front or side view
    with one column miscounted by one.
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
                for dy, dx in ((0, 1), (1, 0), (0, -1), (-1, 0)):  # a column drawn one cell off
                    if a[y, x] and 0 <= y + dy < n and 0 <= x + dx < n and not a[y + dy, x + dx]:
                        b = a.copy()
                        b[y, x], b[y + dy, x + dx] = False, True
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


def _tallest_solid(option: Views) -> np.ndarray:
    """The tallest heightmap under the option's top view that its front and side views allow:
    every column as tall as the lower of its front and side skylines."""
    front = _from_grid(option["front"]).sum(axis=0)  # per x
    side = _from_grid(option["side"]).sum(axis=0)[::-1]  # per y: the side view has the front row at its left
    return np.where(_from_grid(option["top"]), np.minimum(front[None, :], side[:, None]), 0)


def realizable(option: Views) -> bool:
    """Whether the three views are those of some solid of stacked cubes (its columns need not
    touch: a mistaken view need not show one piece). Any solid with them lies under the tallest
    one the views allow, so they are realizable exactly when that one has them."""
    tallest = _tallest_solid(option)
    return bool(tallest.any()) and projections(tallest.tolist()) == {view: list(option[view]) for view in VIEWS}


def footprint_connected(option: Views) -> bool:
    """Whether the top view is one edge-connected piece, as every drawn solid's is: a top view in
    pieces could only be a mistake, and a set CNN that never saw the solid found the solution in
    0.49 of hard sets where a mistake could split it."""
    return is_connected(_from_grid(option["top"]).astype(int).tolist())


def perimeters(option: Views) -> tuple[int, ...]:
    """Each view's perimeter: the edges of its filled cells that border an empty cell or the grid's
    edge. A drawn solid's top view is a compact piece and its front and side skylines smooth, so a
    mistake mostly lengthened the perimeter (a notch, a lone column, a step), and the solution had
    the shortest top-view perimeter of its set in 44 % of hard sets. Every option keeps the
    solution's perimeters."""
    out = []
    for view in VIEWS:
        filled = np.pad(_from_grid(option[view]), 1)
        inner = filled[1:-1, 1:-1]
        out.append(int(sum((inner & ~np.roll(filled, shift, axis)[1:-1, 1:-1]).sum()
                           for shift in (1, -1) for axis in (0, 1))))
    return tuple(out)


def _aspect_groups(n: int) -> np.ndarray:
    """The aspect of each stand-in coordinate (top cells, then front and side cells row by row):
    every top-view cell is an aspect of its own, every front or side view column another."""
    cells = np.arange(n * n)
    return np.concatenate([cells, n * n + cells % n, n * n + n + cells % n])


class _NearMisses:
    """The near misses of any answer for one puzzle: realizable options one mistake away
    (``_grid_edits``) that the verifier's judge fails on exactly one view, and the composite
    mistakes of a code (``combine``). Filling and emptying mistakes are as likely in a set
    (``choose_set``'s ``signed`` coin), so the pool itself need not be balanced."""

    def __init__(self, meta: dict) -> None:
        self.meta = meta
        n = meta["size"]
        self.compact = n >= COMPACT_FLOOR
        self.perimeters = perimeters(meta["views"])
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

    def fault(self, option: Views) -> str | None:
        """The one check a realizable option fails (None: it fails none, several, or is no solid's views)."""
        failed = [name for name, ok in verifier.judge(self.meta, option).items() if not ok]
        if len(failed) != 1 or not realizable(option):
            return None
        if self.compact and (not footprint_connected(option) or perimeters(option) != self.perimeters):
            return None
        return failed[0]

    def variants(self, option: Views) -> list[tuple[str, Views]]:
        found: list[tuple[str, Views]] = []
        seen = {_key(option)}
        for view in VIEWS:
            for grid in _grid_edits(view, option[view]):
                other = {**option, view: grid}
                if _key(other) in seen:
                    continue
                seen.add(_key(other))
                name = self.fault(other)
                if name is not None:
                    found.append((name, other))
        return found


    def combine(self, solution: Views, option: Views, edited: Views) -> tuple[str, Views] | None:
        """``option`` with the cells that ``edited`` changes in ``solution``, and the one check it
        fails (None unless exactly one, or when the views are no solid's)."""
        joined = dict(option)
        for view in VIEWS:
            if edited[view] != solution[view]:
                before, after = _from_grid(solution[view]), _from_grid(edited[view])
                joined[view] = _to_grid(np.where(before != after, after, _from_grid(option[view])))
        name = None if _key(joined) == _key(option) else self.fault(joined)
        return None if name is None else (name, joined)


def generate(config: _voxels.VoxelConfig, rng: np.random.Generator) -> Puzzle:
    n = config.size
    groups = _aspect_groups(n)
    # The set's signs are drawn with the first solid and kept for every solid drawn after it: a
    # solid drawn again with new signs would keep the signs that compose more easily (fillings)
    # more often, and the solution would have the fewest top-view cells of its set too often.
    signs: list[float] | None = None
    problem = ""
    for _ in range(SOLID_DRAWS if n >= COMPACT_FLOOR else 1):
        try:
            heights = _voxels.drawable_solid(config, rng)
        except RejectedPuzzle as exc:
            problem = str(exc)
            continue
        signs = signs or _option_set.set_signs(rng, still=n >= COMPACT_FLOOR)
        views = projections(heights)
        meta = {
            "task": "ortho_projection",
            "size": n,
            "heights": heights,
            "views": views,
            "layout": _voxels.layout(n),
            "palette": dict(_voxels.PALETTE),
        }
        near = _NearMisses(meta)
        try:
            chosen = _option_set.choose_set(views, near.variants, near.stand_in, rng, groups=groups, combine=near.combine,
                                            signed=True, signs=signs, same_kind=True, tries=CODE_TRIES, fallback=False)
            break
        except ValueError as exc:
            problem = f"distractors: {exc}"
    else:
        raise RejectedPuzzle(problem)
    h = np.asarray(heights)
    labels, _ = render(heights)

    stats = {
        "cubes": float(h.sum()),
        "columns": float((h > 0).sum()),
        "max_height": float(h.max()),
        "visible_unit_faces": float((labels > 0).sum() / 2),
        # the top-view cells and front or side view columns a solver must check
        "aspects_in_play": _option_set.set_aspects(views, chosen, _option_set.aspects_of(near.stand_in, groups)),
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
