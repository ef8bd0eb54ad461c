"""Shared by the ``ortho_projection`` and ``iso_reconstruction`` tasks: random stacked-cube
solids, the common picture layout (drawn by ``_voxel_drawing``) and the balance of the
near misses from which ``_option_set`` builds the distractor sets.

(A module whose name starts with "_" is not a task: the registry skips it.)

Layout (the same for both tasks, 400 x 400 units, no text): third-angle arrangement of
the three orthographic view grids (top view above the front view, right side view right of
the front view; the grids share their x and z axes) and the isometric panel in the free
top-right corner. Each view grid carries the same glyph on every option: a small cube
whose viewed face keeps its shade (the other two grey) with an arrow showing the viewing
direction; filled view cells use the shade of the faces that view looks at.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vrforge.generators.tacit._voxel_drawing import GRID_OFFSET, GRID_SIDE, LABEL_KEY, VIEW_SHADE, draw_scene  # noqa: F401
from vrforge.types import RejectedPuzzle
from vrforge.verifiers.voxels import interpretations, is_connected, render

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

@dataclass(frozen=True)
class VoxelConfig:
    """Both voxel tasks: an n x n floor and how many columns the solid stands on."""

    size: int
    min_columns: int
    max_columns: int

    def validate(self) -> None:
        if not 2 <= self.size <= 6:
            raise ValueError(f"size must be in 2..6, got {self.size}")
        if not 2 <= self.min_columns <= self.max_columns <= self.size**2:
            raise ValueError("need 2 <= min_columns <= max_columns <= size^2")


VOXEL_DIFFICULTIES = {
    "easy": VoxelConfig(size=3, min_columns=4, max_columns=6),
    "medium": VoxelConfig(size=4, min_columns=6, max_columns=10),
    "hard": VoxelConfig(size=5, min_columns=9, max_columns=15),
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


def drawable_solid(n: int, columns: tuple[int, int], rng: np.random.Generator) -> list[list[int]]:
    """A random solid whose isometric drawing shows exactly one solid (proved by the solver),
    at least two cubes tall; raises RejectedPuzzle otherwise."""
    heights = random_solid(n, columns, rng)
    if max(map(max, heights)) < 2:
        raise RejectedPuzzle("flat solid")
    search = interpretations(n, render(heights)[0], limit=2)
    if len(search.solutions) != 1 or search.truncated:
        raise RejectedPuzzle("the drawing shows more than one solid")
    return heights


# ---------------------------------------------------------------- near misses


def balanced_edits(inks: Sequence[float], rng: np.random.Generator, accept: Callable[[int], bool],
                   limit: int) -> list[int]:
    """Indices of at most ``limit`` edits (``inks[i]``: the ink edit ``i`` adds, negative when
    it removes ink), as many removing ink as adding it, paired by size, in random order.

    The distractor sets are stars around a distractor, with the solution one edit back. If the
    edits mostly added ink, the solution would be the option with the least ink; with each
    edit that adds ink matched by one that removes about as much, undoing an edit looks like
    making one. Edits that leave the ink unchanged come alone. ``accept(i)`` confirms an edit
    (the verifier's judge); a pair enters only when both of its edits pass."""
    adding = [int(i) for i in rng.permutation(len(inks)) if inks[i] > 0]
    removing = [int(i) for i in rng.permutation(len(inks)) if inks[i] < 0]
    fewer, more = sorted((adding, removing), key=len)
    units = [[i] for i in range(len(inks)) if inks[i] == 0]
    for i in fewer:  # each to the free edit of the other sign nearest in size (ties: the first in random order)
        j = min(more, key=lambda k: abs(abs(inks[k]) - abs(inks[i])))
        more.remove(j)
        units.append([i, j])
    chosen: list[int] = []
    for u in rng.permutation(len(units)).tolist():
        if len(chosen) + len(units[u]) <= limit and all(accept(i) for i in units[u]):
            chosen += units[u]
    return chosen
