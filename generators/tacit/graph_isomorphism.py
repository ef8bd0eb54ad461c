"""Graph isomorphism (domain: graph).

The puzzle shows two drawings of the same graph: graph A on the left with every node in its
own colour, graph B on the right (a relabelled copy, drawn differently) with uncoloured
nodes. The answer colours B's nodes with A's colours so that the colouring is an
isomorphism: each colour once, and two B nodes joined exactly when the A nodes of their
colours are joined. Any isomorphism passes (automorphisms of A give other valid answers).

Why this design and not a yes/no badge or a "which of five graphs is isomorphic" choice: a
yes/no answer drawn as a badge gives four identical wrong options, which the odd-one-out
picker solves every time; five candidate graphs need all five to share node count, edge
count and degree sequence while one stays isomorphic, and every option is then a whole new
drawing, so nothing ties an option to the reasoning. Colouring B makes the answer itself the
proof (the mapping is visible and checked edge by edge), lets the verifier accept every
valid isomorphism, reuses the node-colour reading of graph_coloring, and gives near-miss
distractors that are distinct and informative: each one is a colouring of B that is wrong in
exactly one way.

Distractors (each fails exactly one check) are near misses built as a star
(``_option_set.choose_star``): the variants of any answer are the exchanges of the colours of
two B nodes with similar neighbourhoods (the SWAP_PAIRS pairs whose neighbourhoods differ
least, so an exchange breaks few edges) that fail exactly one check, mostly
``edge_mismatch``; the set's centre is a variant of the solution four times in five, with the
solution among its variants. An exchange is its own reverse and keeps every colour once, so
every one-to-one option has the same ink and undoing an exchange looks like making one. Now
and then (RARE_FAULT per answer, each) an answer also offers a B node left blank
(``uncoloured_node``), painted the off-palette grey (``off_palette``) or given a colour
another node has (``not_bijective``): those faults are kept rare because the solution never
has one, so every option that has one is ruled out without solving anything. The
off-palette grey is the edges' grey, which the picture already holds, so it does not change
the number of colours in the picture.

Difficulty: node count and edge count; medium and hard graphs are near-regular (degrees
differ by at most one; hard graphs are cubic) so counting degrees does not solve them, and
B is drawn on a circle in random order while A has a force-directed layout, so the two
drawings do not look alike. Graphs of 10 to 14 nodes (expert: 12 nodes, cubic, as the
reference release's hard) take their colours from the 16-colour ``WIDE_POOL``, smaller discs,
a Kamada-Kawai drawing of A (a spring layout rarely keeps 10+ nodes clear of every edge) and
an order on B's circle where no edge grazes a node it does not join: on a circle of 12, a
chord between nodes two or three places apart would (``clear_circle_order``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

import networkx as nx
import numpy as np

from vrforge.generators.tacit import _graph_common as gc
from vrforge.params import ParamError, check_params, param
from vrforge.registry import TaskSpec, register_task
from vrforge.svgdraw import fmt, new_drawing, to_string
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import graph_isomorphism as verifier

# 1.4.0: a set that would fall back to a star (one aspect in play) is drawn again.
VERSION = "1.4.0"
PANEL = 340.0
MARGIN = 20.0
GAP = 40.0
WIDTH = 2 * MARGIN + 2 * PANEL + GAP
HEIGHT = 2 * MARGIN + PANEL
NODE_RADIUS = 21.0
EDGE_WIDTH = 3.0
OUTLINE_WIDTH = 2.5
SEPARATOR = "#bdbdbd"
SWAP_PAIRS = 8  # B node pairs whose colours a variant may exchange (the most alike, ties kept)
RARE_FAULT = 0.1  # chance that an answer offers a blank, an off-palette and a repeated colour
GRAPH_TRIES = 200
LAYOUT_TRIES = 5
# Graphs of more than CIRCLE_NODES nodes (the 16-colour pool): smaller discs, graph A drawn by
# Kamada-Kawai (a spring layout rarely keeps 10+ nodes clear of every edge), graph B on the
# circle in an order where no edge grazes a node (``clear_circle_order``).
CIRCLE_NODES = 9
WIDE_NODE_RADIUS = 16.0
WIDE_LAYOUT_TRIES = 12
MAX_NODES = 14


@dataclass(frozen=True)
class IsomorphismConfig:
    # At most 14: one pool colour stays off-palette, and 15-node layouts take seconds to find.
    nodes: int = param(doc="nodes of each graph, each drawn in its own colour in graph A", low=4, high=MAX_NODES)
    edges: int = param(doc="edges of each graph (connected, not complete)", low=3, high=MAX_NODES * (MAX_NODES - 1) // 2 - 1)
    near_regular: bool = param(doc="degrees differ by at most one, so counting degrees does not solve it")

    def validate(self) -> None:
        check_params(self)
        if not self.nodes - 1 <= self.edges <= self.nodes * (self.nodes - 1) // 2 - 1:
            raise ParamError(f"edges must allow a connected, non-complete graph of {self.nodes} nodes "
                             f"({self.nodes - 1}..{self.nodes * (self.nodes - 1) // 2 - 1}), got {self.edges}")


DIFFICULTIES = {
    "easy": IsomorphismConfig(nodes=6, edges=7, near_regular=False),
    "medium": IsomorphismConfig(nodes=7, edges=10, near_regular=True),
    "hard": IsomorphismConfig(nodes=8, edges=12, near_regular=True),
    # The reference release's hard (12 nodes): cubic graphs, so every node looks alike locally.
    "expert": IsomorphismConfig(nodes=12, edges=18, near_regular=True),
}


def pool(nodes: int) -> tuple[str, ...]:
    """The colours a puzzle draws its palette from, leaving at least one off-palette."""
    return gc.POOL if nodes <= CIRCLE_NODES else gc.WIDE_POOL


def node_radius(nodes: int) -> float:
    return NODE_RADIUS if nodes <= CIRCLE_NODES else WIDE_NODE_RADIUS


def legibility(config: IsomorphismConfig) -> dict[str, float]:
    """The smallest features, as shares of the picture's width (fixed layout, worst case)."""
    radius = node_radius(config.nodes)
    # Layouts keep every edge 1.9 radii from a node centre it does not join: the white left
    # between them, less half the edge stroke and half the outline.
    gap = 1.9 * radius - radius - EDGE_WIDTH / 2 - OUTLINE_WIDTH / 2
    return {"node_radius": radius / WIDTH, "edge_stroke": EDGE_WIDTH / WIDTH, "edge_node_gap": gap / WIDTH}


LEGIBILITY_FLOORS = {
    "node_radius": 6.0,  # a disc under 12 px across leaves too little fill inside its outline to name its colour
    "edge_stroke": 1.5,  # a line under 1.5 px fades to a faint grey under anti-aliasing
    "edge_node_gap": 3.0,  # a white gap under 3 px closes under anti-aliasing: the edge would seem to touch the node
}

CONVENTIONS = {
    "graph A is the coloured graph, graph B the blank one to colour":
        "left of the dashed separator every node is coloured; right of it every node is a white disc",
    "a colour names one node of A: a B node painted a colour stands for the A node of that colour":
        "each colour appears exactly once in graph A",
    "every colour is used exactly once in B, and B's edges must join the colours A's edges join":
        "A and B have the same number of nodes; edges are straight grey lines between discs",
    "only the B discs' fills change; nodes stay where they are":
        "the answer is the puzzle picture with B's discs filled",
}


# ---------------------------------------------------------------- graph


def _random_edges(config: IsomorphismConfig, rng: np.random.Generator) -> list[gc.Edge] | None:
    n, m = config.nodes, config.edges
    if config.near_regular:
        # Configuration model on a near-regular degree sequence; reject loops and multi-edges.
        low, extra = divmod(2 * m, n)
        degrees = [low + 1] * extra + [low] * (n - extra)
        degrees = [degrees[i] for i in rng.permutation(n).tolist()]
        stubs = [v for v, d in enumerate(degrees) for _ in range(d)]
        stubs = [stubs[i] for i in rng.permutation(len(stubs)).tolist()]
        pairs = [(min(stubs[i], stubs[i + 1]), max(stubs[i], stubs[i + 1])) for i in range(0, len(stubs), 2)]
        if any(a == b for a, b in pairs) or len(set(pairs)) != len(pairs):
            return None
        edges = sorted(pairs)
    else:
        every = [(a, b) for a in range(n) for b in range(a + 1, n)]
        edges = sorted(every[i] for i in rng.choice(len(every), size=m, replace=False).tolist())
    return edges if gc.is_connected(n, edges) else None


def _layouts(n: int, edges_a: list[gc.Edge], edges_b: list[gc.Edge], rng: np.random.Generator):
    r = node_radius(n)
    inset = r + 8
    box_a = (MARGIN + inset, MARGIN + inset, MARGIN + PANEL - inset, MARGIN + PANEL - inset)
    left_b = MARGIN + PANEL + GAP
    box_b = (left_b + inset, MARGIN + inset, left_b + PANEL - inset, MARGIN + PANEL - inset)
    wide = n > CIRCLE_NODES
    best = None
    for _ in range(WIDE_LAYOUT_TRIES if wide else LAYOUT_TRIES):
        pos = (gc.kamada_kawai_positions if wide else gc.spring_positions)(n, edges_a, rng, box_a)
        if gc.layout_problem(pos, edges_a, 3.2 * r, 1.9 * r, planar=False) is None:
            score = gc.crossings(pos, edges_a)
            if best is None or score < best[0]:
                best = (score, pos)
            if score <= 1:
                break
    if best is None:
        return None
    if wide:
        found = gc.clear_circle_order(n, edges_b, rng, box_b, 1.9 * r)
        if found is not None:
            pos_b = gc.circle_slots(*found, box_b)
            if gc.layout_problem(pos_b, edges_b, 3.2 * r, 1.9 * r, planar=False) is None:
                return best[1], pos_b
        return None
    for _ in range(LAYOUT_TRIES):
        pos_b = gc.circle_positions(n, rng, box_b)
        if gc.layout_problem(pos_b, edges_b, 3.2 * r, 1.9 * r, planar=False) is None:
            return best[1], pos_b
    return None


def _graphs(config: IsomorphismConfig, rng: np.random.Generator):
    for _ in range(GRAPH_TRIES):
        edges_a = _random_edges(config, rng)
        if edges_a is None:
            continue
        n = config.nodes
        # B node j is A node mapping[j].
        mapping = rng.permutation(n).tolist()
        inverse = {a: j for j, a in enumerate(mapping)}
        edges_b = sorted(tuple(sorted((inverse[a], inverse[b]))) for a, b in edges_a)
        layouts = _layouts(n, edges_a, edges_b, rng)  # type: ignore[arg-type]
        if layouts is None:
            continue
        return edges_a, edges_b, mapping, layouts
    raise RejectedPuzzle(f"no readable graph pair in {GRAPH_TRIES} tries")


def refinement_classes(n: int, edges: list[gc.Edge]) -> int:
    """Number of colour classes after 1-dimensional Weisfeiler-Leman refinement."""
    adj = gc.adjacency(n, edges)
    colours = [0] * n
    while True:
        signatures = [(colours[v], tuple(sorted(colours[u] for u in adj[v]))) for v in range(n)]
        index = {s: i for i, s in enumerate(sorted(set(signatures)))}
        refined = [index[s] for s in signatures]
        if len(set(refined)) == len(set(colours)):
            return len(set(refined))
        colours = refined


def automorphisms(n: int, edges: list[gc.Edge]) -> int:
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(edges)
    return sum(1 for _ in nx.algorithms.isomorphism.GraphMatcher(graph, graph).isomorphisms_iter())


# ---------------------------------------------------------------- generation


def generate(config: IsomorphismConfig, rng: np.random.Generator) -> Puzzle:
    n = config.nodes
    edges_a, edges_b, mapping, (pos_a, pos_b) = _graphs(config, rng)
    colours = pool(n)
    colour_order = rng.permutation(len(colours)).tolist()
    palette = [colours[i] for i in colour_order[:n]]
    off_palette = [colours[i] for i in sorted(colour_order[n:])] + [gc.OFF_PALETTE_FILL]
    meta = {
        "task": "graph_isomorphism",
        "nodes": n,
        "edges_a": [list(e) for e in edges_a],
        "edges_b": [list(e) for e in edges_b],
        "palette": palette,
        "uncoloured": gc.UNCOLOURED,
        "off_palette": off_palette,
        "layout": {
            "width": WIDTH,
            "height": HEIGHT,
            "node_radius": node_radius(n),
            "nodes_a": [list(p) for p in pos_a],
            "nodes_b": [list(p) for p in pos_b],
        },
    }
    labels = list(mapping)  # B node j takes the colour of A node mapping[j]
    assert all(verifier.judge(meta, labels).values())
    chosen = gc.code_distractors(labels, variants(meta, int(rng.integers(2**32))), rng)
    symmetries = automorphisms(n, edges_a)
    meta["automorphisms"] = symmetries
    stats = {
        "nodes": float(n),
        "edges": float(len(edges_a)),
        "automorphisms": float(symmetries),
        "refinement_classes": float(refinement_classes(n, edges_a)),
        "crossings_a": float(gc.crossings(pos_a, edges_a)),
        "crossings_b": float(gc.crossings(pos_b, edges_b)),
        "aspects_in_play": gc.nodes_in_play(labels, chosen),
    }
    return Puzzle(
        meta=meta,
        solution=gc.fills_for(labels, palette),
        distractors=tuple(gc.fills_for(d, palette) for _, d in chosen),
        violations=tuple(name for name, _ in chosen),
        answer_index=int(rng.integers(len(chosen) + 1)),
        stats=stats,
    )


def swap_pairs(n: int, edges_b: Sequence[gc.Edge]) -> list[gc.Edge]:
    """The B node pairs whose neighbourhoods differ least (the SWAP_PAIRS most alike, and every
    pair as alike as the last of them): exchanging their colours breaks few edges. They depend
    on B alone, so an exchange allowed in one answer is allowed in every answer."""
    adj = gc.adjacency(n, edges_b)
    difference = {(x, y): len((adj[x] - {y}) ^ (adj[y] - {x})) for x, y in combinations(range(n), 2)}
    ranked = sorted(difference, key=lambda pair: difference[pair])
    cut = difference[ranked[min(SWAP_PAIRS, len(ranked)) - 1]]
    return [pair for pair in ranked if difference[pair] <= cut]


def variants(meta: dict, salt: int) -> Callable[[gc.Labels], list[tuple[str, gc.Labels]]]:
    """The near misses of any answer (B's node labels): every exchange of the colours of a pair
    of ``swap_pairs`` that fails exactly one check, and now and then a blank, off-palette or
    repeated colour (seeded by ``salt`` and the answer, so an answer's variants never change)."""
    n = meta["nodes"]
    pairs = swap_pairs(n, [(a, b) for a, b in meta["edges_b"]])

    def judge(candidate: list[int]) -> dict[str, bool]:
        return verifier.judge(meta, candidate)

    def of(labels: gc.Labels) -> list[tuple[str, gc.Labels]]:
        found = [gc.relabelled(labels, {x: labels[y], y: labels[x]}, judge) for x, y in pairs if labels[x] != labels[y]]
        rare = gc.rare_faults(labels, judge, gc.state_rng(salt, labels),
                              (gc.UNCOLOURED_LABEL, gc.OFF_PALETTE_LABEL, None), RARE_FAULT, n)
        return [variant for variant in found if variant is not None] + rare

    return of


# ---------------------------------------------------------------- drawing


def draw(meta: dict, fills: list[str] | None) -> str:
    """The puzzle SVG; ``fills`` (a hex colour per B node) colours graph B, None leaves it blank."""
    layout = meta["layout"]
    drawing = new_drawing(layout["width"], layout["height"], gc.BACKGROUND)
    x = MARGIN + PANEL + GAP / 2
    drawing.add(drawing.line(start=(fmt(x), fmt(MARGIN)), end=(fmt(x), fmt(MARGIN + PANEL)), stroke=SEPARATOR,
                             stroke_width=fmt(2), stroke_dasharray="6,6"))
    radius = layout["node_radius"]
    gc.draw_graph(drawing, [tuple(p) for p in layout["nodes_a"]], [tuple(e) for e in meta["edges_a"]],
                  meta["palette"], radius, EDGE_WIDTH, OUTLINE_WIDTH)
    pos_b = [tuple(p) for p in layout["nodes_b"]]
    gc.draw_graph(drawing, pos_b, [tuple(e) for e in meta["edges_b"]],
                  fills if fills is not None else [meta["uncoloured"]] * len(pos_b), radius, EDGE_WIDTH, OUTLINE_WIDTH)
    return to_string(drawing)


register_task(
    TaskSpec(
        name="graph_isomorphism",
        domain="graph",
        version=VERSION,
        checks=verifier.CHECKS,
        difficulties=DIFFICULTIES,
        generate=generate,
        draw=draw,
        verify=verifier.verify,
        description="Colour graph B's nodes with graph A's colours so that the colouring is an isomorphism.",
        instruction=("Colour the blank nodes of graph B with graph A's colours so that the "
                     "colouring maps graph A onto graph B edge for edge. Keep graph A unchanged."),
        answer_hint="graph B coloured so that its colouring matches graph A edge for edge",
        difficulty_stat="edges",
        legibility=legibility,
        legibility_floors=LEGIBILITY_FLOORS,
        conventions=CONVENTIONS,
    )
)
