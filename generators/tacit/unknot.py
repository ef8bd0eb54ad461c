"""Unknot detection (domain: topology).

The puzzle is a grid of knot diagrams (5 easy, 6 medium, 8 hard and expert), drawn as smooth
curves with gaps in the under-strand at every crossing. Exactly one diagram is the unknot; the
answer is the same picture with a coloured frame around that diagram's cell. A legend above
the grid shows both without words: a plain loop (the unknot drawn with no crossing) inside a
small frame of the answer's colour and shape.

Diagrams. One unknot diagram is made per puzzle by a random walk of crossing-increasing
Reidemeister moves (spherogram's reverse R1/R2/R3 moves) from the 1-crossing kink:
removable R1 kinks are stripped and the walk stops at exactly the puzzle's crossing
number with a non-alternating diagram. Every other slot shows the same shadow (the same
curve, turned or reflected by one of the eight symmetries of the square) with a uniformly
random crossing assignment, kept only if it is non-alternating and knotted. So all
diagrams have the same crossing number, the same size and the same shape statistics:
only the over/under information tells the unknot apart. Assignments are uniformly random,
not a few switches away from the unknot's, so the unknot's assignment is not the centre
of the set; alternating diagrams are excluded everywhere (a reduced alternating diagram
is always knotted, which would give knotted slots away). Why one shadow rather than
independent table knots: one layout per puzzle (the layout is the slowest step) and
perfectly matched crossing numbers and drawing sizes.

Certification. Knot Floer homology (total rank 1 exactly for the unknot) is computed for
every slot from its PD code: the unknot slot must have rank 1 and every other slot rank
> 1, so exactly one answer is correct by proof, not by construction alone (an unknot walk
whose HFK disagrees is rejected and counted). Time bound: HFK is a C extension, which
``signal.alarm`` cannot interrupt, so the bound is kept by small diagrams (at most
MAX_CROSSINGS = 16 crossings; HFK takes a few milliseconds, at most ~60 ms measured) and each
call is timed: an instance over ``HFK_TIME_BOUND_S`` is rejected (the build counts it and redraws).

Options and checks. The solution frames the unknot; each distractor frames a different
knotted diagram and fails exactly ``marked_knotted``. The five options are the same
picture with one frame in different cells, and the unknot's cell is uniformly random, so
the context-blind pickers choose by cell position alone and score chance (0.20). The aspects
a solver checks are the shadow's crossings (which strand is over): ``aspects_in_play`` counts
the crossings at which the framed diagrams must be compared with the unknot to rule out all
four. The four distractors are drawn from a pool of random knotted assignments so that no
framed diagram is alone at any crossing (at each crossing none, two or three of the
distractors differ from the unknot): two crossings at least, whichever option is the unknot.
Three from every option's side cannot be had with five options over binary aspects (see
``_option_set._codes``), and three from the unknot's side alone would mark it. Distractors are
not built by composing crossing changes of the unknot (``choose_set``): switching one or two
crossings of an unknot diagram often leaves the unknot, and every composite would need its own
certificate; more to the point, diagrams a few switches from the unknot and from each other
would show the solver the three crossings where they differ, a much smaller puzzle than
telling random assignments apart. The
checks ``no_mark`` (bare puzzle), ``several_marks`` and ``diagrams_missing`` (a frame on an
erased picture) reject other wrong answers in the generative track.

Drawing. spherogram's orthogonal layout puts the knot on a grid; each corner becomes a
quadratic Bezier using as much of its two legs as is free (not within reach of a
crossing), which turns the rectilinear layout into round curves. Crossings stay on short
straight pieces; the smoothed curve is checked to cross itself exactly at the layout's
crossings and nowhere else, with clearance between strands, else the rounding is reduced.

Determinism. spherogram draws from the global ``random`` module and keeps graph objects
in sets hashed by memory address; ``_deterministic_spherogram`` seeds ``random`` from the
puzzle's numpy Generator (restoring its state) and hashes those classes by serial number
while the walk and the layout run, so the same seed gives the same SVG in any process.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from vrforge.generators.tacit import _option_set
from vrforge.params import ParamError, check_params, param
from vrforge.registry import TaskSpec, register_task
from vrforge.svgdraw import fmt, new_drawing, segments_path, to_string
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import unknot as unknot_verifier

# 1.4.0: the four framed knotted diagrams leave no framed diagram alone at any crossing (two crossings to check).
VERSION = "1.4.0"
CELL = 200.0  # SVG units per diagram cell
MARGIN = 8.0  # the least margin
EDGE_SHARE = 0.055  # of each dimension kept clear on every side: a 5 % crop of any side keeps every frame
FRAME_WIDTH = 8.0
FRAME_INSET = 7.0  # frame line centre, from the cell edge
DIAGRAM_INSET = 22.0  # knot drawing box, from the cell edge
HFK_TIME_BOUND_S = 1.0
MAX_WALK_MOVES = 40
WALK_TRIES = 40
INK_SAMPLES = 12
GRID = 10.0  # spherogram's orthogonal layout grid spacing
CLEARANCE = 0.6
# SVG units per layout grid step; denser layouts are unreadable: between two crossings one step
# apart an under-strand keeps MIN_GRID_UNIT - stroke - 2 gaps of ink (see legibility).
# 1.3.0: 16.5 (was 14) with gaps 0.3 grid units (were 0.2): a crossing's break is at least 7.5 px at
# 1024 px (was 5.5, which a model's downscaled view greys over) and an under-strand piece keeps 2.5 px at 512.
MIN_GRID_UNIT = 16.5
STROKE_RANGE = (3.2, 5.0)  # strand width in SVG units: 0.2 grid units, within this range
GAP_SHARE = 0.3  # white beside an over-strand, cutting the under-strand, in grid units ...
GAP_RANGE = (4.6, 6.5)  # ... within this range
MAX_CROSSINGS = 16  # HFK stays fast (<= ~60 ms measured at 16); at 18 layouts rarely keep MIN_GRID_UNIT
LEGEND_BAND = 76.0  # above the grid: the legend, a plain loop in a frame (what to mark and how)
LEGEND_SIDE = 60.0
LEGEND_FRAME_WIDTH = 5.0
LEGEND_LOOP_RADIUS = 16.0
VARIANT_TRIES = 12
HALO_HALF = 0.3  # grid units along the over-strand that the white halo covers
OVER_HALF = 0.42  # the over-strand redrawn on top (longer than the halo: no seam)
MAX_ASPECT = 1.5
SHADOW_TRIES = 20  # grid units between strands, away from crossings

PALETTE = {"background": "#ffffff", "ink": "#1f2430", "frame": "#e8590c"}

UNKNOT_SEED = [(1, 1, 2, 2)]  # the 1-crossing kink diagram


@dataclass(frozen=True)
class UnknotConfig:
    diagrams: int = param(doc="knot diagrams in the grid; exactly one is the unknot", low=5, high=12)
    columns: int = param(doc="diagrams per row of the grid (at most diagrams)", low=2, high=6)
    min_crossings: int = param(doc="least crossings of the shared diagram shadow (drawn uniformly in the range)",
                               low=5, high=MAX_CROSSINGS)
    max_crossings: int = param(doc="most crossings of the shared diagram shadow", low=5, high=MAX_CROSSINGS)

    def validate(self) -> None:
        check_params(self)
        if self.columns > self.diagrams:
            raise ParamError(f"columns must be at most diagrams ({self.diagrams}), got {self.columns}")
        if self.min_crossings > self.max_crossings:
            raise ParamError(f"min_crossings must be at most max_crossings, got {self.min_crossings}..{self.max_crossings}")


DIFFICULTIES = {
    "easy": UnknotConfig(diagrams=5, columns=3, min_crossings=5, max_crossings=6),
    "medium": UnknotConfig(diagrams=6, columns=3, min_crossings=6, max_crossings=8),
    "hard": UnknotConfig(diagrams=8, columns=3, min_crossings=8, max_crossings=10),
    # Beyond the reference release's hard (10 crossings) up to its expert (15).
    "expert": UnknotConfig(diagrams=8, columns=3, min_crossings=12, max_crossings=15),
}


def legibility(config: UnknotConfig) -> dict[str, float]:
    """The smallest features, as shares of the picture's width. Worst case over every drawing
    the generator accepts: its layout grid step is at least MIN_GRID_UNIT, strands keep
    CLEARANCE grid steps apart away from crossings, and stroke and gap widths are clipped to
    their ranges (so they are least at the least grid step)."""
    width = _grid(config)[0]
    stroke = float(np.clip(0.2 * MIN_GRID_UNIT, *STROKE_RANGE))
    gap = float(np.clip(GAP_SHARE * MIN_GRID_UNIT, *GAP_RANGE))
    return {"stroke": stroke / width, "crossing_gap": gap / width,
            "strand_gap": (CLEARANCE * MIN_GRID_UNIT - stroke) / width,
            # An under-strand between two crossings one grid step apart keeps this much ink.
            "under_dash": (MIN_GRID_UNIT - stroke - 2 * gap) / width, "grid_step": MIN_GRID_UNIT / width}


LEGIBILITY_FLOORS = {
    "stroke": 1.5,  # a strand under 1.5 px fades to a faint grey under anti-aliasing
    "crossing_gap": 2.5,  # a break under 2.5 px beside the over-strand greys over: the under-strand seems to run through
    "strand_gap": 2.5,  # strands with under 2.5 px of white between them merge into one thick line
    "under_dash": 2.5,  # an under-strand piece under 2.5 px between two crossings reads as a dot, not a strand
    "grid_step": 8.0,  # crossings closer than 8 px run together: their breaks touch and over/under cannot be told
}

CONVENTIONS = {
    "exactly one diagram is the unknot, and it is the one to mark":
        "the legend above the grid: a plain loop (the unknot with no crossing) inside a frame",
    "the mark is a rounded square frame in the frame colour around the diagram's grid cell":
        "the legend's frame has the colour and shape of the mark, around the loop as the mark goes round a cell",
    "a strand broken at a crossing passes under the unbroken one":
        "every crossing is drawn with a white gap cut into its under-strand",
    "only one diagram is marked and the diagrams stay drawn": "one legend frame around one loop",
}


# ---------------------------------------------------------------- diagrams


@contextlib.contextmanager
def _python_random_from(rng: np.random.Generator):
    """spherogram draws from the global ``random`` module: seed it from ``rng``, then restore it."""
    state = random.getstate()
    random.seed(int(rng.integers(2**63)))
    try:
        yield
    finally:
        random.setstate(state)


_ID_HASHED = (
    ("spherogram.graphs", ("BaseEdge", "DirectedEdge", "DirectedMultiEdge", "Edge", "FatEdge", "MultiEdge",
                           "Graph", "Digraph", "FatGraph", "ReducedGraph", "StrongConnector")),
    ("spherogram.links.links_base", ("Crossing", "Strand", "Link", "KLPCrossing")),
    ("spherogram.links.links", ("Crossing", "Strand", "Link")),
    ("spherogram.links.orthogonal", ("OrthogonalRep", "Strand")),
)


@contextlib.contextmanager
def _deterministic_spherogram(rng: np.random.Generator):
    """Make spherogram's choices depend on ``rng`` alone.

    spherogram draws from the global ``random`` module and keeps its graph objects in sets
    hashed by memory address (``id``), so set order, and with it the orthogonal layout,
    would change from process to process. Inside this context ``random`` is seeded from
    ``rng`` (its state is restored afterwards) and those classes hash by a serial number
    given in order of first use, which the (now deterministic) code fixes. Objects made
    inside must not be used outside: compute plain data (PD codes, coordinates) inside.
    """
    import importlib

    serials: dict[int, int] = {}
    alive: list[Any] = []

    def serial_hash(self: Any) -> int:
        key = id(self)
        if key not in serials:
            serials[key] = len(serials)
            alive.append(self)  # keeps ids from being reused while the context lasts
        return serials[key]

    saved: list[tuple[type, Any]] = []
    for module_name, names in _ID_HASHED:
        module = importlib.import_module(module_name)
        for name in names:
            cls = getattr(module, name, None)
            if cls is not None and not any(cls is c for c, _ in saved):
                saved.append((cls, cls.__dict__.get("__hash__")))
                cls.__hash__ = serial_hash
    try:
        with _python_random_from(rng):
            yield
    finally:
        for cls, original in reversed(saved):
            if original is None:
                del cls.__hash__
            else:
                cls.__hash__ = original


def _strip_kinks(link: Any) -> None:
    """Remove every R1 kink, in place, in list order (so the result is deterministic)."""
    from spherogram.links import simplify

    removed = True
    while removed and link.crossings:
        removed = False
        for crossing in list(link.crossings):
            if simplify.reidemeister_I(link, crossing)[0]:
                removed = True
                break


def _walk(seed: Any, crossings: int, rng: np.random.Generator) -> list[tuple[int, ...]] | None:
    """PD code of a kink-free, non-alternating diagram with exactly ``crossings`` crossings, or None.

    Crossing-increasing moves (reverse R1/R2/R3) are applied one at a time; whenever the
    diagram reaches the target size its removable kinks are stripped (in place: the walk
    goes on from the stripped diagram), and it stops once the stripped size is the target.
    """
    import spherogram
    from spherogram.links import simplify

    link = spherogram.Link(seed)
    if rng.integers(2):
        link = link.mirror()
    for move in range(MAX_WALK_MOVES):
        kind = int(rng.choice([1, 2, 3], p=[0.3, 0.35, 0.35]))
        simplify.random_reverse_move(link, kind, 2 * move + 1)
        if len(link.crossings) < crossings:
            continue
        _strip_kinks(link)
        size = len(link.crossings)
        if size > crossings + 2 or size == 0:
            return None
        if size == crossings:
            link._rebuild()
            pd = [tuple(int(v) for v in x) for x in link.PD_code()]
            return None if _alternating(pd) else pd
    return None


def _diagram(seed: Any, crossings: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    for _ in range(WALK_TRIES):
        link = _walk(seed, crossings, rng)
        if link is not None:
            return link
    raise RejectedPuzzle("random walk missed the crossing number")


# ---------------------------------------------------------------- smooth layout


def _layout(pd: list[tuple[int, ...]]) -> tuple[list[tuple[float, float]], list[tuple[int, int, int]]]:
    """Orthogonal layout as one closed polyline plus crossings.

    Returns the corner points in order around the knot and, per crossing, the index of its
    over-segment, its under-segment (segment i runs from corner i to corner i+1) and its
    label (the crossing's index in the PD code the link was built from).
    """
    import spherogram
    from spherogram.links.orthogonal import OrthogonalLinkDiagram

    link = spherogram.Link([list(x) for x in pd])
    if [c.label for c in link.crossings] != list(range(len(pd))):
        raise RejectedPuzzle("crossing labels do not follow the PD code")
    vertices, arrows, crossings = OrthogonalLinkDiagram(link).plink_data()
    following = dict(arrows)
    start = arrows[0][0]
    order = [start]
    while following[order[-1]] != start and len(order) <= len(arrows):
        order.append(following[order[-1]])
    if len(order) != len(arrows):
        raise RejectedPuzzle("layout is not one closed curve")
    position = {v: i for i, v in enumerate(order)}
    points = [(float(vertices[v][0]), float(vertices[v][1])) for v in order]
    found = [(position[arrows[over][0]], position[arrows[under][0]], int(label)) for over, under, _, label in crossings]
    return points, found


def _crossing_point(points: list[tuple[float, float]], a: int, b: int) -> tuple[float, float]:
    """Where segment ``a`` meets segment ``b`` (one horizontal, one vertical)."""
    (ax, ay), (bx, _) = points[a], points[(a + 1) % len(points)]
    cx, cy = points[b]
    return (ax, cy) if ax == bx else (cx, ay)


def _smooth(points: list[tuple[float, float]], crossing_points: list[tuple[float, float]],
            factor: float, straight: float) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Rounded closed curve: per corner a quadratic Bezier (start, control, end)."""
    n = len(points)
    p = np.asarray(points)
    # Free length at each end of each segment: up to the nearest crossing (less ``straight``) or half way.
    free_start, free_end = np.zeros(n), np.zeros(n)
    for i in range(n):
        a, b = p[i], p[(i + 1) % n]
        length = float(np.abs(b - a).sum())
        on = [float(np.abs(np.asarray(c) - a).sum()) for c in crossing_points
              if _on_segment(c, a, b)]
        if on:
            free_start[i] = max(0.0, min(on) - straight)
            free_end[i] = max(0.0, length - max(on) - straight)
        else:
            free_start[i] = free_end[i] = length / 2
    curves = []
    for i in range(n):
        corner = p[i]
        before, after = p[i - 1], p[(i + 1) % n]
        din = (corner - before) / max(np.abs(corner - before).sum(), 1e-9)
        dout = (after - corner) / max(np.abs(after - corner).sum(), 1e-9)
        rin, rout = factor * free_end[i - 1], factor * free_start[i]
        curves.append((corner - din * rin, corner, corner + dout * rout))
    return curves


def _on_segment(c: tuple[float, float], a: np.ndarray, b: np.ndarray) -> bool:
    x, y = c
    if a[0] == b[0] == x:
        return min(a[1], b[1]) < y < max(a[1], b[1])
    if a[1] == b[1] == y:
        return min(a[0], b[0]) < x < max(a[0], b[0])
    return False


def _sample(curves: list[tuple[np.ndarray, np.ndarray, np.ndarray]], per_curve: int = 10) -> np.ndarray:
    """Dense closed polyline of the smoothed curve (the straight pieces join consecutive Beziers)."""
    t = np.linspace(0.0, 1.0, per_curve)[:, None]
    parts = [(1 - t) ** 2 * s + 2 * (1 - t) * t * c + t**2 * e for s, c, e in curves]
    return np.concatenate(parts)


def _intersections(poly: np.ndarray) -> np.ndarray:
    """Points where the closed polyline crosses itself (non-adjacent segments only)."""
    a = poly
    b = np.roll(poly, -1, axis=0)
    d = b - a
    keep = np.abs(d).sum(axis=1) > 1e-9
    a, d = a[keep], d[keep]
    m = len(a)
    denom = d[:, None, 0] * d[None, :, 1] - d[:, None, 1] * d[None, :, 0]
    diff = a[None, :, :] - a[:, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (diff[..., 0] * d[None, :, 1] - diff[..., 1] * d[None, :, 0]) / denom
        u = (diff[..., 0] * d[:, None, 1] - diff[..., 1] * d[:, None, 0]) / denom
    index = np.arange(m)
    gap = np.abs(index[:, None] - index[None, :])
    gap = np.minimum(gap, m - gap)
    hit = (np.abs(denom) > 1e-12) & (t >= 0) & (t < 1) & (u >= 0) & (u < 1) & (gap > 1)
    i, j = np.nonzero(np.triu(hit))
    return a[i] + t[i, j][:, None] * d[i]


def _resample(poly: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
    closed = np.vstack([poly, poly[:1]])
    lengths = np.linalg.norm(np.diff(closed, axis=0), axis=1)
    arc = np.concatenate([[0.0], np.cumsum(lengths)])
    s = np.arange(0.0, arc[-1], step)
    x = np.interp(s, arc, closed[:, 0])
    y = np.interp(s, arc, closed[:, 1])
    return np.stack([x, y], axis=1), s


def _clear(poly: np.ndarray, crossing_points: np.ndarray, unit: float) -> bool:
    """Strands keep at least ``CLEARANCE`` grid units apart, except where they cross."""
    pts, s = _resample(poly, unit * 0.3)
    total = s[-1] + unit * 0.3
    near_crossing = np.min(np.linalg.norm(pts[:, None, :] - crossing_points[None, :, :], axis=2), axis=1) < 0.6 * unit
    far = ~near_crossing
    pts, s = pts[far], s[far]
    dist = np.linalg.norm(pts[:, None, :] - pts[None, :, :], axis=2)
    along = np.abs(s[:, None] - s[None, :])
    along = np.minimum(along, total - along)
    return not np.any((along > 1.5 * unit) & (dist < CLEARANCE * unit))


def _smooth_diagram(layout: tuple[list[tuple[float, float]], list[tuple[int, int, int]]]) -> dict[str, Any]:
    """Grid layout -> smooth closed curve, with crossings checked; coordinates in grid units.

    ``crossings[label]`` is the crossing point of PD entry ``label`` and ``over_horizontal[label]``
    whether its over-strand runs horizontally.
    """
    points, found = list(layout[0]), list(layout[1])
    if sorted(label for _, _, label in found) != list(range(len(found))):
        raise RejectedPuzzle("layout crossings do not match the PD code")
    found.sort(key=lambda item: item[2])
    crossing_points = [_crossing_point(points, over, under) for over, under, _ in found]
    over_horizontal = [points[over][1] == points[(over + 1) % len(points)][1] for over, _, _ in found]
    cp = np.asarray(crossing_points)
    for factor in (1.0, 0.75, 0.5, 0.3):
        curves = _smooth(points, crossing_points, factor, 0.45 * GRID)
        poly = _sample(curves)
        hits = _intersections(poly)
        if len(hits) != len(cp):
            continue
        nearest = np.linalg.norm(hits[:, None, :] - cp[None, :, :], axis=2)
        if len(set(nearest.argmin(axis=1).tolist())) != len(cp) or nearest.min(axis=1).max() > 0.05 * GRID:
            continue
        if not _clear(poly, cp, GRID):
            continue
        return {"curves": curves, "poly": poly, "crossings": crossing_points, "over_horizontal": over_horizontal}
    raise RejectedPuzzle("no smooth drawing keeps the strands apart")


# ---------------------------------------------------------------- generation


def _grid(config: UnknotConfig) -> tuple[float, float, list[list[float]]]:
    rows = -(-config.diagrams // config.columns)
    margin_x, margin_y = _margin(config.columns * CELL), _margin(rows * CELL + LEGEND_BAND)
    width = 2 * margin_x + config.columns * CELL
    height = 2 * margin_y + LEGEND_BAND + rows * CELL
    cells = []
    for index in range(config.diagrams):
        row, col = divmod(index, config.columns)
        in_row = min(config.columns, config.diagrams - row * config.columns)
        shift = (config.columns - in_row) * CELL / 2  # centre a short last row
        cells.append([margin_x + shift + col * CELL, margin_y + LEGEND_BAND + row * CELL, CELL])
    return width, height, cells


def _margin(inner: float) -> float:
    """The margin beside ``inner`` SVG units of cells that leaves EDGE_SHARE of the picture's
    dimension clear outside a frame's ink (which lies inside its cell)."""
    frame_outside = FRAME_INSET - FRAME_WIDTH / 2
    return max(MARGIN, float(math.ceil((EDGE_SHARE * inner - frame_outside) / (1 - 2 * EDGE_SHARE))))


# The eight symmetries of the square: each slot shows the shared shadow turned or reflected.
# A reflection turns a knot into its mirror image, which is knotted exactly when the knot is.
TRANSFORMS = [np.array(m, dtype=np.float64) for m in (
    ((1, 0), (0, 1)), ((0, -1), (1, 0)), ((-1, 0), (0, -1)), ((0, 1), (-1, 0)),
    ((-1, 0), (0, 1)), ((1, 0), (0, -1)), ((0, 1), (1, 0)), ((0, -1), (-1, 0)))]


def _scale(smooth: dict[str, Any]) -> float:
    """SVG units per layout unit: the diagram's longer side fills the drawing box."""
    poly = smooth["poly"]
    return (CELL - 2 * DIAGRAM_INSET) / float(max(poly.max(axis=0) - poly.min(axis=0)))


def _place(smooth: dict[str, Any], cell: list[float], transform: int, flips: list[int]) -> dict[str, Any]:
    """The shared shadow turned by ``transform``, crossings in ``flips`` switched, centred in ``cell``."""
    matrix = TRANSFORMS[transform]
    scale = _scale(smooth)
    poly = smooth["poly"] @ matrix.T
    lo, hi = poly.min(axis=0), poly.max(axis=0)
    box = cell[2] - 2 * DIAGRAM_INSET
    offset = np.asarray(cell[:2]) + DIAGRAM_INSET + (box - (hi - lo) * scale) / 2 - lo * scale

    def tx(q: Any) -> list[float]:
        q = (matrix @ np.asarray(q, dtype=np.float64)) * scale + offset
        return [round(float(q[0]), 2), round(float(q[1]), 2)]

    curves = [[tx(s), tx(c), tx(e)] for s, c, e in smooth["curves"]]
    flipped = set(flips)
    halos: list[list[float]] = []
    overs: list[list[float]] = []
    for label, ((x, y), horizontal) in enumerate(zip(smooth["crossings"], smooth["over_horizontal"])):
        vertical = (label in flipped) != (not horizontal)
        for half, into in ((HALO_HALF * GRID, halos), (OVER_HALF * GRID, overs)):
            ends = [(x, y - half), (x, y + half)] if vertical else [(x - half, y), (x + half, y)]
            into.append(tx(ends[0]) + tx(ends[1]))
    # Ink samples: evenly spaced along the curve, away from the gaps at the crossings.
    pts, _ = _resample(smooth["poly"], 0.25 * GRID)
    cp = np.asarray(smooth["crossings"])
    away = np.min(np.linalg.norm(pts[:, None, :] - cp[None, :, :], axis=2), axis=1) > 0.7 * GRID
    pts = pts[away]
    picks = pts[np.linspace(0, len(pts) - 1, INK_SAMPLES).round().astype(int)]
    return {"curves": curves, "halos": halos, "overs": overs, "ink_samples": [tx(q) for q in picks]}


def _flip(pd: list[tuple[int, ...]], which: set[int]) -> list[tuple[int, ...]]:
    """Switch the crossings in ``which``: the over-strand becomes the under-strand.

    A PD entry (a, b, c, d) starts at the incoming under-strand and runs counterclockwise;
    the switched entry starts at the over-strand's incoming edge (labels grow along the knot).
    """
    n = 2 * len(pd)
    return [((b, c, d, a) if d == (b + 1) % n else (d, a, b, c)) if k in which else (a, b, c, d)
            for k, (a, b, c, d) in enumerate(pd)]


def _alternating(pd: list[tuple[int, ...]]) -> bool:
    """Every edge is under at one end and over at the other."""
    kinds: dict[int, list[int]] = {}
    for a, b, c, d in pd:
        for label, kind in ((a, 0), (c, 0), (b, 1), (d, 1)):
            kinds.setdefault(label, []).append(kind)
    return all(sorted(v) == [0, 1] for v in kinds.values())


def _hfk_rank(pd: list[tuple[int, ...]]) -> int:
    """Total rank of knot Floer homology (1 exactly for the unknot), under a time bound."""
    from knot_floer_homology import pd_to_hfk

    clock = time.perf_counter()
    rank = int(pd_to_hfk([list(x) for x in pd])["total_rank"])
    if time.perf_counter() - clock > HFK_TIME_BOUND_S:
        raise RejectedPuzzle("knot Floer homology over its time bound")
    return rank


def _knotted(pd: list[tuple[int, ...]], bits: tuple[int, ...]) -> tuple[list[int], int] | None:
    """The switched crossings and HFK rank of the assignment ``bits``; None if alternating or unknotted."""
    flips = [k for k, b in enumerate(bits) if b]
    switched = _flip(pd, set(flips))
    if _alternating(switched):
        return None
    rank = _hfk_rank(switched)
    return (flips, rank) if rank > 1 else None


def _knotted_variants(pd: list[tuple[int, ...]], count: int, rng: np.random.Generator,
                      seen: set[tuple[int, ...]], least: int | None = None) -> list[tuple[list[int], int]]:
    """Up to ``count`` (at least ``least``, by default all) crossing assignments of the shadow not
    in ``seen``, each certified knotted by HFK.

    Assignments are uniformly random (not a few switches away from the unknot), so the
    unknot's assignment is not the centre of the set; alternating ones are skipped.
    """
    n = len(pd)
    found: list[tuple[list[int], int]] = []
    for _ in range(VARIANT_TRIES * count):
        if len(found) == count:
            break
        bits = tuple(int(b) for b in rng.integers(2, size=n))
        if bits in seen:
            continue
        seen.add(bits)
        knotted = _knotted(pd, bits)
        if knotted is not None:
            found.append(knotted)
    if len(found) < (count if least is None else least):
        raise RejectedPuzzle("too few knotted crossing assignments")
    return found


POOL = 20  # random knotted assignments among which the four distractors are chosen
# Per crossing, how many of the four distractors may be switched from the unknot's assignment:
# none, two or three; never one or four, which would leave a framed diagram alone at the crossing.
SPLITS = (0, 2, 3)


def _knotted_diagrams(pd: list[tuple[int, ...]], count: int, rng: np.random.Generator,
                      seen: set[tuple[int, ...]]) -> list[tuple[list[int], int]]:
    """``count`` knotted diagrams, uniformly random assignments certified by HFK, the first four
    of them the distractors: four of a pool of ``POOL`` such that no framed diagram (the unknot
    among them) is alone at any crossing. Ruling out the other four then takes at least two
    crossings whichever option is the unknot, and the rule treats the five alike, so the
    unknot's assignment is no more the centre of the set than among random ones."""
    pool = _knotted_variants(pd, max(POOL, count), rng, seen, least=count)
    bits = np.asarray([_assignment(flips, len(pd)) for flips, _ in pool])
    quads = np.asarray(list(combinations(range(len(pool)), 4)))
    fitting = np.flatnonzero(np.isin(bits[quads].sum(axis=1), SPLITS).all(axis=1))
    if not len(fitting):
        raise RejectedPuzzle("no four knotted diagrams without a lone crossing")
    quad = quads[int(fitting[int(rng.integers(len(fitting)))])].tolist()
    rest = [i for i in range(len(pool)) if i not in quad]
    return [pool[i] for i in quad + rest[:count - 4]]


def _assignment(flips: list[int], crossings: int) -> tuple[int, ...]:
    """A diagram's crossing assignment as bits over the shadow's crossings (1: switched from the unknot's)."""
    return tuple(int(k in flips) for k in range(crossings))


def _shadow(crossings: int, rng: np.random.Generator) -> tuple[list[tuple[int, ...]], dict[str, Any], float, int]:
    """A certified unknot diagram with ``crossings`` crossings and its smooth drawing.

    Walks whose drawing is too elongated, too dense or cannot be smoothed cleanly are
    redrawn here (up to ``SHADOW_TRIES``); the count of redraws is returned for the stats.
    """
    for attempt in range(SHADOW_TRIES):
        try:
            with _deterministic_spherogram(rng):
                pd = _diagram(UNKNOT_SEED, crossings, rng)
                layout = _layout(pd)
        except RejectedPuzzle:
            continue
        if _hfk_rank(pd) != 1:
            raise RejectedPuzzle("knot Floer homology disagrees with the construction")
        try:
            smooth = _smooth_diagram(layout)
        except RejectedPuzzle:
            continue
        extent = smooth["poly"].max(axis=0) - smooth["poly"].min(axis=0)
        unit_px = GRID * _scale(smooth)
        if max(extent) <= MAX_ASPECT * min(extent) and unit_px >= MIN_GRID_UNIT:
            return pd, smooth, unit_px, attempt
    raise RejectedPuzzle("no readable unknot diagram")


def generate(config: UnknotConfig, rng: np.random.Generator) -> Puzzle:
    crossings = int(rng.integers(config.min_crossings, config.max_crossings + 1))
    pd, smooth, unit_px, retries = _shadow(crossings, rng)
    # The four distractors first, the knotted diagrams no option frames after, in random cells.
    knotted = _knotted_diagrams(pd, config.diagrams - 1, rng, {_assignment([], len(pd))})
    order = rng.permutation(len(knotted)).tolist()
    variants = [knotted[i] for i in order]
    unknot_slot = int(rng.integers(config.diagrams))
    variants.insert(unknot_slot, ([], 1))
    framed = [cell + (cell >= unknot_slot) for cell, i in enumerate(order) if i < 4]

    width, height, cells = _grid(config)
    stroke = float(np.clip(0.2 * unit_px, *STROKE_RANGE))
    gap = float(np.clip(GAP_SHARE * unit_px, *GAP_RANGE))
    diagrams, ink = [], []
    for cell, (flips, rank) in zip(cells, variants):
        transform = int(rng.integers(len(TRANSFORMS)))
        placed = _place(smooth, cell, transform, flips)
        diagrams.append({"pd_code": [list(x) for x in _flip(pd, set(flips))], "switched": flips,
                         "hfk_total_rank": rank, "transform": transform,
                         "curves": placed["curves"], "halos": placed["halos"], "overs": placed["overs"]})
        ink.append(placed["ink_samples"])
    meta = {
        "task": "unknot",
        "crossings": crossings,
        "unknot": unknot_slot,
        "diagrams": diagrams,
        "layout": {"width": width, "height": height, "cells": cells, "legend": _legend(width, cells),
                   "frame_inset": FRAME_INSET,
                   "frame_width": FRAME_WIDTH, "stroke_width": round(stroke, 2), "gap_width": round(gap, 2),
                   "ink_samples": ink},
        "palette": dict(PALETTE),
    }
    chosen = [framed[i] for i in rng.permutation(4).tolist()]
    answer_index = int(rng.integers(5))
    stats = {"crossings": float(crossings), "diagrams": float(config.diagrams), "grid_unit_px": unit_px,
             "shadow_redraws": float(retries),
             # the crossings at which the framed diagrams must be compared with the unknot's to rule out all four
             "aspects_in_play": _option_set.set_aspects(
                 _assignment([], len(pd)), [("marked_knotted", _assignment(variants[i][0], len(pd))) for i in chosen],
                 _option_set.aspects_of(np.asarray)),
             "mean_knotted_hfk_rank": float(np.mean([r for _, r in variants if r > 1]))}
    return Puzzle(meta=meta, solution=[unknot_slot], distractors=tuple([k] for k in chosen),
                  violations=("marked_knotted",) * 4, answer_index=answer_index, stats=stats)


# ---------------------------------------------------------------- drawing


def _legend(width: float, cells: list[list[float]]) -> list[float]:
    """The legend's box [x, y, side]: centred above the grid, in the band over the top row."""
    top = min(cell[1] for cell in cells)
    return [round(width / 2 - LEGEND_SIDE / 2, 2), round(top - LEGEND_SIDE - 10, 2), LEGEND_SIDE]


def _curve_path(curves: list[list[list[float]]]) -> str:
    """Closed path: straight piece to each corner's Bezier start, then the Bezier."""
    (sx, sy), _, _ = curves[0]
    d = [f"M{fmt(sx)} {fmt(sy)}"]
    for k, ((ax, ay), (cx, cy), (ex, ey)) in enumerate(curves):
        if k:
            d.append(f"L{fmt(ax)} {fmt(ay)}")
        d.append(f"Q{fmt(cx)} {fmt(cy)} {fmt(ex)} {fmt(ey)}")
    d.append("Z")
    return "".join(d)


def _draw_legend(drawing: Any, layout: dict, palette: dict) -> None:
    """The unknot at its plainest (a loop with no crossing), framed as an answer frames a cell."""
    x, y, side = layout["legend"]
    drawing.add(drawing.circle(center=(fmt(x + side / 2), fmt(y + side / 2)), r=fmt(LEGEND_LOOP_RADIUS), fill="none",
                               stroke=palette["ink"], stroke_width=fmt(layout["stroke_width"])))
    drawing.add(drawing.rect(insert=(fmt(x), fmt(y)), size=(fmt(side), fmt(side)),
                             rx=fmt(side * 3 * FRAME_INSET / (CELL - 2 * FRAME_INSET)), fill="none",
                             stroke=palette["frame"], stroke_width=fmt(LEGEND_FRAME_WIDTH)))


def draw(meta: dict, marks: list[int] | None) -> str:
    """The grid of diagrams; ``marks`` (cell indices) get a frame."""
    layout, palette = meta["layout"], meta["palette"]
    drawing = new_drawing(layout["width"], layout["height"], palette["background"])
    knots = "".join(_curve_path(d["curves"]) for d in meta["diagrams"])
    drawing.add(drawing.path(d=knots, stroke=palette["ink"], stroke_width=fmt(layout["stroke_width"]), fill="none",
                             stroke_linejoin="round"))
    halos = [tuple(seg) for d in meta["diagrams"] for seg in d["halos"]]
    overs = [tuple(seg) for d in meta["diagrams"] for seg in d["overs"]]
    if halos:  # white halos cut the under-strands, then the over-strands are drawn on top
        drawing.add(drawing.path(d=segments_path(halos), stroke=palette["background"],
                                 stroke_width=fmt(layout["stroke_width"] + 2 * layout["gap_width"]), fill="none"))
    if overs:
        drawing.add(drawing.path(d=segments_path(overs), stroke=palette["ink"],
                                 stroke_width=fmt(layout["stroke_width"]), fill="none"))
    if "legend" in layout:  # meta from generator 1.2.0 on
        _draw_legend(drawing, layout, palette)
    inset = layout["frame_inset"]
    for index in marks or []:
        x, y, size = layout["cells"][index]
        drawing.add(drawing.rect(insert=(fmt(x + inset), fmt(y + inset)), size=(fmt(size - 2 * inset), fmt(size - 2 * inset)),
                                 rx=fmt(3 * inset), fill="none", stroke=palette["frame"],
                                 stroke_width=fmt(layout["frame_width"])))
    return to_string(drawing)


register_task(
    TaskSpec(
        name="unknot",
        domain="topology",
        version=VERSION,
        checks=unknot_verifier.CHECKS,
        difficulties=DIFFICULTIES,
        generate=generate,
        draw=draw,
        verify=unknot_verifier.verify,
        description="Knot diagrams: frame the one diagram that is the unknot.",
        instruction="Draw a frame around the one knot diagram that is the unknot. Leave the other diagrams unmarked.",
        answer_hint="a frame around the one diagram that is the unknot",
        difficulty_stat="crossings",
        legibility=legibility,
        legibility_floors=LEGIBILITY_FLOORS,
        conventions=CONVENTIONS,
    )
)
