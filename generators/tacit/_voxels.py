"""Shared by the ``ortho_projection`` and ``iso_reconstruction`` tasks: random stacked-cube
solids, the common picture layout and its SVG drawing, and the choice of distractor sets.

(A module whose name starts with "_" is not a task: the registry skips it.)

Layout (the same for both tasks, 400 x 400 units, no text): third-angle arrangement of
the three orthographic view grids (top view above the front view, right side view right of
the front view; the grids share their x and z axes) and the isometric panel in the free
top-right corner. Each view grid carries the same glyph on every option: a small cube
whose viewed face keeps its shade (the other two grey) with an arrow showing the viewing
direction; filled view cells use the shade of the faces that view looks at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from vrforge.generators.tacit._voxel_drawing import GRID_OFFSET, GRID_SIDE, LABEL_KEY, VIEW_SHADE, draw_scene  # noqa: F401
from vrforge.types import RejectedPuzzle
from vrforge.verifiers.voxels import interpretations, is_connected, render

WIDTH = HEIGHT = 400
PANEL = 200
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
SUBSET_SAMPLE = 600

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
        "width": WIDTH,
        "height": HEIGHT,
        "iso": {"origin": [PANEL + PANEL / 2, PANEL / 2], "unit": unit},
        "grids": {
            "top": {"origin": [GRID_OFFSET, GRID_OFFSET], "cell": cell},
            "front": {"origin": [GRID_OFFSET, PANEL + GRID_OFFSET], "cell": cell},
            "side": {"origin": [PANEL + GRID_OFFSET, PANEL + GRID_OFFSET], "cell": cell},
        },
        "glyphs": {"top": [0, 0], "front": [0, PANEL], "side": [PANEL, PANEL]},
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


# ---------------------------------------------------------------- drawing


def least_revealing(vectors: np.ndarray, names: Sequence[str], rng: np.random.Generator, margin: float = 0.0,
                    rates: tuple[float, float] = (0.15, 0.2)) -> list[int]:
    """Choose four distractors (rows 1.. of ``vectors``; row 0 is the solution) so that the
    context-blind pickers (the medoid, the option nearest the mean, the odd one out) find
    the solution about as often as chance. ``vectors`` stand in for the option pictures (one
    entry per cell or triangle, its grey level).

    A picker that never finds the solution also gives it away (rule out the options the
    pickers name), so each picker is drawn to "find" the solution with probability 1/5 and
    a set realising that pattern (clearly, by ``margin``) is chosen when one exists;
    otherwise a set that as few pickers as possible find (a near tie counts as found).
    Among equals, sets naming more different checks are preferred; then a random one.
    """
    count = len(vectors) - 1
    if count < 4:
        raise ValueError("need at least four candidate distractors")
    if count <= 12:
        subsets = np.asarray([(0, *c) for c in combinations(range(1, count + 1), 4)], dtype=np.int64)
    else:  # a random sample of the sets keeps the cost flat
        draws = np.sort(np.argsort(rng.random((SUBSET_SAMPLE, count)), axis=1)[:, :4] + 1, axis=1)
        subsets = np.unique(np.concatenate([np.zeros((SUBSET_SAMPLE, 1), dtype=np.int64), draws], axis=1), axis=0)
    distances = np.abs(vectors[:, None, :] - vectors[None, :, :]).sum(axis=2)
    block = distances[subsets[:, :, None], subsets[:, None, :]]  # (S, 5, 5)
    totals = block.sum(axis=2)
    chosen_vectors = vectors[subsets]  # (S, 5, D)
    near_mean = np.abs(chosen_vectors - chosen_vectors.mean(axis=1, keepdims=True)).sum(axis=2)
    # (found with a tie counted as found, found clearly) for each picker
    medoid = (totals[:, 0] <= totals[:, 1:].min(axis=1) + margin, totals[:, 0] < totals[:, 1:].min(axis=1) - margin)
    closest = (near_mean[:, 0] <= near_mean[:, 1:].min(axis=1) + margin, near_mean[:, 0] < near_mean[:, 1:].min(axis=1) - margin)
    odd = (totals[:, 0] >= totals[:, 1:].max(axis=1) - margin, totals[:, 0] > totals[:, 1:].max(axis=1) + margin)
    draw = float(rng.random())  # medoid and nearest-the-mean go together; the odd one out is their opposite
    pattern = (True, True, False) if draw < rates[0] else (False, False, True) if draw < sum(rates) else (False, False, False)
    realised = np.ones(len(subsets), dtype=bool)
    for want, (loose, clear) in zip(pattern, (medoid, closest, odd)):
        realised &= clear if want else ~loose
    score = np.where(realised, 0, 1 + medoid[0].astype(int) + closest[0].astype(int) + odd[0].astype(int))
    codes = {name: k for k, name in enumerate(sorted(set(names)))}
    labels = np.sort(np.asarray([codes[name] for name in names])[subsets[:, 1:] - 1], axis=1)
    variety = 1 + (np.diff(labels, axis=1) != 0).sum(axis=1)
    key = score * 10 - variety
    best = np.flatnonzero(key == key.min())
    pick = subsets[best[int(rng.integers(len(best)))]]
    return [int(i) - 1 for i in pick[1:]]
