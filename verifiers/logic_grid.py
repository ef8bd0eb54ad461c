"""Visual logic grid verifier: read the symbol in every cell by its colour, then check the rules.

The answer image is the puzzle with every cell filled by one of the N symbols. Each cell is
read by the median colour of a small window at its centre, classified to the nearest of the
symbol colours, the background and the ink; background or ink there means an empty cell.
The grid read back is then judged on its own: every cell filled, givens kept, no symbol
twice in a row or a column, every ordering chevron obeyed (the cell on the chevron's open
side holds the later symbol of the legend), no cell holding a symbol crossed out in it. Any
grid satisfying all of them passes; the stored solution is never compared against.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vrforge.types import Verdict
from vrforge.verifiers.sampling import hex_to_rgb, load_for_layout, nearest_palette, sample_colours

CHECKS = ("empty_cell", "given_changed", "row_repeat", "column_repeat", "order_violation", "forbidden_symbol")
MIN_CELL_PX = 6.0
SAMPLE_RADIUS = 0.06  # of a cell: the window read at each cell centre
EMPTY = -1

Grid = Sequence[Sequence[int]]  # grid[row][col]: symbol index, or EMPTY


def judge(meta: Mapping[str, Any], grid: Grid) -> dict[str, bool]:
    """Check an abstract grid; each check is True when the grid does NOT commit that violation.

    A rule that involves an empty cell is not judged (``empty_cell`` already fails), so an
    incomplete grid fails only the checks its filled cells break.
    """
    n = meta["size"]

    def repeats(lines: list[list[int]]) -> bool:
        for line in lines:
            filled = [v for v in line if v != EMPTY]
            if len(set(filled)) != len(filled):
                return True
        return False

    rows = [[int(grid[r][c]) for c in range(n)] for r in range(n)]
    columns = [[rows[r][c] for r in range(n)] for c in range(n)]
    order_ok = True
    for rb, cb, rs, cs in meta["orders"]:
        big, small = rows[rb][cb], rows[rs][cs]
        if big != EMPTY and small != EMPTY and not big > small:
            order_ok = False
    return {
        "empty_cell": all(v != EMPTY for row in rows for v in row),
        "given_changed": all(rows[r][c] == s for r, c, s in meta["givens"]),
        "row_repeat": not repeats(rows),
        "column_repeat": not repeats(columns),
        "order_violation": order_ok,
        "forbidden_symbol": all(rows[r][c] != s for r, c, s in meta["forbidden"]),
    }


def cell_points(meta: Mapping[str, Any]) -> np.ndarray:
    """Normalised (x, y) of every cell centre, row by row."""
    layout = meta["layout"]
    n, cell = meta["size"], layout["cell"]
    ox, oy = layout["origin"]
    points = [(ox + (c + 0.5) * cell, oy + (r + 0.5) * cell) for r in range(n) for c in range(n)]
    return np.asarray(points, dtype=np.float64) / np.asarray([layout["width"], layout["height"]], dtype=np.float64)


def read_grid(meta: Mapping[str, Any], image: np.ndarray) -> list[list[int]]:
    """The symbol index visible at each cell centre (EMPTY for background or ink)."""
    layout, palette = meta["layout"], meta["palette"]
    height, width = image.shape[:2]
    cell_px = layout["cell"] * min(width / layout["width"], height / layout["height"])
    radius = max(1, int(cell_px * SAMPLE_RADIUS))
    symbols = palette["symbols"]
    reference = [hex_to_rgb(c) for c in symbols] + [hex_to_rgb(palette["background"]), hex_to_rgb(palette["ink"])]
    classes = nearest_palette(sample_colours(image, cell_points(meta), radius), reference)
    n = meta["size"]
    values = [int(k) if k < len(symbols) else EMPTY for k in classes]
    return [values[r * n : (r + 1) * n] for r in range(n)]


def verify(meta: Mapping[str, Any], image: Any, puzzle: Any = None) -> Verdict:
    """Verdict for an answer image: the puzzle grid with a symbol in every cell."""
    frame = load_for_layout(meta, image, meta["layout"]["cell"], MIN_CELL_PX, "cell", "logic_grid", puzzle)
    if isinstance(frame, Verdict):
        return frame
    rgb = frame.image
    grid = read_grid(meta, rgb)
    checks = judge(meta, grid)
    return Verdict.from_checks(checks, details={"grid": grid, "registration": frame.details})
