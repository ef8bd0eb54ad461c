"""Reading node colours back from a graph picture (graph_coloring, graph_isomorphism).

The verifier samples a window at each node centre (well inside the disc, away from the
outline) and classifies its median colour to the nearest reference colour: the puzzle's
palette, the "uncoloured" fill, and every other pool colour (off-palette). A colour far from
every palette colour and from the uncoloured fill is off-palette too, so an answer painted
in some arbitrary colour is never mistaken for a palette colour. Everything comes from meta.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vrforge.verifiers.sampling import hex_to_rgb, nearest_palette, sample_colours

UNCOLOURED_LABEL = -1
OFF_PALETTE_LABEL = -2
# A sample farther than this (RGB distance) from every palette colour and from the
# uncoloured fill reads as off-palette, whatever it is nearest to.
MAX_MATCH_DISTANCE = 70.0
WINDOW_FRACTION = 0.4  # sample window half-size as a fraction of the node radius in pixels
MIN_RADIUS_PX = 3.0


def read_node_labels(meta: Mapping[str, Any], rgb: np.ndarray, nodes: Sequence[Sequence[float]]) -> list[int]:
    """Label each node: palette index (0..), UNCOLOURED_LABEL, or OFF_PALETTE_LABEL.

    ``nodes`` are node centres in layout units; meta holds the layout size, the node radius,
    the palette, the uncoloured fill and the off-palette reference colours.
    """
    layout = meta["layout"]
    height, width = rgb.shape[:2]
    radius_px = layout["node_radius"] * min(width / layout["width"], height / layout["height"])
    window = max(1, int(radius_px * WINDOW_FRACTION))
    points = np.asarray(nodes, dtype=np.float64) / np.asarray([layout["width"], layout["height"]], dtype=np.float64)
    samples = sample_colours(rgb, points, window)
    palette = list(meta["palette"])
    known = palette + [meta["uncoloured"]]
    references = known + list(meta["off_palette"])
    reference_rgb = np.asarray([hex_to_rgb(c) for c in references], dtype=np.float32)
    nearest = nearest_palette(samples, reference_rgb)
    known_rgb = reference_rgb[: len(known)]
    closest_known = np.sqrt(((samples[:, None, :] - known_rgb[None, :, :]) ** 2).sum(axis=2)).min(axis=1)
    labels = []
    for index, distance in zip(nearest.tolist(), closest_known.tolist()):
        if index >= len(known) or distance > MAX_MATCH_DISTANCE:
            labels.append(OFF_PALETTE_LABEL)
        elif index == len(palette):
            labels.append(UNCOLOURED_LABEL)
        else:
            labels.append(index)
    return labels
