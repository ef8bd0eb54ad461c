"""Shared code for the graph tasks (graph_coloring, graph_isomorphism).

Everything both tasks need lives here once: the colour pool and node styling, layout
construction and quality checks (node spacing, edge clearance, crossings), drawing nodes and
edges, small exact graph algorithms (colouring by
backtracking), and the pieces of the distractors' variants (the set is chosen by
``_option_set.choose_star``).

The leading underscore keeps the registry from importing this module as a task.

Reading node colours back from a picture lives with the verifiers (verifiers/graph_nodes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Any

import networkx as nx
import numpy as np

from vrforge.generators.tacit import _option_set
from vrforge.svgdraw import fmt, segments_path
from vrforge.types import RejectedPuzzle
from vrforge.verifiers.graph_nodes import OFF_PALETTE_LABEL, UNCOLOURED_LABEL

# Well-separated colours (pairwise RGB distance >= 96); a task draws its palette from these
# and uses the rest as off-palette colours.
POOL = (
    "#e6194b",  # red
    "#3cb44b",  # green
    "#ffe119",  # yellow
    "#0082c8",  # blue
    "#f58230",  # orange
    "#911eb4",  # purple
    "#46f0f0",  # cyan
    "#f032e6",  # magenta
    "#9a6324",  # brown
    "#000080",  # navy
)
# Six more for graphs of 10 to 15 nodes, each node in its own colour (graph_isomorphism):
# chosen greedily from a 16-level RGB grid, each as far as possible (CIEDE2000) from the pool,
# white and the greys an answer might paint (#000, #333, #555, #808080, #aaa), so a grey node
# never reads as a palette colour; the 16 keep the pool's least perceptual separation (CIEDE2000 >= 20.6;
# RGB >= 89, the pool alone 96) and stay >= 87 from those greys.
WIDE_POOL = POOL + (
    "#770000",  # maroon
    "#ffaacc",  # pink
    "#007766",  # teal
    "#ccffaa",  # pale lime
    "#aa99ff",  # lavender
    "#447700",  # olive green
)
UNCOLOURED = "#ffffff"
BACKGROUND = "#ffffff"
OUTLINE = "#333333"
EDGE = "#555555"
# A distractor's off-palette node takes the edges' grey: a colour the picture already holds, so
# it adds none to the picture (a count of colours would otherwise point at every such option,
# and never at the solution); at RGB distance >= 85 from every pool colour it reads as off-palette.
OFF_PALETTE_FILL = EDGE


Point = tuple[float, float]
Edge = tuple[int, int]


# ---------------------------------------------------------------- geometry and layout quality


def point_segment_distance(p: Point, a: Point, b: Point) -> float:
    px, py = p
    ax, ay = a
    bx, by = b
    dx, dy = bx - ax, by - ay
    length2 = dx * dx + dy * dy
    t = 0.0 if length2 == 0 else max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / length2))
    cx, cy = ax + t * dx, ay + t * dy
    return float(np.hypot(px - cx, py - cy))


def _orient(a: Point, b: Point, c: Point) -> float:
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])


def segments_cross(a: Point, b: Point, c: Point, d: Point) -> bool:
    """True when segments ab and cd intersect (callers skip pairs that share an endpoint)."""
    o1, o2, o3, o4 = _orient(a, b, c), _orient(a, b, d), _orient(c, d, a), _orient(c, d, b)
    if o1 * o2 < 0 and o3 * o4 < 0:
        return True
    eps = 1e-9
    for o, p, q, r in ((o1, a, b, c), (o2, a, b, d), (o3, c, d, a), (o4, c, d, b)):
        if abs(o) < eps and min(p[0], q[0]) - eps <= r[0] <= max(p[0], q[0]) + eps \
                and min(p[1], q[1]) - eps <= r[1] <= max(p[1], q[1]) + eps:
            return True
    return False


def crossings(pos: Sequence[Point], edges: Sequence[Edge]) -> int:
    count = 0
    for (a, b), (c, d) in combinations(edges, 2):
        if len({a, b, c, d}) == 4 and segments_cross(pos[a], pos[b], pos[c], pos[d]):
            count += 1
    return count


def layout_problem(pos: Sequence[Point], edges: Sequence[Edge], min_distance: float, clearance: float,
                   planar: bool) -> str | None:
    """Why a drawing is hard to read (or not crossing-free when ``planar``), or None if it is fine.

    ``min_distance``: between node centres; ``clearance``: from a node centre to any edge not
    incident to it (so no edge runs through or grazes another node).
    """
    points = np.asarray(pos, dtype=np.float64)
    gaps = np.hypot(points[:, None, 0] - points[None, :, 0], points[:, None, 1] - points[None, :, 1])
    np.fill_diagonal(gaps, np.inf)
    if gaps.min() < min_distance:
        return "nodes too close"
    for a, b in edges:
        for c in range(len(pos)):
            if c not in (a, b) and point_segment_distance(pos[c], pos[a], pos[b]) < clearance:
                return "edge passes near a node"
    if planar and crossings(pos, edges):
        return "edges cross"
    return None


def fit_to_box(pos: Sequence[Point], box: tuple[float, float, float, float]) -> list[Point]:
    """Scale uniformly and centre ``pos`` into box (x0, y0, x1, y1)."""
    points = np.asarray(pos, dtype=np.float64)
    low, high = points.min(axis=0), points.max(axis=0)
    span = np.maximum(high - low, 1e-9)
    x0, y0, x1, y1 = box
    scale = min((x1 - x0) / span[0], (y1 - y0) / span[1])
    centre = np.array([(x0 + x1) / 2, (y0 + y1) / 2])
    fitted = (points - (low + high) / 2) * scale + centre
    return [(round(float(x), 2), round(float(y), 2)) for x, y in fitted]


def triangulated_grid(rows: int, cols: int, rng: np.random.Generator, jitter: float) -> tuple[list[Point], list[Edge]]:
    """Jittered grid points joined by grid edges plus one random diagonal per cell.

    A straight-line triangulation of a grid: crossing-free by construction while the jitter
    keeps every cell convex (callers still check).
    """
    pos = [(c + float(rng.uniform(-jitter, jitter)), r + float(rng.uniform(-jitter, jitter)))
           for r in range(rows) for c in range(cols)]
    edges: list[Edge] = []
    for r in range(rows):
        for c in range(cols):
            i = r * cols + c
            if c + 1 < cols:
                edges.append((i, i + 1))
            if r + 1 < rows:
                edges.append((i, i + cols))
            if r + 1 < rows and c + 1 < cols:
                if rng.random() < 0.5:
                    edges.append((i, i + cols + 1))
                else:
                    edges.append((i + 1, i + cols))
    return pos, edges


def spring_positions(n: int, edges: Sequence[Edge], rng: np.random.Generator,
                     box: tuple[float, float, float, float]) -> list[Point]:
    """A force-directed drawing fitted into ``box`` (networkx spring layout seeded from ``rng``)."""
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(edges)
    layout = nx.spring_layout(graph, seed=int(rng.integers(2**31)), iterations=50)
    return fit_to_box([tuple(layout[i]) for i in range(n)], box)


def circle_positions(n: int, rng: np.random.Generator, box: tuple[float, float, float, float]) -> list[Point]:
    """Nodes evenly on a circle in a random order and rotation, fitted into ``box``."""
    order = rng.permutation(n).tolist()
    return circle_slots(order, float(rng.uniform(0, 2 * np.pi)), box)


def circle_slots(order: Sequence[int], start: float, box: tuple[float, float, float, float]) -> list[Point]:
    """Node ``order[s]`` at slot s of n evenly spaced on the circle inscribed in ``box``, slot 0 at angle ``start``."""
    n = len(order)
    angles = {node: start + 2 * np.pi * slot / n for slot, node in enumerate(order)}
    x0, y0, x1, y1 = box
    cx, cy, radius = (x0 + x1) / 2, (y0 + y1) / 2, min(x1 - x0, y1 - y0) / 2
    return [(round(cx + radius * float(np.cos(angles[i])), 2), round(cy + radius * float(np.sin(angles[i])), 2))
            for i in range(n)]


def clear_circle_order(n: int, edges: Sequence[Edge], rng: np.random.Generator, box: tuple[float, float, float, float],
                       clearance: float, budget: int = 20_000) -> tuple[list[int], float] | None:
    """(order, start) for ``circle_slots`` such that no edge passes within ``clearance`` of a
    node it does not join, or None when the randomised search finds none within ``budget`` steps.

    On a circle of many nodes a chord between nodes two or three slots apart grazes the nodes
    between them, so only chords of some slot spans are readable; the search places nodes one
    by one (each next to one already placed when it can) in random free slots where every edge
    to a placed node has a readable span."""
    start = float(rng.uniform(0, 2 * np.pi))
    slots = circle_slots(list(range(n)), start, box)
    readable = {d for d in range(1, n) if all(point_segment_distance(slots[c], slots[0], slots[d]) >= clearance
                                               for c in range(n) if c not in (0, d))}
    adj = adjacency(n, edges)
    order_of = [int(v) for v in rng.permutation(n)]
    slot_of: dict[int, int] = {}
    taken: set[int] = set()
    steps = 0

    def place(k: int) -> bool:
        nonlocal steps
        if k == n:
            return True
        steps += 1
        if steps > budget:
            return False
        free = [s for s in range(n) if s not in taken]
        # Next: the unplaced node with the most placed neighbours (the most constrained).
        node = max((v for v in order_of if v not in slot_of), key=lambda v: sum(u in slot_of for u in adj[v]))
        for s in [free[i] for i in rng.permutation(len(free)).tolist()]:
            if all((s - slot_of[u]) % n in readable for u in adj[node] if u in slot_of):
                slot_of[node] = s
                taken.add(s)
                if place(k + 1):
                    return True
                del slot_of[node]
                taken.discard(s)
        return False

    if not place(0):
        return None
    order = [0] * n
    for node, s in slot_of.items():
        order[s] = node
    return order, start


def kamada_kawai_positions(n: int, edges: Sequence[Edge], rng: np.random.Generator,
                           box: tuple[float, float, float, float]) -> list[Point]:
    """An energy-minimising drawing (networkx's Kamada-Kawai, started from random points drawn
    from ``rng``) fitted into ``box``: more even spacing than a spring layout on larger graphs."""
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(edges)
    start = {i: (float(x), float(y)) for i, (x, y) in enumerate(rng.uniform(-1, 1, size=(n, 2)))}
    layout = nx.kamada_kawai_layout(graph, pos=start)
    return fit_to_box([tuple(layout[i]) for i in range(n)], box)


def adjacency(n: int, edges: Sequence[Edge]) -> list[set[int]]:
    adj: list[set[int]] = [set() for _ in range(n)]
    for a, b in edges:
        adj[a].add(b)
        adj[b].add(a)
    return adj


def is_connected(n: int, edges: Sequence[Edge]) -> bool:
    adj = adjacency(n, edges)
    seen = {0}
    stack = [0]
    while stack:
        for other in adj[stack.pop()]:
            if other not in seen:
                seen.add(other)
                stack.append(other)
    return len(seen) == n


def relabel(pos: Sequence[Point], edges: Sequence[Edge], keep: Sequence[int]) -> tuple[list[Point], list[Edge]]:
    """The subgraph on ``keep`` (in that order), nodes renumbered 0.."""
    index = {old: new for new, old in enumerate(keep)}
    new_edges = sorted(tuple(sorted((index[a], index[b]))) for a, b in edges if a in index and b in index)
    return [pos[i] for i in keep], new_edges  # type: ignore[return-value]


# ---------------------------------------------------------------- colouring by backtracking


def colour_graph(adj: Sequence[set[int]], k: int, rng: np.random.Generator | None = None,
                 budget: int = 200_000) -> list[int] | None:
    """A proper colouring with colours 0..k-1, or None when none exists (exhaustive search).

    DSATUR order (most-constrained node first); with ``rng`` colours are tried in a random
    order, so repeated calls give different colourings. Raises RuntimeError past ``budget``
    search steps (never reached for the small graphs here, but a proof must not hang).
    """
    n = len(adj)
    colours = [-1] * n
    steps = 0

    def pick() -> int:
        best, key = -1, (-1, -1)
        for v in range(n):
            if colours[v] < 0:
                saturation = len({colours[u] for u in adj[v] if colours[u] >= 0})
                candidate = (saturation, len(adj[v]))
                if candidate > key:
                    best, key = v, candidate
        return best

    def search(assigned: int) -> bool:
        nonlocal steps
        steps += 1
        if steps > budget:
            raise RuntimeError("colouring search budget exceeded")
        if assigned == n:
            return True
        v = pick()
        used = {colours[u] for u in adj[v]}
        order = list(range(k)) if rng is None else rng.permutation(k).tolist()
        # Symmetry: a colour never used so far is interchangeable with any other unused one.
        seen_new = False
        for c in order:
            if c in used:
                continue
            fresh = c not in colours
            if fresh and seen_new and rng is None:
                continue
            seen_new |= fresh
            colours[v] = c
            if search(assigned + 1):
                return True
            colours[v] = -1
        return False

    return list(colours) if search(0) else None


def chromatic_number(adj: Sequence[set[int]], limit: int = 6) -> int:
    for k in range(1, limit + 1):
        if colour_graph(adj, k) is not None:
            return k
    return limit + 1


# ---------------------------------------------------------------- drawing


def draw_graph(drawing: Any, pos: Sequence[Point], edges: Sequence[Edge], fills: Sequence[str], radius: float,
               edge_width: float, outline_width: float) -> None:
    """Edges as one path under the nodes, then the nodes as outlined discs."""
    if edges:
        segments = [(pos[a][0], pos[a][1], pos[b][0], pos[b][1]) for a, b in edges]
        drawing.add(drawing.path(d=segments_path(segments), stroke=EDGE, stroke_width=fmt(edge_width),
                                 fill="none", stroke_linecap="round"))
    for (x, y), fill in zip(pos, fills):
        drawing.add(drawing.circle(center=(fmt(x), fmt(y)), r=fmt(radius), fill=fill, stroke=OUTLINE,
                                   stroke_width=fmt(outline_width)))


# ---------------------------------------------------------------- distractors


def fills_for(labels: Sequence[int], palette: Sequence[str]) -> list[str]:
    """Hex fill per node for a labelled answer."""
    return [UNCOLOURED if lab == UNCOLOURED_LABEL else OFF_PALETTE_FILL if lab == OFF_PALETTE_LABEL else palette[lab]
            for lab in labels]


Labels = tuple[int, ...]
Judge = Callable[[list[int]], Mapping[str, bool]]


def failed_check(judge: Judge, labels: list[int]) -> str | None:
    """The one check ``labels`` fails, or None when it fails none or several."""
    failed = [name for name, ok in judge(labels).items() if not ok]
    return failed[0] if len(failed) == 1 else None


def relabelled(labels: Sequence[int], changes: Mapping[int, int], judge: Judge) -> tuple[str, Labels] | None:
    """(violation, answer) for ``labels`` with ``changes`` (node -> label) applied, when the
    result fails exactly one check."""
    candidate = list(labels)
    for node, value in changes.items():
        candidate[node] = value
    kind = failed_check(judge, candidate)
    return None if kind is None else (kind, tuple(candidate))


def state_rng(salt: int, labels: Sequence[int]) -> np.random.Generator:
    """A generator seeded by the puzzle's ``salt`` and an answer, so that an answer's variants
    are the same however often they are asked for (labels start at OFF_PALETTE_LABEL)."""
    return np.random.default_rng([salt, *(label - OFF_PALETTE_LABEL for label in labels)])


def rare_faults(labels: Sequence[int], judge: Judge, rng: np.random.Generator, values: Sequence[int | None],
                chance: float, palette_size: int) -> list[tuple[str, Labels]]:
    """For each of ``values`` (a label, or None for another palette colour), with probability
    ``chance``, one answer with that value at a random node where it fails exactly one check.

    A blank or off-palette node (or, in graph_isomorphism, a colour used twice) changes what
    the options' pictures have in common: the solution never has one, so every option that
    has one is an option a context-blind picker can rule out. Offered now and then, these
    faults still appear among the distractors without marking the solution."""
    found = []
    for value in values:
        if rng.random() >= chance:
            continue
        for node in rng.permutation(len(labels)).tolist():
            label = int(rng.integers(palette_size)) if value is None else value
            variant = relabelled(labels, {node: label}, judge) if label != labels[node] else None
            if variant is not None:
                found.append(variant)
                break
    return found


def _labels_vector(state: Sequence[int]) -> np.ndarray:
    return np.asarray(state, dtype=np.float64)


def nodes_in_play(labels: Sequence[int], chosen: Sequence[tuple[str, Sequence[int]]]) -> float:
    """The nodes a solver must check to rule out every distractor (``_option_set.aspects_in_play``)."""
    return _option_set.set_aspects(labels, chosen, _option_set.aspects_of(_labels_vector))


def code_distractors(labels: Sequence[int], variants: Callable[[Labels], Sequence[tuple[str, Labels]]],
                     rng: np.random.Generator) -> list[tuple[str, list[int]]]:
    """Four (violation, labels) distractors, a code over three node edits (``_option_set.choose_set``);
    RejectedPuzzle where the edits do not compose, so every set has two nodes or more in play.

    Labels stand in for the pictures: each label has its own fill, so two answers are drawn
    alike exactly when their labels are equal."""
    try:
        chosen = _option_set.choose_set(tuple(labels), variants, _labels_vector, rng, fallback=False)
    except ValueError as exc:
        raise RejectedPuzzle(f"distractors: {exc}") from None
    return [(kind, list(state)) for kind, state in chosen]
