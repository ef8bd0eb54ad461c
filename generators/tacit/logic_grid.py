"""Visual logic grid (domain: logical).

An N x N grid to fill with N symbols (coloured glyphs, each colour also a distinct shape),
each symbol once in every row and every column. Clues, all drawn without text:

- givens: cells already filled, on a grey tile (the same in the puzzle and in every answer);
- ordering chevrons on the edge between two neighbours: the cell on the chevron's open side
  holds the later symbol of the legend strip at the top, which shows the N symbols in order
  with the same chevron between consecutive ones;
- forbidden marks: a small struck-through copy of a symbol in a cell's corner: that symbol
  may not go there.

Uniqueness is proved by a small bitmask backtracking solver with constraint propagation
(naked and hidden singles, bounds on the chevrons) that counts solutions up to two under a
node limit; an attempt that exceeds it is rejected. Generation: a random Latin square, then
clues added one at a time, each one ruling out the current second solution, then every
redundant clue removed, so each remaining clue is needed.

Distractors are near misses of the filled grid, each failing exactly one check by the
verifier's own judge, and none touches a given: the bare puzzle shows the givens alone, so an
option that changed one would differ from the puzzle where the solution never does, and the
option nearest the puzzle's picture would be the solution. The edits: two cells of a row
swapped, which repeats symbols in their two columns (``column_repeat``), or of a column
(``row_repeat``); or the four cells of a rectangle (two rows by two columns) mirrored, which
does the same, or, where the rectangle holds two symbols crosswise, gives another Latin square
that breaks a clue because the solution is unique (``order_violation``, ``forbidden_symbol``;
kept when it breaks one kind only). Every edit permutes the symbols of the cells it changes,
so every option holds the same symbols off the givens, and undoing one is the same edit. The
options are a code over three edits in disjoint cells chosen by ``_option_set.choose_set``:
each edit is carried by two or three of the five options, the solution a random member, so
that ruling out the others takes checking at least two cells whichever option is the solution
(CODE_TRIES triples are tried before the set falls back to a star). No distractor has an empty cell: every
full grid that fails one check holds each symbol N times, as the solution does, so only a
blank would change the ink, and a blank would mark its set's options as full grids around a
solution (``empty_cell`` is still judged on answers).

Drawing is crisp (no anti-aliasing): exact palette PNGs, and at 512 px the glyphs are 40+ px.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import combinations, product
from typing import Any

import numpy as np
import svgwrite

from vrforge.generators.tacit import _option_set
from vrforge.params import ParamError, check_params, param
from vrforge.registry import TaskSpec, register_task
from vrforge.svgdraw import fmt, new_drawing, segments_path, to_string
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import logic_grid as verifier

# 1.5.0: a set that would fall back to a star (one aspect in play) is drawn again.
VERSION = "1.5.0"
TASK = "logic_grid"
CELL = 40.0  # SVG units per cell
MARGIN = 14.0
LEGEND_H = 34.0
GAP = 14.0
GLYPH_R = 0.26 * CELL  # nominal glyph radius
MARK_R = 0.14 * CELL  # forbidden mark radius
MARK_AT = 0.19 * CELL  # forbidden mark centre, from the cell's top-left corner
LEGEND_SCALE = 0.75  # legend glyphs relative to grid glyphs
LEGEND_PITCH = 0.82 * CELL
STROKE = 0.035  # grid lines and strikes, as a share of the cell
CHEVRON = 0.3  # span of a grid chevron, as a share of the cell
CHEVRON_STROKE = 0.065

PALETTE: dict[str, Any] = {
    "background": "#ffffff",
    "grid": "#b8b8b8",
    "ink": "#222222",
    "given": "#dadada",
    "symbols": ["#d62728", "#ff7f0e", "#f5c400", "#2ca02c", "#1f77b4", "#9467bd", "#8c564b"],
}
SHAPES = ("circle", "square", "triangle", "diamond", "hexagon", "star", "cross")
EMPTY = verifier.EMPTY
PER_CHECK = 12  # variants kept per failed check: enough for three in disjoint cells
CODE_TRIES = 24  # triples of edits tried for a code: on a small grid with many givens few triples compose


@dataclass(frozen=True)
class LogicGridConfig:
    size: int = param(doc="N: an N x N grid filled with N symbols", low=3, high=len(SHAPES))
    # Relative weights: a clue added is of each kind in proportion to its weight (among the kinds that can rule out
    # the current second solution).
    given_weight: float = param(doc="relative weight of givens (a filled grey cell) among the clues added", low=0.0)
    order_weight: float = param(doc="relative weight of ordering chevrons between neighbours among the clues added", low=0.0)
    forbid_weight: float = param(doc="relative weight of forbidden marks (a struck-through symbol) among the clues added",
                                 low=0.0)
    node_limit: int = param(2000, doc="search nodes per solver call; beyond it the attempt is rejected", low=100, high=1_000_000)
    attempt_nodes: int = param(10000, doc="search nodes per attempt, all solver calls together", low=100, high=10_000_000)

    def validate(self) -> None:
        check_params(self)
        if self.given_weight + self.order_weight + self.forbid_weight <= 0:
            raise ParamError("the clue weights (given_weight, order_weight, forbid_weight) must not all be zero")
        if self.node_limit > self.attempt_nodes:
            raise ParamError(f"node_limit ({self.node_limit}) must not exceed attempt_nodes ({self.attempt_nodes})")


DIFFICULTIES = {
    "easy": LogicGridConfig(size=4, given_weight=0.4, order_weight=0.35, forbid_weight=0.25),
    "medium": LogicGridConfig(size=5, given_weight=0.25, order_weight=0.45, forbid_weight=0.3),
    "hard": LogicGridConfig(size=6, given_weight=0.15, order_weight=0.55, forbid_weight=0.3),
    # Beyond the reference's hard (grid 6): the most symbols there are shapes for, fewer givens.
    "expert": LogicGridConfig(size=7, given_weight=0.1, order_weight=0.6, forbid_weight=0.3),
}


def legibility(config: LogicGridConfig) -> dict[str, float]:
    """The smallest features a solver must tell apart, as shares of the picture's width."""
    width = 2 * MARGIN + config.size * CELL
    return {
        "cell": CELL / width,
        "symbol": 2 * GLYPH_R / width,
        "legend_symbol": 2 * GLYPH_R * LEGEND_SCALE / width,
        "forbidden_mark": 2 * MARK_R / width,  # the struck-through copy in a cell's corner
        "strike": STROKE * CELL / width,
        "chevron": CHEVRON * CELL / width,  # the span of a chevron on a cell edge
        "chevron_stroke": CHEVRON_STROKE * CELL / width,
    }


LEGIBILITY_FLOORS = {
    "cell": 16.0,  # under 16 px a cell cannot hold a symbol clear of its corner mark and edge chevrons
    "symbol": 8.0,  # under 8 px the shapes (triangle, diamond, hexagon, star) are one blob; colour alone would tell
    "legend_symbol": 8.0,  # as for the symbols: the legend fixes the order
    "forbidden_mark": 6.0,  # under 6 px a mark's shape is lost and it reads as a dot
    "strike": 1.0,  # a stroke under 1 px vanishes under anti-aliasing off (crisp): the mark would read as allowed
    "chevron": 6.0,  # under 6 px a chevron's opening direction cannot be seen
    "chevron_stroke": 1.5,  # a thinner chevron breaks up into single pixels
}

CONVENTIONS = {
    "each symbol once in every row and every column (a Latin square)":
        "not drawn (no wordless sign states it): the grid is N x N for the N symbols of the legend; the instruction says it",
    "the cell on a chevron's open side holds the later symbol of the legend's order":
        "the legend strip above the grid: the symbols in order, the same chevron opening towards each later one",
    "a symbol struck through in a cell's corner may not go in that cell": "the small copy with a line across it",
    "grey tiles are givens: their symbols stay": "the grey tile under the symbol, in the puzzle and in every answer",
    "a symbol is its colour and its shape together (one shape per colour)": "the legend strip",
}


# ---------------------------------------------------------------- solver


class SolverLimit(Exception):
    """The search ran past its node limit."""


Clue = tuple  # ("given", r, c, s) | ("order", rb, cb, rs, cs) | ("forbid", r, c, s)


@cache
def _structure(n: int) -> tuple[list[list[int]], list[list[int]]]:
    """The all-different units (rows and columns) and each cell's peers in them."""
    units = [[r * n + c for c in range(n)] for r in range(n)] + [[r * n + c for r in range(n)] for c in range(n)]
    peers: list[set[int]] = [set() for _ in range(n * n)]
    for unit in units:
        for i in unit:
            peers[i].update(j for j in unit if j != i)
    return units, [sorted(p) for p in peers]


class Solver:
    """Bitmask backtracking over an N x N grid of N symbols with propagation. Solutions are
    lists of symbol indices, row-major."""

    def __init__(self, n: int, clues: list[Clue], node_limit: int = 2000) -> None:
        self.n, self.nn = n, n * n
        self.full = (1 << n) - 1
        self.node_limit = node_limit
        self.nodes = 0
        self.units, self.peers = _structure(n)
        self.start = [self.full] * self.nn
        self.orders: list[tuple[int, int]] = []
        for clue in clues:
            if clue[0] == "given":
                self.start[clue[1] * n + clue[2]] &= 1 << clue[3]
            elif clue[0] == "forbid":
                self.start[clue[1] * n + clue[2]] &= ~(1 << clue[3])
            else:
                self.orders.append((clue[1] * n + clue[2], clue[3] * n + clue[4]))

    def _propagate(self, dom: list[int], queue: list[int]) -> bool:
        """Narrow ``dom`` in place to a fixpoint; ``queue`` holds cells newly fixed to one symbol."""
        full, peers, units, orders = self.full, self.peers, self.units, self.orders
        while True:
            while queue:
                i = queue.pop()
                d = dom[i]
                keep = ~d
                for p in peers[i]:
                    dp = dom[p]
                    if dp & d:
                        dp &= keep
                        if not dp:
                            return False
                        dom[p] = dp
                        if not dp & (dp - 1):
                            queue.append(p)
            changed = False
            for unit in units:
                once = twice = 0
                for i in unit:
                    d = dom[i]
                    twice |= once & d
                    once |= d
                if once != full:
                    return False
                only = once & ~twice
                if only:
                    for i in unit:
                        x = dom[i] & only
                        if x and dom[i] != x:
                            if x & (x - 1):
                                return False
                            dom[i] = x
                            queue.append(i)
            for big, small in orders:
                db, ds = dom[big], dom[small]
                nb = db & ~(((ds & -ds) << 1) - 1)  # big > min(small)
                ns = ds & ((1 << (db.bit_length() - 1)) - 1)  # small < max(big)
                if nb != db or ns != ds:
                    if not nb or not ns:
                        return False
                    dom[big], dom[small] = nb, ns
                    changed = True
                    if not nb & (nb - 1):
                        queue.append(big)
                    if not ns & (ns - 1):
                        queue.append(small)
            if not changed and not queue:
                return True

    def solve(self, limit: int = 2, rank: np.ndarray | None = None) -> list[list[int]]:
        """Up to ``limit`` solutions; ``rank`` (nn x n) orders the values tried in each cell."""
        solutions: list[list[int]] = []
        n = self.n
        order = None if rank is None else np.argsort(rank, axis=1).tolist()

        def search(dom: list[int], queue: list[int]) -> None:
            self.nodes += 1
            if self.nodes > self.node_limit:
                raise SolverLimit
            if not self._propagate(dom, queue):
                return
            best, best_count = -1, n + 1
            for i, d in enumerate(dom):
                k = d.bit_count()
                if 1 < k < best_count:
                    best, best_count = i, k
                    if k == 2:
                        break
            if best < 0:
                solutions.append([d.bit_length() - 1 for d in dom])
                return
            values = range(n) if order is None else order[best]
            for v in values:
                if dom[best] >> v & 1:
                    child = list(dom)
                    child[best] = 1 << v
                    search(child, [best])
                    if len(solutions) >= limit:
                        return

        start = list(self.start)
        if 0 in start:
            return solutions
        search(start, [i for i, d in enumerate(start) if not d & (d - 1)])
        return solutions


class Budget:
    """The search nodes one generation attempt may still spend (a bound on its time)."""

    def __init__(self, config: LogicGridConfig) -> None:
        self.config = config
        self.spent = 0


def _solve(n: int, clues: list[Clue], budget: Budget, limit: int = 2, rank: np.ndarray | None = None) -> list[list[int]]:
    config = budget.config
    allowed = min(config.node_limit, config.attempt_nodes - budget.spent)
    solver = Solver(n, clues, allowed)
    try:
        return solver.solve(limit, rank)
    except SolverLimit:
        if allowed < config.node_limit:
            raise RejectedPuzzle("attempt node budget exceeded") from None
        raise RejectedPuzzle("solver node limit exceeded") from None
    finally:
        budget.spent += solver.nodes


def _other_solution(n: int, clues: list[Clue], solution: list[int], budget: Budget,
                    rng: np.random.Generator) -> list[int] | None:
    """A solution different from ``solution`` under ``clues``, or None."""
    rank = rng.random((n * n, n))
    rank[np.arange(n * n), solution] = -1.0  # the solution's value first: the second grid found is a near one
    for found in _solve(n, clues, budget, 2, rank):
        if found != solution:
            return found
    return None


# ---------------------------------------------------------------- generation


def _candidate_clues(solution: list[int], other: list[int], n: int, clues: list[Clue]) -> dict[str, list[Clue]]:
    """Clues true of ``solution`` and false of ``other``, by kind (one forbidden mark per cell at most)."""
    used = {(c[1], c[2]) for c in clues if c[0] in ("given", "forbid")}
    out: dict[str, list[Clue]] = {"given": [], "order": [], "forbid": []}
    for r, c in product(range(n), range(n)):
        i = r * n + c
        if solution[i] != other[i] and (r, c) not in used:
            out["given"].append(("given", r, c, solution[i]))
            out["forbid"].append(("forbid", r, c, other[i]))
        for r2, c2 in ((r, c + 1), (r + 1, c)):
            if r2 < n and c2 < n:
                j = r2 * n + c2
                if (solution[i] > solution[j]) != (other[i] > other[j]):
                    out["order"].append(("order", r, c, r2, c2) if solution[i] > solution[j] else ("order", r2, c2, r, c))
    return out


def _make_clues(solution: list[int], budget: Budget, rng: np.random.Generator) -> list[Clue]:
    config = budget.config
    n = config.size
    weights = np.array([config.given_weight, config.order_weight, config.forbid_weight], dtype=np.float64)
    kinds = ("given", "order", "forbid")
    clues: list[Clue] = []
    for _ in range(4 * n * n):
        other = _other_solution(n, clues, solution, budget, rng)
        if other is None:
            break
        options = _candidate_clues(solution, other, n, clues)
        w = np.array([weights[k] if options[kind] else 0.0 for k, kind in enumerate(kinds)])
        if not w.sum():  # the grids differ only in cells that already hold a mark
            raise RejectedPuzzle("no clue tells the second solution apart")
        kind = kinds[int(rng.choice(3, p=w / w.sum()))]
        clues.append(options[kind][int(rng.integers(len(options[kind])))])
    else:
        raise RejectedPuzzle("clues did not converge")
    # Remove redundant clues, in random order: afterwards every clue is needed.
    for clue in [clues[k] for k in rng.permutation(len(clues)).tolist()]:
        trial = [c for c in clues if c != clue]
        if len(_solve(n, trial, budget)) == 1:
            clues = trial
    return clues


def _latin_square(n: int, budget: Budget, rng: np.random.Generator) -> list[int]:
    found = _solve(n, [], budget, 1, rank=rng.random((n * n, n)))
    if not found:
        raise RejectedPuzzle("no Latin square found")
    return found[0]


def generate(config: LogicGridConfig, rng: np.random.Generator) -> Puzzle:
    n = config.size
    budget = Budget(config)
    solution = _latin_square(n, budget, rng)
    clues = _make_clues(solution, budget, rng)
    if len(_solve(n, clues, budget)) != 1:  # the proof, once more, on the final clue set
        raise RejectedPuzzle("clue set is not unique")
    meta = _meta(n, clues)
    grid = _as_rows(solution, n)
    if not all(verifier.judge(meta, grid).values()):
        raise RejectedPuzzle("solution breaks its own clues")
    chosen = _distractors(meta, solution, rng)
    answer_index = int(rng.integers(len(chosen) + 1))
    counts = {kind: sum(1 for c in clues if c[0] == kind) for kind in ("given", "order", "forbid")}
    stats = {
        "size": float(n),
        "clues": float(len(clues)),
        "givens": float(counts["given"]),
        "orders": float(counts["order"]),
        "forbidden": float(counts["forbid"]),
        "search_nodes": float(budget.spent),
        "aspects_in_play": _option_set.set_aspects(grid, chosen, _option_set.aspects_of(_cells)),  # cells to check
    }
    return Puzzle(
        meta=meta,
        solution=grid,
        distractors=tuple(g for _, g in chosen),
        violations=tuple(name for name, _ in chosen),
        answer_index=answer_index,
        stats=stats,
    )


def _as_rows(flat: list[int], n: int) -> list[list[int]]:
    return [list(flat[r * n : (r + 1) * n]) for r in range(n)]


def _meta(n: int, clues: list[Clue]) -> dict:
    width = 2 * MARGIN + n * CELL
    height = 2 * MARGIN + LEGEND_H + GAP + n * CELL
    return {
        "task": TASK,
        "size": n,
        "givens": sorted([list(c[1:]) for c in clues if c[0] == "given"]),
        "orders": sorted([list(c[1:]) for c in clues if c[0] == "order"]),
        "forbidden": sorted([list(c[1:]) for c in clues if c[0] == "forbid"]),
        "shapes": list(SHAPES[:n]),
        "layout": {
            "width": width,
            "height": height,
            "cell": CELL,
            "origin": [MARGIN, MARGIN + LEGEND_H + GAP],
            "legend": {"y": MARGIN + LEGEND_H / 2, "pitch": LEGEND_PITCH, "radius": GLYPH_R * LEGEND_SCALE},
        },
        "palette": {"background": PALETTE["background"], "grid": PALETTE["grid"], "ink": PALETTE["ink"], "given": PALETTE["given"],
                    "symbols": list(PALETTE["symbols"][:n])},
    }


# ---------------------------------------------------------------- distractors


Grid = tuple[tuple[int, ...], ...]  # an answer state: the symbol in each cell


def _failed(meta: dict, grid: Grid | list[list[int]]) -> list[str]:
    return [name for name, ok in verifier.judge(meta, grid).items() if not ok]


def _with(grid: Grid, changes: dict[tuple[int, int], int]) -> Grid:
    return tuple(tuple(changes.get((r, c), v) for c, v in enumerate(row)) for r, row in enumerate(grid))


def _edits(grid: Grid, fixed: frozenset[tuple[int, int]] = frozenset()) -> list[Grid]:
    """Every swap of two cells in a row or a column of ``grid``, and every rectangle (two rows by
    two columns) mirrored left-right and top-bottom, right or wrong, that leaves the cells in
    ``fixed`` (the givens) alone. A swap in a row repeats symbols in its two columns
    (``column_repeat``), one in a column in its two rows; a mirror does the same, or, when the
    rectangle holds two symbols crosswise, both mirrors give another Latin square, which breaks a
    clue because the solution is unique. Each edit permutes the symbols of the cells it changes
    and undoing it is the same edit, so the solution, one edit back from a distractor, is a near
    miss of it like any other."""
    n = len(grid)
    out: list[Grid] = []
    for r, (c1, c2) in product(range(n), combinations(range(n), 2)):
        if not {(r, c1), (r, c2)} & fixed:
            out.append(_with(grid, {(r, c1): grid[r][c2], (r, c2): grid[r][c1]}))  # in a row
        if not {(c1, r), (c2, r)} & fixed:
            out.append(_with(grid, {(c1, r): grid[c2][r], (c2, r): grid[c1][r]}))  # in a column
    for (r1, r2), (c1, c2) in product(combinations(range(n), 2), repeat=2):
        if {(r1, c1), (r1, c2), (r2, c1), (r2, c2)} & fixed:
            continue
        a, b, c, d = grid[r1][c1], grid[r1][c2], grid[r2][c1], grid[r2][c2]
        out.append(_with(grid, {(r1, c1): b, (r1, c2): a, (r2, c1): d, (r2, c2): c}))  # left-right
        out.append(_with(grid, {(r1, c1): c, (r1, c2): d, (r2, c1): a, (r2, c2): b}))  # top-bottom
    return out


def _fixed(meta: dict) -> frozenset[tuple[int, int]]:
    """The given cells: the bare puzzle shows them, so an answer that changed one would stand
    apart from the solution in the one place every option can be compared with the puzzle."""
    return frozenset((r, c) for r, c, _ in meta["givens"])


def _variants(meta: dict, grid: Grid, rng: np.random.Generator) -> list[tuple[str, Grid]]:
    """Near misses of ``grid``: its small changes, the givens left alone, that fail exactly one
    check, at most PER_CHECK of each check (drawn at random) so that no kind of edit outnumbers
    the others."""
    by_check: dict[str, list[Grid]] = {}
    for edited in dict.fromkeys(_edits(grid, _fixed(meta))):
        if edited == grid:
            continue
        failed = _failed(meta, edited)
        if len(failed) == 1:
            by_check.setdefault(failed[0], []).append(edited)
    out = []
    for name in sorted(by_check):
        found = by_check[name]
        out += [(name, found[k]) for k in sorted(rng.permutation(len(found))[:PER_CHECK].tolist())]
    return out


def _combined(meta: dict, solution: Grid, grid: Grid, edited: Grid) -> tuple[str, Grid] | None:
    """``grid`` with the cells that ``edited`` changes in ``solution``, and the one check it fails."""
    changes = {(r, c): v for r, row in enumerate(edited) for c, v in enumerate(row) if v != solution[r][c]}
    joined = _with(grid, changes)
    failed = _failed(meta, joined)
    return (failed[0], joined) if len(failed) == 1 and joined != grid else None


def _cells(grid: Sequence[Sequence[int]]) -> np.ndarray:
    return np.asarray(grid, dtype=np.float64).ravel()


def _distractors(meta: dict, solution: list[int], rng: np.random.Generator) -> list[tuple[str, list[list[int]]]]:
    n = meta["size"]
    start = tuple(tuple(row) for row in _as_rows(solution, n))
    try:
        chosen = _option_set.choose_set(start, lambda grid: _variants(meta, grid, rng), _cells, rng, tries=CODE_TRIES, fallback=False,
                                        combine=lambda solution, grid, edited: _combined(meta, solution, grid, edited))
    except ValueError as exc:
        raise RejectedPuzzle(str(exc)) from None
    return [(name, [list(row) for row in grid]) for name, grid in chosen]


# ---------------------------------------------------------------- drawing


def _shape_points(shape: str, x: float, y: float, r: float) -> list[tuple[float, float]] | None:
    """Polygon vertices of a glyph centred at (x, y) with nominal radius r (None: a circle)."""

    def ring(count: int, radius: float, start: float, dy: float = 0.0) -> list[tuple[float, float]]:
        return [(x + radius * math.cos(start + 2 * math.pi * k / count), y + dy + radius * math.sin(start + 2 * math.pi * k / count))
                for k in range(count)]

    if shape == "circle":
        return None
    if shape == "square":
        h = 0.8 * r
        return [(x - h, y - h), (x + h, y - h), (x + h, y + h), (x - h, y + h)]
    if shape == "triangle":
        return ring(3, 1.15 * r, -math.pi / 2, dy=0.18 * r)
    if shape == "diamond":
        return ring(4, 1.08 * r, -math.pi / 2)
    if shape == "hexagon":
        return ring(6, 1.0 * r, 0.0)
    if shape == "star":
        outer, inner = ring(5, 1.15 * r, -math.pi / 2, 0.08 * r), ring(5, 0.52 * r, -math.pi / 2 + math.pi / 5, 0.08 * r)
        return [p for pair in zip(outer, inner) for p in pair]
    if shape == "cross":
        a, b = 0.95 * r, 0.36 * r
        return [(x - b, y - a), (x + b, y - a), (x + b, y - b), (x + a, y - b), (x + a, y + b), (x + b, y + b),
                (x + b, y + a), (x - b, y + a), (x - b, y + b), (x - a, y + b), (x - a, y - b), (x - b, y - b)]
    raise ValueError(f"unknown shape {shape!r}")


def _glyph(drawing: svgwrite.Drawing, shape: str, x: float, y: float, r: float, colour: str) -> svgwrite.base.BaseElement:
    points = _shape_points(shape, x, y, r)
    if points is None:
        return drawing.circle(center=(fmt(x), fmt(y)), r=fmt(0.95 * r), fill=colour)
    d = "M" + "L".join(f"{fmt(px)} {fmt(py)}" for px, py in points) + "Z"
    return drawing.path(d=d, fill=colour)


def _chevron(x: float, y: float, towards: tuple[int, int], size: float) -> str:
    """A chevron at (x, y) whose point faces ``towards`` (dx, dy): it opens to the other side."""
    dx, dy = towards
    w, h = 0.5 * size, size  # depth along the pointing axis, span across it
    tip = (x + dx * w / 2, y + dy * w / 2)
    back = (x - dx * w / 2, y - dy * w / 2)
    a = (back[0] + dy * h / 2, back[1] + dx * h / 2)
    b = (back[0] - dy * h / 2, back[1] - dx * h / 2)
    return f"M{fmt(a[0])} {fmt(a[1])}L{fmt(tip[0])} {fmt(tip[1])}L{fmt(b[0])} {fmt(b[1])}"


def draw(meta: dict, grid: list[list[int]] | None) -> str:
    """The puzzle SVG; with ``grid`` (symbol per cell, EMPTY allowed) the filled answer."""
    layout, palette = meta["layout"], meta["palette"]
    n = meta["size"]
    symbols, shapes = palette["symbols"], meta["shapes"]
    ox, oy = layout["origin"]
    drawing = new_drawing(layout["width"], layout["height"], palette["background"], crisp=True)
    chevron_width = fmt(CHEVRON_STROKE * CELL)

    # Legend: the symbols in order, a chevron opening towards each later one.
    legend = layout["legend"]
    x0 = layout["width"] / 2 - (n - 1) * legend["pitch"] / 2
    legend_chevrons = []
    for k in range(n):
        x = x0 + k * legend["pitch"]
        drawing.add(_glyph(drawing, shapes[k], x, legend["y"], legend["radius"], symbols[k]))
        if k + 1 < n:
            legend_chevrons.append(_chevron(x + legend["pitch"] / 2, legend["y"], (-1, 0), 0.24 * CELL))
    drawing.add(drawing.path(d="".join(legend_chevrons), stroke=palette["ink"], stroke_width=chevron_width, fill="none",
                             stroke_linecap="round", stroke_linejoin="round"))

    # Grid lines (inner light, frame dark).
    inner = [(ox + k * CELL, oy, ox + k * CELL, oy + n * CELL) for k in range(1, n)]
    inner += [(ox, oy + k * CELL, ox + n * CELL, oy + k * CELL) for k in range(1, n)]
    drawing.add(drawing.path(d=segments_path(inner), stroke=palette["grid"], stroke_width=fmt(0.035 * CELL), fill="none"))
    drawing.add(drawing.rect(insert=(fmt(ox), fmt(oy)), size=(fmt(n * CELL), fmt(n * CELL)), fill="none",
                             stroke=palette["ink"], stroke_width=fmt(0.06 * CELL)))

    # Givens: a grey tile under the symbol, in the puzzle and in every answer.
    pad = 0.02 * CELL
    for r, c, _ in meta["givens"]:
        drawing.add(drawing.rect(insert=(fmt(ox + c * CELL + pad), fmt(oy + r * CELL + pad)),
                                 size=(fmt(CELL - 2 * pad), fmt(CELL - 2 * pad)), fill=palette["given"]))

    # Symbols: givens always, the answer's cells when given.
    if grid is None:
        cells = {(r, c): s for r, c, s in meta["givens"]}
    else:
        cells = {(r, c): grid[r][c] for r in range(n) for c in range(n) if grid[r][c] != EMPTY}
    for (r, c), s in sorted(cells.items()):
        drawing.add(_glyph(drawing, shapes[s], ox + (c + 0.5) * CELL, oy + (r + 0.5) * CELL, GLYPH_R, symbols[s]))

    # Forbidden marks: a small copy of the symbol in the corner, struck through.
    strikes = []
    for r, c, s in meta["forbidden"]:
        x, y = ox + c * CELL + MARK_AT, oy + r * CELL + MARK_AT
        drawing.add(_glyph(drawing, shapes[s], x, y, MARK_R, symbols[s]))
        e = 1.05 * MARK_R
        strikes.append((x - e, y + e, x + e, y - e))
    if strikes:
        drawing.add(drawing.path(d=segments_path(strikes), stroke=palette["ink"], stroke_width=fmt(STROKE * CELL), fill="none",
                                 stroke_linecap="round"))

    # Ordering chevrons on the edge between the two cells, pointing at the smaller symbol.
    chevrons = []
    for rb, cb, rs, cs in meta["orders"]:
        x = ox + (cb + cs + 1) / 2 * CELL
        y = oy + (rb + rs + 1) / 2 * CELL
        chevrons.append(_chevron(x, y, (cs - cb, rs - rb), CHEVRON * CELL))
    if chevrons:
        drawing.add(drawing.path(d="".join(chevrons), stroke=palette["ink"], stroke_width=chevron_width, fill="none",
                                 stroke_linecap="round", stroke_linejoin="round"))
    return to_string(drawing)


register_task(
    TaskSpec(
        name=TASK,
        domain="logical",
        version=VERSION,
        checks=verifier.CHECKS,
        difficulties=DIFFICULTIES,
        generate=generate,
        draw=draw,
        verify=verifier.verify,
        description="Visual logic grid: fill every cell so each symbol appears once per row and column, "
                    "keeping the givens, obeying the ordering chevrons and the forbidden marks.",
        instruction=("Solve the logic grid: fill every empty cell with a symbol so each symbol appears once "
                     "per row and column, keeping the grey givens and obeying the ordering chevrons and forbidden marks."),
        answer_hint="the grid with every cell filled so that every rule shown holds",
        difficulty_stat="clues",
        legibility=legibility,
        legibility_floors=LEGIBILITY_FLOORS,
        conventions=CONVENTIONS,
    )
)
