"""Multi-layer maze (domain: spatial).

Each layer is a square grid of cells. One or two layers are drawn side by side, left to
right; three to five are drawn in two rows (three and four in a 2 x 2 grid), in the order of a
U: the top row left to right, then down, then the bottom row right to left. A grey chevron between
consecutive layers points to the next one. A portal is a pair of discs of one colour at the
same cell of two consecutive layers, one colour per pair of layers; the line changes layer
there, in either direction. The route runs from the green start (first layer) to the red end
(last layer).

``layers - 1`` portals lie on the route, one per pair of consecutive layers. Any further
portals (``portals`` above ``layers - 1``) are decoys: each leads into a pocket, a region of
the other layer walled off from the rest of it (16..42 cells on 32 x 32 layers), so going
through a decoy is a dead end. A decoy's disc looks like the route's portal of its pair:
only following the walls on the far layer tells them apart. Each layer's main region (all
its cells without decoys) is a perfect maze, a spanning tree, and so is each pocket; the
trees joined by the portals (one per pair of layers, one per pocket) form one tree, so the
route is unique and a decoy is one more dead-end branch. The verifier reads any drawing on
its own terms (any valid route passes); the generator's solution is that unique route.

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

Configs that version 1.2.0 could not make (two rows of layers, decoys) get ``balanced`` edits,
so that the solution, one edit back from a distractor centre, is not the option with the
most ink or the one farthest from the others more often than a variant of the centre: no
edit changes more than EDIT_LIMIT cells and links (shortcuts through a wall and moved layer
changes were the largest edits), and around a distractor the variants that
step back toward the solution are dropped before the two sides in ink are balanced, not
after. Since 1.5.0 a balanced edit also leaves the marker cells (portal discs, start, end) as it
found them, their cells and the links into them: the solution carries none of its set's edits,
and a line run on through a portal covered more of its disc where no edit uncovered one, so the
solution was the option that showed the most of the portal colours. Every balanced answer is one
unbroken line with the solution's line ends (``ONE_LINE_KINDS``): a gap or a stray line adds two
line ends and a branch one, and the solution, the one option without edits, had the fewest in
84 % of hard sets. With the marker cells as drawn, that leaves the edits through walls: a
shortcut or a detour (mostly less ink) and a reroute (a longer piece of line through a wall,
mostly more), each of a size drawn apart from its sign (``STEPS``: a wall crossed hides a little
of the line, so edits that cancelled in links left the solution the inkiest option; since 1.6.0
the size no longer follows the sign, which left the solution's set-centred ink on values of its
own; a solution without edits of every size is drawn again). Their walls are
drawn over the line: a line over a wall covered wall pixels, so the solution, the one option
crossing no wall, showed the most wall colour (the verifier reads a line under a wall either
side of it). Their sets draw the signs of their three edits (adding or removing ink) once
(``signs_per_set``), and a set whose edits do not compose is not drawn as a star (one aspect in
play): the maze is drawn again. A strip of one or two
layers without decoys keeps 1.2.0's edits: its puzzles are unchanged (a strip of three, 1.3.0's
hard, is drawn in two rows since 1.4.0).
"""

from __future__ import annotations

import math
import zlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from vrforge.generators.tacit import _option_set
from vrforge.params import ParamError, check_params, param
from vrforge.registry import TaskSpec, register_task
from vrforge.svgdraw import fmt, new_drawing, polyline_path, segments_path, to_string
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import maze as maze_verifier

# 1.7.0: where the walls are drawn over the line, each answer's line width varies by up to 3 %, as
# a hash of the answer says: a line passing under a wall loses the strip the wall covers, and the
# solution, the one option that crosses no wall, had the most line of every option whose edits
# cancelled in length (the least-ink picker found it 0.11 of the time on hard). On easy and medium,
# a set that would fall back to a star (one aspect in play) is drawn again (a quarter of easy sets had been).
VERSION = "1.7.0"
REGIONS = 3  # per side of a layer: the aspects of a drawing are its 3 x 3 regions per layer
CELL = 20  # SVG units per cell
MARGIN = 16  # the least margin, for small mazes
EDGE_SHARE = 0.055  # of each dimension kept clear on every side: a 5 % crop of any side keeps the whole maze
GAP = 40  # between layers, room for the chevron
WALL_WIDTH = 0.12 * CELL
PATH_WIDTH = 0.42 * CELL
MARKER = 0.76 * CELL  # side of the start and end squares, diameter of a portal disc
# Where the walls are drawn over the line, each answer's line is drawn up to this share wider or
# narrower, as a hash of the answer says (``line_width``).
WIDTH_JITTER = 0.03
CHEVRON = 24  # SVG units from one arm's end to the other's (the chevron is 12 deep, its stroke 4)
# More layers than this are drawn in two rows: in a strip of three, a 14 x 14 layer's cell is under
# 20 px at 1024 px, where models misread its walls (two rows: 33 px).
STRIP_LAYERS = 2
MAX_PORTALS = 32
POCKET_TRIES = 20  # pockets grown for one decoy before the puzzle is redrawn

PALETTE = {
    "background": "#ffffff",
    "wall": "#222222",
    "path": "#1976d2",
    "start": "#2e7d32",
    "end": "#c62828",
    "chevron": "#9e9e9e",
}
PORTAL_COLOURS = ("#ef6c00", "#8e24aa", "#00897b", "#f9a825")  # one per pair of consecutive layers

Cell = tuple[int, int]  # (row, col)
Stroke = tuple[int, list[Cell]]  # (layer, cells along the drawn line)


def pocket_cells(size: int) -> tuple[int, int]:
    """The least and most cells of a decoy's pocket on layers of ``size`` x ``size`` cells:
    large enough that its enclosing wall takes following, small enough to leave the main region room."""
    return max(4, size * size // 64), max(8, size * size // 24)


@dataclass(frozen=True)
class MazeConfig:
    layers: int = param(doc="layers of the maze, joined by portals (up to 3 drawn side by side, 4 or 5 in two rows)",
                        low=1, high=len(PORTAL_COLOURS) + 1)
    size: int = param(doc="cells per side of each layer", low=5, high=40)
    portals: int = param(-1, doc="portals in all: layers - 1 on the route (one per pair of consecutive layers), the rest "
                                 "decoys that lead into walled-off pockets; -1 means layers - 1 (no decoys)",
                         low=-1, high=MAX_PORTALS)

    def validate(self) -> None:
        check_params(self)
        route = self.layers - 1
        if self.portals != -1 and self.portals < route:
            raise ParamError(f"portals must be -1 (layers - 1) or at least layers - 1 = {route} (one on the route per "
                             f"pair of consecutive layers), got {self.portals}")
        if self.decoys and self.layers < 2:
            raise ParamError(f"portals beyond layers - 1 are decoys between two layers: portals={self.portals} needs layers >= 2")
        most = pocket_cells(self.size)[1]
        if self.decoys * most > self.layers * self.size * self.size // 4:
            raise ParamError(f"portals={self.portals}: {self.decoys} decoys need pockets of up to {most} cells each, more "
                             f"than a quarter of {self.layers} layer(s) of {self.size} x {self.size} cells")

    @property
    def decoys(self) -> int:
        """Portals off the route, each leading into a pocket."""
        return 0 if self.portals == -1 else self.portals - (self.layers - 1)


DIFFICULTIES = {
    "easy": MazeConfig(layers=1, size=8),
    "medium": MazeConfig(layers=2, size=12),
    "hard": MazeConfig(layers=3, size=14),
    # Beyond the reference release's hard (32 x 32, 3 layers, 5 portals). In a 2 x 2 grid a cell is
    # 6.9 px at 512 (below its floor): released at 1024 and 2048 px.
    "expert": MazeConfig(layers=4, size=32, portals=8),
}


# ---------------------------------------------------------------- maze structure


@lru_cache(maxsize=8)
def _neighbour_table(n: int) -> dict[Cell, list[Cell]]:
    return {(r, c): [(r + dr, c + dc) for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)) if 0 <= r + dr < n and 0 <= c + dc < n]
            for r in range(n) for c in range(n)}


def _grid_neighbours(n: int, cell: Cell) -> list[Cell]:
    """The cells beside ``cell`` (up, down, left, right), as a shared list: not to be changed."""
    return _neighbour_table(n)[cell]


class Layer:
    """A maze on an n x n grid: ``east[r, c]`` opens (r,c)-(r,c+1), ``south[r, c]`` (r,c)-(r+1,c).
    Without ``pockets`` a perfect maze of every cell; with them, one of the cells outside
    the pockets and one of each pocket, with no passage across a pocket's edge."""

    def __init__(self, size: int, rng: np.random.Generator | None, pockets: Sequence[Sequence[Cell]] = ()) -> None:
        self.size = size
        self.east = np.zeros((size, size - 1), dtype=bool)
        self.south = np.zeros((size - 1, size), dtype=bool)
        self._open: dict[Cell, list[Cell]] | None = None  # each cell's open neighbours, once carved
        if rng is not None:
            if pockets:
                self._carve_around(pockets, rng)
            else:
                self._carve(rng)

    @classmethod
    def from_meta(cls, meta: dict, index: int) -> Layer:
        """Layer ``index`` of a puzzle, from its meta."""
        layer = cls(meta["size"], None)
        layer.east = np.asarray([[v == "1" for v in row] for row in meta["open_east"][index]], dtype=bool).reshape(layer.east.shape)
        layer.south = np.asarray([[v == "1" for v in row] for row in meta["open_south"][index]], dtype=bool).reshape(layer.south.shape)
        layer._open = None
        return layer

    def _carve(self, rng: np.random.Generator, start: Cell | None = None, seen: np.ndarray | None = None) -> None:
        # Iterative depth-first backtracker: long winding corridors, few trivial shortcuts. Cells
        # already ``seen`` are left alone.
        n = self.size
        seen = np.zeros((n, n), dtype=bool) if seen is None else seen
        start = (int(rng.integers(n)), int(rng.integers(n))) if start is None else start
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

    def _carve_around(self, pockets: Sequence[Sequence[Cell]], rng: np.random.Generator) -> None:
        """The cells outside ``pockets`` (one region) carved as one perfect maze, then each pocket as its own."""
        n = self.size
        walled = np.zeros((n, n), dtype=bool)
        for pocket in pockets:
            walled[tuple(np.transpose(pocket))] = True
        free = np.argwhere(~walled)
        row, col = free[int(rng.integers(len(free)))]
        self._carve(rng, (int(row), int(col)), walled.copy())
        for pocket in pockets:
            outside = np.ones((n, n), dtype=bool)
            outside[tuple(np.transpose(pocket))] = False
            first = pocket[int(rng.integers(len(pocket)))]
            self._carve(rng, (first[0], first[1]), outside)

    def set_open(self, a: Cell, b: Cell) -> None:
        (r1, c1), (r2, c2) = (a, b) if a <= b else (b, a)
        if r1 == r2:
            self.east[r1, c1] = True
        else:
            self.south[r1, c1] = True
        self._open = None

    def is_open(self, a: Cell, b: Cell) -> bool:
        (r1, c1), (r2, c2) = (a, b) if a <= b else (b, a)
        return bool(self.east[r1, c1]) if r1 == r2 else bool(self.south[r1, c1])

    def grid_neighbours(self, cell: Cell) -> list[Cell]:
        return _grid_neighbours(self.size, cell)

    def neighbours(self, cell: Cell) -> list[Cell]:
        """The open neighbours of ``cell``, in grid_neighbours order (a shared list: not to be changed)."""
        if self._open is None:  # looked up once: the editor asks about the same cells thousands of times
            east, south = self.east.tolist(), self.south.tolist()
            table = _neighbour_table(self.size)
            self._open = {cell: [o for o in around
                                 if (east[min(cell[0], o[0])][min(cell[1], o[1])] if o[0] == cell[0]
                                     else south[min(cell[0], o[0])][cell[1]])]
                          for cell, around in table.items()}
        return self._open[cell]

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


def _connected_without(n: int, walled: set[Cell]) -> bool:
    """Whether the cells of an n x n grid outside ``walled`` form one region."""
    free = [(r, c) for r in range(n) for c in range(n) if (r, c) not in walled]
    reached, queue = {free[0]}, deque([free[0]])
    while queue:
        for other in _grid_neighbours(n, queue.popleft()):
            if other not in walled and other not in reached:
                reached.add(other)
                queue.append(other)
    return len(reached) == len(free)


def _grow_pocket(n: int, existing: list[list[Cell]], cells: int, rng: np.random.Generator) -> list[Cell] | None:
    """A region of ``cells`` cells grown one random neighbour at a time, apart from the ``existing``
    pockets of its layer and leaving the rest of the layer one region; None when it does not fit."""
    taken = {cell for pocket in existing for cell in pocket}
    near = taken | {other for cell in taken for other in _grid_neighbours(n, cell)}
    free = [(r, c) for r in range(n) for c in range(n) if (r, c) not in near]
    if not free:
        return None
    region = [free[int(rng.integers(len(free)))]]
    inside = set(region)
    while len(region) < cells:
        frontier = sorted({o for cell in region for o in _grid_neighbours(n, cell) if o not in inside and o not in near})
        if not frontier:
            return None
        region.append(frontier[int(rng.integers(len(frontier)))])
        inside.add(region[-1])
    # The route and every other disc lie in the rest of the layer: it must stay one region.
    return sorted(region) if _connected_without(n, taken | inside) else None


def _plan_pockets(config: MazeConfig, rng: np.random.Generator) -> list[tuple[int, int, list[Cell]]]:
    """Each decoy's (pocket layer, disc layer, pocket cells): a random pair of consecutive layers,
    the pocket on one of them, the decoy's other disc on the other."""
    low, high = pocket_cells(config.size)
    pockets: list[list[list[Cell]]] = [[] for _ in range(config.layers)]
    plan = []
    for _ in range(config.decoys):
        pair, side = int(rng.integers(config.layers - 1)), int(rng.integers(2))
        where, other = pair + side, pair + 1 - side
        for _ in range(POCKET_TRIES):
            region = _grow_pocket(config.size, pockets[where], int(rng.integers(low, high + 1)), rng)
            if region is not None:
                break
        else:
            raise RejectedPuzzle("no room for a decoy's pocket")
        pockets[where].append(region)
        plan.append((where, other, region))
    return plan


def _legacy(config: MazeConfig) -> bool:
    """Whether version 1.2.0 drew this config as this version does (a strip, no decoys): its puzzles keep their bytes."""
    return config.layers <= STRIP_LAYERS and config.decoys == 0


def generate(config: MazeConfig, rng: np.random.Generator) -> Puzzle:
    n = config.size
    plan = _plan_pockets(config, rng) if config.decoys else []
    pockets = [[region for where, _, region in plan if where == index] for index in range(config.layers)]
    walled = [{cell for region in regions for cell in region} for regions in pockets]  # per layer: cells in pockets
    layers = [Layer(n, rng, pockets[index]) for index in range(config.layers)]
    if plan:
        free = [(r, c) for r in range(n) for c in range(n) if (r, c) not in walled[0]]
        start = free[int(rng.integers(len(free)))]
    else:
        start = (int(rng.integers(n)), int(rng.integers(n)))
    used = {start}
    ends: list[Cell] = []  # ends[l] = where the route leaves layer l (portal or the end)
    entry = start
    for index, layer in enumerate(layers):
        # A route portal's cell lies outside the pockets of the next layer too.
        beyond = walled[index + 1] if index + 1 < config.layers else set()
        target = _pick_far(layer, entry, used | beyond if beyond else used, rng)
        used.add(target)
        ends.append(target)
        entry = target
    decoys: list[tuple[int, Cell]] = []  # (lower layer of the pair, cell)
    for where, other, region in plan:
        cells = [cell for cell in region if cell not in used and cell not in walled[other]]
        if not cells:
            raise RejectedPuzzle("a decoy's pocket lies under the other layer's pockets")
        decoys.append((min(where, other), cells[int(rng.integers(len(cells)))]))
        used.add(decoys[-1][1])
    entries = [start] + ends[:-1]
    route = [(index, layer.path(entries[index], ends[index])) for index, layer in enumerate(layers)]

    meta = _meta(config, layers, start, ends, decoys)
    solution = list(route)
    distractors, in_play = _distractors(meta, layers, route, rng, not _legacy(config))

    violations = [name for name, _ in distractors]
    answer_index = int(rng.integers(len(distractors) + 1))
    stats = {
        "route_length": float(sum(len(cells) for _, cells in route)),
        "layers": float(config.layers),
        "cells": float(config.layers * n * n),
        "aspects_in_play": in_play,  # the regions of the layers a solver must check
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


def layout(config: MazeConfig) -> dict:
    """The picture's size and each layer's top-left corner: a strip for up to STRIP_LAYERS
    layers, else two rows in a U (top row left to right, bottom row right to left)."""
    n, count = config.size, config.layers
    columns = count if count <= STRIP_LAYERS else math.ceil(count / 2)
    rows = 1 if count <= STRIP_LAYERS else 2
    slots = [(0, col) for col in range(columns)] + [(1, columns - 1 - col) for col in range(count - columns)]
    inner_width = columns * n * CELL + (columns - 1) * GAP
    inner_height = rows * n * CELL + (rows - 1) * GAP
    margin_x, margin_y = _margin(inner_width), _margin(inner_height)
    return {
        "width": inner_width + 2 * margin_x,
        "height": inner_height + 2 * margin_y,
        "cell": CELL,
        "origins": [[margin_x + col * (n * CELL + GAP), margin_y + row * (n * CELL + GAP)] for row, col in slots],
    }


def _meta(config: MazeConfig, layers: list[Layer], start: Cell, ends: list[Cell], decoys: Sequence[tuple[int, Cell]] = ()) -> dict:
    n = config.size
    portals = [
        {"layers": [index, index + 1], "cell": list(ends[index]), "colour": PORTAL_COLOURS[index]}
        for index in range(config.layers - 1)
    ]
    portals += [{"layers": [low, low + 1], "cell": list(cell), "colour": PORTAL_COLOURS[low]} for low, cell in decoys]
    return {
        "task": "maze",
        "layers": config.layers,
        "size": n,
        "open_east": [["".join("1" if v else "0" for v in row) for row in layer.east] for layer in layers],
        "open_south": [["".join("1" if v else "0" for v in row) for row in layer.south] for layer in layers],
        "start": [0, *start],
        "end": [config.layers - 1, *ends[-1]],
        "portals": portals,
        "layout": layout(config),
        "palette": dict(PALETTE),
    }


def legibility(config: MazeConfig) -> dict[str, float]:
    """The smallest features, as shares of the picture's width (the layout has no randomness)."""
    width = layout(config)["width"]
    features = {"cell": CELL / width, "wall": WALL_WIDTH / width, "path": PATH_WIDTH * (1 - WIDTH_JITTER) / width,
                "marker": MARKER / width}
    if config.layers > 1:
        features["chevron"] = CHEVRON / width
    return features


LEGIBILITY_FLOORS = {
    "cell": 8.0,  # under 8 px a cell cannot hold a disc or square and the line clear of its walls
    "wall": 1.0,  # anti-aliasing is off: a wall under 1 px can fall between pixel centres and vanish
    "path": 3.0,  # a line under 3 px reads as one more wall line, its colour a few scattered pixels
    "marker": 6.0,  # a disc or square under 6 px shows too few pixels of its colour to match it with its partner
    "chevron": 8.0,  # a chevron under 8 px tip to tip is a grey dot whose direction cannot be read
}

CONVENTIONS = {
    "the route starts on the start square": "a green square in one cell of the first layer",
    "the route ends on the end square": "a red square in one cell of the last layer",
    "the line runs only between open neighbouring cells, never across a wall or out of its layer":
        "dark wall lines between cells and around each layer",
    "the layers follow one another in order, and a portal joins two consecutive layers":
        "grey chevrons between consecutive layers, pointing to the next (in two rows: right, down, then left)",
    "the line changes layer only at a portal: it ends on a disc on one layer and starts again on the disc "
    "of the same colour at the same cell of the next or previous layer":
        "pairs of same-colour discs at the same cell of two consecutive layers, one colour per pair of layers",
    "the answer is one unbranched line through cell centres": "the instruction; every option draws it in blue",
}


# ---------------------------------------------------------------- distractors

Node = tuple[int, int, int]  # (layer, row, col)
Link = tuple[Node, Node]  # the smaller node first
DISTRACTOR_KINDS = ("wrong_exit", "branching", "disconnected", "wall_breach", "portal_skip")
# The violations one unbroken line can fail. A gap or a stray line adds two line ends, a branch
# one, and the solution (one line) has the fewest: balanced edits keep every answer one line.
ONE_LINE_KINDS = ("wrong_exit", "wall_breach", "portal_skip")
KMAX = 6  # the most cells one edit adds or removes
# Variants kept per kind of edit, in pairs that add and remove about the same ink (running a
# line end on / pruning it, a branch / a gap, a stray line / a gap, a detour / a shortcut), so
# that the solution, one edit back from the set's centre, is not the one with the least or most ink.
QUOTA = {"extend": 4, "prune": 4, "divert": 4, "branch": 4, "cut": 4, "island": 4, "breach": 6, "jump": 4}
# Balanced edits keep one line through the marker cells as drawn, which leaves the edits through
# walls: a shortcut or a detour (``breach``, mostly less ink) and a reroute (mostly more).
ONE_LINE_QUOTA = {"breach": 8, "reroute": 8}
# The links a balanced edit adds or takes away: a size drawn apart from its sign, once per edit
# of the set (``_option_set.choose_set``'s ``steps``; a piece of line replaced between two cells of
# a grid changes its links by an even number, and none changes by zero: each wall a line crosses
# hides a little of it, so where an edit left the links as they were, the option showed a little
# less line than the solution). Seen from an option that carries an edit, its change is negated:
# with one pair of sizes per puzzle (removals of 2 links and additions of 4, or the reverse),
# the solution was the one option from whose side the pair held, and its centred ink fell on
# values no other option took (a probe on the set-centred ink alone found it in 0.42 of hard sets).
SIZES = (2, 4)
STEPS = tuple(sorted({sign * size for size in SIZES for sign in (-1, 1)}))
TRIES = 3  # candidates judged per variant kept, at most: bounds the cost of edits that rarely fit
# With ``balanced`` edits (configs 1.2.0 could not make: see ``_legacy``) an edit changes (adds
# or takes away) at most the cells and links of a gap or a stray line of KMAX cells. A set
# centred on a distractor one large edit from the solution made the solution its inkiest
# option, or the one farthest from the others.
EDIT_LIMIT = 2 * KMAX + 1
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


def _changed(a: Drawing, b: Drawing) -> int:
    """How many cells and links one drawing has that the other has not."""
    return len(a.cells ^ b.cells) + len(a.links ^ b.links)


def _line_ends(drawing: Drawing) -> int:
    """The drawn cells with at most one link: where a line stops on its layer."""
    return sum(len(others) <= 1 for others in _adjacency(drawing).values())


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

    def __init__(self, meta: dict, layers: list[Layer], solution: Drawing, salt: int, balanced: bool = False) -> None:
        self.layers = layers
        self.balanced = balanced
        self.solution = solution
        self.size = meta["size"]
        self.start, self.end = tuple(meta["start"]), tuple(meta["end"])
        self.portals = {(p["layers"][0], *p["cell"]) for p in meta["portals"]}
        # Portal discs stay under the line where it covers them: an uncovered disc adds a colour
        # to the picture that the solution never shows, so gaps and pruning leave them alone.
        self.discs = frozenset((layer, *p["cell"]) for p in meta["portals"] for layer in p["layers"])
        self.markers = self.discs | {self.start, self.end}
        self.ends = _line_ends(solution)
        self.salt = salt
        self.judge = maze_verifier.Judge(meta)
        self.judge.passages  # noqa: B018 - built now: every candidate is judged against it
        self._found: dict[Drawing, list[tuple[str, Drawing]]] = {}
        self._vectors: dict[Drawing, np.ndarray] = {}

    # -- the maze

    def is_open(self, a: Node, b: Node) -> bool:
        return a[0] == b[0] and abs(a[1] - b[1]) + abs(a[2] - b[2]) == 1 and self.layers[a[0]].is_open(a[1:], b[1:])

    def around(self, node: Node) -> list[Node]:
        return [(node[0], *cell) for cell in self.layers[node[0]].grid_neighbours(node[1:])]

    def passages(self, node: Node) -> list[Node]:
        return [(node[0], *cell) for cell in self.layers[node[0]].neighbours(node[1:])]

    def stand_in(self, drawing: Drawing) -> np.ndarray:
        """One element per cell and per link between neighbours: 1 where drawn (read-only:
        kept per drawing, which the option set and the editor ask about again and again)."""
        if drawing in self._vectors:
            return self._vectors[drawing]
        n = self.size
        count = len(self.layers) * n * n
        vector = np.zeros(3 * count)
        index = [(layer * n + r) * n + c for layer, r, c in drawing.cells]
        index += [(1 if b[1] == r else 2) * count + (layer * n + r) * n + c for (layer, r, c), b in drawing.links]
        vector[index] = 1.0
        vector.flags.writeable = False
        self._vectors[drawing] = vector
        return vector

    def regions(self) -> np.ndarray:
        """The aspect of each stand-in element: the region of its layer (the grid cut into
        REGIONS x REGIONS blocks) holding its cell, or a link's first cell, so that a solver
        checking a route region by region checks one aspect per region."""
        n, side = self.size, -(-self.size // REGIONS)
        layer, r, c = np.meshgrid(np.arange(len(self.layers)), np.arange(n), np.arange(n), indexing="ij")
        block = (layer * REGIONS + r // side) * REGIONS + c // side
        return np.tile(block.ravel(), 3)

    def combine(self, solution: Drawing, drawing: Drawing, edited: Drawing) -> tuple[str, Drawing] | None:
        """``drawing`` with the edit that made ``edited`` from ``solution`` (the cells and links it
        drew and erased), and the one check it fails (None unless exactly one)."""
        cells = (drawing.cells - (solution.cells - edited.cells)) | (edited.cells - solution.cells)
        links = (drawing.links - (solution.links - edited.links)) | (edited.links - solution.links)
        joined = Drawing(frozenset(cells), frozenset(x for x in links if x[0] in cells and x[1] in cells))
        name = self.fault(joined)
        return None if name is None or joined == drawing else (name, joined)

    # -- the verifier's checks

    def checks(self, drawing: Drawing) -> dict[str, bool]:
        return self.judge.ordered(drawing.cells, drawing.links)  # the editor's links are ordered

    def fault(self, drawing: Drawing) -> str | None:
        failed = [name for name, ok in self.checks(drawing).items() if not ok]
        if len(failed) != 1 or failed[0] not in DISTRACTOR_KINDS:
            return None
        if self.balanced and (failed[0] not in ONE_LINE_KINDS or _line_ends(drawing) != self.ends):
            return None  # one line with the solution's line ends (as many layer changes)
        return failed[0]

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
        marked = self._at_markers(drawing)
        edits = {"extend": self._extend, "prune": self._prune, "divert": self._divert, "branch": self._branch, "cut": self._cut,
                 "island": self._island, "breach": self._breach, "jump": self._jump, "reroute": self._reroute}
        for kind, quota in (ONE_LINE_QUOTA if self.balanced else QUOTA).items():
            kept = tried = 0
            for candidate in edits[kind](drawing, adjacency, rng):
                if kept == quota or (tried == TRIES * quota and kind not in ("extend", "prune")):
                    break
                if candidate is None or candidate in seen:
                    continue
                if self.balanced and (_changed(candidate, drawing) > EDIT_LIMIT or self._at_markers(candidate) != marked
                                      or len(candidate.links) - len(drawing.links) not in STEPS):
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
        if self.balanced and drawing != self.solution:  # the sides are balanced among what is left
            found = self._not_back(drawing, found)
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
        if not self.balanced and drawing != self.solution:
            found = self._not_back(drawing, found)
        self._found[drawing] = found
        return found

    def every_size(self) -> bool:
        """Whether the solution has edits of every change in ``STEPS``: a puzzle is kept or drawn
        again whichever changes its set draws, so the changes that compose more easily are not
        kept more often (the larger additions are rarer)."""
        return {len(d.links) - len(self.solution.links) for _, d in self.variants(self.solution)} >= set(STEPS)

    def _at_markers(self, drawing: Drawing) -> tuple[frozenset[Node], frozenset[Link]]:
        """What a drawing puts on the marker cells (portal discs, start, end): the cells and their
        links. The solution is the one option that carries none of its set's edits, so an edit
        that covered more of a disc (a line run on through a portal) and none that uncovered one
        left the solution the option that shows the most of the discs' colours."""
        return (drawing.cells & self.markers,
                frozenset(x for x in drawing.links if x[0] in self.markers or x[1] in self.markers))

    def _not_back(self, drawing: Drawing, found: list[tuple[str, Drawing]]) -> list[tuple[str, Drawing]]:
        """The variants of a distractor no nearer the solution than the distractor itself."""
        target = self.stand_in(self.solution)
        here = np.abs(self.stand_in(drawing) - target).sum()
        return [v for v in found if np.abs(self.stand_in(v[1]) - target).sum() >= here]

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

    def _reroute(self, drawing: Drawing, adjacency: dict[Node, list[Node]], rng: np.random.Generator):
        """A piece of a line replaced by a longer one through a wall: it leaves the line through a
        wall, runs along passages and comes back onto the line (through a wall or not), dropping
        what lies between (the ink a shortcut takes, given back)."""
        cells = drawing.cells
        sites = [(y, w) for y in sorted(cells - self.markers) if len(adjacency[y]) == 2
                 for w in self.around(y) if w not in cells and not self.is_open(y, w)]
        for i in rng.permutation(len(sites)).tolist():
            y, w = sites[i]
            line = self._corridor(w, cells, int(rng.integers(1, KMAX)), rng)
            back = [x for x in self.around(line[-1]) if x in cells and x != y and x not in self.markers]
            if not back:
                continue
            x = back[int(rng.integers(len(back)))]
            skipped = self._between(adjacency, y, x, KMAX)
            if skipped is None:
                continue
            unlink = [_link(y, x)] if not skipped else []
            links = [_link(a, b) for a, b in zip([y, *line], [*line, x])]
            yield self._edit(drawing, remove=skipped, add=line, unlink=unlink, link=links)

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


def _distractors(meta: dict, layers: list[Layer], route: list[Stroke], rng: np.random.Generator,
                 balanced: bool = False) -> tuple[list[tuple[str, list[Stroke]]], float]:
    """The four (violation, strokes) distractors and the regions a solver must check to rule them out."""
    solution = drawing_of(route)
    editor = _Editor(meta, layers, solution, int(rng.integers(2**32)), balanced)
    regions = editor.regions()
    if balanced and not editor.every_size():
        raise RejectedPuzzle("distractors: the solution lacks edits of some size")
    try:
        chosen = _option_set.choose_set(solution, editor.variants, editor.stand_in, rng, groups=regions,
                                        combine=editor.combine, signed=True, signs_per_set=balanced,
                                        # the stand-in counts a line's cells and its links: twice the links
                                        steps=tuple(2.0 * size for size in SIZES) if balanced else (),
                                        fallback=False)
    except ValueError as exc:
        raise RejectedPuzzle(f"distractors: {exc}") from None
    in_play = _option_set.set_aspects(solution, chosen, _option_set.aspects_of(editor.stand_in, regions))
    return [(name, strokes_of(drawing)) for name, drawing in chosen], in_play


# ---------------------------------------------------------------- drawing


def cell_centre(meta: dict, layer: int, cell: Cell) -> tuple[float, float]:
    ox, oy = meta["layout"]["origins"][layer]
    return ox + (cell[1] + 0.5) * CELL, oy + (cell[0] + 0.5) * CELL


def _wall_segments(meta: dict, layer: int) -> list[tuple[float, float, float, float]]:
    ox, oy = meta["layout"]["origins"][layer]
    return _segments(meta["size"], ox, oy, tuple(meta["open_east"][layer]), tuple(meta["open_south"][layer]))


@lru_cache(maxsize=32)
def _walls_d(n: int, ox: float, oy: float, east: tuple[str, ...], south: tuple[str, ...], chained: bool) -> str:
    """The path ``d`` of one layer's walls (a build draws each puzzle seven times: kept for the next)."""
    segments = _segments(n, ox, oy, east, south)
    return " ".join(polyline_path(line) for line in _chains(segments)) if chained else segments_path(segments)


def _segments(n: int, ox: float, oy: float, east: Sequence[str], south: Sequence[str]) -> list[tuple[float, float, float, float]]:
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


def _chains(segments: list[tuple[float, float, float, float]]) -> list[list[tuple[float, float]]]:
    """The segments joined end to end into polylines: the same strokes (a square cap and a mitred
    right-angle join cover the same corner) in about 30 % fewer path points for cairosvg to parse."""
    at: dict[tuple[float, float], list[int]] = {}
    for i, (x1, y1, x2, y2) in enumerate(segments):
        at.setdefault((x1, y1), []).append(i)
        at.setdefault((x2, y2), []).append(i)
    used = [False] * len(segments)
    lines = []
    for i, (x1, y1, x2, y2) in enumerate(segments):
        if used[i]:
            continue
        used[i] = True
        line = [(x1, y1), (x2, y2)]
        for _ in range(2):  # on from one end, then from the other
            while (j := next((k for k in at[line[-1]] if not used[k]), None)) is not None:
                used[j] = True
                a, b = segments[j][:2], segments[j][2:]
                line.append(b if a == line[-1] else a)
            line.reverse()
        lines.append(line)
    return lines


def _chevron(meta: dict, layer: int) -> str:
    """The path of the chevron in the gap between ``layer`` and the next, pointing to the next."""
    side, half = meta["size"] * CELL, CHEVRON / 2
    (x0, y0), (x1, y1) = meta["layout"]["origins"][layer], meta["layout"]["origins"][layer + 1]
    if y0 == y1:  # side by side: mid-gap, level with the layers' middle
        x, y, sign = (min(x0, x1) + side + max(x0, x1)) / 2, y0 + side / 2, 1 if x1 > x0 else -1
        points = [(x - sign * half / 2, y - half), (x + sign * half / 2, y), (x - sign * half / 2, y + half)]
    else:  # one above the other: mid-gap, under the layers' middle
        x, y, sign = x0 + side / 2, (min(y0, y1) + side + max(y0, y1)) / 2, 1 if y1 > y0 else -1
        points = [(x - half, y - sign * half / 2), (x, y + sign * half / 2), (x + half, y - sign * half / 2)]
    return polyline_path(points)


def draw(meta: dict, strokes: list[Stroke] | None) -> str:
    """The puzzle SVG, with ``strokes`` (if any) drawn on top as the answer path."""
    layout, palette = meta["layout"], meta["palette"]
    drawing = new_drawing(layout["width"], layout["height"], palette["background"], crisp=True)
    inset = (CELL - MARKER) / 2

    def square(layer: int, cell: Cell, colour: str) -> None:
        x, y = cell_centre(meta, layer, cell)
        side = CELL - 2 * inset
        drawing.add(drawing.rect(insert=(fmt(x - side / 2), fmt(y - side / 2)), size=(fmt(side), fmt(side)), fill=colour))

    square(meta["start"][0], tuple(meta["start"][1:]), palette["start"])
    square(meta["end"][0], tuple(meta["end"][1:]), palette["end"])
    for portal in meta["portals"]:
        for layer in portal["layers"]:
            x, y = cell_centre(meta, layer, tuple(portal["cell"]))
            drawing.add(drawing.circle(center=(fmt(x), fmt(y)), r=fmt(MARKER / 2), fill=portal["colour"]))
    # Layers in two rows (new in 1.3.0) draw their walls as polylines; a strip keeps its segments.
    chained = len({y for _, y in layout["origins"]}) > 1

    def walls() -> None:
        for layer in range(meta["layers"]):
            ox, oy = layout["origins"][layer]
            d = _walls_d(meta["size"], ox, oy, tuple(meta["open_east"][layer]), tuple(meta["open_south"][layer]), chained)
            drawing.add(drawing.path(d=d, stroke=palette["wall"],
                                     stroke_width=fmt(WALL_WIDTH), stroke_linecap="square", fill="none"))

    # Where edits are balanced (``_legacy`` is False: two rows, or decoys), the walls are drawn
    # over the line: every distractor crosses a wall, and a line drawn over one covered wall
    # pixels, so the solution showed the most wall colour.
    over = meta["layers"] > STRIP_LAYERS or len(meta["portals"]) > meta["layers"] - 1
    if not over:
        walls()
    for layer in range(meta["layers"] - 1):  # chevron: "go on to the next layer"
        drawing.add(drawing.path(d=_chevron(meta, layer), stroke=palette["chevron"], stroke_width=4, fill="none",
                                 stroke_linecap="round", stroke_linejoin="round"))
    width = line_width(strokes or []) if over else PATH_WIDTH
    for layer, line in strokes or []:
        points = [cell_centre(meta, layer, cell) for cell in line]
        if len(points) == 1:
            drawing.add(drawing.circle(center=(fmt(points[0][0]), fmt(points[0][1])), r=fmt(width / 2), fill=palette["path"]))
        else:
            drawing.add(drawing.path(d=polyline_path(points), stroke=palette["path"], stroke_width=fmt(width),
                                     fill="none", stroke_linecap="square", stroke_linejoin="miter"))
    if over:
        walls()
    return to_string(drawing)


def line_width(strokes: Sequence[Stroke]) -> float:
    """PATH_WIDTH times 1 +- WIDTH_JITTER, as a hash of the answer says. Every distractor crosses a
    wall and the solution none, and a wall drawn over the line hides a strip of it (about an eighth
    of a link): where the edits of an option cancel in length, that strip alone had ranked the
    solution's ink above the option's. A width drawn alike for every option, the solution
    included, spreads each option's ink by a few links, far more than those strips."""
    digest = zlib.crc32(repr([(layer, [tuple(cell) for cell in line]) for layer, line in strokes]).encode())
    return PATH_WIDTH * (1 + WIDTH_JITTER * (2 * digest / 0xFFFFFFFF - 1))


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
        legibility=legibility,
        legibility_floors=LEGIBILITY_FLOORS,
        conventions=CONVENTIONS,
    )
)
