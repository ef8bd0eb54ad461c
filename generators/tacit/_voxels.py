"""Shared by the ``ortho_projection`` and ``iso_reconstruction`` tasks: random stacked-cube
solids, the common picture layout (drawn by ``_voxel_drawing``) and the fair sets of five
solids from which both tasks draw their options (``fair_solids``).

(A module whose name starts with "_" is not a task: the registry skips it.)

Layout (the same for both tasks, 400 x 400 units, no text): third-angle arrangement of
the three orthographic view grids (top view above the front view, right side view right of
the front view; the grids share their x and z axes) and the isometric panel in the free
top-right corner. Each view grid carries the same glyph on every option: a small cube
whose viewed face keeps its shade (the other two grey) with an arrow showing the viewing
direction; filled view cells use the shade of the faces that view looks at.

Levels: the floor size n, the number of occupied columns and, from the expert level on, the
least number of cubes and of concavities (cells lower than both neighbours along a row or a
column: the notches and gaps a silhouette hides, the heightmap form of the reference release's
"concavities", voxels taken out of a blob).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vrforge.generators.tacit import _option_set
from vrforge.generators.tacit._voxel_drawing import (  # noqa: F401
    GRID_OFFSET,
    GRID_SIDE,
    GRID_STROKE,
    LABEL_KEY,
    VIEW_SHADE,
    draw_scene,
)
from vrforge.params import ParamError, check_params, param
from vrforge.types import RejectedPuzzle
from vrforge.verifiers.voxels import interpretations, is_connected, projections, render

WIDTH = HEIGHT = 400
PANEL = 200
PAD = 26  # added on every side: the tallest solid and the view grids keep 5.5 % of each dimension clear (a 5 % crop cuts none)
ISO_HALF_HEIGHT = 88  # the n x n x n box spans +-88 units vertically around the panel centre

PALETTE = {
    "background": "#ffffff",
    "floor": "#dcdcdc",
    "floor_line": "#bdbdbd",
    "top": "#b3d4f5",
    "left": "#5b9bd5",
    "right": "#2c5a8f",
    "line": "#1b2430",
    "grid": "#9e9e9e",
    "glyph_off": "#e3e3e3",
}

MAX_SIZE = 8  # floor side: view cells and cube edges stay >= 12 px at 512 (see legibility)


@dataclass(frozen=True)
class VoxelConfig:
    """Both voxel tasks: an n x n floor, how many columns the solid stands on, and (for the
    levels that ask for them) how many cubes and concavities it has at least."""

    size: int = param(doc="n: the floor is n x n cells and columns are at most n cubes tall", low=2, high=MAX_SIZE)
    min_columns: int = param(doc="least occupied floor cells (columns) of the solid", low=2, high=MAX_SIZE**2)
    max_columns: int = param(doc="most occupied floor cells (at most size^2)", low=2, high=MAX_SIZE**2)
    min_cubes: int = param(0, doc="least cubes in the solid (0: any)", low=0, high=MAX_SIZE**3)
    min_concavities: int = param(0, doc="least concavities: floor cells lower than both of their neighbours "
                                        "along a row or a column (a notch, or a gap between two columns)",
                                 low=0, high=MAX_SIZE**2)

    def validate(self) -> None:
        check_params(self)
        if not self.min_columns <= self.max_columns <= self.size**2:
            raise ParamError(f"need min_columns <= max_columns <= size^2 ({self.size**2}), "
                             f"got {self.min_columns}..{self.max_columns}")
        if self.min_cubes > self.max_columns * self.size:
            raise ParamError(f"min_cubes must be at most max_columns x size ({self.max_columns * self.size}), "
                             f"got {self.min_cubes}")
        if self.min_concavities > self.size**2 - 4:  # a corner cell is never lower than two neighbours in a line
            raise ParamError(f"min_concavities must be at most size^2 - 4 ({self.size**2 - 4}), got {self.min_concavities}")


VOXEL_DIFFICULTIES = {
    "easy": VoxelConfig(size=3, min_columns=4, max_columns=6),
    "medium": VoxelConfig(size=4, min_columns=6, max_columns=10),
    "hard": VoxelConfig(size=5, min_columns=9, max_columns=15),
    # The reference release's hard counts 16 cubes ("faces") and 3 concavities (voxels taken
    # out of a blob); here: at least 24 cubes and 3 notches or gaps in a heightmap on a 6-floor.
    "expert": VoxelConfig(size=6, min_columns=14, max_columns=22, min_cubes=24, min_concavities=3),
}


def concavities(heights: Sequence[Sequence[int]]) -> int:
    """Floor cells lower than both neighbours along their row or along their column: the
    notches and gaps that a front or side silhouette hides."""
    h = np.asarray(heights)
    row = np.zeros(h.shape, dtype=bool)
    col = np.zeros(h.shape, dtype=bool)
    row[:, 1:-1] = h[:, 1:-1] < np.minimum(h[:, :-2], h[:, 2:])
    col[1:-1, :] = h[1:-1, :] < np.minimum(h[:-2, :], h[2:, :])
    return int((row | col).sum())


def legibility(config: VoxelConfig) -> dict[str, float]:
    """The smallest features, as shares of the picture's width (the layout is fixed; only n varies)."""
    n = config.size
    unit = ISO_HALF_HEIGHT / n
    return {
        "view_cell": (GRID_SIDE / n - GRID_STROKE) / (WIDTH + 2 * PAD),
        "cube_edge": unit / (WIDTH + 2 * PAD),
        "grid_line": GRID_STROKE / (WIDTH + 2 * PAD),
        "solid_line": max(1.0, 0.06 * unit) / (WIDTH + 2 * PAD),
    }


LEGIBILITY_FLOORS = {
    "view_cell": 8.0,  # a view cell under 8 px between its grid lines cannot be told filled or empty at a glance
    "cube_edge": 8.0,  # a cube edge under 8 px makes its three face rhombi too small to tell their shades apart
    "grid_line": 1.0,  # a grid line under 1 px fades into the white: the cells of a view cannot be counted
    "solid_line": 1.0,  # the dark edges between cube faces under 1 px fade: stacked cubes merge into one face
}

CONVENTIONS = {
    "which grid is the top, the front and the side (right) view":
        "by each grid a small cube with the viewed face shaded and an arrow along the viewing direction",
    "a view cell is filled when any cube lies on its line of sight (depth is not shown)":
        "filled cells carry the shade of the faces that view looks at, as the glyph's shaded face",
    "views are arranged third-angle: the top view above the front view (front edge at its bottom), the side "
    "view right of it (front edge at its left); rows run bottom-up from the floor":
        "the grids' placement, their shared rows and columns, and the dark ground line under the front and side views",
    "the solid is columns of unit cubes standing on the n x n floor (no overhangs)":
        "the isometric floor grid with n x n cells, the same n as the view grids",
    "top faces are light, front faces (drawn left) medium, right faces dark":
        "the glyph cubes' shaded faces and the view fills",
}


def layout(n: int) -> dict[str, Any]:
    unit = ISO_HALF_HEIGHT / n
    cell = GRID_SIDE / n
    return {
        "width": WIDTH + 2 * PAD,
        "height": HEIGHT + 2 * PAD,
        "iso": {"origin": [PAD + PANEL + PANEL / 2, PAD + PANEL / 2], "unit": unit},
        "grids": {
            "top": {"origin": [PAD + GRID_OFFSET, PAD + GRID_OFFSET], "cell": cell},
            "front": {"origin": [PAD + GRID_OFFSET, PAD + PANEL + GRID_OFFSET], "cell": cell},
            "side": {"origin": [PAD + PANEL + GRID_OFFSET, PAD + PANEL + GRID_OFFSET], "cell": cell},
        },
        "glyphs": {"top": [PAD, PAD], "front": [PAD, PAD + PANEL], "side": [PAD + PANEL, PAD + PANEL]},
    }


# ---------------------------------------------------------------- solids


def random_solid(n: int, columns: tuple[int, int], rng: np.random.Generator) -> list[list[int]]:
    """A connected heightmap: a random polyomino of occupied columns with random heights 1..n.

    In an isometric picture cube (x, y, z) lies exactly behind cube (x+1, y+1, z+1), so a
    column is invisible behind a taller column diagonally in front of it. Heights are capped
    so that a column of two or more cubes has a column at least as tall diagonally behind it
    (or stands on the back rows): then nothing can hide there. Other ambiguities are left to
    the caller's solver check (about one attempt in seven is rejected).
    """
    target = int(rng.integers(columns[0], columns[1] + 1))
    start = (int(rng.integers(n)), int(rng.integers(n)))
    cells = [start]
    chosen = {start}
    while len(cells) < target:
        frontier = sorted({(y + dy, x + dx) for y, x in cells for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1))
                           if 0 <= y + dy < n and 0 <= x + dx < n} - chosen)
        cell = frontier[int(rng.integers(len(frontier)))]
        chosen.add(cell)
        cells.append(cell)
    weights = np.arange(2 * n, n, -1, dtype=np.float64)  # lower columns a little likelier
    heights = [[0] * n for _ in range(n)]
    for y, x in sorted(chosen):
        heights[y][x] = int(rng.choice(np.arange(1, n + 1), p=weights / weights.sum()))
    for y, x in sorted(((y, x) for y in range(1, n) for x in range(1, n)), key=lambda c: (c[0] + c[1], c)):
        if heights[y][x] >= 2:  # back to front, so the column behind is final
            heights[y][x] = min(heights[y][x], max(1, heights[y - 1][x - 1]))
    assert is_connected(heights)
    return heights


def draws_one_solid(n: int, labels: np.ndarray) -> bool:
    """Whether a drawing (its lattice labels) shows exactly one solid on an n x n floor (the solver proves it)."""
    search = interpretations(n, labels, limit=2)
    return len(search.solutions) == 1 and not search.truncated


# ---------------------------------------------------------------- near misses


def solid_edits(heights: Sequence[Sequence[int]] | np.ndarray) -> np.ndarray:
    """(K, n, n) every solid one edit from ``heights``: a cube added to or taken from the top
    of a column, or the top cube of a column moved onto another. Each edit's reverse is an edit."""
    flat = np.asarray(heights, dtype=np.int64).ravel()
    n = len(heights)
    unit = np.eye(n * n, dtype=np.int64)
    source, target = np.nonzero(~np.eye(n * n, dtype=bool))
    out = np.concatenate([flat + unit, flat - unit, flat - unit[source] + unit[target]])
    return out[((out >= 0) & (out <= n)).all(axis=1)].reshape(-1, n, n)


# ---------------------------------------------------------------- fair option sets
#
# Both tasks' option sets are five solids around a random solid B: three edits of B, each wrong in
# one view and changing different aspects (``view_cells``), and five of the eight solids B carrying
# a subset of them, a code of ``_option_set.CODES`` translated by a random subset, so each edit is
# carried by two or three of the five and ruling out four takes two aspects checked or more,
# whichever is the solution. A set is kept only when every member could be its solution
# (``fair_set``); the caller then draws the solution uniformly among the five. Whether a set is
# kept never depends on which member is the solution, so no picker that sees the options alone can
# beat chance in expectation, whatever their ink. (A set built around the solution, its edits' signs
# drawn for it, kept the signs whose edits compose on a small floor, cubes added, and left the
# solution the lightest option too often.)

Heights = list[list[int]]
CODE_TRIES = 30  # edit triples tried around one solid
SOLID_DRAWS = 40  # solids drawn before the attempt is rejected


def view_cells(heights: Heights) -> tuple[bytes, ...]:
    """A solid's aspects, what a solver compares with the puzzle's views (``aspects_of_views``)."""
    return aspects_of_views(projections(heights))


def aspects_of_views(views: Mapping[str, Sequence[str]]) -> tuple[bytes, ...]:
    """Every cell of the top view, and every column of the front and side views."""
    n = len(views["top"])
    top = [cell for row in views["top"] for cell in row]
    columns = ["".join(row[j] for row in views[v]) for v in ("front", "side") for j in range(n)]
    return tuple(part.encode() for part in top + columns)


def _changed_aspects(solids: np.ndarray, reference: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each of the (K, n, n) ``solids``, where its views differ from those of ``reference``:
    the top view's cells (K, n, n), the front view's columns by x (K, n), the side view's by y (K, n)."""
    return ((solids > 0) != (reference > 0), solids.max(axis=1) != reference.max(axis=0),
            solids.max(axis=2) != reference.max(axis=1))


def wrong_views(solids: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """(K, 3) for each of the (K, n, n) ``solids``: which views (top, front, side) differ from
    those of ``reference``."""
    return _views_of(*_changed_aspects(solids, reference))


def _views_of(top: np.ndarray, front: np.ndarray, side: np.ndarray) -> np.ndarray:
    """(K, 3): which views have a changed aspect (``_changed_aspects``)."""
    return np.stack([top.any(axis=(1, 2)), front.any(axis=1), side.any(axis=1)], axis=1)


class _ViewEdits:
    """The one-edit changes of a solid (``solid_edits``) that make exactly one view wrong, the view
    each makes wrong (0 top, 1 front, 2 side), and the aspects each changes, numbered as view_cells
    numbers them (top cells row by row, then the front view's columns by x, the side view's by y)."""

    def __init__(self, base: np.ndarray) -> None:
        solids = solid_edits(base)
        top, front, side = _changed_aspects(solids, base)
        wrong = _views_of(top, front, side)
        one = wrong.sum(axis=1) == 1
        self.deltas, self.views = solids[one] - base, wrong[one].argmax(axis=1)
        changed = np.concatenate([top[one].reshape(int(one.sum()), -1), front[one], side[one]], axis=1)
        self.touched = [frozenset(np.flatnonzero(row).tolist()) for row in changed]

    def draw_three(self, rng: np.random.Generator) -> np.ndarray | None:
        """Three changes wrong in the same view and in disjoint aspects, drawn at random (the view
        first, then the edits): a rule on the aspects alone, never on the pictures."""
        for view in rng.permutation(3).tolist():
            picked: list[int] = []
            for i in rng.permutation(len(self.deltas)).tolist():
                if self.views[i] == view and all(not self.touched[i] & self.touched[j] for j in picked):
                    picked.append(i)
                    if len(picked) == 3:
                        return self.deltas[picked]
        return None


def meets_level(config: VoxelConfig, heights: Heights) -> bool:
    """Whether a solid is connected and within the level's parameters (the cheap checks)."""
    h = np.asarray(heights)
    columns = int((h > 0).sum())
    return (h.min() >= 0 and h.max() <= config.size and h.max() >= 2 and is_connected(heights)
            and config.min_columns <= columns <= config.max_columns and int(h.sum()) >= config.min_cubes
            and concavities(heights) >= config.min_concavities)


def could_be_solution(config: VoxelConfig, heights: Heights) -> bool:
    """Whether a solid meets the level as its solution must: ``meets_level``, and drawn unambiguously."""
    return meets_level(config, heights) and draws_one_solid(config.size, render(heights)[0])


def _code_members(base: np.ndarray, edits: np.ndarray, rng: np.random.Generator) -> list[Heights]:
    """Five solids: ``base`` with the subsets of ``edits`` named by a random code translated by a
    random subset."""
    code = _option_set.CODES[int(rng.integers(len(_option_set.CODES)))]
    shift = int(rng.integers(8))
    return [(base + sum(edits[b] for b in range(3) if (row ^ shift) >> b & 1)).tolist() for row in code]


def fair_set(config: VoxelConfig, members: list[Heights], drawn: dict[str, bool] | None = None) -> bool:
    """Whether every member could be the solution of the set: each one connected, within the
    level's parameters and drawn unambiguously (``could_be_solution``), every other member wrong
    in exactly one view against it, and two aspects or more in play from its side. ``drawn``: the
    solver's verdicts on solids already judged (the sets tried around one solid share members)."""
    solids = np.asarray(members)
    if solids.min() < 0 or solids.max() > config.size or len({str(m) for m in members}) < 5:
        return False
    for i in range(5):
        if sorted(wrong_views(np.delete(solids, i, axis=0), solids[i]).sum(axis=1).tolist()) != [1] * 4:
            return False
    cells = [view_cells(m) for m in members]
    if any(_option_set.aspects_in_play(cells[i], cells[:i] + cells[i + 1:]) < 2 for i in range(5)):
        return False
    if not all(meets_level(config, m) for m in members):
        return False
    drawn = {} if drawn is None else drawn
    for m in members:  # the solver, the costly check, last
        key = str(m)
        if key not in drawn:
            drawn[key] = draws_one_solid(config.size, render(m)[0])
        if not drawn[key]:
            return False
    return True


def fair_solids(config: VoxelConfig, rng: np.random.Generator) -> list[Heights]:
    """The five solids of a fair set (``fair_set``) around a random solid; RejectedPuzzle if none is
    found around SOLID_DRAWS solids."""
    for _ in range(SOLID_DRAWS):
        base = np.asarray(random_solid(config.size, (config.min_columns, config.max_columns), rng),
                          dtype=np.int64)
        edits = _ViewEdits(base)
        drawn: dict[str, bool] = {}
        for _ in range(CODE_TRIES):
            three = edits.draw_three(rng)
            if three is None:
                break
            members = _code_members(base, three, rng)
            if fair_set(config, members, drawn):
                return members
    raise RejectedPuzzle(f"no fair set of five solids around {SOLID_DRAWS} solids")


def draw_solution(members: list[Heights], rng: np.random.Generator) -> tuple[Heights, list[Heights], list[int]]:
    """The solution drawn uniformly among a fair set's five solids, the other four in random order,
    and the view (0 top, 1 front, 2 side) each of them gets wrong."""
    order = rng.permutation(len(members)).tolist()
    solution, others = members[order[0]], [members[i] for i in order[1:]]
    wrong = wrong_views(np.asarray(others), np.asarray(solution))
    return solution, others, wrong.argmax(axis=1).tolist()


def aspects_in_play(solution: Heights, others: list[Heights]) -> float:
    """The top-view cells and front or side view columns a solver must compare to rule out the others."""
    return float(_option_set.aspects_in_play(view_cells(solution), [view_cells(o) for o in others]))
