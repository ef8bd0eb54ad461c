"""Maze verifier: read the drawn path back from the picture and check it against the walls.

It samples every cell centre and every boundary between neighbouring cells (where a wall
is drawn if there is one), classifies each sample to the nearest palette colour, and
rebuilds the drawn path as a graph: cells in the path colour, joined where the boundary
between them is in the path colour (or, where the boundary reads as a wall, the path colour
shows on both sides of it: a line drawn under a wall, as the puzzle's own pictures of a line
through a wall are drawn where its edits are balanced). Moving to the next layer shows on the picture as the
path ending at one cell and starting again at the same cell one layer on; that is a jump,
and it is legal only at a portal of that pair of layers (a decoy portal too: it leads into a
walled-off pocket, so a line through it cannot reach the end). Any valid route passes,
however it is drawn, as long as it runs through cell centres in the path colour.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from functools import cached_property, lru_cache
from itertools import chain
from typing import Any

import numpy as np

from vrforge.types import Verdict
from vrforge.verifiers.sampling import hex_to_rgb, load_for_layout, nearest_palette, sample_colours

CHECKS = ("missing_start", "wrong_exit", "disconnected", "branching", "wall_breach", "portal_skip")
MIN_CELL_PX = 4.0
# A sample whose channels spread this much holds a colour: a thin path blurred or shrunk into
# the white around it gives a pale blue that lies nearer the grey chevron than the path colour,
# and no blend of white and the greys (walls, chevron) is that colourful.
VIVID_SPREAD = 60

Node = tuple[int, int, int]  # (layer, row, col)


def judge(meta: Mapping[str, Any], cells: AbstractSet[Node], links: AbstractSet[tuple[Node, Node]]) -> dict[str, bool]:
    """Check an abstract drawing: ``cells`` in the path colour and ``links`` between them.

    Each check is True when the drawing does NOT commit that violation.
    """
    return _judge_for(meta)(cells, links)


class Judge:
    """``judge`` for one maze, with its portals looked up once (the generator judges hundreds
    of candidate drawings per puzzle: it calls ``ordered``, with its links already ordered)."""

    def __init__(self, meta: Mapping[str, Any]) -> None:
        self.start, self.end = tuple(meta["start"]), tuple(meta["end"])
        self.portals = {(p["layers"][0], *p["cell"]) for p in meta["portals"]}
        self._east, self._south = meta["open_east"], meta["open_south"]

    @cached_property
    def passages(self) -> frozenset[tuple[Node, Node]]:
        """Every open passage, as (smaller node, larger node)."""
        return frozenset(
            ((layer, r, c), (layer, r + dr, c + dc))
            for layer, (east, south) in enumerate(zip(self._east, self._south))
            for opened, dr, dc in ((east, 0, 1), (south, 1, 0))
            for r, row in enumerate(opened) for c, value in enumerate(row) if value == "1")

    def is_open(self, a: Node, b: Node) -> bool:
        """Whether ``a`` < ``b`` are neighbours on one layer with no wall between them."""
        layer, r, c = a
        if b[0] != layer:
            return False
        if b[1] == r:
            return b[2] == c + 1 and self._east[layer][r][c] == "1"
        return b[2] == c and b[1] == r + 1 and self._south[layer][r][c] == "1"

    def __call__(self, cells: AbstractSet[Node], links: AbstractSet[tuple[Node, Node]]) -> dict[str, bool]:
        return self.ordered(cells, {(a, b) if a < b else (b, a) for a, b in links})

    def ordered(self, cells: AbstractSet[Node], links: AbstractSet[tuple[Node, Node]]) -> dict[str, bool]:
        """The checks of a drawing whose links are each (smaller node, larger node)."""
        degree = Counter(chain.from_iterable(links))
        nodes = cells if degree.keys() <= cells else set(cells).union(degree)
        # A reused judge (the editor's) has built the set of passages; a verifier's looks each link
        # up rather than build 8,000 of them for a 4 x 32 x 32 maze.
        built = "passages" in self.__dict__
        breach = not (links <= self.passages if built else all(self.is_open(a, b) for a, b in links))
        # Moving to the next layer: the path ends at a cell and starts again above it. Only
        # line ends (at most one link) can be either side of one.
        ends = {node for node, d in degree.items() if d == 1}
        if nodes is not cells:
            ends &= cells
        ends.update(set(cells).difference(degree))
        jumps = [(low, high) for low in ends if (high := (low[0] + 1, low[1], low[2])) in ends]
        skip = any(low not in self.portals for low, _ in jumps)
        degree.update(chain.from_iterable(jumps))
        if breach or len({low[0] for low, _ in jumps}) < len(jumps):
            components, loop = _components(nodes, [*links, *jumps])
        else:
            # Passages of a perfect maze form a forest, and one jump per pair of layers cannot
            # close a loop: each link or jump joins two parts.
            components, loop = len(nodes) - len(links) - len(jumps), False
        return {
            "missing_start": self.start in cells,
            "wrong_exit": self.end in cells,
            "disconnected": components == 1,
            # A forest whose nodes have degree <= 2 is a set of simple paths: no branch, no loop.
            "branching": not loop and max(degree.values(), default=0) <= 2,
            "wall_breach": not breach,
            "portal_skip": not skip,
        }


_JUDGES: list[tuple[Mapping[str, Any], Judge]] = []  # the last few puzzles' judges: a build verifies six answers per puzzle


def _judge_for(meta: Mapping[str, Any]) -> Judge:
    for cached_meta, cached in _JUDGES:
        if cached_meta is meta:
            return cached
    made = Judge(meta)
    _JUDGES.insert(0, (meta, made))
    del _JUDGES[8:]
    return made


def _is_open(meta: Mapping[str, Any], a: Node, b: Node) -> bool:
    """Whether the passage between two cells is open (no wall between neighbours)."""
    return Judge(meta).is_open(min(a, b), max(a, b))


def _components(nodes: AbstractSet[Node], links: list[tuple[Node, Node]]) -> tuple[int, bool]:
    """(connected parts, whether some link closes a loop), by union-find over node numbers."""
    index = {node: i for i, node in enumerate(nodes)}
    parent = list(range(len(index)))
    loop, joined = False, 0
    for a, b in links:
        x, y = index[a], index[b]
        while parent[x] != x:
            parent[x] = x = parent[parent[x]]
        while parent[y] != y:
            parent[y] = y = parent[parent[y]]
        if x == y:
            loop = True
        else:
            parent[x] = y
            joined += 1
    return len(parent) - joined, loop


def _grid_key(meta: Mapping[str, Any]) -> tuple[int, float, float, float, tuple[tuple[float, float], ...]]:
    """The parts of a puzzle's meta that fix its sample points (the cache key of both grids below)."""
    layout = meta["layout"]
    return meta["size"], layout["width"], layout["height"], layout["cell"], tuple(map(tuple, layout["origins"]))


def sample_grid(meta: Mapping[str, Any]) -> tuple[list[Node], list[tuple[Node, Node]], np.ndarray]:
    """Normalised sample points: all cell centres, then all boundaries between neighbours."""
    return _sample_grid(*_grid_key(meta))


@lru_cache(maxsize=64)
def _sample_grid(n: int, width: float, height: float, cell: float, origins: tuple[tuple[float, float], ...]):
    nodes: list[Node] = []
    links: list[tuple[Node, Node]] = []
    points: list[tuple[float, float]] = []
    for layer, (ox, oy) in enumerate(origins):
        for r in range(n):
            for c in range(n):
                nodes.append((layer, r, c))
                points.append((ox + (c + 0.5) * cell, oy + (r + 0.5) * cell))
    for layer, (ox, oy) in enumerate(origins):
        for r in range(n):
            for c in range(n):
                if c + 1 < n:
                    links.append(((layer, r, c), (layer, r, c + 1)))
                    points.append((ox + (c + 1) * cell, oy + (r + 0.5) * cell))
                if r + 1 < n:
                    links.append(((layer, r, c), (layer, r + 1, c)))
                    points.append((ox + (c + 0.5) * cell, oy + (r + 1) * cell))
    normalised = np.asarray(points, dtype=np.float64) / np.asarray([width, height], dtype=np.float64)
    normalised.flags.writeable = False
    return nodes, links, normalised


def read_drawing(meta: Mapping[str, Any], image: np.ndarray) -> tuple[set[Node], set[tuple[Node, Node]]]:
    """The path cells and path links visible in ``image``."""
    layout, palette = meta["layout"], meta["palette"]
    height, width = image.shape[:2]
    cell_px = layout["cell"] * min(width / layout["width"], height / layout["height"])
    radius = max(1, int(cell_px * 0.08))
    nodes, links, points = sample_grid(meta)
    is_path, samples = _path_samples(meta, image, points, radius)
    # The route ends on the start and end squares, where a thin line over a saturated marker
    # blurs into a third colour after JPEG: there only "path or marker" is a sensible reading.
    for marker in ("start", "end"):
        i = nodes.index(tuple(meta[marker]))
        choices = [hex_to_rgb(palette["path"]), hex_to_rgb(palette[marker])]
        is_path[i] = nearest_palette(samples[i:i + 1], choices)[0] == 0
    cells = {node for node, hit in zip(nodes, is_path[: len(nodes)]) if hit}
    drawn = is_path[len(nodes):]
    # A line through a wall may be drawn under it (the wall over the line): on a boundary between
    # path cells that does not read as path, the line shows either side of it, where no line
    # turning in a cell reaches.
    walled = np.asarray([i for i, (a, b) in enumerate(links) if not drawn[i] and a in cells and b in cells], dtype=np.int64)
    if len(walled):
        sides = _path_samples(meta, image, sides_of(meta)[np.repeat(walled, 2) * 2 + np.tile([0, 1], len(walled))], radius)[0]
        drawn = drawn.copy()
        drawn[walled] |= sides.reshape(-1, 2).all(axis=1)
    # A boundary only counts as a link when both cells it joins are path cells.
    return cells, {(a, b) for (a, b), hit in zip(links, drawn) if hit and a in cells and b in cells}


def _path_samples(meta: Mapping[str, Any], image: np.ndarray, points: np.ndarray, radius: int) -> tuple[np.ndarray, np.ndarray]:
    """Per sample point: whether it reads as the path colour, and the colour sampled."""
    palette = meta["palette"]
    colours = [hex_to_rgb(c) for c in list(palette.values()) + [p["colour"] for p in meta["portals"]]]
    path_index = list(palette).index("path")
    samples = sample_colours(image, points, radius)
    nearest = nearest_palette(samples, colours)
    is_path = nearest == path_index
    # A colourful sample is read among the colours that are not greys (white stays a choice).
    names = list(palette) + ["portal"] * len(meta["portals"])
    not_grey = [i for i, name in enumerate(names) if name not in ("wall", "chevron")]
    vivid = np.flatnonzero(samples.max(axis=1) - samples.min(axis=1) >= VIVID_SPREAD)
    if len(vivid):
        is_path[vivid] = np.asarray(not_grey)[nearest_palette(samples[vivid], [colours[i] for i in not_grey])] == path_index
    return is_path, samples


SIDE = 0.17  # cells from a boundary to the points either side of it: clear of the wall (0.06) and of a line turning in the cell (0.29)


def sides_of(meta: Mapping[str, Any]) -> np.ndarray:
    """Normalised points either side of each boundary of ``sample_grid`` (two per link, in order)."""
    return _sides(*_grid_key(meta))


@lru_cache(maxsize=64)
def _sides(n: int, width: float, height: float, cell: float, origins: tuple[tuple[float, float], ...]) -> np.ndarray:
    nodes, links, points = _sample_grid(n, width, height, cell, origins)
    scale = np.asarray([width, height], dtype=np.float64)
    boundary = points[len(nodes):]
    step = np.asarray([(b[2] - a[2], b[1] - a[1]) for a, b in links], dtype=np.float64) * SIDE * cell / scale
    sides = np.stack([boundary - step, boundary + step], axis=1).reshape(-1, 2)
    sides.flags.writeable = False
    return sides


def verify(meta: Mapping[str, Any], image: Any, puzzle: Any = None) -> Verdict:
    """Verdict for an answer image: the puzzle with the route drawn in the path colour."""
    frame = load_for_layout(meta, image, meta["layout"]["cell"], MIN_CELL_PX, "cell", "maze", puzzle)
    if isinstance(frame, Verdict):
        return frame
    rgb = frame.image
    cells, links = read_drawing(meta, rgb)
    checks = judge(meta, cells, links)
    return Verdict.from_checks(checks, details={"path_cells": len(cells), "path_links": len(links),
                                                      "registration": frame.details})
