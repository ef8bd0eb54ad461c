"""Drawing the voxel scene (ortho_projection, iso_reconstruction) from meta alone.

Both tasks draw through it, and iso_reconstruction's strict mode draws its reference with
it, so the picture in a release and the strict mode's reference are the same code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vrforge.svgdraw import fmt, new_drawing, segments_path, to_string
from vrforge.verifiers.voxels import LEFT, RIGHT, SQRT3_2, TOP, lattice, render

GRID_SIDE = 144  # view grids: side and offset inside their panel (layout units)
GRID_OFFSET = 46
VIEW_SHADE = {"top": "top", "front": "left", "side": "right"}  # the face shade each view looks at
LABEL_KEY = {TOP: "top", LEFT: "left", RIGHT: "right"}
GRID_STROKE = 1.2  # view grid lines (layout units)
GROUND_STROKE = 3.0  # the ground under a front or side view: it covers part of the bottom row


def _pt(x: float, y: float) -> str:
    return f"{fmt(x)} {fmt(y)}"


def _poly(points: Sequence[tuple[float, float]]) -> str:
    head, *rest = points
    return "M" + _pt(*head) + "".join("L" + _pt(*p) for p in rest) + "Z"


def draw_scene(meta: Mapping[str, Any], heights: Sequence[Sequence[int]] | None = None,
               views: Mapping[str, Sequence[str]] | None = None) -> str:
    """The picture: glyphs, empty view grids and floor, plus the solid ``heights`` in the
    isometric panel and/or the filled ``views`` grids."""
    n, lay, palette = meta["size"], meta["layout"], meta["palette"]
    drawing = new_drawing(lay["width"], lay["height"], palette["background"])
    for view in ("top", "front", "side"):
        _glyph(drawing, palette, view, *lay["glyphs"][view])
    _floor(drawing, n, lay["iso"], palette)
    if heights is not None:
        _solid(drawing, heights, lay["iso"], palette)
    fills: dict[str, list[str]] = {key: [] for key in ("top", "left", "right")}
    lines: list[tuple[float, float, float, float]] = []
    grounds: list[tuple[float, float, float, float]] = []
    for view, grid in lay["grids"].items():
        (ox, oy), cell = grid["origin"], grid["cell"]
        if views is not None:
            for i, row in enumerate(views[view]):
                for j, ch in enumerate(row):
                    if ch == "1":
                        x0, y0, x1, y1 = ox + j * cell, oy + i * cell, ox + (j + 1) * cell, oy + (i + 1) * cell
                        fills[VIEW_SHADE[view]].append(_poly([(x0, y0), (x1, y0), (x1, y1), (x0, y1)]))
        side = n * cell
        lines += [(ox + k * cell, oy, ox + k * cell, oy + side) for k in range(n + 1)]
        lines += [(ox, oy + k * cell, ox + side, oy + k * cell) for k in range(n + 1)]
        if view != "top":  # the ground under a front or side view
            grounds.append((ox - 4, oy + side, ox + side + 4, oy + side))
    for key, parts in fills.items():
        if parts:
            drawing.add(drawing.path(d="".join(parts), fill=palette[key]))
    drawing.add(drawing.path(d=segments_path(lines), stroke=palette["grid"], stroke_width=GRID_STROKE, fill="none"))
    drawing.add(drawing.path(d=segments_path(grounds), stroke=palette["line"], stroke_width=fmt(GROUND_STROKE), fill="none"))
    return to_string(drawing)


def _floor(drawing: Any, n: int, iso: Mapping[str, Any], palette: Mapping[str, str]) -> None:
    (ox, oy), unit = iso["origin"], iso["unit"]

    def at(x: float, y: float) -> tuple[float, float]:
        return ox + (x - y) * SQRT3_2 * unit, oy + (x + y) / 2 * unit

    drawing.add(drawing.path(d=_poly([at(0, 0), at(n, 0), at(n, n), at(0, n)]), fill=palette["floor"]))
    segments = [(*at(k, 0), *at(k, n)) for k in range(n + 1)] + [(*at(0, k), *at(n, k)) for k in range(n + 1)]
    drawing.add(drawing.path(d=segments_path(segments), stroke=palette["floor_line"], stroke_width=fmt(max(0.8, 0.05 * unit)),
                             fill="none", stroke_linecap="round"))


def _solid(drawing: Any, heights: Sequence[Sequence[int]], iso: Mapping[str, Any], palette: Mapping[str, str]) -> None:
    n = len(heights)
    lat = lattice(n)
    labels, faces = render(heights)
    (ox, oy), unit = iso["origin"], iso["unit"]
    origin = np.asarray([ox, oy])
    for label, key in LABEL_KEY.items():
        tris = np.flatnonzero(labels == label)
        if len(tris):
            d = "".join(_poly([tuple(v) for v in origin + lat.vertices[t] * unit]) for t in tris)
            drawing.add(drawing.path(d=d, fill=palette[key]))
    a, b = faces[lat.edges[:, 0]], faces[lat.edges[:, 1]]
    drawn = (a != b) & ((a >= 0) | (b >= 0))
    ends = origin + lat.edge_ends[drawn] * unit
    segments = [(e[0, 0], e[0, 1], e[1, 0], e[1, 1]) for e in ends]
    if segments:
        drawing.add(drawing.path(d=segments_path(segments), stroke=palette["line"], stroke_width=fmt(max(1.0, 0.06 * unit)),
                                 fill="none", stroke_linecap="round"))


def _glyph(drawing: Any, palette: Mapping[str, str], view: str, px: float, py: float) -> None:
    """A small cube with the viewed face in its shade and an arrow along the viewing direction."""
    e = 14.0
    cx, cy = px + GRID_OFFSET + GRID_SIDE / 2, py + 20  # centred in the band above the grid

    def at(x: float, y: float, z: float) -> tuple[float, float]:  # unit cube centred on (cx, cy)
        return cx + (x - y) * SQRT3_2 * e, cy + ((x + y) / 2 - z + 0.5) * e

    faces = {
        "top": [at(0, 0, 1), at(1, 0, 1), at(1, 1, 1), at(0, 1, 1)],
        "left": [at(0, 1, 0), at(1, 1, 0), at(1, 1, 1), at(0, 1, 1)],
        "right": [at(1, 0, 0), at(1, 1, 0), at(1, 1, 1), at(1, 0, 1)],
    }
    shown = VIEW_SHADE[view]
    for key, corners in faces.items():
        drawing.add(drawing.path(d=_poly(corners), fill=palette[key] if key == shown else palette["glyph_off"],
                                 stroke=palette["line"], stroke_width=0.8, stroke_linejoin="round"))
    tip = np.mean(faces[shown], axis=0)
    direction = {"top": (0.0, 1.0), "front": (SQRT3_2, -0.5), "side": (-SQRT3_2, -0.5)}[view]  # on screen
    d = np.asarray(direction)
    start = tip - d * 1.3 * e
    normal = np.asarray([-d[1], d[0]])
    head = [tuple(tip), tuple(tip - d * 4.5 + normal * 2.6), tuple(tip - d * 4.5 - normal * 2.6)]
    drawing.add(drawing.path(d="M" + _pt(*start) + "L" + _pt(*(tip - d * 3)), stroke=palette["line"], stroke_width=1.6,
                             fill="none", stroke_linecap="round"))
    drawing.add(drawing.path(d=_poly(head), fill=palette["line"]))


# ---------------------------------------------------------------- distractor sets
