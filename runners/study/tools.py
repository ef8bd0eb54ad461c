"""The built-in tasks' answer tools (see ``vrforge.answer_tools``), and what their instructions pages add.

Each tool spec is built from ``meta`` and holds only what the picture itself shows: geometry in
the SVG units of the task's drawing, palettes, and the targets a click changes. Solutions,
rules and answer keys (``meta["views"]``, ``meta["heights"]``, ``meta["rules"]``,
``meta["unknot"]``...) never enter a spec: the spec is sent to the browser.

``build`` turns the structured answer the page sends back into the task's own answer object,
which the task's ``draw`` draws and its verifier scores. ``encode`` is the inverse (a known
answer object as tool actions), used by scripted participants; it returns None for an answer
the tools cannot make (an off-palette colour, a changed given).

``BUILTIN_TOOLS`` maps each built-in task to its tools until the task's own ``TaskSpec``
declares them (``answer_tools``); ``tools_for`` prefers the TaskSpec's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vrforge.answer_tools import AnswerError, AnswerTools

# ---------------------------------------------------------------- shared checks


def _list(answer: Mapping[str, Any], key: str, length: int | None = None) -> list[Any]:
    value = answer.get(key) if isinstance(answer, Mapping) else None
    if not isinstance(value, list):
        raise AnswerError(f"the answer needs a list {key!r}")
    if length is not None and len(value) != length:
        raise AnswerError(f"{key!r} needs {length} entries, got {len(value)}")
    return value


def _int(value: Any, low: int, high: int, what: str) -> int:
    """An integer in [low, high] (bools are not integers here)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise AnswerError(f"{what} must be a whole number from {low} to {high}, got {value!r}")
    return value


def _rect(x: float, y: float, w: float, h: float) -> dict[str, Any]:
    return {"shape": "rect", "x": round(float(x), 3), "y": round(float(y), 3), "w": round(float(w), 3), "h": round(float(h), 3)}


def _disc(cx: float, cy: float, r: float) -> dict[str, Any]:
    return {"shape": "circle", "cx": round(float(cx), 3), "cy": round(float(cy), 3), "r": round(float(r), 3)}


def _frame(meta: Mapping[str, Any]) -> dict[str, float]:
    return {"width": float(meta["layout"]["width"]), "height": float(meta["layout"]["height"])}


# ---------------------------------------------------------------- cellular automata


def _ca_palette(meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    colours = meta["palette"]["states"]
    return [{"value": s, "colour": colours[s], "label": "empty" if s == 0 else f"state {s}"} for s in range(meta["states"])]


def _ca_forward_spec(meta: Mapping[str, Any]) -> dict[str, Any]:
    n, cell = meta["size"], meta["layout"]["cell"]
    ox, oy = meta["layout"]["result_origin"]
    targets = [_rect(ox + c * cell, oy + r * cell, cell, cell) for r in range(n) for c in range(n)]
    return {**_frame(meta), "palette": _ca_palette(meta), "eraser": False, "targets": targets, "initial": [0] * (n * n)}


def _ca_forward_build(meta: Mapping[str, Any], answer: Mapping[str, Any]) -> list[str]:
    n, top = meta["size"], meta["states"] - 1
    values = [_int(v, 0, top, "a cell's state") for v in _list(answer, "values", n * n)]
    return ["".join(str(v) for v in values[r * n:(r + 1) * n]) for r in range(n)]


def _ca_forward_encode(meta: Mapping[str, Any], rows: Sequence[str]) -> dict[str, Any]:
    return {"values": [int(ch) for row in rows for ch in row]}


def _ca_inverse_unknown(meta: Mapping[str, Any]) -> list[tuple[int, int]]:
    from vrforge.verifiers.ca_inverse import UNKNOWN

    return [(s, c) for s, row in enumerate(meta["given"]) for c, ch in enumerate(row) if ch == UNKNOWN]


def _ca_inverse_spec(meta: Mapping[str, Any]) -> dict[str, Any]:
    table = meta["layout"]["table"]
    tc, gap = table["cell"], table["gap"]
    tx, ty = table["origin"]
    ex, ey = tx + tc + gap, ty + tc + gap  # the entries start after the header row and column
    targets = [_rect(ex + c * tc, ey + s * tc, tc, tc) for s, c in _ca_inverse_unknown(meta)]
    return {**_frame(meta), "palette": _ca_palette(meta), "eraser": True, "targets": targets,
            "initial": [None] * len(targets), "required": True}


def _ca_inverse_build(meta: Mapping[str, Any], answer: Mapping[str, Any]) -> list[str]:
    unknown = _ca_inverse_unknown(meta)
    values = _list(answer, "values", len(unknown))
    if any(v is None for v in values):
        raise AnswerError("fill every white entry of the rule table")
    table = [list(row) for row in meta["given"]]
    for (s, c), v in zip(unknown, values):
        table[s][c] = str(_int(v, 0, meta["states"] - 1, "an entry's state"))
    return ["".join(row) for row in table]


def _ca_inverse_encode(meta: Mapping[str, Any], rows: Sequence[str]) -> dict[str, Any] | None:
    given = meta["given"]
    from vrforge.verifiers.ca_inverse import UNKNOWN

    if any(g != UNKNOWN and g != r for grow, rrow in zip(given, rows) for g, r in zip(grow, rrow)):
        return None  # a given entry changed: the tools leave givens alone
    return {"values": [int(rows[s][c]) for s, c in _ca_inverse_unknown(meta)]}


# ---------------------------------------------------------------- graphs


def _colour_palette(colours: Sequence[str]) -> list[dict[str, Any]]:
    return [{"value": colour, "colour": colour, "label": f"colour {i + 1}"} for i, colour in enumerate(colours)]


def _fills(meta: Mapping[str, Any], answer: Mapping[str, Any], count: int) -> list[str]:
    palette = list(meta["palette"])
    out = []
    for v in _list(answer, "values", count):
        if v is None:
            out.append(meta["uncoloured"])
        elif v in palette:
            out.append(v)
        else:
            raise AnswerError(f"{v!r} is not a palette colour")
    return out


def _fills_encode(meta: Mapping[str, Any], fills: Sequence[str]) -> dict[str, Any] | None:
    palette = set(meta["palette"])
    if any(f != meta["uncoloured"] and f not in palette for f in fills):
        return None  # an off-palette fill: no swatch paints it
    return {"values": [f if f in palette else None for f in fills]}


def _graph_coloring_spec(meta: Mapping[str, Any]) -> dict[str, Any]:
    layout = meta["layout"]
    radius = layout["node_radius"]
    return {**_frame(meta), "palette": _colour_palette(meta["palette"]), "eraser": True,
            "targets": [_disc(x, y, radius) for x, y in layout["nodes"]], "initial": [None] * len(layout["nodes"])}


def _graph_isomorphism_spec(meta: Mapping[str, Any]) -> dict[str, Any]:
    layout = meta["layout"]
    radius = layout["node_radius"]
    # Graph A's nodes pick up their colour when clicked, like the swatches.
    pickers = [{**_disc(x, y, radius), "value": colour} for (x, y), colour in zip(layout["nodes_a"], meta["palette"])]
    return {**_frame(meta), "palette": _colour_palette(meta["palette"]), "eraser": True, "pickers": pickers,
            "targets": [_disc(x, y, radius) for x, y in layout["nodes_b"]], "initial": [None] * len(layout["nodes_b"])}


# ---------------------------------------------------------------- logic grid


def _logic_glyphs(meta: Mapping[str, Any]) -> list[Any]:
    """Each symbol's outline at unit radius (None: a circle), from the task's own glyph shapes."""
    from vrforge.generators.tacit.logic_grid import _shape_points

    out: list[Any] = []
    for shape in meta["shapes"]:
        points = _shape_points(shape, 0.0, 0.0, 1.0)
        out.append(None if points is None else [[round(x, 4), round(y, 4)] for x, y in points])
    return out


def _logic_open_cells(meta: Mapping[str, Any]) -> list[tuple[int, int]]:
    given = {(r, c) for r, c, _ in meta["givens"]}
    n = meta["size"]
    return [(r, c) for r in range(n) for c in range(n) if (r, c) not in given]


def _logic_grid_spec(meta: Mapping[str, Any]) -> dict[str, Any]:
    from vrforge.generators.tacit.logic_grid import GLYPH_R

    layout = meta["layout"]
    cell = layout["cell"]
    ox, oy = layout["origin"]
    glyphs = _logic_glyphs(meta)
    palette = [{"value": k, "colour": colour, "label": f"symbol {k + 1}", "glyph": glyphs[k]}
               for k, colour in enumerate(meta["palette"]["symbols"])]
    targets = [_rect(ox + c * cell, oy + r * cell, cell, cell) for r, c in _logic_open_cells(meta)]
    return {**_frame(meta), "palette": palette, "eraser": True, "targets": targets, "initial": [None] * len(targets),
            "glyph_radius": GLYPH_R}


def _logic_grid_build(meta: Mapping[str, Any], answer: Mapping[str, Any]) -> list[list[int]]:
    from vrforge.verifiers.logic_grid import EMPTY

    cells = _logic_open_cells(meta)
    values = _list(answer, "values", len(cells))
    n = meta["size"]
    grid = [[EMPTY] * n for _ in range(n)]
    for r, c, s in meta["givens"]:
        grid[r][c] = s
    for (r, c), v in zip(cells, values):
        grid[r][c] = EMPTY if v is None else _int(v, 0, n - 1, "a symbol")
    return grid


def _logic_grid_encode(meta: Mapping[str, Any], grid: Sequence[Sequence[int]]) -> dict[str, Any] | None:
    from vrforge.verifiers.logic_grid import EMPTY

    if any(grid[r][c] != s for r, c, s in meta["givens"]):
        return None  # a given changed: the tools leave givens alone
    return {"values": [None if grid[r][c] == EMPTY else int(grid[r][c]) for r, c in _logic_open_cells(meta)]}


# ---------------------------------------------------------------- stacked cubes

VIEWS = ("top", "front", "side")


def _ortho_spec(meta: Mapping[str, Any]) -> dict[str, Any]:
    from vrforge.generators.tacit._voxel_drawing import VIEW_SHADE

    n, grids, palette = meta["size"], meta["layout"]["grids"], meta["palette"]
    targets = []
    for view in VIEWS:
        (ox, oy), cell = grids[view]["origin"], grids[view]["cell"]
        targets += [{**_rect(ox + j * cell, oy + i * cell, cell, cell), "colour": palette[VIEW_SHADE[view]], "group": view}
                    for i in range(n) for j in range(n)]
    return {**_frame(meta), "targets": targets, "initial": [0] * len(targets)}


def _ortho_build(meta: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, list[str]]:
    n = meta["size"]
    values = [_int(v, 0, 1, "a view cell") for v in _list(answer, "values", 3 * n * n)]
    out = {}
    for k, view in enumerate(VIEWS):
        chunk = values[k * n * n:(k + 1) * n * n]
        out[view] = ["".join(str(v) for v in chunk[i * n:(i + 1) * n]) for i in range(n)]
    return out


def _ortho_encode(meta: Mapping[str, Any], views: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    return {"values": [int(ch) for view in VIEWS for row in views[view] for ch in row]}


def _iso_spec(meta: Mapping[str, Any]) -> dict[str, Any]:
    iso, palette = meta["layout"]["iso"], meta["palette"]
    return {**_frame(meta), "size": meta["size"], "origin": list(iso["origin"]), "unit": iso["unit"],
            "colours": {key: palette[key] for key in ("top", "left", "right", "line", "floor", "floor_line")}}


def _iso_build(meta: Mapping[str, Any], answer: Mapping[str, Any]) -> list[list[int]]:
    n = meta["size"]
    rows = _list(answer, "heights", n)
    out = []
    for row in rows:
        if not isinstance(row, list) or len(row) != n:
            raise AnswerError(f"'heights' needs {n} rows of {n} column heights")
        out.append([_int(h, 0, n, "a column height") for h in row])
    return out


def _iso_encode(meta: Mapping[str, Any], heights: Sequence[Sequence[int]]) -> dict[str, Any]:
    return {"heights": [[int(h) for h in row] for row in heights]}


# ---------------------------------------------------------------- maze


def _maze_spec(meta: Mapping[str, Any]) -> dict[str, Any]:
    from vrforge.generators.tacit.maze import PATH_WIDTH

    layout = meta["layout"]
    # The portals' cells are drawn as discs: the page lets a line hop between their layers there.
    portals = [[portal["layers"], portal["cell"]] for portal in meta["portals"]]
    return {**_frame(meta), "cell": layout["cell"], "size": meta["size"], "origins": [list(o) for o in layout["origins"]],
            "colour": meta["palette"]["path"], "line_width": PATH_WIDTH, "portals": portals}


def _maze_build(meta: Mapping[str, Any], answer: Mapping[str, Any]) -> list[tuple[int, list[tuple[int, int]]]]:
    layers, n = meta["layers"], meta["size"]
    strokes: list[tuple[int, list[tuple[int, int]]]] = []
    for line in _list(answer, "strokes"):
        if not isinstance(line, list) or not line:
            raise AnswerError("each stroke needs a list of [layer, row, col] cells")
        run: list[tuple[int, int]] = []
        layer = -1
        for node in line:
            if not isinstance(node, list) or len(node) != 3:
                raise AnswerError("a route cell is [layer, row, col]")
            lay = _int(node[0], 0, layers - 1, "a layer")
            r, c = _int(node[1], 0, n - 1, "a row"), _int(node[2], 0, n - 1, "a column")
            # A line goes on within one layer between neighbouring cells; anything else (a
            # change of layer at a portal, a jump) starts a new stroke, as the task draws it.
            if run and (lay != layer or abs(r - run[-1][0]) + abs(c - run[-1][1]) != 1):
                strokes.append((layer, run))
                run = []
            layer = lay
            run.append((r, c))
        strokes.append((layer, run))
    return strokes


def _maze_encode(meta: Mapping[str, Any], strokes: Sequence[tuple[int, Sequence[Sequence[int]]]]) -> dict[str, Any]:
    return {"strokes": [[[int(layer), int(r), int(c)] for r, c in cells] for layer, cells in strokes]}


# ---------------------------------------------------------------- unknot


def _unknot_spec(meta: Mapping[str, Any]) -> dict[str, Any]:
    inset = meta["layout"]["frame_inset"]
    targets = [_rect(x + inset, y + inset, size - 2 * inset, size - 2 * inset) for x, y, size in meta["layout"]["cells"]]
    return {**_frame(meta), "targets": targets, "colour": meta["palette"]["frame"], "line_width": meta["layout"]["frame_width"]}


def _unknot_build(meta: Mapping[str, Any], answer: Mapping[str, Any]) -> list[int]:
    count = len(meta["layout"]["cells"])
    selected = _list(answer, "selected")
    if len(selected) > 1:
        raise AnswerError("select one diagram")
    return [_int(v, 0, count - 1, "a diagram") for v in selected]


def _unknot_encode(meta: Mapping[str, Any], marks: Sequence[int]) -> dict[str, Any] | None:
    return {"selected": [int(m) for m in marks]} if len(marks) <= 1 else None


# ---------------------------------------------------------------- raven


def _raven_spec(meta: Mapping[str, Any]) -> dict[str, Any]:
    from vrforge.verifiers import raven as rv

    layout = meta["layout"]
    ox, oy = layout["origins"][layout["answer_panel"]]
    # Each shape at unit radius and each quarter turn (None: a circle), as the task draws them.
    shapes = [{"name": name, "turns": [None if name == "circle" else [[round(float(x), 4), round(float(y), 4)]
                                                                      for x, y in rv.polygon(name, 1.0, turn)]
                                       for turn in range(rv.ROTATIONS)]}
              for name in meta["types"]]
    return {**_frame(meta), "panel": [ox, oy, layout["panel"]], "slots": [list(s) for s in layout["slots"]],
            "slot_half": layout["slot_half"], "shapes": shapes, "sizes": list(meta["sizes"]),
            "fills": list(meta["palette"]["fills"]), "rotations": rv.ROTATIONS, "frame": meta["palette"]["frame"]}


def _raven_build(meta: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    from vrforge.verifiers import raven as rv

    if not isinstance(answer, Mapping):
        raise AnswerError("the answer needs the panel's attributes")
    slots = len(meta["layout"]["slots"])
    panel: dict[str, Any] = {}
    for key, count in (("type", len(meta["types"])), ("size", len(meta["sizes"])), ("colour", len(meta["palette"]["fills"])),
                       ("rotation", rv.ROTATIONS)):
        if answer.get(key) is None:
            raise AnswerError(f"choose the {key}")
        panel[key] = _int(answer.get(key), 0, count - 1, f"the {key}")
    positions = [_int(p, 0, slots - 1, "a slot") for p in _list(answer, "positions")]
    if len(set(positions)) != len(positions):
        raise AnswerError("a slot is listed twice")
    panel["positions"] = sorted(positions)
    return {a: panel[a] for a in rv.ATTRIBUTES}


def _raven_encode(meta: Mapping[str, Any], panel: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (sorted(int(p) for p in panel[k]) if k == "positions" else int(panel[k]))
            for k in ("type", "size", "colour", "rotation", "positions")}


# ---------------------------------------------------------------- the table

PAINT_HELP = ("Choose a colour in the palette (or press its number key), then click or drag over the places to paint. "
              "The eraser clears a place again.")

BUILTIN_TOOLS: dict[str, AnswerTools] = {
    "ca_forward": AnswerTools(
        "paint", _ca_forward_spec, _ca_forward_build,
        "Every cell of the empty result grid starts in the empty state. Choose a state in the palette (or press its "
        "number key) and click or drag over the result cells to set them; cells you leave stay empty.",
        _ca_forward_encode),
    "ca_inverse": AnswerTools(
        "paint", _ca_inverse_spec, _ca_inverse_build,
        "Choose a state in the palette (or press its number key) and click the white entries of the rule table to fill "
        "them. Every white entry needs a state before you can submit.",
        _ca_inverse_encode),
    "graph_coloring": AnswerTools(
        "paint", _graph_coloring_spec, lambda meta, answer: _fills(meta, answer, len(meta["layout"]["nodes"])),
        PAINT_HELP.replace("places", "nodes"), _fills_encode),
    "graph_isomorphism": AnswerTools(
        "paint", _graph_isomorphism_spec, lambda meta, answer: _fills(meta, answer, len(meta["layout"]["nodes_b"])),
        "Click a node of graph A (or a swatch, or press its number key) to pick up its colour, then click a node of "
        "graph B to paint it. The eraser clears a node again.",
        _fills_encode),
    "logic_grid": AnswerTools(
        "paint", _logic_grid_spec, _logic_grid_build,
        "Choose a symbol in the palette (or press its number key), then click an empty cell to place it. The eraser "
        "clears a cell again; the grey givens cannot be changed.",
        _logic_grid_encode),
    "ortho_projection": AnswerTools(
        "toggle", _ortho_spec, _ortho_build,
        "Click or drag over the cells of the three view grids to fill them; click a filled cell to empty it again.",
        _ortho_encode),
    "iso_reconstruction": AnswerTools(
        "voxels", _iso_spec, _iso_build,
        "Build the solid on the isometric floor: click a floor cell or a cube to stack a cube on that column; with "
        "'Remove' chosen (or Shift held) a click takes the top cube off. The small height grid beside the picture "
        "does the same (click +1, Shift-click -1) and shows each column's height.",
        _iso_encode),
    "maze": AnswerTools(
        "route", _maze_spec, _maze_build,
        "Draw the route cell by cell: press on the green start square and drag (or click cell after cell) through "
        "neighbouring cells; going back over the last cell takes it away. At a portal disc, click the disc of the same "
        "colour on the next layer to carry the line on there. 'New line' starts a separate line; 'Undo' removes the last cell.",
        _maze_encode),
    "unknot": AnswerTools(
        "select", _unknot_spec, _unknot_build,
        "Click the diagram you think is the unknot to frame it; click it again to take the frame away.",
        _unknot_encode),
    "raven": AnswerTools(
        "panel", _raven_spec, _raven_build,
        "Build the missing panel: choose the shape, its size, its shade and its turn, then click the slots of the "
        "panel that hold an object. Every object of a panel shares shape, size, shade and turn.",
        _raven_encode),
}


def tools_for(spec: Any) -> AnswerTools | None:
    """A task's answer tools: its TaskSpec's, else the built-in table's; None: answered by PNG upload."""
    declared = getattr(spec, "answer_tools", None)
    if declared is not None:
        return declared
    return BUILTIN_TOOLS.get(spec.name)


# ---------------------------------------------------------------- instructions pages

# What a person needs beyond each task's declared conventions (TaskSpec.conventions) to read
# the picture as its verifier does: rules the picture does not show, named on the
# instructions page. Every entry is one the picture alone left to guessing.
OWN_CELL = "A cell's own state is never counted among its neighbours: the dark centre of the corner glyph is the cell itself."
INSTRUCTION_NOTES: dict[str, list[str]] = {
    "ca_forward": [OWN_CELL],
    "ca_inverse": [OWN_CELL],
    "maze": ["Not every portal has to be used: some lead only into dead ends."],
    "iso_reconstruction": ["Several solids can have the same three views: any one of them is a right answer."],
}
