"""Shared by ca_forward and ca_inverse: palette, layout, drawing, random rules and grids, and
the grey levels by which the distractor choice tells answers apart. (A leading underscore:
not a task module.)

Picture, left to right on top: the start grid, an arrow with one pip per step, the result
grid (empty frame in ca_forward, the shown end state in ca_inverse). Below: the rule table.

- Boundary. Toroidal: the start grid is wrapped in a ring of faded copies of the opposite
  edge cells (what a border cell sees beyond the edge), outlined thinly. Fixed: no ring and a
  thick wall around both grids (beyond it every cell is empty).
- Rule table. The corner shows the neighbourhood: a 3x3 glyph, the centre cell dark and the
  counted neighbours grey (a plus for von Neumann, the full ring for Moore). Column headers
  show the neighbour count as dice pips (a hollow ring for zero), row headers a swatch of the
  current state; each entry is filled with the next state's colour (white = still to fill).
  Counted neighbours are the non-empty ones (state > 0; state 0 is the pale "empty" colour).

All colours are at least 32 apart in RGB, so the crisp rasters encode as exact palette PNGs.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

import numpy as np
import svgwrite

from vrforge.svgdraw import fmt, new_drawing, segments_path, to_string
from vrforge.types import Puzzle
from vrforge.verifiers._ca_common import decode, encode, max_count
from vrforge.verifiers.sampling import hex_luminance

CELL = 20  # SVG units per grid cell
MARGIN = 20
ARROW_W = 80
TABLE_GAP = 16  # between the grids and the rule table
HEADER_GAP = 6  # between the table headers and its entries

STATE_COLOURS = ("#cfd8dc", "#1565c0", "#f9a825")  # empty, blue, amber
GHOST_COLOURS = ("#e8ecef", "#9fc3ea", "#fcd992")  # the same, faded (wrap ring)
PALETTE = {
    "background": "#ffffff",
    "line": "#78909c",
    "ring_line": "#b0bec5",
    "ink": "#263238",
    "neighbour": "#90a4ae",
}

# Dice layouts for 0..9 pips on a 3x3 lattice (row, col), as on playing dice.
PIPS = {
    0: (),
    1: ((1, 1),),
    2: ((0, 2), (2, 0)),
    3: ((0, 2), (1, 1), (2, 0)),
    4: ((0, 0), (0, 2), (2, 0), (2, 2)),
    5: ((0, 0), (0, 2), (1, 1), (2, 0), (2, 2)),
    6: ((0, 0), (1, 0), (2, 0), (0, 2), (1, 2), (2, 2)),
    7: ((0, 0), (1, 0), (2, 0), (0, 2), (1, 2), (2, 2), (1, 1)),
    8: ((0, 0), (0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1), (2, 2)),
    9: tuple(product(range(3), range(3))),
}


def palette(states: int) -> dict:
    return {**PALETTE, "states": list(STATE_COLOURS[:states]), "ghosts": list(GHOST_COLOURS[:states])}


def layout(size: int, states: int, neighbourhood: str, table_cell: float) -> dict:
    counts = max_count(neighbourhood) + 1
    block = (size + 2) * CELL  # a grid with room for the wrap ring
    width = 2 * MARGIN + 2 * block + ARROW_W
    table_w = table_cell + HEADER_GAP + counts * table_cell
    table_h = table_cell + HEADER_GAP + states * table_cell
    table_y = MARGIN + block + TABLE_GAP
    return {
        "width": width,
        "height": table_y + table_h + MARGIN,
        "cell": CELL,
        "start_origin": [MARGIN + CELL, MARGIN + CELL],
        "result_origin": [MARGIN + block + ARROW_W + CELL, MARGIN + CELL],
        "table": {"origin": [(width - table_w) / 2, table_y], "cell": table_cell, "gap": HEADER_GAP},
    }


# ---------------------------------------------------------------- random material


def random_rule(rng: np.random.Generator, states: int, neighbourhood: str) -> np.ndarray:
    counts = max_count(neighbourhood) + 1
    return rng.integers(states, size=(states, counts)).astype(np.int64)


def random_grid(rng: np.random.Generator, size: int, states: int, density: float) -> np.ndarray:
    live = rng.random((size, size)) < density
    colours = rng.integers(1, states, size=(size, size))
    return np.where(live, colours, 0).astype(np.int64)


# ---------------------------------------------------------------- distractor choice


def luminance(states: Sequence[str]) -> np.ndarray:
    """Grey level of each state colour, then of the background (index -1), as pickers see them."""
    return np.asarray([hex_luminance(colour) for colour in [*states, "#ffffff"]], dtype=np.float64)


# ---------------------------------------------------------------- drawing


def _cells_path(origin: Sequence[float], cell: float, cells: Sequence[tuple[int, int]]) -> str:
    ox, oy = origin
    return " ".join(f"M{fmt(ox + c * cell)} {fmt(oy + r * cell)}h{fmt(cell)}v{fmt(cell)}h{fmt(-cell)}z" for r, c in cells)


def _dots_path(centres: Sequence[tuple[float, float]], radius: float) -> str:
    """Filled discs as one path (two half-circle arcs each)."""
    r = fmt(radius)
    return " ".join(f"M{fmt(x - radius)} {fmt(y)}a{r} {r} 0 1 0 {fmt(2 * radius)} 0a{r} {r} 0 1 0 {fmt(-2 * radius)} 0z"
                    for x, y in centres)


def _lines(origin: Sequence[float], cell: float, rows: int, cols: int) -> list[tuple[float, float, float, float]]:
    ox, oy = origin
    segments = [(ox, oy + i * cell, ox + cols * cell, oy + i * cell) for i in range(rows + 1)]
    segments += [(ox + j * cell, oy, ox + j * cell, oy + rows * cell) for j in range(cols + 1)]
    return segments


def _fill_cells(drawing: svgwrite.Drawing, origin: Sequence[float], cell: float, grid: np.ndarray, colours: Sequence[str]) -> None:
    """One path per colour (cells with a negative value are left empty)."""
    for state, colour in enumerate(colours):
        cells = [(int(r), int(c)) for r, c in np.argwhere(grid == state)]
        if cells:
            drawing.add(drawing.path(d=_cells_path(origin, cell, cells), fill=colour))


def draw_grid(drawing: svgwrite.Drawing, meta: dict, origin: Sequence[float], grid: np.ndarray | None, ring: bool) -> None:
    """An n x n grid (None: an empty frame), with the boundary marking."""
    pal, n = meta["palette"], meta["size"]
    ox, oy = origin
    toroidal = meta["boundary"] == "toroidal"
    if ring and toroidal and grid is not None:
        wrapped = np.pad(grid, 1, mode="wrap")
        ring_grid = wrapped.copy()
        ring_grid[1:-1, 1:-1] = -1
        _fill_cells(drawing, (ox - CELL, oy - CELL), CELL, ring_grid, pal["ghosts"])
        drawing.add(drawing.path(d=segments_path(_lines((ox - CELL, oy - CELL), CELL, n + 2, n + 2)), stroke=pal["ring_line"],
                                 stroke_width=1.5, fill="none"))
    if grid is not None:
        _fill_cells(drawing, origin, CELL, grid, pal["states"])
    drawing.add(drawing.path(d=segments_path(_lines(origin, CELL, n, n)), stroke=pal["line"], stroke_width=1.5, fill="none"))
    if not toroidal:
        side = n * CELL + 5
        drawing.add(drawing.rect(insert=(fmt(ox - 2.5), fmt(oy - 2.5)), size=(fmt(side), fmt(side)),
                                 fill="none", stroke=pal["ink"], stroke_width=5))


def draw_arrow(drawing: svgwrite.Drawing, meta: dict, steps: int) -> None:
    """An arrow from the start grid to the result grid with one pip per step above it."""
    layout, pal = meta["layout"], meta["palette"]
    n = meta["size"]
    x0 = layout["start_origin"][0] + (n + 1) * CELL + 10
    x1 = layout["result_origin"][0] - CELL - 10
    y = layout["start_origin"][1] + n * CELL / 2 + 8
    shaft = f"M{fmt(x0)} {fmt(y)}L{fmt(x1)} {fmt(y)}"
    head = f"M{fmt(x1 - 10)} {fmt(y - 8)}L{fmt(x1)} {fmt(y)}L{fmt(x1 - 10)} {fmt(y + 8)}"
    drawing.add(drawing.path(d=shaft + head, stroke=pal["ink"], stroke_width=3, fill="none"))
    spacing, radius = 12, 4
    first = (x0 + x1) / 2 - (steps - 1) * spacing / 2
    drawing.add(drawing.path(d=_dots_path([(first + i * spacing, y - 16) for i in range(steps)], radius), fill=pal["ink"]))


def draw_table(drawing: svgwrite.Drawing, meta: dict, table: np.ndarray) -> None:
    """The rule table; entries < 0 are drawn empty (to be filled in)."""
    pal, geometry = meta["palette"], meta["layout"]["table"]
    states, counts = meta["states"], max_count(meta["neighbourhood"]) + 1
    tc, gap = geometry["cell"], geometry["gap"]
    tx, ty = geometry["origin"]
    ex, ey = tx + tc + gap, ty + tc + gap
    # Neighbourhood glyph in the corner.
    mini = tc / 3.6
    gx, gy = tx + (tc - 3 * mini) / 2, ty + (tc - 3 * mini) / 2
    offsets = {(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)}
    if meta["neighbourhood"] == "von_neumann":
        offsets = {(-1, 0), (1, 0), (0, -1), (0, 1)}
    counted = [(dr + 1, dc + 1) for dr, dc in sorted(offsets)]
    drawing.add(drawing.path(d=_cells_path((gx, gy), mini, counted), fill=pal["neighbour"]))
    drawing.add(drawing.path(d=_cells_path((gx, gy), mini, [(1, 1)]), fill=pal["ink"]))
    drawing.add(drawing.path(d=segments_path(_lines((gx, gy), mini, 3, 3)), stroke=pal["line"], stroke_width=1, fill="none"))
    # Count headers: dice pips.
    radius = 0.1 * tc
    dots = []
    for c in range(counts):
        cx, cy = ex + (c + 0.5) * tc, ty + tc / 2
        dots += [(cx + (k - 1) * 0.28 * tc, cy + (r - 1) * 0.28 * tc) for r, k in PIPS[c]]
    drawing.add(drawing.path(d=_dots_path(dots, radius), fill=pal["ink"]))
    drawing.add(drawing.circle(center=(fmt(ex + 0.5 * tc), fmt(ty + tc / 2)), r=fmt(radius * 1.6), fill="none", stroke=pal["ink"],
                               stroke_width=1.5))
    # State swatches.
    inset = 0.14 * tc
    for s in range(states):
        side = tc - 2 * inset
        drawing.add(drawing.path(d=f"M{fmt(tx + inset)} {fmt(ey + s * tc + inset)}h{fmt(side)}v{fmt(side)}h{fmt(-side)}z",
                                 fill=pal["states"][s], stroke=pal["ink"], stroke_width=1.5))
    _fill_cells(drawing, (ex, ey), tc, np.asarray(table), pal["states"])
    drawing.add(drawing.path(d=segments_path(_lines((ex, ey), tc, states, counts)), stroke=pal["ink"], stroke_width=1.5, fill="none"))


def draw_scene(meta: dict, result: np.ndarray | None, table: np.ndarray) -> str:
    """The whole picture: start grid, arrow with step pips, result grid (None = empty frame), rule table."""
    layout = meta["layout"]
    drawing = new_drawing(layout["width"], layout["height"], meta["palette"]["background"], crisp=True)
    draw_grid(drawing, meta, layout["start_origin"], decode(meta["start"]), ring=True)
    draw_arrow(drawing, meta, meta["steps"])
    draw_grid(drawing, meta, layout["result_origin"], result, ring=False)
    draw_table(drawing, meta, table)
    return to_string(drawing)


def assemble(meta: dict, solution: np.ndarray, chosen: Sequence[tuple[str, np.ndarray]], stats: dict[str, float],
             rng: np.random.Generator) -> Puzzle:
    """The puzzle from the four chosen (violation, grid) distractors, shown in random order."""
    order = rng.permutation(4).tolist()
    return Puzzle(meta=meta, solution=encode(solution), distractors=tuple(encode(chosen[i][1]) for i in order),
                  violations=tuple(chosen[i][0] for i in order), answer_index=int(rng.integers(5)), stats=stats)
