"""Graph isomorphism verifier: read graph B's node colours and check they map B onto A.

Graph A's nodes carry distinct palette colours (the colour names the node). The answer
colours B's nodes; the colouring is read node by node (shared reading code in
verifiers/graph_nodes.py) and accepted when it is an isomorphism: every B node
carries a palette colour, each colour exactly once, and every B edge joins the colours of
an A edge (with equal edge counts, that makes the map a bijection on edges too). Any
isomorphism passes, automorphisms of A included, not only the reference one.

The checks are separated so each fault is reported once: ``edge_mismatch`` looks only at
edges whose two ends carry colours used exactly once (the part of the map that is well
defined); a node left uncoloured, painted off-palette or sharing its colour is reported by
its own check.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from vrforge.types import Verdict
from vrforge.verifiers.graph_nodes import (
    MIN_RADIUS_PX,
    OFF_PALETTE_LABEL,
    UNCOLOURED_LABEL,
    read_node_labels,
)
from vrforge.verifiers.sampling import load_for_layout

CHECKS = ("uncoloured_node", "off_palette", "not_bijective", "edge_mismatch")


def judge(meta: Mapping[str, Any], labels: Sequence[int]) -> dict[str, bool]:
    """Checks on B's node labels (A node index, UNCOLOURED_LABEL or OFF_PALETTE_LABEL); True = passed."""
    counts = Counter(label for label in labels if label >= 0)
    unique = {label for label, count in counts.items() if count == 1}
    edges_a = {(a, b) for a, b in meta["edges_a"]} | {(b, a) for a, b in meta["edges_a"]}
    mismatch = any(
        labels[x] in unique and labels[y] in unique and (labels[x], labels[y]) not in edges_a
        for x, y in meta["edges_b"]
    )
    return {
        "uncoloured_node": UNCOLOURED_LABEL not in labels,
        "off_palette": OFF_PALETTE_LABEL not in labels,
        "not_bijective": all(count == 1 for count in counts.values()),
        "edge_mismatch": not mismatch,
    }


def verify(meta: Mapping[str, Any], image: Any, puzzle: Any = None) -> Verdict:
    """Verdict for an answer image: the puzzle with graph B's nodes coloured like A's."""
    frame = load_for_layout(meta, image, meta["layout"]["node_radius"], MIN_RADIUS_PX, "node radius", "graph_isomorphism",
                            puzzle)
    if isinstance(frame, Verdict):
        return frame
    rgb = frame.image
    labels = read_node_labels(meta, rgb, meta["layout"]["nodes_b"])
    return Verdict.from_checks(judge(meta, labels), details={"labels": labels, "registration": frame.details})
