"""Multi-layer maze (domain: spatial).

Layers are drawn side by side, left to right, with a chevron between consecutive layers.
Each layer is a perfect maze (a spanning tree of its cells). One portal joins each pair of
adjacent layers: a coloured disc at the same cell on both layers. The route runs from the
green start (first layer) through every portal to the red end (last layer). Because the
layers are trees joined by exactly one portal each, the whole maze is a tree, so the route
is unique; the generator still checks it with the verifier's own judge.

Distractors are near misses of one another, not only of the route. An answer is a drawing
(path cells and the links between them), and a drawing's variants are single edits of it that
fail exactly one check: a line end run on, pruned back or turned aside (wrong exit), a side
branch (branching), a gap or a stray line of a few cells (disconnected), a line through a wall
(a shortcut, a detour, or running on past its end: wall breach), or the change of layer moved
to another cell (portal skip). Every edit has a reverse of about the same size, so variants
come in pairs that add and remove ink. ``_option_set.choose_star`` centres the set on the
solution or on one of its variants, with variants of that centre around it; around a
distractor, variants are never nearer the solution than the distractor itself (no edit half
the way back), so the solution is one edit from the centre like every other option. Gaps and
pruning leave portal discs covered: an uncovered disc adds a colour the solution never shows.
"""

from __future__ import annotations

import math
import zlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vrforge.generators.tacit import _option_set
from vrforge.registry import TaskSpec, register_task
from vrforge.svgdraw import fmt, new_drawing, polyline_path, segments_path, to_string
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import maze as maze_verifier

VERSION = "1.2.0"
CELL = 20  # SVG units per cell
MARGIN = 16  # the least margin, for small mazes
EDGE_SHARE = 0.055  # of each dimension kept clear on every side: a 5 % crop of any side keeps the whole maze
GAP = 40  # between layers, room for the chevron
WALL_WIDTH = 0.12 * CELL
PATH_WIDTH = 0.42 * CELL

PALETTE = {
    "background": "#ffffff",
    "wall": "#222222",
    "path": "#1976d2",
    "start": "#2e7d32",
    "end": "#c62828",
    "chevron": "#9e9e9e",
}
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

    def __init__(self, size: int, rng: np.random.Generator | None) -> None:
        self.size = size
        self.east = np.zeros((size, size - 1), dtype=bool)
        self.south = np.zeros((size - 1, size), dtype=bool)
        if rng is not None:
            self._carve(rng)

    @classmethod
    def from_meta(cls, meta: dict, index: int) -> Layer:
        """Layer ``index`` of a puzzle, from its meta."""
        layer = cls(meta["size"], None)
        layer.east = np.asarray([[v == "1" for v in row] for row in meta["open_east"][index]], dtype=bool).reshape(layer.east.shape)
        layer.south = np.asarray([[v == "1" for v in row] for row in meta["open_south"][index]], dtype=bool).reshape(layer.south.shape)
        return layer

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

Node = tuple[int, int, int]  # (layer, row, col)
Link = tuple[Node, Node]  # the smaller node first
DISTRACTOR_KINDS = ("wrong_exit", "branching", "disconnected", "wall_breach", "portal_skip")
KMAX = 6  # the most cells one edit adds or removes
# Variants kept per kind of edit, in pairs that add and remove about the same ink (running a
# line end on / pruning it, a branch / a gap, a stray line / a gap, a detour / a shortcut), so
# that the solution, one edit back from the set's centre, is not the one with the least or most ink.
QUOTA = {"extend": 4, "prune": 4, "divert": 4, "branch": 4, "cut": 4, "island": 4, "breach": 6, "jump": 4}
TRIES = 3  # candidates judged per variant kept, at most: bounds the cost of edits that rarely fit
LEAVES = 3  # variants a distractor needs to be the centre of a set (the solution is the fourth option)


@dataclass(frozen=True)
class Drawing:
    """An answer as the verifier reads it: the cells in the path colour and the links between them."""

    cells: frozenset[Node]
    links: frozenset[Link]


def _link(a: Node, b: Node) -> Link:
    return (a, b) if a < b else (b, a)


def drawing_of(strokes: list[Stroke]) -> Drawing:
    cells = {(layer, *cell) for layer, line in strokes for cell in line}
    links = {_link((layer, *a), (layer, *b)) for layer, line in strokes for a, b in zip(line, line[1:])}
    return Drawing(frozenset(cells), frozenset(links))


def _ink(drawing: Drawing) -> int:
    """How much a drawing puts on the picture, in cells and links."""
    return len(drawing.cells) + len(drawing.links)


def _adjacency(drawing: Drawing) -> dict[Node, list[Node]]:
    adjacency: dict[Node, list[Node]] = {cell: [] for cell in drawing.cells}
    for a, b in drawing.links:
        adjacency[a].append(b)
        adjacency[b].append(a)
    return adjacency


def strokes_of(drawing: Drawing) -> list[Stroke]:
    """The drawing as polylines: each runs between nodes that are not simply on the way (ends,
    junctions), then closed loops, then lone cells."""
    adjacency = {node: sorted(others) for node, others in _adjacency(drawing).items()}
    used: set[Link] = set()
    strokes: list[Stroke] = []

    def walk(a: Node, b: Node) -> None:
        line = [a, b]
        used.add(_link(a, b))
        while len(adjacency[line[-1]]) == 2:
            nxt = next((o for o in adjacency[line[-1]] if _link(line[-1], o) not in used), None)
            if nxt is None:
                break
            used.add(_link(line[-1], nxt))
            line.append(nxt)
        strokes.append((a[0], [node[1:] for node in line]))

    nodes = sorted(adjacency)
    for node in [n for n in nodes if len(adjacency[n]) != 2] + nodes:
        for other in adjacency[node]:
            if _link(node, other) not in used:
                walk(node, other)
    strokes += [(node[0], [node[1:]]) for node in nodes if not adjacency[node]]
    return strokes


class _Editor:
    """Near misses of any answer drawing: one edit each (grow or prune a line, cut a gap, cross
    a wall, change layer elsewhere), kept when it fails exactly one check."""

    def __init__(self, meta: dict, layers: list[Layer], solution: Drawing, salt: int) -> None:
        self.layers = layers
        self.solution = solution
        self.size = meta["size"]
        self.start, self.end = tuple(meta["start"]), tuple(meta["end"])
        self.portals = {(p["layers"][0], *p["cell"]) for p in meta["portals"]}
        # Portal discs stay under the line where it covers them: an uncovered disc adds a colour
        # to the picture that the solution never shows, so gaps and pruning leave them alone.
        self.discs = frozenset((layer, *p["cell"]) for p in meta["portals"] for layer in p["layers"])
        self.salt = salt
        self.judge = maze_verifier.Judge(meta)
        self._found: dict[Drawing, list[tuple[str, Drawing]]] = {}

    # -- the maze

    def is_open(self, a: Node, b: Node) -> bool:
        return a[0] == b[0] and abs(a[1] - b[1]) + abs(a[2] - b[2]) == 1 and self.layers[a[0]].is_open(a[1:], b[1:])

    def around(self, node: Node) -> list[Node]:
        return [(node[0], *cell) for cell in self.layers[node[0]].grid_neighbours(node[1:])]

    def passages(self, node: Node) -> list[Node]:
        return [(node[0], *cell) for cell in self.layers[node[0]].neighbours(node[1:])]

    def stand_in(self, drawing: Drawing) -> np.ndarray:
        """One element per cell and per link between neighbours: 1 where drawn."""
        n = self.size
        count = len(self.layers) * n * n
        vector = np.zeros(3 * count)
        index = [(layer * n + r) * n + c for layer, r, c in drawing.cells]
        index += [(1 if b[1] == r else 2) * count + (layer * n + r) * n + c for (layer, r, c), b in drawing.links]
        vector[index] = 1.0
        return vector

    # -- the verifier's checks

    def checks(self, drawing: Drawing) -> dict[str, bool]:
        return self.judge(drawing.cells, drawing.links)

    def fault(self, drawing: Drawing) -> str | None:
        failed = [name for name, ok in self.checks(drawing).items() if not ok]
        return failed[0] if len(failed) == 1 and failed[0] in DISTRACTOR_KINDS else None

    # -- variants

    def variants(self, drawing: Drawing) -> list[tuple[str, Drawing]]:
        """Near misses of ``drawing``, each failing exactly the check it names; the same list
        for the same drawing (the edits are drawn from a seed of the puzzle and the drawing)."""
        if drawing in self._found:
            return self._found[drawing]
        adjacency = _adjacency(drawing)
        digest = zlib.crc32(np.packbits(self.stand_in(drawing).astype(bool)).tobytes())
        rng = np.random.default_rng([self.salt, digest])
        found: list[tuple[str, Drawing]] = []
        seen = {drawing}
        edits = {"extend": self._extend, "prune": self._prune, "divert": self._divert, "branch": self._branch, "cut": self._cut,
                 "island": self._island, "breach": self._breach, "jump": self._jump}
        for kind, quota in QUOTA.items():
            kept = tried = 0
            for candidate in edits[kind](drawing, adjacency, rng):
                if kept == quota or (tried == TRIES * quota and kind not in ("extend", "prune")):
                    break
                if candidate is None or candidate in seen:
                    continue
                seen.add(candidate)
                tried += 1
                name = self.fault(candidate)
                if name is not None:
                    found.append((name, candidate))
                    kept += 1
        # The solution is one edit back from the set's centre and must look like the options
        # around it. Around the solution, as many variants add ink as remove it (within each
        # violation where it has both: the centre is one of them). Around a
        # distractor, all those on the solution's side in ink and at most as many on the other
        # side (or enough to make up LEAVES); then none nearer the solution than the distractor
        # itself: an edit half the way back would pair up with the solution and show it.
        ink = _ink(drawing)
        change = [int(np.sign(_ink(d) - ink)) for _, d in found]
        if drawing == self.solution:  # in pairs within each violation first, then across them
            keep = {i for i, c in enumerate(change) if c == 0}
            spare: dict[int, list[int]] = {1: [], -1: []}
            for kind in DISTRACTOR_KINDS:
                more = [i for i, c in enumerate(change) if c > 0 and found[i][0] == kind]
                less = [i for i, c in enumerate(change) if c < 0 and found[i][0] == kind]
                pairs = min(len(more), len(less))
                keep |= set(more[:pairs] + less[:pairs])
                spare[1] += more[pairs:]
                spare[-1] += less[pairs:]
            pairs = min(len(spare[1]), len(spare[-1]))
            keep |= set(spare[1][:pairs] + spare[-1][:pairs])
        else:
            away = int(np.sign(ink - _ink(self.solution)))
            keep = {i for i, c in enumerate(change) if c != away or away == 0}
            keep |= set([i for i in range(len(found)) if i not in keep][: max(LEAVES - len(keep), len(keep))])
        found = [v for i, v in enumerate(found) if i in keep]
        if drawing != self.solution:
            target = self.stand_in(self.solution)
            here = np.abs(self.stand_in(drawing) - target).sum()
            found = [v for v in found if np.abs(self.stand_in(v[1]) - target).sum() >= here]
        self._found[drawing] = found
        return found

    @staticmethod
    def _edit(drawing: Drawing, remove: Sequence[Node] = (), add: Sequence[Node] = (),
              unlink: Sequence[Link] = (), link: Sequence[Link] = ()) -> Drawing:
        gone, cut = set(remove), set(unlink)
        links = {x for x in drawing.links if x not in cut and x[0] not in gone and x[1] not in gone}
        return Drawing(frozenset((drawing.cells - gone) | set(add)), frozenset(links | set(link)))

    def _reach(self, source: Node, drawn: frozenset[Node], depth: int) -> dict[Node, Node | None]:
        """Undrawn cells within ``depth`` passages of ``source`` (itself undrawn), with parents."""
        parents: dict[Node, Node | None] = {source: None}
        frontier = [source]
        for _ in range(depth):
            reached = []
            for cell in frontier:
                for other in self.passages(cell):
                    if other not in drawn and other not in parents:
                        parents[other] = cell
                        reached.append(other)
            frontier = reached
        return parents

    @staticmethod
    def _trace(parents: dict[Node, Node | None], cell: Node) -> list[Node]:
        line = [cell]
        while (parent := parents[line[-1]]) is not None:
            line.append(parent)
        return line[::-1]

    def _corridor(self, source: Node, drawn: frozenset[Node], length: int, rng: np.random.Generator) -> list[Node]:
        """A line of up to ``length`` undrawn cells from ``source`` along passages."""
        parents = self._reach(source, drawn, length - 1)
        depth = {cell: len(self._trace(parents, cell)) for cell in parents}
        deepest = max(depth.values())
        ends = sorted(cell for cell, d in depth.items() if d == deepest)
        return self._trace(parents, ends[int(rng.integers(len(ends)))])

    @staticmethod
    def _chain(adjacency: dict[Node, list[Node]], leaf: Node, limit: int) -> list[Node]:
        """From a line end inward, the nodes that can go while the rest stays joined: up to a junction."""
        chain, previous = [leaf], None
        while len(chain) < limit:
            ahead = [o for o in adjacency[chain[-1]] if o != previous]
            if len(ahead) != 1 or len(adjacency[ahead[0]]) > 2:
                break
            previous = chain[-1]
            chain.append(ahead[0])
        return chain

    @staticmethod
    def _between(adjacency: dict[Node, list[Node]], a: Node, b: Node, limit: int) -> list[Node] | None:
        """The nodes strictly between ``a`` and ``b`` along the drawing, when every one of them
        lies simply on the way (two links) and there are at most ``limit``."""
        for first in adjacency[a]:
            line, previous = [first], a
            while line[-1] != b and len(line) <= limit and len(adjacency[line[-1]]) == 2:
                step = [o for o in adjacency[line[-1]] if o != previous][0]
                previous = line[-1]
                line.append(step)
            if line[-1] == b:
                return line[:-1]
        return None

    def _extend(self, drawing: Drawing, adjacency: dict[Node, list[Node]], rng: np.random.Generator):
        """A line end runs on by 1..KMAX cells (the reverse of pruning it)."""
        return self._grow(drawing, adjacency, rng, [v for v in sorted(drawing.cells) if len(adjacency[v]) <= 1], 1)

    def _branch(self, drawing: Drawing, adjacency: dict[Node, list[Node]], rng: np.random.Generator):
        """A side line of 2..KMAX cells from the middle of a line (the reverse of a cut, in ink)."""
        return self._grow(drawing, adjacency, rng, [v for v in sorted(drawing.cells) if len(adjacency[v]) == 2], 2)

    def _grow(self, drawing: Drawing, adjacency: dict[Node, list[Node]], rng: np.random.Generator, roots: list[Node],
              shortest: int):
        """A line of ``shortest``..KMAX new cells from one of ``roots``, at times rejoining the drawing."""
        sites = [(v, w, size) for v in roots for w in self.passages(v) if w not in drawing.cells
                 for size in range(shortest, KMAX + 1)]
        for i in rng.permutation(len(sites)).tolist():
            v, w, size = sites[i]
            line = self._corridor(w, drawing.cells, size, rng)
            tip = [x for x in self.passages(line[-1]) if x in drawing.cells and (len(line) > 1 or x != v)]
            links = [_link(a, b) for a, b in zip([v, *line], line)]
            if tip and rng.random() < 0.5:  # the new line meets the drawing again
                links.append(_link(line[-1], tip[0]))
            yield self._edit(drawing, add=line, link=links)

    def _prune(self, drawing: Drawing, adjacency: dict[Node, list[Node]], rng: np.random.Generator):
        """1..KMAX cells taken off a line end."""
        sites = [(v, size) for v in sorted(drawing.cells - self.discs) if len(adjacency[v]) <= 1 for size in range(1, KMAX + 1)]
        for i in rng.permutation(len(sites)).tolist():
            chain = self._chain(adjacency, *sites[i])
            yield self._edit(drawing, remove=chain[: next((k for k, v in enumerate(chain) if v in self.discs), None)])

    def _divert(self, drawing: Drawing, adjacency: dict[Node, list[Node]], rng: np.random.Generator):
        """A line end turned aside: 1 or 2 cells pruned, then more new ones down another passage
        (the reverse of pruning, in ink, where the line cannot run on)."""
        sites = [(v, size) for v in sorted(drawing.cells - self.discs) if len(adjacency[v]) <= 1 for size in (2, 3)]
        for i in rng.permutation(len(sites)).tolist():
            chain = self._chain(adjacency, *sites[i])
            chain = chain[: next((k for k, v in enumerate(chain) if v in self.discs), None)]
            if len(chain) < 2:
                continue
            removed, tip = chain[:-1], chain[-1]
            turns = [w for w in self.passages(tip) if w not in drawing.cells]
            if not turns:
                continue
            line = self._corridor(turns[int(rng.integers(len(turns)))], drawing.cells, int(rng.integers(len(chain), KMAX + 1)), rng)
            yield self._edit(drawing, remove=removed, add=line, link=[_link(a, b) for a, b in zip([tip, *line], line)])

    def _cut(self, drawing: Drawing, adjacency: dict[Node, list[Node]], rng: np.random.Generator):
        """A gap: 1..KMAX cells taken out of the middle of a line."""
        inner = [v for v in sorted(drawing.cells - self.discs) if len(adjacency[v]) == 2]
        for i in rng.permutation(len(inner)).tolist():
            v = inner[i]
            gap, previous = [v], sorted(adjacency[v])[int(rng.integers(2))]
            for _ in range(int(rng.integers(KMAX))):
                ahead = [o for o in adjacency[gap[-1]] if o != previous]
                if len(ahead) != 1 or len(adjacency[ahead[0]]) != 2 or ahead[0] in self.discs:
                    break
                previous = gap[-1]
                gap.append(ahead[0])
            yield self._edit(drawing, remove=gap)

    def _island(self, drawing: Drawing, adjacency: dict[Node, list[Node]], rng: np.random.Generator):
        """A stray line of 2..KMAX + 1 cells away from the drawing: about the ink a gap removes (a
        gap of k cells takes k + 1 links with it)."""
        n = self.size
        for _ in range(4 * QUOTA["island"]):
            seed = (int(rng.integers(len(self.layers))), int(rng.integers(n)), int(rng.integers(n)))
            if seed in drawing.cells or any(o in drawing.cells for o in self.around(seed)):
                continue
            line = self._corridor(seed, drawing.cells, int(rng.integers(2, KMAX + 2)), rng)
            yield self._edit(drawing, add=line, link=[_link(a, b) for a, b in zip(line, line[1:])])

    def _breach(self, drawing: Drawing, adjacency: dict[Node, list[Node]], rng: np.random.Generator):
        """Through a wall: a shortcut, a detour, a line running on past its end, or the reverse
        (a line through a wall put back on the passages)."""
        cells = drawing.cells
        sites: list[tuple[Node, Node]] = [(y, w) for y in sorted(cells) for w in self.around(y)
                                          if not self.is_open(y, w) and _link(y, w) not in drawing.links]
        sites += [x for x in sorted(drawing.links) if not self.is_open(*x)] * 4  # undoing a breach is likelier
        for i in rng.permutation(len(sites)).tolist():
            y, w = sites[i]
            if _link(y, w) in drawing.links:  # put back: the passages' route between its ends
                route = [(y[0], *cell) for cell in self.layers[y[0]].path(y[1:], w[1:])]
                if len(route) - 2 <= 2 * KMAX and not set(route[1:-1]) & cells:
                    yield self._edit(drawing, add=route[1:-1], unlink=[(y, w)],
                                     link=[_link(a, b) for a, b in zip(route, route[1:])])
            elif w in cells:  # shortcut through the wall, dropping what it bypasses
                skipped = self._between(adjacency, y, w, 2 * KMAX)
                yield self._edit(drawing, remove=skipped or (), link=[_link(y, w)])
            else:
                parents = self._reach(w, cells, KMAX - 1)
                rejoin = [(z, x) for z in sorted(parents) for x in self.passages(z) if x in cells and x != y]
                if rejoin and rng.random() < 0.7:  # a detour through the wall, back onto the line
                    z, x = rejoin[int(rng.integers(len(rejoin)))]
                    line = self._trace(parents, z)
                    skipped = self._between(adjacency, y, x, 2 * KMAX)
                    links = [_link(a, b) for a, b in zip([y, *line, x], [*line, x])]
                    yield self._edit(drawing, remove=skipped or (), add=line, link=links)
                elif len(adjacency[y]) <= 1:  # the line runs on through the wall
                    line = self._corridor(w, cells, int(rng.integers(1, KMAX + 1)), rng)
                    yield self._edit(drawing, add=line, link=[_link(a, b) for a, b in zip([y, *line], line)])

    def _jump(self, drawing: Drawing, adjacency: dict[Node, list[Node]], rng: np.random.Generator):
        """Change layer at another cell: the line on one layer ends 1..KMAX cells earlier or later,
        and the next layer's line starts there."""
        cells = drawing.cells
        pairs = [(layer, r, c) for layer, r, c in sorted(cells) if (layer + 1, r, c) in cells
                 and len(adjacency[(layer, r, c)]) <= 1 and len(adjacency[(layer + 1, r, c)]) <= 1]
        for i in rng.permutation(len(pairs) * 2).tolist():
            low = pairs[i // 2]
            size = int(rng.integers(1, KMAX + 1))
            if i % 2:  # earlier: the lower line loses cells
                chain = self._chain(adjacency, low, size + 1)
                if len(chain) < 2:
                    continue
                removed, added, links, jump = chain[:-1], [], [], chain[-1]
            else:  # later: the lower line runs on
                start = [w for w in self.passages(low) if w not in cells]
                if not start:
                    continue
                line = self._corridor(start[int(rng.integers(len(start)))], cells, size, rng)
                removed, added, jump = [], line, line[-1]
                links = [_link(a, b) for a, b in zip([low, *line], line)]
            # The upper line now starts above the new jump: it follows the passages from there to
            # where they meet the old upper line, which loses its part before that point.
            upper_start, target = (jump[0] + 1, *jump[1:]), (low[0] + 1, *low[1:])
            old = self._chain(adjacency, target, 4 * KMAX)
            if upper_start in old:
                removed += old[: old.index(upper_start)]
            else:
                parents = self._reach(upper_start, cells, 3 * KMAX)
                meet = [(z, x) for z in parents for x in self.passages(z) if x in old]
                if upper_start in cells or not meet:
                    continue
                z, x = min(meet, key=lambda m: old.index(m[1]))
                line = self._trace(parents, z)
                removed += old[: old.index(x)]
                added += line
                links += [_link(a, b) for a, b in zip([*line, x], [*line[1:], x])]
            yield self._edit(drawing, remove=removed, add=added, link=links)


def _distractors(meta: dict, layers: list[Layer], route: list[Stroke], rng: np.random.Generator) -> list[tuple[str, list[Stroke]]]:
    solution = drawing_of(route)
    editor = _Editor(meta, layers, solution, int(rng.integers(2**32)))
    try:
        chosen = _option_set.choose_star(solution, editor.variants, editor.stand_in, rng)
    except ValueError as exc:
        raise RejectedPuzzle(f"distractors: {exc}") from None
    return [(name, strokes_of(drawing)) for name, drawing in chosen]


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
