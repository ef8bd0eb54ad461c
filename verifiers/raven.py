"""Raven's progressive matrices verifier: parse the answer panel, compare with the rules.

The picture is a 3x3 matrix of panels; the bottom-right one holds the answer. Each panel
places its objects in the slots of a fixed grid (1x1, 2x2 or 3x3). All objects of a panel
share one shape type, size, fill grey and rotation; the occupied slots are the panel's
positions (their number is the count). Each attribute follows one row-wise rule from
{constant, progression, arithmetic, distribute-three}; the rules are in meta, so the
expected answer is computed here from the first eight panels (``predict``).

Reading: at each slot a square grid of probe points is sampled (bilinear). Each candidate
(type, size, rotation), and "empty", predicts each probe's ink coverage with a soft outline
(anti-aliasing, resampling); the best candidate is the one closest to the observed coverage. Each slot's probe window is first
re-centred on its ink (regular shapes are centred on their centroid), so an object drawn
somewhat off its slot centre still reads right. The fill grey is the median of probes well
inside. Any faithful rendering of the right answer passes, whatever the rasteriser.

Greys are read against the puzzle's own shades, not the palette's nominal values: the eight
given panels show which fill each of their objects has (meta knows), so their greys as the
answer image shows them calibrate the five fills (``shades``). A tone curve an editor applied
(gamma, contrast) then moves the answer's grey and its reference alike. Fills no given panel
shows are placed on a gamma curve fitted through those it does, corrected to pass through
each seen one. Calibrated shades out of order, or too close to tell apart, make the answer
unusable input: the picture is then no tone curve of the puzzle.

Ink in the answer panel that no candidate explains (a slot's misfit) is read through when it
is thin: the panel is read again with dark strokes thinner than a quarter of a half slot
opened away (a watermark's letters; no object is that thin). Where that does not explain it
and the panel's surround, which neither the puzzle nor an answer inks, is marked too (a
plate or logo laid over the panel's corner), the answer is unusable input saying so, not a
wrong answer. Otherwise the unexplained ink is the answer's own drawing, read as it is.

The picture is drawn by the task's ``draw`` (``generators/tacit/raven.py``), which also holds
the strict mode: SSIM of the answer panel against the reference drawing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, cast

import cv2
import numpy as np

from vrforge.imagemetrics import luminance
from vrforge.types import Verdict
from vrforge.verifiers.sampling import hex_to_rgb, load_for_layout

CHECKS = ("wrong_count", "wrong_position", "wrong_type", "wrong_size", "wrong_colour", "wrong_rotation")
ATTRIBUTES = ("positions", "type", "size", "colour", "rotation")
TYPES = ("triangle", "square", "pentagon", "hexagon", "circle")
SIDES = {"triangle": 3, "square": 4, "pentagon": 5, "hexagon": 6, "circle": 0}
START_ANGLE = {"triangle": -90.0, "square": -45.0, "pentagon": -90.0, "hexagon": -90.0, "circle": 0.0}
# Distinct orientations under 90-degree steps: a square looks the same after any of them.
SYMMETRY = {"triangle": 4, "square": 1, "pentagon": 4, "hexagon": 2, "circle": 1}
SIZES = (0.5, 0.64, 0.78, 0.92)  # circumradius as a fraction of the slot's half-width
ROTATIONS = 4  # 0, 90, 180, 270 degrees clockwise
FILLS = ("#cccccc", "#999999", "#666666", "#333333", "#000000")
RANGES = {"type": len(TYPES), "size": len(SIZES), "colour": len(FILLS), "rotation": ROTATIONS}
CYCLIC = {"rotation"}

MIN_SLOT_PX = 6.0
PROBES = 33  # probe grid per slot (PROBES x PROBES over the slot square)
EDGE_PX = 1.5  # width of the soft edge a candidate's outline is expected to have, in pixels
RECENTRE_STEPS = 2
MAX_SHIFT = 0.3  # at most this share of the half slot off the slot centre
MISFIT = 0.05  # a slot whose best candidate differs more (mean squared coverage) is unreadable
THIN_MARK = 0.25  # of a half slot: thinner dark strokes in the answer panel are no object (read through them)
FOREIGN_DELTA = 40.0  # grey levels below the background: ink where the puzzle leaves the answer panel's surround clear
FOREIGN_SHARE = 0.05  # that much of one side of the surround inked: a mark lies over the answer panel
FRAME_CLEAR = 1.5  # layout units at least between the answer panel's edge and the surround's bands
MIN_SHADE_GAP = 12.0  # grey levels: calibrated neighbouring shades closer than this cannot be told apart
CORE_PX = 2.0  # probes this far inside an object (pixels) read its fill, clear of the anti-aliased edge
CLEAR_PX = 3.0  # probes this far outside every object read the panel's background

Panel = dict[str, Any]  # {"positions": [slots], "type", "size", "colour", "rotation"}


# ---------------------------------------------------------------- rules


def rule_params(attribute: str, kind: str, slots: int = 0) -> list[int]:
    """The parameters a rule kind takes for an attribute (empty: the kind does not apply)."""
    if kind == "constant":
        return [0]
    if kind == "distribute_three":
        return [1, -1]
    if kind == "progression":
        if attribute == "rotation":
            return [1, -1]
        if attribute == "positions":
            seen, params = set(), []
            for d in (1, -1, 2, -2):
                if d % slots not in seen and d % slots != 0:
                    seen.add(d % slots)
                    params.append(d)
            return params
        return [d for d in (1, -1, 2, -2) if 2 * abs(d) < RANGES[attribute]]
    if kind == "arithmetic":
        return [1, -1] if attribute in ("positions", "size", "colour") else []
    return []


RULE_KINDS = ("constant", "progression", "arithmetic", "distribute_three")


def _shift(value: Any, d: int, attribute: str, slots: int) -> Any:
    if attribute == "positions":
        return frozenset((s + d) % slots for s in value)
    if attribute in CYCLIC:
        return (value + d) % RANGES[attribute]
    return value + d


def _valid(value: Any, attribute: str, slots: int) -> bool:
    if attribute == "positions":
        return len(value) > 0 and all(0 <= s < slots for s in value)
    return 0 <= value < RANGES[attribute]


def complete_row(attribute: str, kind: str, param: int, a: Any, b: Any, first_row: Sequence[Any], row: int,
                 slots: int) -> Any | None:
    """The third value of a row whose first two are ``a`` and ``b``, or None when the rule cannot hold."""
    if kind == "constant":
        return a if a == b else None
    if kind == "progression":
        if _shift(a, param, attribute, slots) != b:
            return None
        c = _shift(b, param, attribute, slots)
        if attribute == "positions" and (c == b or a == b):
            return None  # a shift that leaves the set unchanged is no progression
        return c if _valid(c, attribute, slots) else None
    if kind == "arithmetic":
        if attribute == "positions":
            if param == 1:
                c = a | b
                return c if c != a and c != b else None
            if not b or not b < a:
                return None
            return a - b
        if b < 1:
            return None
        c = a + b if param == 1 else a - b
        return c if _valid(c, attribute, slots) else None
    if kind == "distribute_three":
        triple = list(first_row)
        if len(set(triple)) != 3:
            return None
        k = (param * row) % 3
        expected = triple[k:] + triple[:k]
        return expected[2] if [a, b] == expected[:2] else None
    return None


def consistent_rules(attribute: str, rows: Sequence[Sequence[Any]], slots: int) -> list[tuple[str, int]]:
    """Every (kind, param) under which each given full row holds."""
    found = []
    for kind in RULE_KINDS:
        for param in rule_params(attribute, kind, slots):
            if all(complete_row(attribute, kind, param, r[0], r[1], rows[0], i, slots) == r[2] for i, r in enumerate(rows)):
                found.append((kind, param))
    return found


def attribute_value(panel: Mapping[str, Any], attribute: str) -> Any:
    return frozenset(panel["positions"]) if attribute == "positions" else panel[attribute]


def predict(meta: Mapping[str, Any]) -> Panel:
    """The rule-implied answer panel."""
    panels = meta["panels"]
    slots = len(meta["layout"]["slots"])
    answer: Panel = {}
    for rule in meta["rules"]:
        attribute = rule["attribute"]
        values = [attribute_value(p, attribute) for p in panels]
        value = complete_row(attribute, rule["kind"], rule["param"], values[6], values[7], values[0:3], 2, slots)
        if value is None:
            raise ValueError(f"meta is inconsistent: rule {rule} gives no answer")
        answer[attribute] = sorted(value) if attribute == "positions" else int(value)
    return answer


# ---------------------------------------------------------------- geometry


def polygon(type_name: str, radius: float, rotation: int) -> np.ndarray:
    """Vertices (k, 2) of a shape centred at the origin (SVG axes: y down; clockwise rotation)."""
    sides = SIDES[type_name]
    start = math.radians(START_ANGLE[type_name] + 90.0 * rotation)
    angles = start + 2 * math.pi * np.arange(sides) / sides
    return np.stack([radius * np.cos(angles), radius * np.sin(angles)], axis=1)


def signed_distance(type_name: str, radius: float, rotation: int, points: np.ndarray) -> np.ndarray:
    """Signed distance (negative inside) of ``points`` (N, 2) to the shape's outline (exact inside)."""
    if type_name == "circle":
        return np.hypot(points[:, 0], points[:, 1]) - radius
    vertices = polygon(type_name, radius, rotation)
    nxt = np.roll(vertices, -1, axis=0)
    edges = nxt - vertices
    normals = np.stack([edges[:, 1], -edges[:, 0]], axis=1)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    offsets = (normals * vertices).sum(axis=1)
    if offsets.mean() < 0:  # make the normals point outward
        normals, offsets = -normals, -offsets
    return (points @ normals.T - offsets[None, :]).max(axis=1)


def canonical_rotation(type_index: int, rotation: int) -> int:
    return rotation % SYMMETRY[TYPES[type_index]]


@cache
def _probe_grid() -> np.ndarray:
    axis = np.linspace(-1.0, 1.0, PROBES)
    xs, ys = np.meshgrid(axis, axis)
    return np.stack([xs.ravel(), ys.ravel()], axis=1)


@cache
def _templates() -> tuple[list[tuple[int, int, int] | None], np.ndarray]:
    """Candidate objects (type, size, rotation) or None (empty) and their signed distances at the probes."""
    points = _probe_grid()
    candidates: list[tuple[int, int, int] | None] = [None]
    distances = [np.full(len(points), np.inf)]
    for t, name in enumerate(TYPES):
        for s, fraction in enumerate(SIZES):
            for r in range(SYMMETRY[name]):
                candidates.append((t, s, r))
                distances.append(signed_distance(name, fraction, r, points))
    return candidates, np.stack(distances)


# ---------------------------------------------------------------- judging


def judge(meta: Mapping[str, Any], objects: Sequence[tuple[int, int | None, int, int, int]]) -> dict[str, bool]:
    """Check the objects seen in the answer panel: (slot, type or None if unreadable, size, rotation, colour).

    Each check is True when the answer does NOT commit that violation.
    """
    expected = predict(meta)
    want = set(expected["positions"])
    seen = {slot for slot, *_ in objects}
    readable = [o for o in objects if o[1] is not None]
    return {
        "wrong_count": len(seen) == len(want),
        "wrong_position": seen <= want or want <= seen,
        "wrong_type": all(t == expected["type"] for _, t, _, _, _ in objects),
        "wrong_size": all(s == expected["size"] for _, _, s, _, _ in readable),
        "wrong_colour": all(c == expected["colour"] for _, _, _, _, c in readable),
        "wrong_rotation": all(r == expected["rotation"] % SYMMETRY[TYPES[cast(int, t)]] for _, t, _, r, _ in readable),
    }


def panel_objects(panel: Mapping[str, Any]) -> list[tuple[int, int | None, int, int, int]]:
    """The objects a panel shows, as the reader would report them."""
    rotation = canonical_rotation(panel["type"], panel["rotation"])
    return [(s, panel["type"], panel["size"], rotation, panel["colour"]) for s in panel["positions"]]


def _bilinear(image: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Grey values at normalised (x, y) points, interpolated between pixel centres (only those pixels are read)."""
    height, width = image.shape[:2]
    x = np.clip(points[:, 0] * width - 0.5, 0, width - 1.000001)
    y = np.clip(points[:, 1] * height - 0.5, 0, height - 1.000001)
    x0, y0 = np.floor(x).astype(np.int64), np.floor(y).astype(np.int64)
    fx, fy = x - x0, y - y0

    def grey(yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
        return luminance(image[yy, xx].astype(np.float64))

    top = grey(y0, x0) * (1 - fx) + grey(y0, x0 + 1) * fx
    bottom = grey(y0 + 1, x0) * (1 - fx) + grey(y0 + 1, x0 + 1) * fx
    return top * (1 - fy) + bottom * fy


def nominal_shades(meta: Mapping[str, Any]) -> tuple[float, np.ndarray]:
    """The palette's background grey and fill greys as drawn."""
    palette = meta["palette"]
    background = float(luminance(np.asarray(hex_to_rgb(palette["background"]), dtype=np.float64)))
    return background, np.asarray([luminance(np.asarray(hex_to_rgb(c), dtype=np.float64)) for c in palette["fills"]])


def shades(meta: Mapping[str, Any], image: np.ndarray) -> tuple[float, np.ndarray, list[int]] | str:
    """The background grey, the five fill greys as ``image`` shows them, and which fills the given
    panels show; or why they cannot be calibrated.

    Each given panel's objects are sampled well inside (the fill) and its slots well outside every
    object (the background); a fill's grey is the median over the panels that use it."""
    layout = meta["layout"]
    height, width = image.shape[:2]
    scale = min(width / layout["width"], height / layout["height"])
    half = layout["slot_half"]
    slot_px = half * scale
    probes = _probe_grid()[:: 3]  # a third of the probes: hundreds per object are plenty for a median
    size = np.asarray([layout["width"], layout["height"]], dtype=np.float64)
    slots = np.asarray(layout["slots"], dtype=np.float64)
    nominal_background, nominal = nominal_shades(meta)
    per_fill: dict[int, list[float]] = {}
    clear: list[np.ndarray] = []
    for index, panel in enumerate(meta["panels"]):
        origin = np.asarray(layout["origins"][index], dtype=np.float64)
        occupied = set(panel["positions"])
        name = TYPES[panel["type"]]
        inside = signed_distance(name, SIZES[panel["size"]], panel["rotation"], probes) * slot_px
        core: list[np.ndarray] = []
        for slot, centre in enumerate(slots):
            points = (origin + centre)[None, :] + probes * half
            greys = _bilinear(image, points / size)
            if slot in occupied:
                core.append(greys[inside < -CORE_PX])
                clear.append(greys[inside > CLEAR_PX])
            else:
                clear.append(greys)
        seen = np.concatenate(core) if core else np.empty(0)
        if seen.size:
            per_fill.setdefault(int(panel["colour"]), []).append(float(np.median(seen)))
    background = float(np.median(np.concatenate(clear))) if clear else nominal_background
    observed = {k: float(np.median(v)) for k, v in per_fill.items()}
    levels = _calibrated(nominal_background, nominal, background, observed)
    ordered = np.argsort(-nominal)  # lightest fill first
    chain = np.concatenate([[background], levels[ordered]])
    gaps = -np.diff(chain)
    if gaps.min() < MIN_SHADE_GAP:
        k = int(np.argmin(gaps))
        return (f"the given panels' shades cannot be told apart ({chain[k]:.0f} and {chain[k + 1]:.0f} "
                f"grey levels, at least {MIN_SHADE_GAP:.0f} apart expected)")
    return background, levels, sorted(observed)


def _calibrated(nominal_background: float, nominal: np.ndarray, background: float,
                observed: Mapping[int, float]) -> np.ndarray:
    """Every fill's grey under the tone curve the observed ones imply: a power law through the
    background (white to white) fitted to the seen fills, plus a piecewise-linear correction that
    makes it pass through each of them exactly (none at black and at the background)."""
    top = max(nominal_background, 1.0)
    seen = [(nominal[k] / top, value / max(background, 1.0)) for k, value in observed.items()
            if 0 < nominal[k] < top and 0 < value < background]
    exponent = 1.0
    if seen:
        x = np.log([u for u, _ in seen])
        y = np.log([v for _, v in seen])
        exponent = float(np.clip((x * y).sum() / (x * x).sum(), 0.25, 4.0))
    curve = background * (np.clip(nominal / top, 0.0, 1.0) ** exponent)
    anchors = {0.0: 0.0, top: 0.0}
    for k, value in observed.items():
        anchors[float(nominal[k])] = value - float(curve[k])
    xs = np.asarray(sorted(anchors))
    return curve + np.interp(nominal, xs, [anchors[x] for x in xs])


Reading = tuple[int, int | None, int, int, int]  # slot, type (None: unreadable), size, rotation, colour


def read_answer(meta: Mapping[str, Any], image: np.ndarray,
                calibration: tuple[float, np.ndarray] | None = None) -> tuple[list[Reading], list[float]]:
    """The objects in the answer panel and the misfit of every slot's reading.

    Each probe's grey gives the share of the probe covered by ink (0 background, 1 fill);
    each candidate predicts that share from its signed distance with a soft edge
    (anti-aliasing and resampling blur the outline over about a pixel). ``calibration``: the
    background and fill greys to read against (default: the palette's nominal ones).
    """
    layout = meta["layout"]
    height, width = image.shape[:2]
    scale = min(width / layout["width"], height / layout["height"])
    half = layout["slot_half"]
    slot_px = half * scale
    probes = _probe_grid()
    candidates, distances = _templates()
    ox, oy = layout["origins"][layout["answer_panel"]]
    centres = np.asarray([[ox + sx, oy + sy] for sx, sy in layout["slots"]], dtype=np.float64)
    background, fills = calibration if calibration is not None else nominal_shades(meta)
    threshold = (background + fills.max()) / 2
    size = np.asarray([layout["width"], layout["height"]], dtype=np.float64)

    nominal = centres.copy()

    def sample(at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Greys at the probes around ``at`` and which probes lie in their own slot (frames and
        neighbouring objects outside it are not this slot's ink)."""
        points = at[:, None, :] + probes[None, :, :] * half
        inside = (np.abs(points - nominal[:, None, :]) < half).all(axis=2)
        return _bilinear(image, points.reshape(-1, 2) / size).reshape(len(at), len(probes)), inside.astype(np.float64)

    # Re-centre each slot on its ink (a regular shape's centroid is its centre), so an object drawn a
    # little off its slot centre still reads right; the shift is bounded to stay inside the slot.
    greys, valid = sample(centres)
    for _ in range(RECENTRE_STEPS):
        ink = np.clip((background - greys) / (background - fills.max()), 0.0, 1.0) * valid
        mass = ink.sum(axis=1, keepdims=True)
        shift = np.where(mass > 3, (ink @ probes) / np.maximum(mass, 1e-9), 0.0)
        centres = nominal + np.clip(centres + shift * half - nominal, -MAX_SHIFT * half, MAX_SHIFT * half)
        greys, valid = sample(centres)
    expected = np.clip(0.5 - distances * slot_px / EDGE_PX, 0.0, 1.0)  # (C, P) predicted coverage
    core_mask = distances * slot_px < -EDGE_PX
    objects: list[Reading] = []
    misfits: list[float] = []
    for slot, (row, mask) in enumerate(zip(greys, valid)):
        inked = (row < threshold) & (mask > 0)
        fill = float(np.median(row[inked])) if inked.sum() >= 3 else float(fills.max())
        coverage = np.clip((background - row) / max(background - fill, 1.0), 0.0, 1.0)
        cost = ((expected - coverage[None, :]) ** 2) @ mask / max(mask.sum(), 1.0)
        best = int(np.argmin(cost))
        misfit = float(cost[best])
        misfits.append(misfit)
        candidate = candidates[best]
        if candidate is None and misfit <= MISFIT:
            continue
        if candidate is None or misfit > MISFIT:
            objects.append((slot, None, -1, -1, -1))
            continue
        t, s, r = candidate
        core = (core_mask[best] if core_mask[best].any() else distances[best] < 0) & (mask > 0)
        if not core.any():
            core = mask > 0
        colour = int(np.argmin(np.abs(fills - float(np.median(row[core])))))
        objects.append((slot, t, s, r, colour))
    return objects, misfits


def _answer_box(meta: Mapping[str, Any], image: np.ndarray, grow: float) -> tuple[int, int, int, int]:
    """Pixel box x0, y0, x1, y1 of the answer panel grown by ``grow`` layout units (clipped)."""
    layout = meta["layout"]
    height, width = image.shape[:2]
    sx, sy = width / layout["width"], height / layout["height"]
    ox, oy = layout["origins"][layout["answer_panel"]]
    size = layout["panel"]
    return (max(0, math.floor((ox - grow) * sx)), max(0, math.floor((oy - grow) * sy)),
            min(width, math.ceil((ox + size + grow) * sx)), min(height, math.ceil((oy + size + grow) * sy)))


def without_thin_marks(meta: Mapping[str, Any], image: np.ndarray, background: float) -> np.ndarray:
    """The picture (grey) with dark strokes thinner than a quarter of a half slot removed from the
    answer panel: a grey opening of the ink. Every object keeps its outline (even the smallest
    triangle's inscribed circle is twice as wide) and its fill; text or a logo laid over it goes."""
    layout = meta["layout"]
    height, width = image.shape[:2]
    slot_px = layout["slot_half"] * min(width / layout["width"], height / layout["height"])
    diameter = max(3, 2 * round(THIN_MARK * slot_px / 2) + 1)
    x0, y0, x1, y1 = _answer_box(meta, image, 0.0)
    grey = np.clip(np.round(luminance(image)), 0, 255).astype(np.uint8)
    level = int(np.clip(round(background), 0, 255))
    ink = cv2.subtract(np.full_like(grey[y0:y1, x0:x1], level), grey[y0:y1, x0:x1])
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (diameter, diameter))
    opened = cv2.morphologyEx(ink, cv2.MORPH_OPEN, kernel)
    grey[y0:y1, x0:x1] = np.maximum(grey[y0:y1, x0:x1], level - opened.astype(np.int16)).astype(np.uint8)
    return np.repeat(grey[:, :, None], 3, axis=2)


def foreign_marks(meta: Mapping[str, Any], image: np.ndarray, background: float) -> float:
    """Share of the answer panel's surround that is inked: the padding between its frame and its
    slots, and a band of the same width outside the frame (above, right and below; the gap on
    the left holds a row arrow), where neither the puzzle nor any answer draws. A watermark or a
    caption laid over the panel's edge shows there."""
    layout = meta["layout"]
    size, half = float(layout["panel"]), float(layout["slot_half"])
    slots = np.asarray(layout["slots"], dtype=np.float64)
    pad = float(min(slots.min(), size - slots.max())) - half  # from the frame to the slots' squares
    x0, y0, x1, y1 = _answer_box(meta, image, pad)
    height, width = image.shape[:2]
    ox, oy = layout["origins"][layout["answer_panel"]]
    # Pixel centres in layout units from the answer panel's corner.
    u = (np.arange(x0, x1) + 0.5) * layout["width"] / width - ox
    v = (np.arange(y0, y1) + 0.5) * layout["height"] / height - oy
    uu, vv = np.meshgrid(u, v)
    # Clear of the frame line (1.5 units wide) by 3 px more: a blurred frame bleeds that far.
    clear = max(FRAME_CLEAR, 0.75 + 3.0 * layout["width"] / width)
    inner = (uu > clear) & (uu < size - clear) & (vv > clear) & (vv < size - clear)
    slot_area = (uu > pad - 0.5) & (uu < size - pad + 0.5) & (vv > pad - 0.5) & (vv < size - pad + 0.5)
    outer = ~((uu > -clear) & (uu < size + clear) & (vv > -clear) & (vv < size + clear))
    surround = (inner & ~slot_area) | (outer & (uu > -clear))
    inked = luminance(image[y0:y1, x0:x1]) < background - FOREIGN_DELTA
    # Per side (split by the diagonals): a mark over one corner inks its sides densely, while
    # noise or a resampled edge spreads thinly over all of them.
    du, dv = uu - size / 2, vv - size / 2
    sides = (dv < -np.abs(du), du > np.abs(dv), dv > np.abs(du), du < -np.abs(dv))
    shares = [float(inked[surround & side].mean()) for side in sides if (surround & side).any()]
    return max(shares, default=0.0)


# ---------------------------------------------------------------- verify


def verify(meta: Mapping[str, Any], image: Any, puzzle: Any = None) -> Verdict:
    """Verdict for an answer image: the matrix with the last panel drawn."""
    frame = load_for_layout(meta, image, meta["layout"]["slot_half"], MIN_SLOT_PX, "half slot", "raven", puzzle)
    if isinstance(frame, Verdict):
        return frame
    rgb = frame.image
    calibration = shades(meta, rgb)
    if isinstance(calibration, str):
        return Verdict.unusable(calibration)
    background, levels, seen = calibration
    objects, misfits = read_answer(meta, rgb, (background, levels))
    read_through = False
    if max(misfits) > MISFIT:
        # Ink no object explains: if it is thin (a watermark's letters, a scribble), read without it.
        cleaned, cleaned_misfits = read_answer(meta, without_thin_marks(meta, rgb, background), (background, levels))
        if max(cleaned_misfits) <= MISFIT:
            objects, misfits, read_through = cleaned, cleaned_misfits, True
        else:
            marks = foreign_marks(meta, rgb, background)
            if marks >= FOREIGN_SHARE:
                slot = int(np.argmax(cleaned_misfits))
                return Verdict.unusable(f"a mark that is not part of the puzzle lies over the answer panel "
                                        f"({100 * marks:.0f} % of one side of its surround inked; slot {slot} cannot be read)")
    checks = judge(meta, objects)
    details: dict[str, Any] = {
        "objects": [list(o) for o in objects],
        "expected": predict(meta),
        "max_misfit": round(max(misfits), 4),
        "thin_marks_ignored": read_through,
        "shades": {"background": round(background, 1), "fills": [round(float(v), 1) for v in levels], "seen": seen},
        "registration": frame.details,
    }
    return Verdict.from_checks(checks, details=details)
