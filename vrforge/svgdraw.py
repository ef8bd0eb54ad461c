"""Small SVG drawing helpers shared by the task generators (svgwrite underneath).

Coordinates are rounded to two decimals so the SVG text, and therefore every hash taken
of it, never depends on float noise.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import svgwrite


def fmt(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def new_drawing(width: float, height: float, background: str = "#ffffff", crisp: bool = False) -> svgwrite.Drawing:
    """A drawing with a viewBox and a background. ``crisp`` turns anti-aliasing off: right for
    rectilinear pictures, whose PNGs then hold only palette colours (exact, small, fast).
    svgwrite's attribute validation is off: it is most of the drawing time, and every value
    we write is a number formatted by ``fmt`` or a colour."""
    extra = {"shape_rendering": "crispEdges"} if crisp else {}
    drawing = svgwrite.Drawing(size=(fmt(width), fmt(height)), viewBox=f"0 0 {fmt(width)} {fmt(height)}",
                               profile="full", debug=False, **extra)
    drawing.add(drawing.rect(insert=(0, 0), size=(fmt(width), fmt(height)), fill=background))
    return drawing


def segments_path(segments: Iterable[tuple[float, float, float, float]]) -> str:
    """One path ``d`` for many straight segments: one element parses far faster than many."""
    return " ".join(f"M{fmt(x1)} {fmt(y1)}L{fmt(x2)} {fmt(y2)}" for x1, y1, x2, y2 in segments)


def polyline_path(points: Sequence[tuple[float, float]]) -> str:
    head, *rest = points
    return f"M{fmt(head[0])} {fmt(head[1])}" + "".join(f"L{fmt(x)} {fmt(y)}" for x, y in rest)


def to_string(drawing: svgwrite.Drawing) -> str:
    return drawing.tostring()
