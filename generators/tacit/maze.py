"""Multi-layer maze (domain: spatial).

Layers are drawn side by side, left to right, with a chevron between consecutive layers.
Each layer is a perfect maze (a spanning tree of its cells). One portal joins each pair of
adjacent layers: a coloured disc at the same cell on both layers. The route runs from the
green start (first layer) through every portal to the red end (last layer). Because the
layers are trees joined by exactly one portal each, the whole maze is a tree, so the route
is unique; the generator still checks it with the verifier's own judge.

Distractors share edits with each other (I-RAVEN style) so that the solution is not the
centre of the option set: the wrong-exit route, the route with that wrong branch attached,
and the same drawing with the junction cut out all reuse one side branch; the wall breach
runs along that branch and breaks through into the true route. Each kind comes in variants
that draw more and less than the route (a long or a short side branch, a gap with or without
the branch) at a few junctions, and the four are chosen among them by the shared policy of
``_option_set``, so that the amount of ink does not single out the solution.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from vrforge.generators.tacit import _option_set
from vrforge.registry import TaskSpec, register_task
from vrforge.svgdraw import fmt, new_drawing, polyline_path, segments_path, to_string
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import maze as maze_verifier

VERSION = "1.1.0"
CELL = 20  # SVG units per cell
MARGIN = 16  # the least margin, for small mazes
EDGE_SHARE = 0.055  # of each dimension kept clear on every side: a 5 % crop of any side keeps the whole maze
GAP = 40  # between layers, room for the chevron
WALL_WIDTH = 0.12 * CELL
PATH_WIDTH = 0.42 * CELL
JUNCTIONS = 3  # side branches whose distractor variants compete for the set

PALETTE = {
    "background": "#ffffff",
    "wall": "#222222",
    "path": "#1976d2",
    "start": "#2e7d32",
    "end": "#c62828",
    "chevron": "#9e9e9e",
}
PATH_GREY = 0.299 * 0x19 + 0.587 * 0x76 + 0.114 * 0xD2  # the path colour's luma, as pickers see it
PORTAL_COLOURS = ("#ef6c00", "#8e24aa", "#00897b", "#f9a825")

Cell = tuple[int, int]  # (row, col)
Stroke = tuple[int, list[Cell]]  # (layer, cells along the drawn line)


@dataclass(frozen=True)
class MazeConfig:
    layers: int
    size: int

    def validate(self) -> None:
        if not 1 <= self.layers <= len(PORTAL_COLOURS) + 1:
            raise ValueError(f"layers must be in 1..{len(PORTAL_COLOURS) + 1}, got {self.layers}")
        if not 5 <= self.size <= 40:
            raise ValueError(f"size must be in 5..40, got {self.size}")

    @property
    def portals(self) -> int:
        return self.layers - 1


DIFFICULTIES = {
    "easy": MazeConfig(layers=1, size=8),
    "medium": MazeConfig(layers=2, size=12),
    "hard": MazeConfig(layers=3, size=14),
}


# ---------------------------------------------------------------- maze structure


class Layer:
    """A perfect maze on an n x n grid: ``east[r, c]`` opens (r,c)-(r,c+1), ``south[r, c]`` (r,c)-(r+1,c)."""

    def __init__(self, size: int, rng: np.random.Generator) -> None:
        self.size = size
        self.east = np.zeros((size, size - 1), dtype=bool)
        self.south = np.zeros((size - 1, size), dtype=bool)
        self._carve(rng)

    def _carve(self, rng: np.random.Generator) -> None:
        # Iterative depth-first backtracker: long winding corridors, few trivial shortcuts.
        n = self.size
        seen = np.zeros((n, n), dtype=bool)
        start = (int(rng.integers(n)), int(rng.integers(n)))
        seen[start] = True
        stack = [start]
        while stack:
            r, c = stack[-1]
            options = [(r + dr, c + dc) for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
                       if 0 <= r + dr < n and 0 <= c + dc < n and not seen[r + dr, c + dc]]
            if not options:
                stack.pop()
                continue
            nxt = options[int(rng.integers(len(options)))]
            self.set_open((r, c), nxt)
            seen[nxt] = True
            stack.append(nxt)

    def set_open(self, a: Cell, b: Cell) -> None:
        (r1, c1), (r2, c2) = sorted((a, b))
        if r1 == r2:
            self.east[r1, c1] = True
        else:
            self.south[r1, c1] = True

    def is_open(self, a: Cell, b: Cell) -> bool:
        (r1, c1), (r2, c2) = sorted((a, b))
        return bool(self.east[r1, c1]) if r1 == r2 else bool(self.south[r1, c1])

    def grid_neighbours(self, cell: Cell) -> list[Cell]:
        r, c = cell
        n = self.size
        return [(r + dr, c + dc) for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)) if 0 <= r + dr < n and 0 <= c + dc < n]

    def neighbours(self, cell: Cell) -> list[Cell]:
        return [other for other in self.grid_neighbours(cell) if self.is_open(cell, other)]

    def bfs(self, source: Cell, blocked: frozenset[Cell] = frozenset()) -> dict[Cell, Cell | None]:
        parents: dict[Cell, Cell | None] = {source: None}
        queue = deque([source])
        while queue:
            cell = queue.popleft()
            for other in self.neighbours(cell):
                if other not in parents and other not in blocked:
                    parents[other] = cell
                    queue.append(other)
        return parents

    def path(self, a: Cell, b: Cell) -> list[Cell]:
        parents = self.bfs(a)
        route = [b]
        while route[-1] != a:
            parent = parents[route[-1]]
            assert parent is not None
            route.append(parent)
        return route[::-1]


# ---------------------------------------------------------------- generation


def _pick_far(layer: Layer, source: Cell, used: set[Cell], rng: np.random.Generator) -> Cell:
    """A random cell among those at least 60% of the farthest tree distance from ``source``."""
    parents = layer.bfs(source)
    depth = {source: 0}
    for cell, parent in parents.items():  # BFS order: parents come first
        if parent is not None:
            depth[cell] = depth[parent] + 1
    far = max(depth.values())
    candidates = sorted(cell for cell, d in depth.items() if d >= 0.6 * far and cell not in used)
    if not candidates:
        raise RejectedPuzzle("no free cell far from the source")
    return candidates[int(rng.integers(len(candidates)))]


def generate(config: MazeConfig, rng: np.random.Generator) -> Puzzle:
    layers = [Layer(config.size, rng) for _ in range(config.layers)]
    n = config.size
    start = (int(rng.integers(n)), int(rng.integers(n)))
    used = {start}
    ends: list[Cell] = []  # ends[l] = where the route leaves layer l (portal or the end)
    entry = start
    for layer in layers:
        target = _pick_far(layer, entry, used, rng)
        used.add(target)
        ends.append(target)
        entry = target
    entries = [start] + ends[:-1]
    route = [(index, layer.path(entries[index], ends[index])) for index, layer in enumerate(layers)]

    meta = _meta(config, layers, start, ends)
    solution = list(route)
    distractors = _distractors(meta, layers, route, rng)

    violations = [name for name, _ in distractors]
    answer_index = int(rng.integers(len(distractors) + 1))
    stats = {
        "route_length": float(sum(len(cells) for _, cells in route)),
        "layers": float(config.layers),
        "cells": float(config.layers * n * n),
    }
    meta["route_length"] = int(stats["route_length"])
    return Puzzle(
        meta=meta,
        solution=solution,
        distractors=tuple(strokes for _, strokes in distractors),
        violations=tuple(violations),
        answer_index=answer_index,
        stats=stats,
    )


def _margin(inner: float) -> int:
    """The margin beside ``inner`` SVG units of maze that leaves EDGE_SHARE of the picture's
    dimension clear outside the outer walls' ink (half a wall wider than the grid)."""
    return max(MARGIN, math.ceil((EDGE_SHARE * inner + WALL_WIDTH / 2) / (1 - 2 * EDGE_SHARE)))


def _meta(config: MazeConfig, layers: list[Layer], start: Cell, ends: list[Cell]) -> dict:
    n = config.size
    inner_width = config.layers * n * CELL + (config.layers - 1) * GAP
    margin_x, margin_y = _margin(inner_width), _margin(n * CELL)
    portals = [
        {"layers": [index, index + 1], "cell": list(ends[index]), "colour": PORTAL_COLOURS[index]}
        for index in range(config.layers - 1)
    ]
    return {
        "task": "maze",
        "layers": config.layers,
        "size": n,
        "open_east": [["".join("1" if v else "0" for v in row) for row in layer.east] for layer in layers],
        "open_south": [["".join("1" if v else "0" for v in row) for row in layer.south] for layer in layers],
        "start": [0, *start],
        "end": [config.layers - 1, *ends[-1]],
        "portals": portals,
        "layout": {
            "width": inner_width + 2 * margin_x,
            "height": n * CELL + 2 * margin_y,
            "cell": CELL,
            "origins": [[margin_x + index * (n * CELL + GAP), margin_y] for index in range(config.layers)],
        },
        "palette": dict(PALETTE),
    }


# ---------------------------------------------------------------- distractors


def _judge_strokes(meta: dict, strokes: list[Stroke]) -> dict[str, bool]:
    cells: set[tuple[int, int, int]] = set()
    links: set[tuple[tuple[int, int, int], tuple[int, int, int]]] = set()
    for layer, line in strokes:
        for r, c in line:
            cells.add((layer, r, c))
        for a, b in zip(line, line[1:]):
            links.add(tuple(sorted(((layer, *a), (layer, *b)))))  # type: ignore[arg-type]
    return maze_verifier.judge(meta, cells, links)


def _fails_exactly(meta: dict, strokes: list[Stroke], name: str) -> bool:
    checks = _judge_strokes(meta, strokes)
    return [k for k, ok in checks.items() if not ok] == [name]


def _branch_off(layer: Layer, segment: list[Cell], index: int) -> list[Cell]:
    """The longest dead-end corridor leaving ``segment[index]`` away from the segment."""
    junction = segment[index]
    parents = layer.bfs(junction, blocked=frozenset(segment) - {junction})
    far, depth = junction, 0
    depths = {junction: 0}
    for cell, parent in parents.items():
        if parent is not None:
            depths[cell] = depths[parent] + 1
            if depths[cell] > depth:
                far, depth = cell, depths[cell]
    if far == junction:
        return [junction]
    line = [far]
    while line[-1] != junction:
        line.append(parents[line[-1]])  # type: ignore[arg-type]
    return line[::-1]


def _distractors(meta: dict, layers: list[Layer], route: list[Stroke], rng: np.random.Generator) -> list[tuple[str, list[Stroke]]]:
    last = len(layers) - 1
    segment = route[last][1]
    earlier = route[:last]
    # Junctions on the last layer's segment with a side branch of at least three cells.
    candidates = []
    for index in range(1, len(segment) - 1):
        branch = _branch_off(layers[last], segment, index)
        if len(branch) >= 3:
            candidates.append((index, branch))
    if not candidates:
        raise RejectedPuzzle("no side branch on the final segment")
    picks = sorted(rng.permutation(len(candidates))[:JUNCTIONS].tolist())
    # Variants of every kind that draw more and less than the route (a long or short side
    # branch, a gap with or without the branch), so that no amount of ink marks the solution;
    # each junction's variants form a group (portal skips belong to every group).
    built: list[tuple[str, list[Stroke], int]] = []
    for group, (index, branch) in enumerate(candidates[i] for i in picks):
        head, tail = segment[: index + 1], segment[index + 1 :]
        short = branch[: max(2, len(branch) // 2)]
        variants = [
            ("wrong_exit", earlier + [(last, head + branch[1:])]),
            ("wrong_exit", earlier + [(last, head + short[1:])]),
            ("branching", route + [(last, branch)]),
            ("branching", route + [(last, short)]),
            ("disconnected", earlier + [(last, segment[:index]), (last, tail), (last, branch[1:])]),
            ("disconnected", earlier + [(last, segment[:index]), (last, tail)]),
            ("disconnected", earlier + [(last, segment[: max(1, index - 1)]), (last, tail)]),
        ]
        breach = _wall_breach(layers[last], head, tail, branch)
        if breach is not None:
            variants.append(("wall_breach", earlier + [(last, breach)]))
        built += [(name, strokes, group) for name, strokes in variants]
    if len(layers) > 1:
        for _ in range(2):
            skip = _portal_skip(meta, layers, route, rng)
            if skip is not None:
                built.append(("portal_skip", skip, -1))

    seen = {frozenset(_ink(route))}
    valid: list[tuple[str, list[Stroke]]] = []
    groups: list[int] = []
    for name, strokes, group in built:
        key = frozenset(_ink(strokes))
        if key not in seen and _fails_exactly(meta, strokes, name):
            seen.add(key)
            valid.append((name, strokes))
            groups.append(group)
    kinds = sorted({name for name, _ in valid})
    if len(kinds) < 4:
        raise RejectedPuzzle(f"only {len(kinds)} valid distractor kinds ({', '.join(kinds)})")
    # Stand-in pictures: every cell and link any option draws, in the path's grey where drawn.
    inks = [_ink(route)] + [_ink(strokes) for _, strokes in valid]
    universe = sorted(set().union(*inks), key=repr)
    drawn = np.array([[item in ink for item in universe] for ink in inks], dtype=bool)
    vectors = np.where(drawn, PATH_GREY, 255.0)
    # Sets from one junction's group: distractors that share its side branch (I-RAVEN), not a
    # star of unrelated edits around the solution, which would make it the medoid.
    sets = sorted({c for g in sorted(set(groups) - {-1})
                   for c in combinations([i for i, h in enumerate(groups) if h in (g, -1)], 4)})
    if len(sets) > _option_set.MAX_SETS:
        sets = [sets[i] for i in sorted(rng.choice(len(sets), _option_set.MAX_SETS, replace=False).tolist())]
    try:
        chosen = _option_set.choose(vectors, [name for name, _ in valid], rng, puzzle=np.full(len(universe), 255.0),
                                    sets=np.asarray(sets, dtype=np.int64).reshape(-1, 4))
    except ValueError as exc:
        raise RejectedPuzzle(f"distractors: {exc}") from None
    return [valid[i] for i in chosen]


def _ink(strokes: list[Stroke]) -> set:
    """What a drawing puts on the picture: its cells and the links between them."""
    ink: set = set()
    for layer, line in strokes:
        ink.update((layer, cell) for cell in line)
        ink.update((layer, *sorted((a, b))) for a, b in zip(line, line[1:]))
    return ink


def _wall_breach(layer: Layer, head: list[Cell], tail: list[Cell], branch: list[Cell]) -> list[Cell] | None:
    """A route that follows the side branch and breaks through one wall into the true route."""
    position = {cell: i for i, cell in enumerate(tail)}
    options = []
    for k, cell in enumerate(branch[1:], start=1):
        for other in layer.grid_neighbours(cell):
            if other in position and not layer.is_open(cell, other):
                options.append((k, position[other]))
    if options:
        k, m = max(options, key=lambda o: (o[0] - o[1], o))
        return head + branch[1 : k + 1] + tail[m:]
    # Otherwise a shortcut through a wall between two cells of the true route.
    full = head + tail
    where = {cell: i for i, cell in enumerate(full)}
    shortcuts = [(j - i, i, j) for i, cell in enumerate(full) for other in layer.grid_neighbours(cell)
                 if (j := where.get(other, -1)) > i + 1 and not layer.is_open(cell, other)]
    if not shortcuts:
        return None
    _, i, j = max(shortcuts)
    return full[: i + 1] + full[j:]


def _portal_skip(meta: dict, layers: list[Layer], route: list[Stroke], rng: np.random.Generator) -> list[Stroke] | None:
    """Leave layer l at an ordinary cell of its route and carry on from that cell one layer up."""
    special = {tuple(meta["start"][1:]), tuple(meta["end"][1:])} | {tuple(p["cell"]) for p in meta["portals"]}
    for layer_index in rng.permutation(len(layers) - 1).tolist():
        segment = route[layer_index][1]
        next_segment = route[layer_index + 1][1]
        exit_cell = next_segment[-1]
        choices = [k for k in range(1, len(segment) - 1) if segment[k] not in special]
        for k in rng.permutation(choices).tolist() if choices else []:
            jump = segment[k]
            strokes = list(route)
            strokes[layer_index] = (layer_index, segment[: k + 1])
            strokes[layer_index + 1] = (layer_index + 1, layers[layer_index + 1].path(jump, exit_cell))
            if _fails_exactly(meta, strokes, "portal_skip"):
                return strokes
    return None


# ---------------------------------------------------------------- drawing


def cell_centre(meta: dict, layer: int, cell: Cell) -> tuple[float, float]:
    ox, oy = meta["layout"]["origins"][layer]
    return ox + (cell[1] + 0.5) * CELL, oy + (cell[0] + 0.5) * CELL


def _wall_segments(meta: dict, layer: int) -> list[tuple[float, float, float, float]]:
    n = meta["size"]
    ox, oy = meta["layout"]["origins"][layer]
    east, south = meta["open_east"][layer], meta["open_south"][layer]
    segments = [(ox, oy, ox + n * CELL, oy), (ox, oy + n * CELL, ox + n * CELL, oy + n * CELL),
                (ox, oy, ox, oy + n * CELL), (ox + n * CELL, oy, ox + n * CELL, oy + n * CELL)]
    for r in range(n):  # vertical walls, merged down columns
        for c in range(n - 1):
            if east[r][c] == "0":
                x = ox + (c + 1) * CELL
                segments.append((x, oy + r * CELL, x, oy + (r + 1) * CELL))
    for r in range(n - 1):  # horizontal walls
        for c in range(n):
            if south[r][c] == "0":
                y = oy + (r + 1) * CELL
                segments.append((ox + c * CELL, y, ox + (c + 1) * CELL, y))
    return _merge_collinear(segments)


def _merge_collinear(segments: list[tuple[float, float, float, float]]) -> list[tuple[float, float, float, float]]:
    """Join touching unit segments on one line into one: fewer path commands to parse."""
    horizontal = sorted((y1, x1, x2) for x1, y1, x2, y2 in segments if y1 == y2)
    vertical = sorted((x1, y1, y2) for x1, y1, x2, y2 in segments if x1 == x2)
    merged: list[tuple[float, float, float, float]] = []
    for items, make in ((horizontal, lambda k, a, b: (a, k, b, k)), (vertical, lambda k, a, b: (k, a, k, b))):
        current = None
        for key, a, b in items:
            if current and current[0] == key and a <= current[2]:
                current = (key, current[1], max(b, current[2]))
            else:
                if current:
                    merged.append(make(*current))
                current = (key, a, b)
        if current:
            merged.append(make(*current))
    return merged


def draw(meta: dict, strokes: list[Stroke] | None) -> str:
    """The puzzle SVG, with ``strokes`` (if any) drawn on top as the answer path."""
    layout, palette = meta["layout"], meta["palette"]
    drawing = new_drawing(layout["width"], layout["height"], palette["background"], crisp=True)
    inset = 0.12 * CELL

    def square(layer: int, cell: Cell, colour: str) -> None:
        x, y = cell_centre(meta, layer, cell)
        side = CELL - 2 * inset
        drawing.add(drawing.rect(insert=(fmt(x - side / 2), fmt(y - side / 2)), size=(fmt(side), fmt(side)), fill=colour))

    square(meta["start"][0], tuple(meta["start"][1:]), palette["start"])
    square(meta["end"][0], tuple(meta["end"][1:]), palette["end"])
    for portal in meta["portals"]:
        for layer in portal["layers"]:
            x, y = cell_centre(meta, layer, tuple(portal["cell"]))
            drawing.add(drawing.circle(center=(fmt(x), fmt(y)), r=fmt(0.38 * CELL), fill=portal["colour"]))
    for layer in range(meta["layers"]):
        drawing.add(drawing.path(d=segments_path(_wall_segments(meta, layer)), stroke=palette["wall"],
                                 stroke_width=fmt(WALL_WIDTH), stroke_linecap="square", fill="none"))
    for layer in range(meta["layers"] - 1):  # chevron: "go on to the next layer"
        x = layout["origins"][layer][0] + meta["size"] * CELL + GAP / 2
        y = layout["height"] / 2
        d = f"M{fmt(x - 6)} {fmt(y - 12)}L{fmt(x + 6)} {fmt(y)}L{fmt(x - 6)} {fmt(y + 12)}"
        drawing.add(drawing.path(d=d, stroke=palette["chevron"], stroke_width=4, fill="none",
                                 stroke_linecap="round", stroke_linejoin="round"))
    for layer, line in strokes or []:
        points = [cell_centre(meta, layer, cell) for cell in line]
        if len(points) == 1:
            drawing.add(drawing.circle(center=(fmt(points[0][0]), fmt(points[0][1])), r=fmt(PATH_WIDTH / 2), fill=palette["path"]))
        else:
            drawing.add(drawing.path(d=polyline_path(points), stroke=palette["path"], stroke_width=fmt(PATH_WIDTH),
                                     fill="none", stroke_linecap="square", stroke_linejoin="miter"))
    return to_string(drawing)


register_task(
    TaskSpec(
        name="maze",
        domain="spatial",
        version=VERSION,
        checks=maze_verifier.CHECKS,
        difficulties=DIFFICULTIES,
        generate=generate,
        draw=draw,
        verify=maze_verifier.verify,
        description="Multi-layer maze: draw the route from green to red, changing layer only at matching portals.",
        instruction=("Solve the maze: draw one blue line through the cell centres from the green square "
                     "to the red square, changing layer only at matching coloured portals. Keep everything else unchanged."),
        answer_hint="the route drawn from the green square to the red square, through the portals between layers",
        difficulty_stat="route_length",
    )
)
