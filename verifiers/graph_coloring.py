"""Graph k-colouring verifier: read every node's colour back and check the colouring.

Each node is read by sampling a window at its centre and classifying the median colour to
the palette, the uncoloured fill or an off-palette colour (shared reading code in
verifiers/graph_nodes.py). Any proper colouring with palette colours passes, not
only the reference one; the palette need not be fully used.
"""

from __future__ import annotations

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

CHECKS = ("adjacent_conflict", "off_palette", "uncoloured_node")


def judge(meta: Mapping[str, Any], labels: Sequence[int]) -> dict[str, bool]:
    """Checks on node labels (palette index, UNCOLOURED_LABEL or OFF_PALETTE_LABEL); True = passed.

    A conflict is an edge whose two ends carry the same palette colour.
    """
    conflict = any(labels[a] >= 0 and labels[a] == labels[b] for a, b in meta["edges"])
    return {
        "adjacent_conflict": not conflict,
        "off_palette": OFF_PALETTE_LABEL not in labels,
        "uncoloured_node": UNCOLOURED_LABEL not in labels,
    }


def verify(meta: Mapping[str, Any], image: Any, puzzle: Any = None) -> Verdict:
    """Verdict for an answer image: the puzzle with every node filled in a palette colour."""
    frame = load_for_layout(meta, image, meta["layout"]["node_radius"], MIN_RADIUS_PX, "node radius", "graph_coloring", puzzle)
    if isinstance(frame, Verdict):
        return frame
    rgb = frame.image
    labels = read_node_labels(meta, rgb, meta["layout"]["nodes"])
    return Verdict.from_checks(judge(meta, labels), details={"labels": labels, "registration": frame.details})
