"""Shared by ca_forward and ca_inverse: palette, layout, drawing, random rules and grids, and
the grey levels by which the distractor choice tells answers apart. (A leading underscore:
not a task module.)

Picture, left to right on top: the start grid, an arrow with one pip per step, the result
grid (empty frame in ca_forward, the shown end state in ca_inverse). Below: the rule table.

- Boundary. The start grid is wrapped in a ring of faded cells, outlined thinly: what a border
  cell sees beyond the edge. Toroidal: faded copies of the opposite edge cells. Fixed: faded
  empty cells, and a thick wall around both grids.
- Rule table. The corner shows which neighbours are counted: a 3x3 glyph, the centre cell dark,
  the counted positions (a plus for von Neumann, the full ring for Moore) filled with the
  states that count, the non-empty ones (state > 0), each position split between them; the
  pale "empty" colour (state 0) never appears there. Column headers show the neighbour count
  as dice pips (a hollow ring for zero), row headers a swatch of the current state; each entry
  is filled with the next state's colour (white = still to fill).
- Steps. One pip above the arrow per application of the rule.

Grids beyond hard's size (10) scale everything but the grid cells (the arrow, the table, the
wall, their strokes) by ``chrome_scale``, so that those keep the share of the picture's width
they have at hard and stay as legible.

All colours are at least 32 apart in RGB, so the crisp rasters encode as exact palette PNGs.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

import numpy as np
import svgwrite

from vrforge.svgdraw import fmt, new_drawing, segments_path, to_string
from vrforge.types import Puzzle
from vrforge.verifiers._ca_common import NEIGHBOURHOODS, decode, encode, max_count
from vrforge.verifiers.sampling import hex_luminance

CELL = 20  # SVG units per grid cell
MARGIN = 20
ARROW_W = 80  # room between the grids for the arrow (at chrome scale 1)
TABLE_GAP = 16  # between the grids and the rule table
HEADER_GAP = 6  # between the table headers and its entries
GRID_LINE = 1.5  # grid line width (at chrome scale 1)
WALL = 5  # thickness of the fixed boundary's wall (at chrome scale 1)
STEP_SPACING, STEP_RADIUS = 12, 4  # the step pips above the arrow (at chrome scale 1)
PIP_RADIUS, PIP_SPACING = 0.1, 0.28  # header dice pips, as shares of the table cell
GLYPH_CELLS = 3.6  # the corner glyph's cells are table cell / GLYPH_CELLS
SCALE_FROM = 12  # cells across a grid block (10 + the ring) at hard, where the chrome scale is 1

STATE_COLOURS = ("#cfd8dc", "#1565c0", "#f9a825")  # empty, blue, amber
GHOST_COLOURS = ("#e8ecef", "#9fc3ea", "#fcd992")  # the same, faded (wrap ring)
PALETTE = {
    "background": "#ffffff",
    "line": "#78909c",
    "ring_line": "#b0bec5",
    "ink": "#263238",
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

# The rules both tasks' verifiers rely on, and where the picture shows each (no words).
CONVENTIONS = {
    "the next state of a cell is the rule table's entry in the row of its current state and the column of its count":
        "row headers are swatches of the current state, column headers dice pips (a hollow ring for zero), "
        "entries filled with the next state's colour",
    "the neighbours counted are the 4 edge neighbours (von Neumann) or all 8 around (Moore)":
        "the corner glyph of the rule table: the cell itself dark, the counted positions coloured (a plus or a full ring)",
    "only non-empty neighbours count (every state but the pale empty one)":
        "the corner glyph's counted positions are filled with the non-empty states' colours, split between them; "
        "the empty colour never appears there",
    "a toroidal boundary wraps: a border cell's neighbours beyond the edge are the opposite edge's cells":
        "a ring of faded copies of the opposite edge cells around the start grid",
    "a fixed boundary has only empty cells beyond the edge":
        "a thick wall around both grids and a ring of faded empty cells around the start grid",
    "every cell updates at once from the previous grid":
        "the result is a separate grid beside the start, reached along one arrow",
}


def palette(states: int) -> dict:
    return {**PALETTE, "states": list(STATE_COLOURS[:states]), "ghosts": list(GHOST_COLOURS[:states])}


def chrome_scale(size: int) -> float:
    """How much larger than at hard the arrow, table and wall are drawn for a grid of ``size``."""
    return max(1.0, (size + 2) / SCALE_FROM)


def arrow_width(max_steps: int) -> float:
    """Room between the grids at chrome scale 1: the arrow, and a row of ``max_steps`` pips above it."""
    return max(ARROW_W, STEP_SPACING * (max_steps - 1) + 2 * STEP_RADIUS + 20)


def layout(size: int, states: int, neighbourhood: str, table_cell: float, max_steps: int = 1) -> dict:
    counts = max_count(neighbourhood) + 1
    scale = chrome_scale(size)
    block = (size + 2) * CELL  # a grid with room for the wrap ring
    arrow = arrow_width(max_steps) * scale
    table_cell, header_gap = table_cell * scale, HEADER_GAP * scale
    width = 2 * MARGIN + 2 * block + arrow
    table_w = table_cell + header_gap + counts * table_cell
    table_h = table_cell + header_gap + states * table_cell
    table_y = MARGIN + block + TABLE_GAP * scale
    out = {
        "width": width,
        "height": table_y + table_h + MARGIN,
        "cell": CELL,
        "start_origin": [MARGIN + CELL, MARGIN + CELL],
        "result_origin": [MARGIN + block + arrow + CELL, MARGIN + CELL],
        "table": {"origin": [(width - table_w) / 2, table_y], "cell": table_cell, "gap": header_gap},
    }
    if scale != 1:
        out["scale"] = scale
    return out


def grid_line(scale: float) -> float:
    # Grid lines grow with the chrome: on a large grid a hairline snaps to a pixel at some
    # lines and to none at others, and rows can no longer be counted. Past a grid of 34 (scale
    # 3) cells are legible only from 1024 px, where a line of 4.5 units is over a pixel already.
    return GRID_LINE * min(scale, 3.0)


def wall_width(scale: float) -> float:
    # Thicker with the chrome, but never more than half the ring cell it covers.
    return WALL * min(scale, 2.0)


def _pip_gap(count: int) -> float:
    """Least background between two header pips of a count up to ``count``, as a share of the table cell."""
    gaps = [np.hypot(r1 - r2, c1 - c2) * PIP_SPACING - 2 * PIP_RADIUS
            for n in range(2, count + 1) for i, (r1, c1) in enumerate(PIPS[n]) for r2, c2 in PIPS[n][i + 1:]]
    return float(min(gaps))


def legibility(layout_: dict, neighbourhood: str, max_steps: int) -> dict[str, float]:
    """The smallest features a solver must tell apart, as shares of the picture's width (worst case
    over the level's puzzles: the layout depends only on the config)."""
    width, scale = layout_["width"], layout_.get("scale", 1.0)
    table_cell = layout_["table"]["cell"]
    line = grid_line(scale)
    out = {
        "cell": layout_["cell"] / width,
        "cell_fill": (layout_["cell"] - line) / width,
        "grid_line": line / width,
        "table_entry": table_cell / width,
        "glyph_cell": table_cell / GLYPH_CELLS / width,
        "count_pip": 2 * PIP_RADIUS * table_cell / width,
        "count_pip_gap": _pip_gap(max_count(neighbourhood)) * table_cell / width,
        "step_pip": 2 * STEP_RADIUS * scale / width,
        "wall": wall_width(scale) / width,
    }
    if max_steps > 1:
        out["step_pip_gap"] = (STEP_SPACING - 2 * STEP_RADIUS) * scale / width
    return out


# Least pixels of each legibility feature (the drawings are crisp: no anti-aliasing, edges snap to pixels).
LEGIBILITY_FLOORS = {
    "cell": 6.0,  # under 6 px a cell and its neighbours cannot be counted along a row of 32
    "cell_fill": 4.0,  # under 4 px of colour inside its grid lines a cell's state is a speck
    "grid_line": 1.0,  # a line under 1 px lands on a pixel at some lines and on none at others: rows blur together
    "table_entry": 10.0,  # under 10 px a rule entry's colour is a speck beside the dice headers
    "glyph_cell": 5.0,  # under 5 px a glyph cell cannot show its split between the two counted colours
    "count_pip": 3.0,  # a dot under 3 px across snaps to one or two pixels and stops reading as a pip
    "count_pip_gap": 2.0,  # under 2 px of background two pips' snapped edges can touch and merge
    "step_pip": 3.0,  # as for the count pips
    "step_pip_gap": 2.0,  # as for the count pips: the steps must be countable
    "wall": 2.0,  # a wall under 2 px is no thicker than a grid line: fixed would look like wrapped
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


def _runs_path(origin: Sequence[float], cell: float, mask: np.ndarray) -> str:
    """The cells of ``mask`` as one path, each horizontal run of neighbours one rectangle."""
    ox, oy = origin
    parts = []
    for r, row in enumerate(np.asarray(mask, dtype=bool)):
        edges = np.flatnonzero(np.diff(np.concatenate(([0], row.view(np.int8), [0]))))
        for start, stop in zip(edges[::2].tolist(), edges[1::2].tolist()):
            w = (stop - start) * cell
            parts.append(f"M{fmt(ox + start * cell)} {fmt(oy + r * cell)}h{fmt(w)}v{fmt(cell)}h{fmt(-w)}z")
    return " ".join(parts)


def _fill_cells(drawing: svgwrite.Drawing, origin: Sequence[float], cell: float, grid: np.ndarray, colours: Sequence[str]) -> None:
    """One path per colour, each run of equal neighbours in a row one rectangle (cells with a
    negative value are left empty). A grid without such cells is first covered in state 0's
    colour, so only the other states are drawn: the SVG is parsed for every picture rendered,
    and on a 32 x 32 grid these two save most of its path. Drawn crisp, the pixels are those of
    one square per cell."""
    grid = np.asarray(grid)
    first = 0
    if grid.size > 1 and (grid >= 0).all():
        rows, cols = grid.shape
        drawing.add(drawing.path(d=f"M{fmt(origin[0])} {fmt(origin[1])}h{fmt(cols * cell)}v{fmt(rows * cell)}h{fmt(-cols * cell)}z",
                                 fill=colours[0]))
        first = 1
    for state in range(first, len(colours)):
        if (grid == state).any():
            drawing.add(drawing.path(d=_runs_path(origin, cell, grid == state), fill=colours[state]))


def draw_grid(drawing: svgwrite.Drawing, meta: dict, origin: Sequence[float], grid: np.ndarray | None, ring: bool) -> None:
    """An n x n grid (None: an empty frame), with the boundary marking."""
    pal, n = meta["palette"], meta["size"]
    ox, oy = origin
    toroidal = meta["boundary"] == "toroidal"
    line = grid_line(meta["layout"].get("scale", 1.0))
    if ring and grid is not None:  # what a border cell sees beyond the edge: the opposite edge, or empty cells
        ring_grid = np.pad(grid, 1, mode="wrap") if toroidal else np.zeros((n + 2, n + 2), dtype=np.int64)
        ring_grid[1:-1, 1:-1] = -1
        _fill_cells(drawing, (ox - CELL, oy - CELL), CELL, ring_grid, pal["ghosts"])
        drawing.add(drawing.path(d=segments_path(_lines((ox - CELL, oy - CELL), CELL, n + 2, n + 2)), stroke=pal["ring_line"],
                                 stroke_width=fmt(line), fill="none"))
    if grid is not None:
        _fill_cells(drawing, origin, CELL, grid, pal["states"])
    drawing.add(drawing.path(d=segments_path(_lines(origin, CELL, n, n)), stroke=pal["line"], stroke_width=fmt(line), fill="none"))
    if not toroidal:
        wall = wall_width(meta["layout"].get("scale", 1.0))
        side = n * CELL + wall
        drawing.add(drawing.rect(insert=(fmt(ox - wall / 2), fmt(oy - wall / 2)), size=(fmt(side), fmt(side)),
                                 fill="none", stroke=pal["ink"], stroke_width=fmt(wall)))


def draw_arrow(drawing: svgwrite.Drawing, meta: dict, steps: int) -> None:
    """An arrow from the start grid to the result grid with one pip per step above it."""
    layout, pal = meta["layout"], meta["palette"]
    n, k = meta["size"], layout.get("scale", 1.0)
    x0 = layout["start_origin"][0] + (n + 1) * CELL + 10 * k
    x1 = layout["result_origin"][0] - CELL - 10 * k
    y = layout["start_origin"][1] + n * CELL / 2 + 8 * k
    shaft = f"M{fmt(x0)} {fmt(y)}L{fmt(x1)} {fmt(y)}"
    head = f"M{fmt(x1 - 10 * k)} {fmt(y - 8 * k)}L{fmt(x1)} {fmt(y)}L{fmt(x1 - 10 * k)} {fmt(y + 8 * k)}"
    drawing.add(drawing.path(d=shaft + head, stroke=pal["ink"], stroke_width=fmt(3 * k), fill="none"))
    spacing, radius = STEP_SPACING * k, STEP_RADIUS * k
    first = (x0 + x1) / 2 - (steps - 1) * spacing / 2
    drawing.add(drawing.path(d=_dots_path([(first + i * spacing, y - 16 * k) for i in range(steps)], radius), fill=pal["ink"]))


def _split_path(origin: Sequence[float], cell: float, cells: Sequence[tuple[int, int]], part: int, parts: int) -> str:
    """Part ``part`` of ``parts`` of each cell: the whole cell, or a triangle of its diagonal split
    (upper-left, lower-right) when two colours share it."""
    if parts == 1:
        return _cells_path(origin, cell, cells)
    ox, oy = origin
    c = fmt(cell)
    if part == 0:
        return " ".join(f"M{fmt(ox + j * cell)} {fmt(oy + i * cell)}h{c}l{fmt(-cell)} {c}z" for i, j in cells)
    return " ".join(f"M{fmt(ox + (j + 1) * cell)} {fmt(oy + i * cell)}v{c}h{fmt(-cell)}z" for i, j in cells)


def counted_offsets(neighbourhood: str) -> list[tuple[int, int]]:
    """The corner glyph's counted positions (row, column in its 3x3 lattice)."""
    return [(dr + 1, dc + 1) for dr, dc in sorted(NEIGHBOURHOODS[neighbourhood])]


def draw_table(drawing: svgwrite.Drawing, meta: dict, table: np.ndarray) -> None:
    """The rule table; entries < 0 are drawn empty (to be filled in)."""
    pal, geometry = meta["palette"], meta["layout"]["table"]
    states, counts = meta["states"], max_count(meta["neighbourhood"]) + 1
    tc, gap = geometry["cell"], geometry["gap"]
    tx, ty = geometry["origin"]
    ex, ey = tx + tc + gap, ty + tc + gap
    k = meta["layout"].get("scale", 1.0)
    # The corner glyph: the cell itself dark, the counted positions in the colours of the states
    # that count (the non-empty ones, sharing each position); state 0's colour never appears.
    mini = tc / GLYPH_CELLS
    gx, gy = tx + (tc - 3 * mini) / 2, ty + (tc - 3 * mini) / 2
    counted = counted_offsets(meta["neighbourhood"])
    live = pal["states"][1:]
    for part, colour in enumerate(live):
        drawing.add(drawing.path(d=_split_path((gx, gy), mini, counted, part, len(live)), fill=colour))
    drawing.add(drawing.path(d=_cells_path((gx, gy), mini, [(1, 1)]), fill=pal["ink"]))
    drawing.add(drawing.path(d=segments_path(_lines((gx, gy), mini, 3, 3)), stroke=pal["line"], stroke_width=fmt(k), fill="none"))
    # Count headers: dice pips.
    radius = PIP_RADIUS * tc
    dots = []
    for c in range(counts):
        cx, cy = ex + (c + 0.5) * tc, ty + tc / 2
        dots += [(cx + (j - 1) * PIP_SPACING * tc, cy + (r - 1) * PIP_SPACING * tc) for r, j in PIPS[c]]
    drawing.add(drawing.path(d=_dots_path(dots, radius), fill=pal["ink"]))
    drawing.add(drawing.circle(center=(fmt(ex + 0.5 * tc), fmt(ty + tc / 2)), r=fmt(radius * 1.6), fill="none", stroke=pal["ink"],
                               stroke_width=fmt(1.5 * k)))
    # State swatches.
    inset = 0.14 * tc
    for s in range(states):
        side = tc - 2 * inset
        drawing.add(drawing.path(d=f"M{fmt(tx + inset)} {fmt(ey + s * tc + inset)}h{fmt(side)}v{fmt(side)}h{fmt(-side)}z",
                                 fill=pal["states"][s], stroke=pal["ink"], stroke_width=fmt(1.5 * k)))
    _fill_cells(drawing, (ex, ey), tc, np.asarray(table), pal["states"])
    drawing.add(drawing.path(d=segments_path(_lines((ex, ey), tc, states, counts)), stroke=pal["ink"], stroke_width=fmt(1.5 * k),
                             fill="none"))


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
