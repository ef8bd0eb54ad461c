"""Shared by the two cellular-automaton tasks (ca_forward, ca_inverse): the automaton itself and
reading its pictures back.

The automaton: an n x n grid of cells in states 0..k-1 (0 is "empty"). A cell's neighbours are
its 4 edge neighbours (von Neumann) or its 8 surrounding cells (Moore). The rule is
outer-totalistic: a table ``rule[s][c]`` gives the next state of a cell in state ``s`` with
``c`` non-empty neighbours. The boundary is toroidal (edges wrap) or fixed (outside cells are
empty). Everything here is a pure function of ``meta`` (plus an image), so data built by an
older generator still verifies.

Grids and rule tables travel in meta as lists of digit strings ("0120..."), one per row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vrforge.types import Verdict
from vrforge.verifiers.registration import Registration
from vrforge.verifiers.sampling import hex_to_rgb, load_for_layout, nearest_palette, sample_colours

NEIGHBOURHOODS = {
    "von_neumann": ((-1, 0), (1, 0), (0, -1), (0, 1)),
    "moore": ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)),
}
BOUNDARIES = ("toroidal", "fixed")
BLANK = -1  # a sampled cell that shows the background: nothing drawn there
MIN_CELL_PX = 4.0


# ---------------------------------------------------------------- the automaton


def decode(rows: Sequence[str]) -> np.ndarray:
    """Digit strings -> int array (rows x columns)."""
    return np.array([[int(ch) for ch in row] for row in rows], dtype=np.int64)


def encode(array: np.ndarray) -> list[str]:
    return ["".join(str(int(v)) for v in row) for row in np.asarray(array)]


def neighbour_counts(grid: np.ndarray, neighbourhood: str, boundary: str) -> np.ndarray:
    """Number of non-empty neighbours of every cell."""
    live = (grid > 0).astype(np.int64)
    n_rows, n_cols = live.shape
    padded = np.zeros((n_rows + 2, n_cols + 2), dtype=np.int64)
    padded[1:-1, 1:-1] = live
    if boundary == "toroidal":  # a ring of copies of the opposite edges
        padded[0, 1:-1], padded[-1, 1:-1] = live[-1], live[0]
        padded[1:-1, 0], padded[1:-1, -1] = live[:, -1], live[:, 0]
        padded[0, 0], padded[0, -1], padded[-1, 0], padded[-1, -1] = live[-1, -1], live[-1, 0], live[0, -1], live[0, 0]
    counts = np.zeros_like(live)
    for dr, dc in NEIGHBOURHOODS[neighbourhood]:
        counts += padded[1 + dr : 1 + dr + n_rows, 1 + dc : 1 + dc + n_cols]
    return counts


def step(grid: np.ndarray, rule: np.ndarray, neighbourhood: str, boundary: str) -> np.ndarray:
    return rule[grid, neighbour_counts(grid, neighbourhood, boundary)]


def simulate(grid: np.ndarray, rule: np.ndarray, neighbourhood: str, boundary: str, steps: int) -> np.ndarray:
    for _ in range(steps):
        grid = step(grid, rule, neighbourhood, boundary)
    return grid


def max_count(neighbourhood: str) -> int:
    return len(NEIGHBOURHOODS[neighbourhood])


def single_entry_variants(rule: np.ndarray, states: int) -> list[tuple[tuple[int, int], int, np.ndarray]]:
    """Every table that differs from ``rule`` in exactly one entry: ((state, count), value, table)."""
    out = []
    for s in range(rule.shape[0]):
        for c in range(rule.shape[1]):
            for value in range(states):
                if value != rule[s, c]:
                    variant = rule.copy()
                    variant[s, c] = value
                    out.append(((s, c), value, variant))
    return out


# ---------------------------------------------------------------- layout geometry


def grid_centres(origin: Sequence[float], cell: float, n: int) -> np.ndarray:
    """Centres (x, y) of an n x n grid's cells in row-major order, in SVG units."""
    ox, oy = origin
    rows, cols = np.divmod(np.arange(n * n), n)
    return np.stack([ox + (cols + 0.5) * cell, oy + (rows + 0.5) * cell], axis=1).astype(np.float64)


def table_entry_origin(meta: Mapping[str, Any]) -> tuple[float, float]:
    """Top-left corner of the rule table's entries (below the count headers, right of the state swatches)."""
    table = meta["layout"]["table"]
    x, y = table["origin"]
    return x + table["cell"] + table["gap"], y + table["cell"] + table["gap"]


def table_centres(meta: Mapping[str, Any]) -> np.ndarray:
    """Centres of the rule table's entries, row-major: (state, count)."""
    table = meta["layout"]["table"]
    ex, ey = table_entry_origin(meta)
    states, counts = meta["states"], max_count(meta["neighbourhood"]) + 1
    rows, cols = np.divmod(np.arange(states * counts), counts)
    return np.stack([ex + (cols + 0.5) * table["cell"], ey + (rows + 0.5) * table["cell"]], axis=1).astype(np.float64)


# ---------------------------------------------------------------- reading pictures


def load_answer(meta: Mapping[str, Any], image: Any, cell_units: float, task: str, puzzle: Any = None) -> Registration | Verdict:
    """The answer registered into the puzzle's frame, or an unusable verdict (unreadable, cannot be aligned, too small)."""
    return load_for_layout(meta, image, cell_units, MIN_CELL_PX, "cell", task, puzzle)


def read_states(meta: Mapping[str, Any], rgb: np.ndarray, centres: np.ndarray, cell_units: float) -> np.ndarray:
    """State shown at each centre (SVG units): 0..k-1, or BLANK where the background shows.

    Each sample is the median of a small window at the cell centre, classified to the nearest
    of the background and the state colours.
    """
    layout, palette = meta["layout"], meta["palette"]
    height, width = rgb.shape[:2]
    cell_px = cell_units * min(width / layout["width"], height / layout["height"])
    radius = max(1, int(cell_px * 0.15))
    points = centres / np.asarray([layout["width"], layout["height"]], dtype=np.float64)
    colours = [palette["background"], *palette["states"]]
    classes = nearest_palette(sample_colours(rgb, points, radius), [hex_to_rgb(c) for c in colours])
    return classes.astype(np.int64) - 1  # background -> BLANK (-1), state s -> s
