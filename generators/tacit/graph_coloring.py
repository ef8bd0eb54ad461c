"""Graph k-colouring (domain: graph).

The puzzle shows a planar graph drawn without edge crossings, every node uncoloured (white
with a dark outline), and a row of k colour swatches below it. The answer fills every node
with a swatch colour so that no edge joins two nodes of the same colour. Any proper
colouring with the palette passes; the verifier never compares with the reference answer.

The graph is a jittered grid triangulation (grid edges plus one random diagonal per cell:
crossing-free and well spread by construction) with a few nodes and edges removed. Every
puzzle needs the full palette: the generator proves by exhaustive backtracking that the
graph has a k-colouring and has none with k-1 colours (chromatic number exactly k). Grids up
to 5 x 5 draw NODE_RADIUS discs; a 6-wide grid draws smaller ones at the same spacing in radii
(``node_radius``); ``jitter`` sets how far nodes stray from the grid (on 6 x 6 grids 0.15
keeps nodes readably apart in most tries, where the default 0.2 fails three times in four).

Distractors are near misses built as a star (``_option_set.choose_star``): the variants of
any answer are its recolourings of one node with another swatch colour that fail exactly
one check (an edge whose ends now share a colour, or a recolouring of a distractor that keeps
its fault), and the set's centre is a variant of the solution four times in five, with the
solution among its variants. Recolouring is its own reverse (colour a to b, then b to a), so
undoing a distractor's edit looks like making one. Now and then (RARE_FAULT per answer) an
answer also offers a node left blank or painted the off-palette grey: those faults are kept
rare because the solution never has one, so every option that has one is ruled out without
solving anything. The off-palette grey is the edges' grey, which the picture already holds,
so it does not change the number of colours in the picture.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from vrforge.generators.tacit import _graph_common as gc
from vrforge.params import ParamError, check_params, param
from vrforge.registry import TaskSpec, register_task
from vrforge.svgdraw import fmt, new_drawing, to_string
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import graph_coloring as verifier

# 1.5.0: a set that would fall back to a star (one aspect in play) is drawn again.
VERSION = "1.5.0"
WIDTH = 400.0
GRAPH_BOX = (34.0, 34.0, 366.0, 366.0)
SWATCH_SIZE = 36.0
SWATCH_GAP = 18.0
SWATCH_Y = 412.0  # centre
HEIGHT = 450.0
NODE_RADIUS = 17.0
EDGE_WIDTH = 3.0
OUTLINE_WIDTH = 2.5
RARE_FAULT = 0.05  # chance that an answer offers a blank node, and an off-palette one
GRAPH_TRIES = 60
PAD = 12.0  # added on every side: nodes and swatches keep 5.5 % of each dimension clear, so a 5 % crop cuts none


@dataclass(frozen=True)
class ColoringConfig:
    rows: int = param(doc="rows of the jittered grid the nodes start on (the graph is its triangulation)", low=2, high=6)
    cols: int = param(doc="columns of that grid", low=2, high=6)
    colours: int = param(doc="k: the palette size (swatches shown) and the graph's exact chromatic number",
                         low=3, high=4)
    drop_nodes: int = param(doc="grid nodes removed at random (nodes = rows x cols - drop_nodes, at least 5)",
                            low=0, high=31)
    drop_edges: float = param(doc="share of the triangulation's edges removed at random before the chromatic "
                                  "number is fixed (more are removed while the graph needs more than k colours)",
                              low=0.0, high=0.45)
    jitter: float = param(0.2, doc="how far each node strays from its grid point, in grid spacings (0: a regular grid)",
                          low=0.0, high=0.3)

    def validate(self) -> None:
        check_params(self)
        if self.drop_nodes > self.rows * self.cols - 5:
            raise ParamError(f"drop_nodes must leave at least 5 nodes, got {self.drop_nodes} of {self.rows * self.cols}")


DIFFICULTIES = {
    "easy": ColoringConfig(rows=3, cols=3, colours=3, drop_nodes=1, drop_edges=0.1),
    "medium": ColoringConfig(rows=4, cols=4, colours=3, drop_nodes=3, drop_edges=0.1),
    "hard": ColoringConfig(rows=4, cols=4, colours=4, drop_nodes=1, drop_edges=0.05),
    # The reference release's hard: 20 nodes, k = 3.
    "expert": ColoringConfig(rows=5, cols=5, colours=3, drop_nodes=5, drop_edges=0.1),
}


def node_radius(config: ColoringConfig) -> float:
    """The node disc radius: NODE_RADIUS up to 5 x 5 grids, smaller on a 6-wide grid so that
    nodes keep the same spacing in radii (3.6 between centres, 2 from an edge) in the same box."""
    return NODE_RADIUS * min(1.0, 4.0 / (max(config.rows, config.cols) - 1))


def legibility(config: ColoringConfig) -> dict[str, float]:
    """The smallest features, as shares of the picture's width (fixed layout, worst case)."""
    width = WIDTH + 2 * PAD
    radius = node_radius(config)
    # The white between an edge and a disc it does not touch: centre clearance 2r, less the
    # disc, half the edge stroke and half the outline.
    gap = 2.0 * radius - radius - EDGE_WIDTH / 2 - OUTLINE_WIDTH / 2
    return {"node_radius": radius / width, "edge_stroke": EDGE_WIDTH / width, "edge_node_gap": gap / width,
            "swatch": SWATCH_SIZE / width}


LEGIBILITY_FLOORS = {
    "node_radius": 6.0,  # a disc under 12 px across leaves too little fill inside its outline to name its colour
    "edge_stroke": 1.5,  # a line under 1.5 px fades to a faint grey under anti-aliasing
    "edge_node_gap": 3.0,  # a white gap under 3 px closes under anti-aliasing: the edge would seem to touch the node
    "swatch": 10.0,  # a swatch under 10 px shows too little colour to match a node against
}

CONVENTIONS = {
    "the colours to use are the swatches, and there are k of them":
        "the row of square swatches under the graph, one per colour",
    "every node must be coloured; white is uncoloured": "every node of the puzzle is a white disc with a dark outline",
    "two nodes joined by an edge must take different colours":
        "edges are straight grey lines drawn without crossings, so each joins exactly the two discs at its ends",
    "a node's colour is its disc's fill; the layout stays as it is":
        "the answer is the puzzle picture with the discs filled (node positions are fixed)",
}


# ---------------------------------------------------------------- graph


def _graph(config: ColoringConfig, rng: np.random.Generator) -> tuple[list[gc.Point], list[gc.Edge]]:
    """A connected planar drawing whose chromatic number is exactly ``config.colours``."""
    k = config.colours
    radius = node_radius(config)
    for _ in range(GRAPH_TRIES):
        pos, edges = gc.triangulated_grid(config.rows, config.cols, rng, jitter=config.jitter)
        keep = sorted(rng.permutation(len(pos))[config.drop_nodes:].tolist())
        pos, edges = gc.relabel(pos, edges, keep)
        n = len(pos)
        order = rng.permutation(len(edges)).tolist()
        # Node spacing depends on the positions alone: check it before the colouring proofs
        # (this try's random draws are all made, so the puzzles are the same, only found sooner).
        fitted = gc.fit_to_box(pos, GRAPH_BOX)
        if gc.layout_problem(fitted, [], 3.6 * radius, 2.0 * radius, planar=False):
            continue
        removable = [edges[i] for i in order]
        target = int(round(config.drop_edges * len(edges)))
        current = list(edges)
        # Remove a few random edges, then more until the graph is k-colourable.
        for edge in removable:
            try:
                colourable = gc.colour_graph(gc.adjacency(n, current), k) is not None
            except RuntimeError:
                colourable = False
            if target <= 0 and colourable:
                break
            trial = [e for e in current if e != edge]
            if gc.is_connected(n, trial) and min(len(s) for s in gc.adjacency(n, trial)) >= 2:
                current = trial
                target -= 1
        adj = gc.adjacency(n, current)
        try:
            if not gc.is_connected(n, current) or gc.colour_graph(adj, k) is None:
                continue
            if gc.colour_graph(adj, k - 1) is not None:
                continue  # would not need the full palette
        except RuntimeError:  # search budget exceeded: no proof either way, draw another graph
            continue
        if gc.layout_problem(fitted, current, 3.6 * radius, 2.0 * radius, planar=True):
            continue
        return fitted, current
    raise RejectedPuzzle(f"no {config.colours}-chromatic readable planar graph in {GRAPH_TRIES} tries")


# ---------------------------------------------------------------- generation


def generate(config: ColoringConfig, rng: np.random.Generator) -> Puzzle:
    pos, edges = _graph(config, rng)
    n, k = len(pos), config.colours
    colour_order = rng.permutation(len(gc.POOL)).tolist()
    palette = [gc.POOL[i] for i in colour_order[:k]]
    off_palette = [gc.POOL[i] for i in sorted(colour_order[k:])] + [gc.OFF_PALETTE_FILL]
    adj = gc.adjacency(n, edges)
    labels = gc.colour_graph(adj, k, rng=rng)
    assert labels is not None  # _graph proved it exists

    meta = _meta(config, pos, edges, palette, off_palette)
    chosen = gc.code_distractors(labels, variants(meta, int(rng.integers(2**32))), rng)
    solution = gc.fills_for(labels, palette)
    distractors = tuple(gc.fills_for(d, palette) for _, d in chosen)
    stats = {
        "nodes": float(n),
        "edges": float(len(edges)),
        "colours": float(k),
        "chromatic_number": float(k),
        "mean_degree": 2.0 * len(edges) / n,
        "aspects_in_play": gc.nodes_in_play(labels, chosen),
    }
    return Puzzle(
        meta=meta,
        solution=solution,
        distractors=distractors,
        violations=tuple(name for name, _ in chosen),
        answer_index=int(rng.integers(len(chosen) + 1)),
        stats=stats,
    )


def _meta(config: ColoringConfig, pos: list[gc.Point], edges: list[gc.Edge], palette: list[str],
          off_palette: list[str]) -> dict:
    k = len(palette)
    total = k * SWATCH_SIZE + (k - 1) * SWATCH_GAP
    x0 = WIDTH / 2 - total / 2 + SWATCH_SIZE / 2
    swatches = [[round(PAD + x0 + i * (SWATCH_SIZE + SWATCH_GAP), 2), PAD + SWATCH_Y] for i in range(k)]
    return {
        "task": "graph_coloring",
        "colours": config.colours,
        "chromatic_number": config.colours,
        "edges": [list(e) for e in edges],
        "palette": palette,
        "uncoloured": gc.UNCOLOURED,
        "off_palette": off_palette,
        "layout": {
            "width": WIDTH + 2 * PAD,
            "height": HEIGHT + 2 * PAD,
            "node_radius": node_radius(config),
            "nodes": [[x + PAD, y + PAD] for x, y in pos],
            "swatches": swatches,
            "swatch_size": SWATCH_SIZE,
        },
    }


def variants(meta: dict, salt: int) -> Callable[[gc.Labels], list[tuple[str, gc.Labels]]]:
    """The near misses of any answer (node labels): every recolouring of one node with another
    swatch colour that fails exactly one check, and now and then a blank or off-palette node
    (seeded by ``salt`` and the answer, so an answer's variants never change)."""
    k = meta["colours"]

    def judge(candidate: list[int]) -> dict[str, bool]:
        return verifier.judge(meta, candidate)

    def of(labels: gc.Labels) -> list[tuple[str, gc.Labels]]:
        found = [gc.relabelled(labels, {node: value}, judge) for node in range(len(labels)) for value in range(k)
                 if value != labels[node]]
        rare = gc.rare_faults(labels, judge, gc.state_rng(salt, labels), (gc.UNCOLOURED_LABEL, gc.OFF_PALETTE_LABEL),
                              RARE_FAULT, k)
        return [variant for variant in found if variant is not None] + rare

    return of


# ---------------------------------------------------------------- drawing


def draw(meta: dict, fills: list[str] | None) -> str:
    """The puzzle SVG; ``fills`` (a hex colour per node) colours the nodes, None leaves them blank."""
    layout = meta["layout"]
    drawing = new_drawing(layout["width"], layout["height"], gc.BACKGROUND)
    pos = [tuple(p) for p in layout["nodes"]]
    node_fills = fills if fills is not None else [meta["uncoloured"]] * len(pos)
    gc.draw_graph(drawing, pos, [tuple(e) for e in meta["edges"]], node_fills, layout["node_radius"],
                  EDGE_WIDTH, OUTLINE_WIDTH)
    side = layout["swatch_size"]
    for (x, y), colour in zip(layout["swatches"], meta["palette"]):
        drawing.add(drawing.rect(insert=(fmt(x - side / 2), fmt(y - side / 2)), size=(fmt(side), fmt(side)),
                                 rx=fmt(4), fill=colour, stroke=gc.OUTLINE, stroke_width=fmt(OUTLINE_WIDTH)))
    return to_string(drawing)


register_task(
    TaskSpec(
        name="graph_coloring",
        domain="graph",
        version=VERSION,
        checks=verifier.CHECKS,
        difficulties=DIFFICULTIES,
        generate=generate,
        draw=draw,
        verify=verifier.verify,
        description="Colour every node with a palette colour so that adjacent nodes differ.",
        instruction=("Colour every node of the graph with one of the swatch colours "
                     "so that adjacent nodes have different colours. Keep the edges and layout unchanged."),
        answer_hint="the graph with every node coloured from the swatches so that no two linked nodes share a colour",
        difficulty_stat="nodes",
        legibility=legibility,
        legibility_floors=LEGIBILITY_FLOORS,
        conventions=CONVENTIONS,
    )
)
