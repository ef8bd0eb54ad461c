"""Registration before reading: map an answer image into the puzzle's frame.

Every verifier reads colours at positions given as fractions of the puzzle's layout. A model
that edits the puzzle often returns it shifted, rescaled, slightly rotated, cropped,
letterboxed or stretched to another canvas, on an off-white background. This module finds
the transform from the puzzle's frame to the answer's pixels and resamples the answer into
the puzzle's frame, so each verifier then reads it as it reads a pixel-aligned picture.

The reference is the bare puzzle: the image a caller passes (the release row's ``puzzle``)
or ``spec.draw(meta, None)`` rendered at a small size. Both pictures are reduced to *ink*
(how far each pixel is from its own background colour), which makes the method blind to
the background's tint and to the colour of letterbox bars. The method:

1. Content boxes. Uniform rows and columns are peeled off each side of both pictures (the
   letterbox bars and the white margin alike); the remaining boxes give independent x/y
   scales and shifts, and the ink profiles of each axis, matched over shift and a little
   scale, give a second start that strokes added outside the puzzle's box do not move. A
   side where the answer's content touches the image edge was cropped: that axis' scale is
   then found by matching ink profiles, or taken from the other axis (a uniform rescale) or
   the answer's frame (a crop resized back), each a separate start; more starts turn by
   1.5 and 3 degrees either way. The best-correlating starts go on.
2. Refinement. OpenCV's ECC maximisation (``cv2.findTransformECCWithMask``, affine motion)
   on blurred ink near the puzzle's strokes, at half and full working size. Starting from
   the content boxes keeps ECC inside the right basin: periodic line drawings (grids, walls)
   alias only when a start is off by about a period. Each start competes with its result.
3. Acceptance. The residual is the trimmed mean distance (in working pixels) from the
   reference's ink to the nearest ink of the registered answer (a chamfer distance; the
   answer may add ink but must keep the puzzle's). Over ``MAX_RESIDUAL``, with most of the
   puzzle's empty background inked, or for a transform no edit makes (turned more than
   ``MAX_ROTATION``, sheared, stretched), the answer is "unusable input: could not align the
   answer with the puzzle (...)"; but an answer with the puzzle's proportions is then read
   in its own frame, so an erased drawing fails its check as it did before.
4. Perspective. A photographed or tilted answer (a keystone) is matched by the affine fit at
   the centre and missed by a few pixels at the corners. From the affine fit (and, when it
   lies away from the content boxes' start, from that start refitted too), ECC refines a
   homography (``MOTION_HOMOGRAPHY``) on the puzzle's strokes alone: the answer's own solids
   (filled cells, drawn cubes) are masked out, since they pull ECC off the lines. It replaces
   the affine fit only if, on the pixels every candidate keeps, it removes a quarter of the
   affine fit's decorrelation, fits the puzzle's ink as closely, and stays within a camera's
   tilt of its own affine fit, which must pass the checks above. Checked against known
   keystones on every task's puzzles: within about a pixel at 1024 px, as the affine fit is
   for a shift. An answer that fits no homography better keeps its affine reading.
5. Working size. Both pictures are compared at about ``WORK_AREA`` working pixels, or more for a
   puzzle whose smallest feature (the unit its verifier reads: a cell, a node's radius) would
   be under ``MIN_WORK_UNIT`` working pixels there (``work_area``): an expert maze's walls, 4.9
   working px apart at the default size, let ECC slide a period under a keystone.

A pixel-aligned answer (the same aspect ratio, the puzzle's ink where the reference has it)
is recognised from 1,500 landmark pixels on the rims of the puzzle's solid ink (a filled
face's inside stays inked when a picture is a few pixels off; its rim does not) and read as
it is, unresampled: the verdict on the release's own pictures does not depend on this
module. Everything is deterministic (OpenCV runs single-threaded here; no random starts).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import cv2
import numpy as np

from vrforge.imageio import UnusableImage, load_rgb
from vrforge.registry import get_task, set_aligner
from vrforge.types import Verdict

# One thread: verifiers run in process pools on small machines, and a fixed thread count
# keeps ECC's floating-point sums in one order (same input -> same transform).
cv2.setNumThreads(1)

WORK_AREA = 360 * 360  # working pixels of the reference (3:1 mazes get 624 x 208)
# The smallest feature a verifier reads (a cell, a node's radius), in working pixels at least: a
# finer puzzle is registered at a larger working size. An expert maze's cells were 4.9 working px
# at WORK_AREA, and ECC slid along the period of its walls under a keystone (every other task's
# smallest feature is 10 working px or more there, so only such puzzles change).
MIN_WORK_UNIT = 9.0
ANSWER_AREA = 2 * WORK_AREA  # the answer is reduced to at most this before registration
UNIFORM_SPREAD = 48  # a row or column whose colours span less than this (after a blur) is empty
INK_THRESHOLD = 0.16  # of 255: farther than this from the background colour is ink
LANDMARK_LIMIT = 1500
RIM_DEPTH = 2.0  # working px: solid ink no deeper than this inside its edge carries the landmarks
MIN_LANDMARKS = 100
FAST_RECALL = 0.995  # landmark share that must be ink for the answer to be read as it is
CLEAR_DISTANCE = 4  # working px from any ink: the reference's clear background
MIN_CLEAR = 0.5  # share of the clear background an answer must leave clear (noise or a filled canvas does not)
MAX_RESIDUAL = 0.6  # working pixels: above this the answer does not fit the puzzle
MAX_ROTATION = 6.0  # degrees: a transform turning more (or shearing more than MAX_SKEW) is no model's edit
MAX_SKEW = 2.0
MAX_STRETCH = 4.0  # x scale over y scale: a 3:1 puzzle squeezed onto a square canvas is 3.1
TRIM = 0.85  # share of the reference's ink the residual is averaged over (erased ink tolerated)
DISTANCE_CAP = 8.0
IDENTITY_PX = 1.5  # a transform moving no corner farther than this (answer pixels) from the frame is the identity
BACKGROUND_TOLERANCE = 6  # per channel: a background farther than this from the puzzle's is corrected
ECC_ITERATIONS = (40, 40)  # full working size, half size
ECC_EPS = 1e-5
PERSPECTIVE_ITERATIONS = (30, 30)  # full working size, half size
PERSPECTIVE_GAIN = 0.25  # share of the affine fit's decorrelation (1 - correlation) a homography must remove to replace it ...
MIN_PERSPECTIVE_GAIN = 0.002  # ... and at least this much correlation (noise moves it less)
MAX_PERSPECTIVE = 0.06  # of the template's larger side: a homography moving a corner farther from its affine fit is no camera's tilt
ALIAS_PX = 3.0  # answer px: a box start farther than this from the affine fit is refitted as a second candidate
ADDED_INK = 0.25  # answer ink over the puzzle's by this much is the answer's own drawing ...
SLIVER = 5  # ... when wider than this (working px; a misaligned edge leaves a thinner band)
MASK_RADIUS = 3  # working px around the reference's ink that ECC compares (an answer's own strokes farther off are ignored)


@dataclass(frozen=True)
class Reference:
    """The bare puzzle reduced for registration (about WORK_AREA working pixels)."""

    width: int
    height: int
    rgb: np.ndarray  # the picture at working size
    ink: np.ndarray  # float32 (h, w), 0..1
    landmarks: np.ndarray  # (K, 2) normalised (x, y) of solid ink pixels at the rims of strokes and faces
    clear: np.ndarray  # (K, 2) normalised (x, y) of background pixels away from any ink
    background: np.ndarray  # RGB of the puzzle's background
    area: float = WORK_AREA  # the working area it was reduced to

    @property
    def aspect(self) -> float:
        return self.width / self.height

    @cached_property
    def box(self) -> tuple[float, float, float, float]:
        """The content box x0, y0, x1, y1 (pixel edges); only a misaligned answer needs it."""
        return _content_box(self.rgb)[0]


@dataclass(frozen=True)
class Registration:
    """The answer in the puzzle's frame, and how it got there."""

    image: np.ndarray  # RGB, the puzzle's aspect ratio
    details: dict[str, Any]


# ---------------------------------------------------------------- the reference


_CACHE: list[tuple[str, Mapping[str, Any], Reference]] = []
_CACHE_SIZE = 8


def reference_for(task: str, meta: Mapping[str, Any], area: float = WORK_AREA) -> Reference:
    """The bare puzzle of ``meta`` drawn by its task and reduced to about ``area`` working pixels
    (the last few are kept: callers verify several answers to one puzzle in a row)."""
    for name, cached_meta, reference in _CACHE:
        if name == task and reference.area == area and (cached_meta is meta or cached_meta == meta):
            return reference
    from vrforge.render import rasterise_cached

    layout = meta["layout"]
    width = _work_size(float(layout["width"]), float(layout["height"]), area)[0]
    image = rasterise_cached(get_task(task).draw(meta, None), width)
    reference = reference_from_image(np.asarray(image.convert("RGB")), area)
    _CACHE.insert(0, (task, meta, reference))
    del _CACHE[_CACHE_SIZE:]
    return reference


def work_area(layout: Mapping[str, Any], unit: float | None) -> float:
    """The working area at which a puzzle whose smallest feature is ``unit`` (layout units) keeps
    it at MIN_WORK_UNIT working pixels or more: WORK_AREA unless the puzzle is finer."""
    width, height = float(layout["width"]), float(layout["height"])
    if not unit:
        return WORK_AREA
    needed = MIN_WORK_UNIT * width / unit  # the working width
    return max(WORK_AREA, needed * needed * height / width)


def _work_size(width: float, height: float, area: float = WORK_AREA) -> tuple[int, int]:
    work_w = max(16, round(math.sqrt(area * width / height)))
    return work_w, max(16, round(work_w * height / width))


def reference_from_image(rgb: np.ndarray, area: float = WORK_AREA) -> Reference:
    """Reduce a bare-puzzle picture (any size) to a ``Reference`` of about ``area`` working pixels."""
    height, width = rgb.shape[:2]
    work_w, work_h = _work_size(width, height, area)
    small = cv2.resize(rgb, (work_w, work_h), interpolation=cv2.INTER_AREA) if (work_w, work_h) != (width, height) else rgb
    background = _border_colour(small)
    ink = _ink(small, background)
    # Landmarks on the rims of solid ink: a filled face's inside stays inked when the answer is
    # a few pixels off (a tilted photo), its rim does not.
    solid = (ink > 0.6).astype(np.uint8)
    rim = solid.astype(bool) & (cv2.distanceTransform(solid, cv2.DIST_L2, 3) <= RIM_DEPTH)
    ys, xs = np.nonzero(rim)
    step = max(1, math.ceil(len(xs) / LANDMARK_LIMIT))
    landmarks = np.stack([(xs[::step] + 0.5) / work_w, (ys[::step] + 0.5) / work_h], axis=1)
    away = cv2.distanceTransform((ink <= INK_THRESHOLD).astype(np.uint8), cv2.DIST_L2, 3) >= CLEAR_DISTANCE
    ys, xs = np.nonzero(away)
    step = max(1, math.ceil(len(xs) / LANDMARK_LIMIT))
    clear = np.stack([(xs[::step] + 0.5) / work_w, (ys[::step] + 0.5) / work_h], axis=1)
    return Reference(work_w, work_h, small, ink, landmarks, clear, background, area)


# ---------------------------------------------------------------- picture measures


def _border_colour(rgb: np.ndarray) -> np.ndarray:
    """Median colour of the outermost rows and columns."""
    edge = np.concatenate([rgb[0], rgb[-1], rgb[:, 0], rgb[:, -1]]).astype(np.float32)
    return np.median(edge, axis=0)


def _ink(rgb: np.ndarray, background: np.ndarray) -> np.ndarray:
    """Per pixel: the largest channel difference from ``background``, as 0..1 (float32)."""
    level = np.clip(np.round(background), 0, 255).astype(np.uint8)
    diff = cv2.absdiff(rgb, np.broadcast_to(level, rgb.shape).copy())
    r, g, b = cv2.split(diff)
    return cv2.max(cv2.max(r, g), b).astype(np.float32) * np.float32(1 / 255)


def _content_box(rgb: np.ndarray) -> tuple[tuple[float, float, float, float], tuple[bool, bool, bool, bool]]:
    """The box left after peeling uniform rows and columns off every side, and per side
    (left, top, right, bottom) whether anything was peeled there (False: the content touches
    the edge, so that side may be cut)."""
    blurred = cv2.GaussianBlur(rgb, (0, 0), 1.0)
    row_spread = (cv2.reduce(blurred, 1, cv2.REDUCE_MAX).astype(np.int16)
                  - cv2.reduce(blurred, 1, cv2.REDUCE_MIN)).reshape(-1, 3).max(axis=1)
    col_spread = (cv2.reduce(blurred, 0, cv2.REDUCE_MAX).astype(np.int16)
                  - cv2.reduce(blurred, 0, cv2.REDUCE_MIN)).reshape(-1, 3).max(axis=1)
    rows = np.nonzero(row_spread > UNIFORM_SPREAD)[0]
    cols = np.nonzero(col_spread > UNIFORM_SPREAD)[0]
    height, width = rgb.shape[:2]
    if len(rows) == 0 or len(cols) == 0:  # nothing drawn
        return (0.0, 0.0, 0.0, 0.0), (False, False, False, False)
    # The blur spreads an edge by about a pixel: step back in by that much.
    x0, x1 = float(cols[0]) + 1.0, float(cols[-1])
    y0, y1 = float(rows[0]) + 1.0, float(rows[-1])
    margin = (cols[0] > 1, rows[0] > 1, cols[-1] < width - 2, rows[-1] < height - 2)
    if not margin[0]:
        x0 = 0.0
    if not margin[1]:
        y0 = 0.0
    if not margin[2]:
        x1 = float(width)
    if not margin[3]:
        y1 = float(height)
    return (x0, y0, x1, y1), tuple(bool(m) for m in margin)  # type: ignore[return-value]


def _background_near_box(rgb: np.ndarray, box: tuple[float, float, float, float], margins: tuple[bool, ...]) -> np.ndarray:
    """The answer's background: the median of the bands just outside its content box (its own
    margin, inside any letterbox bars), or of the whole picture when every side is cut."""
    height, width = rgb.shape[:2]
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    bands = []
    if margins[0] and x0 >= 3:
        bands.append(rgb[y0:y1, x0 - 3 : x0 - 1].reshape(-1, 3))
    if margins[1] and y0 >= 3:
        bands.append(rgb[y0 - 3 : y0 - 1, x0:x1].reshape(-1, 3))
    if margins[2] and x1 <= width - 3:
        bands.append(rgb[y0:y1, x1 + 1 : x1 + 3].reshape(-1, 3))
    if margins[3] and y1 <= height - 3:
        bands.append(rgb[y1 + 1 : y1 + 3, x0:x1].reshape(-1, 3))
    pixels = np.concatenate(bands) if bands and sum(len(b) for b in bands) >= 16 else rgb.reshape(-1, 3)[:: 7]
    return np.median(pixels.astype(np.float32), axis=0)


# ---------------------------------------------------------------- the fast path


def _clear_share(reference: Reference, rgb: np.ndarray, background: np.ndarray) -> float:
    """Share of the reference's clear background that is background in ``rgb`` read as it is
    (an answer adds strokes, but a picture that is ink everywhere is not this puzzle)."""
    if len(reference.clear) == 0:
        return 1.0
    height, width = rgb.shape[:2]
    xs = np.clip((reference.clear[:, 0] * width).astype(np.int64), 0, width - 1)
    ys = np.clip((reference.clear[:, 1] * height).astype(np.int64), 0, height - 1)
    ink = np.abs(rgb[ys, xs].astype(np.float32) - background).max(axis=1) / 255.0
    return float(np.mean(ink <= INK_THRESHOLD))


def _clear_share_mapped(reference: Reference, rgb: np.ndarray, background: np.ndarray, matrix: np.ndarray) -> float:
    """``_clear_share`` with the puzzle's clear points mapped into the answer by ``matrix``
    (normalised puzzle coordinates -> answer coordinates), read at full resolution, where
    noise is not averaged away."""
    if len(reference.clear) == 0:
        return 1.0
    height, width = rgb.shape[:2]
    points = reference.clear @ matrix[:, :2].T + matrix[:, 2]
    keep = (points[:, 0] >= 0) & (points[:, 0] < width) & (points[:, 1] >= 0) & (points[:, 1] < height)
    if not keep.any():
        return 0.0
    xs, ys = points[keep, 0].astype(np.int64), points[keep, 1].astype(np.int64)
    ink = np.abs(rgb[ys, xs].astype(np.float32) - background).max(axis=1) / 255.0
    return float(np.mean(ink <= INK_THRESHOLD))


def _landmark_recall(reference: Reference, rgb: np.ndarray, background: np.ndarray) -> float:
    """Share of the reference's solid-ink landmarks that are ink in ``rgb`` read as it is."""
    height, width = rgb.shape[:2]
    xs = np.clip((reference.landmarks[:, 0] * width).astype(np.int64), 0, width - 1)
    ys = np.clip((reference.landmarks[:, 1] * height).astype(np.int64), 0, height - 1)
    hit = np.abs(rgb[ys, xs].astype(np.float32) - background).max(axis=1) / 255.0 > INK_THRESHOLD
    missed = np.nonzero(~hit)[0]
    if len(missed):
        # Within half a working pixel and a pixel more: a landmark's centre may fall just beside
        # a thin stroke (crisp walls at 512 px, a larger picture's thin lines).
        radius = 1 + math.ceil(0.5 * width / reference.width)
        offsets = np.arange(-radius, radius + 1)
        wx = np.clip(xs[missed, None, None] + offsets[None, None, :], 0, width - 1)
        wy = np.clip(ys[missed, None, None] + offsets[None, :, None], 0, height - 1)
        values = rgb[wy, wx].astype(np.float32)  # (M, k, k, 3)
        ink = (np.abs(values - background).max(axis=3) / 255.0).reshape(len(missed), -1).max(axis=1)
        hit[missed] = ink > INK_THRESHOLD
    return float(np.mean(hit))


# ---------------------------------------------------------------- registration proper


ROTATIONS = (0.0, 1.5, -1.5, 3.0, -3.0)  # degrees: starts for answers turned in their canvas
SCALE_SEARCH = np.exp(np.linspace(math.log(0.85), math.log(1.18), 41))  # around a guess, for a cut axis
GOOD_CORRELATION = 0.9  # a candidate this well correlated (and close) ends the search
TIE_DISTANCE = 0.05  # working px: candidates closer than this in mean distance are ranked by correlation
REFINED_STARTS = 3  # the best-scoring starts that ECC refines


def _affine(sx: float, sy: float, tx: float, ty: float) -> np.ndarray:
    return np.array([[sx, 0.0, tx], [0.0, sy, ty]], dtype=np.float32)


def _rotated(sx: float, sy: float, degrees: float, centre_ref: tuple[float, float], centre_ans: tuple[float, float]) -> np.ndarray:
    """Scale, then turn by ``degrees`` (both signs are tried as starts), mapping ``centre_ref`` onto ``centre_ans``."""
    c, s_ = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    linear = np.array([[c * sx, -s_ * sy], [s_ * sx, c * sy]], dtype=np.float64)
    shift = np.asarray(centre_ans, dtype=np.float64) - linear @ np.asarray(centre_ref, dtype=np.float64)
    return np.hstack([linear, shift[:, None]]).astype(np.float32)


def _profile_scale(reference_profile: np.ndarray, answer_profile: np.ndarray, anchor_ref: float, anchor_ans: float,
                   guess: float) -> float:
    """The scale that best maps the reference's ink profile along one axis onto the answer's,
    with ``anchor_ref`` held on ``anchor_ans`` (the side that was not cut)."""
    positions = np.arange(len(answer_profile), dtype=np.float64) + 0.5
    best, best_score = guess, -np.inf
    for scale in guess * SCALE_SEARCH:
        ref_pos = (positions - anchor_ans) / scale + anchor_ref
        inside = (ref_pos >= 0) & (ref_pos <= len(reference_profile))
        if inside.sum() < len(positions) // 2:
            continue
        r = np.interp(ref_pos[inside] - 0.5, np.arange(len(reference_profile)), reference_profile)
        aa = answer_profile[inside] - answer_profile[inside].mean()
        r = r - r.mean()
        score = float((aa * r).sum() / (np.sqrt((aa * aa).sum() * (r * r).sum()) + 1e-9))
        if score > best_score:
            best, best_score = scale, score
    return float(best)


def _profile_fit(reference_profile: np.ndarray, answer_profile: np.ndarray, scale: float, shift: float,
                 reach: float) -> tuple[float, float]:
    """The scale (within 3 % of ``scale``) and shift (within ``reach`` of ``shift``; answer =
    scale * reference + shift, pixel edges) that best correlate the two ink profiles of one axis."""
    positions = np.arange(len(answer_profile), dtype=np.float64) + 0.5
    grid = np.arange(len(reference_profile), dtype=np.float64) + 0.5
    shifts = shift + np.arange(-reach, reach + 0.5, 0.5)
    best = (-np.inf, scale, shift)
    for s in scale * np.linspace(0.97, 1.03, 7):
        ref_pos = (positions[None, :] - shifts[:, None]) / s  # (T, N)
        inside = (ref_pos >= 0) & (ref_pos <= len(reference_profile))
        r = np.interp(ref_pos, grid, reference_profile, left=0.0, right=0.0)
        a = np.where(inside, answer_profile[None, :], 0.0)
        n = np.maximum(inside.sum(axis=1), 1)
        r_mean, a_mean = r.sum(axis=1) / n, a.sum(axis=1) / n
        rc, ac = np.where(inside, r - r_mean[:, None], 0.0), np.where(inside, a - a_mean[:, None], 0.0)
        score = (rc * ac).sum(axis=1) / (np.sqrt((rc * rc).sum(axis=1) * (ac * ac).sum(axis=1)) + 1e-9)
        score[inside.sum(axis=1) < len(positions) // 2] = -np.inf
        k = int(np.argmax(score))
        if score[k] > best[0]:
            best = (float(score[k]), float(s), float(shifts[k]))
    return best[1], best[2]


def _starts(reference: Reference, box: tuple[float, float, float, float], margins: tuple[bool, ...],
            answer_ink: np.ndarray) -> list[np.ndarray]:
    """Initial maps reference working px -> answer px (see the module doc): from the two
    content boxes, with a cut axis' scale found by matching ink profiles, and turned by each
    of ``ROTATIONS`` about the content's centre."""
    rx0, ry0, rx1, ry1 = reference.box
    ax0, ay0, ax1, ay1 = box
    height, width = answer_ink.shape
    rw, rh = max(rx1 - rx0, 1e-6), max(ry1 - ry0, 1e-6)
    full_x, full_y = margins[0] and margins[2], margins[1] and margins[3]
    sx = (ax1 - ax0) / rw if full_x else None
    sy = (ay1 - ay0) / rh if full_y else None
    frame_sx, frame_sy = width / reference.width, height / reference.height

    def cut_axis(axis: int, other: float | None, frame: float) -> float:
        lo_ok, hi_ok = (margins[0], margins[2]) if axis == 0 else (margins[1], margins[3])
        r0, r1 = (rx0, rx1) if axis == 0 else (ry0, ry1)
        a0, a1 = (ax0, ax1) if axis == 0 else (ay0, ay1)
        guess = other or frame
        if not (lo_ok or hi_ok):
            return guess
        ref_profile = reference.ink.sum(axis=axis)
        ans_profile = answer_ink.sum(axis=axis)
        anchor_ref, anchor_ans = (r0, a0) if lo_ok else (r1, a1)
        return _profile_scale(ref_profile, ans_profile, anchor_ref, anchor_ans, guess)

    def scales(axis: int, known: float | None, other: float | None, frame: float) -> list[float]:
        """The axis' scale when both sides show; else every guess: the profile match, the other
        axis' scale (a uniform change) and the frame's (a crop resized back)."""
        if known is not None:
            return [known]
        out: list[float] = []
        for guess in (cut_axis(axis, other, frame), other, frame):
            if guess and all(abs(guess / g - 1) > 0.004 for g in out):
                out.append(guess)
        return out

    def place(lo_ok: bool, hi_ok: bool, a0: float, a1: float, r0: float, r1: float, scale: float) -> float:
        if lo_ok and not hi_ok:
            return a0 - scale * r0
        if hi_ok and not lo_ok:
            return a1 - scale * r1
        return (a0 + a1) / 2 - scale * (r0 + r1) / 2

    starts = []
    ref_x, ref_y = reference.ink.sum(axis=0), reference.ink.sum(axis=1)
    ans_x, ans_y = answer_ink.sum(axis=0), answer_ink.sum(axis=1)
    for sx_ in scales(0, sx, sy, frame_sx):
        for sy_ in scales(1, sy, sx, frame_sy):
            tx = place(margins[0], margins[2], ax0, ax1, rx0, rx1, sx_)
            ty = place(margins[1], margins[3], ay0, ay1, ry0, ry1, sy_)
            # A pixel's centre is at +0.5: the boxes map edges, so shift to centres.
            starts.append(_affine(sx_, sy_, tx + 0.5 * sx_ - 0.5, ty + 0.5 * sy_ - 0.5))
            # Strokes an answer adds outside the puzzle's box (a frame round a corner cell) move
            # a box edge: the ink profiles, matched over shift and a little scale, are not fooled.
            fx, gx = _profile_fit(ref_x, ans_x, sx_, tx, 0.08 * width)
            fy, gy = _profile_fit(ref_y, ans_y, sy_, ty, 0.08 * height)
            starts.append(_affine(fx, fy, gx + 0.5 * fx - 0.5, gy + 0.5 * fy - 0.5))
    ref_centre = ((rx0 + rx1) / 2 - 0.5, (ry0 + ry1) / 2 - 0.5)
    for degrees in ROTATIONS[1:]:
        # Turned content: its box is the box of the turned rectangle, so solve for the two scales.
        c, s_ = abs(math.cos(math.radians(degrees))), abs(math.sin(math.radians(degrees)))
        try:
            tsx, tsy = np.linalg.solve(np.array([[rw * c, rh * s_], [rw * s_, rh * c]]), np.array([ax1 - ax0, ay1 - ay0]))
        except np.linalg.LinAlgError:
            continue
        if full_x and full_y and tsx > 0 and tsy > 0:
            starts.append(_rotated(tsx, tsy, degrees, ref_centre, ((ax0 + ax1) / 2 - 0.5, (ay0 + ay1) / 2 - 0.5)))
        # Turned inside its own canvas: the frame's scale about the frame's centre.
        starts.append(_rotated(frame_sx, frame_sy, degrees, (reference.width / 2 - 0.5, reference.height / 2 - 0.5),
                               (width / 2 - 0.5, height / 2 - 0.5)))
    return starts


def _warped(image: np.ndarray, warp: np.ndarray, size: tuple[int, int], flags: int = cv2.INTER_LINEAR,
            border: int = cv2.BORDER_CONSTANT, value: float = 0.0) -> np.ndarray:
    """``image`` resampled into a ``size`` frame by ``warp`` (frame px -> image px): a 2x3 affine
    or a 3x3 homography."""
    if warp.shape == (3, 3):
        return cv2.warpPerspective(image, warp, size, flags=flags | cv2.WARP_INVERSE_MAP, borderMode=border,
                                   borderValue=value)
    return cv2.warpAffine(image, warp, size, flags=flags | cv2.WARP_INVERSE_MAP, borderMode=border, borderValue=value)


def _correlation(template: np.ndarray, mask: np.ndarray, answer_ink: np.ndarray, warp: np.ndarray) -> float:
    """Correlation of the template with the answer resampled by ``warp`` (template px -> answer
    px), near the reference's ink."""
    height, width = template.shape
    pre = _warped(answer_ink, warp, (width, height))
    keep = mask > 0
    t, a = template[keep], pre[keep]
    t, a = t - t.mean(), a - a.mean()
    return float((t * a).sum() / (np.sqrt((t * t).sum() * (a * a).sum()) + 1e-9))


def _start_score(template: np.ndarray, mask: np.ndarray, answer_ink: np.ndarray, start: np.ndarray) -> float:
    """``_correlation`` with a half-size template and mask (a cheap first ranking of the starts)."""
    return _correlation(template, mask, answer_ink, _compose(start, np.array([[2, 0, 0.5], [0, 2, 0.5]], dtype=np.float32)))


def _compose(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """The 2x3 map ``outer(inner(p))``."""
    a, b = outer.astype(np.float64), inner.astype(np.float64)
    out = np.empty((2, 3), dtype=np.float64)
    out[:, :2] = a[:, :2] @ b[:, :2]
    out[:, 2] = a[:, :2] @ b[:, 2] + a[:, 2]
    return out.astype(np.float32)


def _pyramid(template: np.ndarray, mask: np.ndarray, answer_ink: np.ndarray, start: np.ndarray,
             levels: int) -> Iterator[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]:
    """Coarse to fine, (level, factor, template, answer, mask) at each working size (level 0 is
    full size, each level above halves it): the answer resampled into the template's frame by
    ``start``, the mask cut to where that resampling saw the answer (a cut-off part cannot be
    compared)."""
    height, width = template.shape
    pre = _warped(answer_ink, start, (width, height))
    mask = mask * _inside(answer_ink.shape, start, (width, height))
    for level in range(levels - 1, -1, -1):
        f = 2**level
        if f == 1:
            yield level, f, template, pre, mask
            continue
        size = (max(8, width // f), max(8, height // f))
        yield (level, f, cv2.resize(template, size, interpolation=cv2.INTER_AREA),
               cv2.resize(pre, size, interpolation=cv2.INTER_AREA), cv2.resize(mask, size, interpolation=cv2.INTER_NEAREST))


def _refine(template: np.ndarray, mask: np.ndarray, answer_ink: np.ndarray, start: np.ndarray) -> np.ndarray:
    """ECC refinement of ``start`` (template px -> answer px): the answer is first resampled
    into the template's frame by ``start``, then ECC finds the small affine change that is
    left, at half and at full working size (the residual then judges the result)."""
    warp = np.eye(2, 3, dtype=np.float32)
    for level, f, t, i, m in _pyramid(template, mask, answer_ink, start, len(ECC_ITERATIONS)):
        criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, ECC_ITERATIONS[level], ECC_EPS)
        found = None
        # Near the puzzle's ink first (an answer's own strokes elsewhere do not pull); where that
        # region is too uniform to correlate, the whole picture.
        # (OpenCV's stubs refuse None for the optional input mask that the functions accept.)
        for use_mask in (True, False):
            try:
                if use_mask:
                    _, found = cv2.findTransformECCWithMask(t, i, m, None, _to_level(warp, f),  # type: ignore[call-overload]
                                                            cv2.MOTION_AFFINE, criteria, 3)
                else:
                    _, found = cv2.findTransformECC(t, i, _to_level(warp, f), cv2.MOTION_AFFINE, criteria,  # type: ignore[call-overload]
                                                    None, 3)
                break
            except cv2.error:
                continue
        if found is not None:  # else no improvement from here: keep what the coarser level found
            warp = _from_level(found, f)
    return _compose(start, warp)


def _to_level(warp: np.ndarray, f: int) -> np.ndarray:
    """The same map between both pictures reduced by ``f`` (pixel centres kept)."""
    out = warp.astype(np.float64).copy()
    linear = out[:, :2]
    # x_full = A p_full + t, p_full = f p + (f - 1) / 2, x = (x_full - (f - 1) / 2) / f
    c = (f - 1) / 2
    out[:, 2] = (linear @ np.array([c, c]) + out[:, 2] - c) / f
    return out.astype(np.float32)


def _from_level(warp: np.ndarray, f: int) -> np.ndarray:
    out = warp.astype(np.float64).copy()
    linear = out[:, :2]
    c = (f - 1) / 2
    out[:, 2] = out[:, 2] * f + c - linear @ np.array([c, c])
    return out.astype(np.float32)


def _refine_perspective(template: np.ndarray, mask: np.ndarray, answer_ink: np.ndarray, start: np.ndarray) -> np.ndarray | None:
    """ECC refinement of the affine ``start`` to a homography (template px -> answer px), coarse
    to fine as ``_refine``: the answer resampled by ``start`` differs from the template by a
    small perspective change. None when ECC finds none."""
    warp = np.eye(3, dtype=np.float32)
    found_any = False
    for level, f, t, i, m in _pyramid(template, mask, answer_ink, start, len(PERSPECTIVE_ITERATIONS)):
        criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, PERSPECTIVE_ITERATIONS[level], ECC_EPS)
        scale = np.array([[f, 0, (f - 1) / 2], [0, f, (f - 1) / 2], [0, 0, 1]], dtype=np.float64)
        at_level = (np.linalg.inv(scale) @ warp.astype(np.float64) @ scale).astype(np.float32)
        try:
            _, found = cv2.findTransformECCWithMask(t, i, m, None, at_level, cv2.MOTION_HOMOGRAPHY,  # type: ignore[call-overload]
                                                    criteria, 3)
        except cv2.error:
            continue
        warp = (scale @ found.astype(np.float64) @ np.linalg.inv(scale)).astype(np.float32)
        found_any = True
    if not found_any:
        return None
    start3 = np.vstack([start.astype(np.float64), [0.0, 0.0, 1.0]])
    out = start3 @ warp.astype(np.float64)
    return (out / out[2, 2]).astype(np.float32)


def _puzzle_only(template: np.ndarray, mask: np.ndarray, answer_ink: np.ndarray, warp: np.ndarray) -> np.ndarray:
    """``mask`` without the answer's own drawing: where the answer, resampled by ``warp``, has
    clearly more ink than the puzzle in blobs wider than a misalignment's sliver (a filled cell, a
    stack of cubes), and a margin round them. The puzzle's own strokes then steer a refinement."""
    height, width = template.shape
    added = (_warped(answer_ink, warp, (width, height)) - template > ADDED_INK).astype(np.uint8)
    added = cv2.morphologyEx(added, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (SLIVER, SLIVER)))
    added = cv2.dilate(added, np.ones((2 * MASK_RADIUS + 1,) * 2, np.uint8))
    return mask * (1 - added)


def _corner_distance(a: np.ndarray, b: np.ndarray, width: int, height: int) -> float:
    """The farthest apart (answer px) two affine maps put the template's corners."""
    corners = np.array([[0, 0, 1], [width, 0, 1], [0, height, 1], [width, height, 1]], dtype=np.float64)
    return float(np.abs(corners @ (a.astype(np.float64) - b.astype(np.float64)).T).max())


def _perspective_shift(homography: np.ndarray, affine: np.ndarray, width: int, height: int) -> float:
    """How far (template px) the homography moves the template's corners from where the affine
    map puts them."""
    corners = np.array([[0, 0, 1], [width, 0, 1], [0, height, 1], [width, height, 1]], dtype=np.float64)
    projected = corners @ homography.astype(np.float64).T
    projected = projected[:, :2] / projected[:, 2:]
    flat = corners @ affine.astype(np.float64).T
    linear = affine[:, :2].astype(np.float64)
    # Measured in the template's pixels: the answer's displacement mapped back through the affine part.
    return float(np.abs(np.linalg.solve(linear, (projected - flat).T)).max())


def _inside(shape: tuple[int, ...], warp: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """uint8 mask of the template pixels that ``warp`` maps inside the answer (a pixel's margin kept)."""
    ones = np.ones(shape[:2], dtype=np.uint8)
    inside = _warped(ones, warp, size, flags=cv2.INTER_NEAREST)
    return cv2.erode(inside, np.ones((5, 5), np.uint8), borderType=cv2.BORDER_REPLICATE)


def _distances(reference: Reference, answer_ink: np.ndarray, warp: np.ndarray) -> np.ndarray:
    """Distance (working px, capped, sorted) from every ink pixel of the reference to the nearest
    ink of the answer resampled by ``warp``."""
    warped = _warped(answer_ink, warp, (reference.width, reference.height))
    # Half the ink threshold: a blurred thin stroke keeps its place but loses its peak.
    free = (warped <= INK_THRESHOLD / 2).astype(np.uint8)
    distance = cv2.distanceTransform(free, cv2.DIST_L2, 3)
    seen = _inside(answer_ink.shape, warp, (reference.width, reference.height)) > 0
    values = np.minimum(distance[(reference.ink > 0.5) & seen], DISTANCE_CAP)
    values.sort()
    return values


def _residual(distances: np.ndarray) -> float:
    """The trimmed mean distance: a part of the puzzle's ink the answer erased does not count."""
    if distances.size == 0:
        return float("inf")
    return float(distances[: max(1, int(len(distances) * TRIM))].mean())


def register(reference: Reference, rgb: np.ndarray, out_width: int | None = None) -> Registration | str:
    """``rgb`` resampled into the reference's frame, or the reason no transform fits.

    ``out_width``: the width of the picture returned (default: the answer's own scale).
    """
    height, width = rgb.shape[:2]
    background = _border_colour(rgb)
    aspect = (width / height) / reference.aspect
    if abs(aspect - 1) < 0.01 and len(reference.landmarks) >= MIN_LANDMARKS:
        recall = _landmark_recall(reference, rgb, background)
        if recall >= FAST_RECALL and _clear_share(reference, rgb, background) >= MIN_CLEAR:
            return Registration(_recoloured(rgb, background, reference.background),
                                {"method": "identity", "landmark_recall": round(recall, 4), **_describe(None)})

    factor = min(1.0, math.sqrt(ANSWER_AREA * reference.area / WORK_AREA / (width * height)))
    small = rgb if factor == 1.0 else cv2.resize(rgb, (max(1, round(width * factor)), max(1, round(height * factor))),
                                                 interpolation=cv2.INTER_AREA)
    box, margins = _content_box(small)
    if box[2] - box[0] < 8 or box[3] - box[1] < 8:
        return "nothing drawn"
    background = _background_near_box(small, box, margins)
    answer_ink = cv2.GaussianBlur(_ink(small, background), (0, 0), 1.0)
    template = cv2.GaussianBlur(reference.ink, (0, 0), 1.0)
    near = cv2.dilate((reference.ink > INK_THRESHOLD).astype(np.uint8), np.ones((2 * MASK_RADIUS + 1,) * 2, np.uint8))
    starts = _starts(reference, box, margins, answer_ink)
    plain: list[np.ndarray] = []
    if abs(aspect - 1) < 0.01:  # the answer's frame may be the puzzle's: the plain resize competes as it is
        sx, sy = small.shape[1] / reference.width, small.shape[0] / reference.height
        plain.append(_affine(sx, sy, 0.5 * sx - 0.5, 0.5 * sy - 0.5))
    half = (reference.width // 2, reference.height // 2)
    half_template = cv2.resize(template, half, interpolation=cv2.INTER_AREA)
    half_near = cv2.resize(near, half, interpolation=cv2.INTER_NEAREST)
    scores = [_start_score(half_template, half_near, answer_ink, start) for start in starts]
    best: tuple[float, float, np.ndarray, float] | None = None
    ranked = sorted(range(len(starts)), key=lambda k: -scores[k])[:REFINED_STARTS]
    plain_fit = None
    for candidates in [plain] + [[starts[k]] for k in ranked]:
        # A start competes with what ECC makes of it: ECC follows an answer's large shapes when
        # they moved and the puzzle's lines did not.
        for warp in candidates + ([_refine(template, near, answer_ink, candidates[0])] if candidates else []):
            distances = _distances(reference, answer_ink, warp)
            # Ranked by the mean distance over all the puzzle's ink (each candidate sees the same
            # erasures, if any); near-ties by correlation near that ink, which a slide along a
            # periodic grid lowers even where every line still lands on some line.
            mean = float(distances.mean()) if distances.size else float("inf")
            candidate = (mean, _correlation(template, near, answer_ink, warp), warp, _residual(distances))
            if plain_fit is None and plain and warp is plain[0]:
                plain_fit = candidate
            if best is None or _better(candidate, best):
                best = candidate
        if best is not None and best[0] <= MAX_RESIDUAL / 4 and best[1] >= GOOD_CORRELATION:
            break
    if best is None:
        return "no start to refine"
    if plain_fit is not None and best[3] > MAX_RESIDUAL:
        best = plain_fit  # nothing fits: an answer with the puzzle's proportions is read in its own frame
    mean, _, warp, residual = best
    full = _answer_matrix(reference, warp, factor)
    # A picture in the puzzle's own frame needs no fit: what it lacks is for the checks to judge
    # (an erased diagram is a failed check, not a misaligned answer).
    clear = _clear_share_mapped(reference, rgb, background, full)
    framed = _is_identity(full, width, height) and abs(aspect - 1) < 0.01
    if residual > MAX_RESIDUAL and not framed:
        return f"residual {residual:.2f} px after the best transform"
    if clear < MIN_CLEAR:
        return f"ink over {100 * (1 - clear):.0f} % of the puzzle's empty background"
    implausible = _implausible(reference, warp, full)
    if implausible:
        return implausible
    matrix = full
    details = {"method": "registered", "residual": round(residual, 3), **_describe(matrix, width, height)}
    if framed:
        details["method"] = "identity"
        return Registration(_recoloured(rgb, background, reference.background), details)
    tilted = _tilted(reference, template, near, answer_ink, warp, starts[0], mean)
    if tilted is not None:
        homography, affine, info = tilted
        matrix = _answer_matrix(reference, affine, factor)
        if not _implausible(reference, affine, matrix):
            perspective = _answer_matrix(reference, homography, factor)
            details = {"method": "registered", "residual": info.pop("residual"), **_describe(matrix, width, height),
                       "perspective": {**info, "matrix": [[round(float(v), 6) for v in row] for row in perspective]}}
            out_w = out_width or max(16, round(float(np.hypot(matrix[0, 0], matrix[1, 0]))))
            out_h = max(16, round(out_w / reference.aspect))
            # Output pixel centre -> normalised puzzle point -> continuous answer point -> answer pixel.
            to_answer = (np.array([[1, 0, -0.5], [0, 1, -0.5], [0, 0, 1]]) @ perspective
                         @ np.array([[1 / out_w, 0, 0.5 / out_w], [0, 1 / out_h, 0.5 / out_h], [0, 0, 1]]))
            warped = cv2.warpPerspective(rgb, to_answer, (out_w, out_h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                                         borderMode=cv2.BORDER_REPLICATE)
            return Registration(_recoloured(warped, background, reference.background), details)
        matrix = full
    scale_x = float(np.hypot(matrix[0, 0], matrix[1, 0]))
    out_w = out_width or max(16, round(scale_x))
    out_h = max(16, round(out_w / reference.aspect))
    to_answer = matrix.copy()
    to_answer[:, 0] = matrix[:, 0] / out_w
    to_answer[:, 1] = matrix[:, 1] / out_h
    to_answer[:, 2] = matrix[:, 2] + 0.5 * (to_answer[:, 0] + to_answer[:, 1]) - 0.5
    warped = cv2.warpAffine(rgb, to_answer.astype(np.float64), (out_w, out_h),
                            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_REPLICATE)
    return Registration(_recoloured(warped, background, reference.background), details)


def _implausible(reference: Reference, warp: np.ndarray, full: np.ndarray) -> str | None:
    """Why the affine ``warp`` (``full``: its map from normalised puzzle coordinates) is no edit a
    model makes (turned, sheared or stretched too far), or None."""
    rotation, skew = _angles(warp)
    if abs(rotation) > MAX_ROTATION or abs(skew) > MAX_SKEW:
        return f"the best transform turns by {rotation:.1f} degrees and shears by {skew:.1f}"
    stretch = float(np.hypot(*full[:, 0]) / reference.width) / float(np.hypot(*full[:, 1]) / reference.height)
    if not 1 / MAX_STRETCH <= stretch <= MAX_STRETCH:
        return f"the best transform stretches x against y by {stretch:.2f}"
    return None


def _tilted(reference: Reference, template: np.ndarray, near: np.ndarray, answer_ink: np.ndarray, warp: np.ndarray,
            box_start: np.ndarray, mean: float) -> tuple[np.ndarray, np.ndarray, dict[str, Any]] | None:
    """A homography (template px -> answer px), the affine fit it was refined from, and how it
    won, for a photographed or tilted answer that the affine fit ``warp`` matches at the centre
    and misses by a few pixels at the corners; None when no homography fits clearly better.

    From ``warp`` and from the content boxes' start, the affine fit and then a homography are
    refined near the puzzle's strokes only (``_puzzle_only``: an answer's filled cells or drawn
    solids pull ECC off them). The best homography, compared on the pixels every candidate
    keeps, replaces ``warp`` only if it removes ``PERSPECTIVE_GAIN`` of ``warp``'s decorrelation
    there, fits the puzzle's ink as closely (mean distance), stays a camera's tilt away from its
    own affine fit, and that affine fit turns and shears as little as an accepted one (the caller
    checks its stretch). A slide along a periodic drawing keeps lines on lines but loses
    correlation, so it does not win."""
    fits: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    height, width = template.shape
    for start in (warp, box_start):
        affine = start
        if start is box_start:
            if _corner_distance(box_start, warp, width, height) <= ALIAS_PX:
                continue  # the affine fit is where the boxes put it: no other basin to try
            # Refit from the boxes near the puzzle's strokes: an answer's solids may have pulled
            # the affine fit a period along a grid.
            kept = _puzzle_only(template, near, answer_ink, start)
            if not kept.any():
                continue
            affine = _refine(template, kept, answer_ink, start)
        kept = _puzzle_only(template, near, answer_ink, affine)
        homography = _refine_perspective(template, kept, answer_ink, affine) if kept.any() else None
        if homography is not None:
            fits.append((homography, affine, kept))
    if not fits:
        return None
    common = _puzzle_only(template, near, answer_ink, warp)
    for _, _, kept in fits:
        common = common * kept
    if not common.any():
        return None
    flat = _correlation(template, common, answer_ink, warp)
    limit = MAX_PERSPECTIVE * max(reference.width, reference.height)
    best: tuple[float, np.ndarray, np.ndarray, dict[str, Any]] | None = None
    for homography, affine, _ in fits:
        tilt = _perspective_shift(homography, affine, reference.width, reference.height)
        rotation, skew = _angles(affine)
        if tilt > limit or abs(rotation) > MAX_ROTATION or abs(skew) > MAX_SKEW:
            continue
        gain = _correlation(template, common, answer_ink, homography) - flat
        if gain < max(PERSPECTIVE_GAIN * (1 - flat), MIN_PERSPECTIVE_GAIN):
            continue
        distances = _distances(reference, answer_ink, homography)
        fitted = float(distances.mean()) if distances.size else float("inf")
        if fitted > mean + TIE_DISTANCE or _residual(distances) > MAX_RESIDUAL:
            continue
        if best is None or gain > best[0]:
            best = (gain, homography, affine, {"residual": round(_residual(distances), 3),
                                               "corner_shift_px": round(tilt, 2), "correlation_gain": round(gain, 4)})
    return None if best is None else best[1:]


def _better(a: tuple[float, float, np.ndarray, float], b: tuple[float, float, np.ndarray, float]) -> bool:
    """Whether candidate ``a`` (mean distance, correlation, ...) fits better than ``b``."""
    if abs(a[0] - b[0]) > TIE_DISTANCE:
        return a[0] < b[0]
    return a[1] > b[1]


def _answer_matrix(reference: Reference, warp: np.ndarray, factor: float) -> np.ndarray:
    """The map from normalised puzzle coordinates to continuous answer coordinates (pixel
    (i, j) covers i..i+1, j..j+1), from ``warp`` (working px -> reduced answer px; a 3x3
    homography gives a 3x3 map)."""
    if warp.shape == (3, 3):
        # Normalised -> working pixel centre -> reduced answer pixel -> continuous full answer.
        to_working = np.array([[reference.width, 0, -0.5], [0, reference.height, -0.5], [0, 0, 1]])
        to_full = np.array([[1 / factor, 0, 0.5 / factor], [0, 1 / factor, 0.5 / factor], [0, 0, 1]])
        out = to_full @ warp.astype(np.float64) @ to_working
        return out / out[2, 2]
    full = warp.astype(np.float64) / factor
    full[:, 2] += (1 / factor - 1) / 2  # pixel centres of the reduction
    matrix = full.copy()
    matrix[:, 0] = full[:, 0] * reference.width
    matrix[:, 1] = full[:, 1] * reference.height
    matrix[:, 2] = full[:, 2] - 0.5 * (full[:, 0] + full[:, 1]) + 0.5
    return matrix


def _angles(warp: np.ndarray) -> tuple[float, float]:
    """Rotation of the x axis and the shear between the axes, in degrees."""
    x_axis, y_axis = warp[:, 0].astype(np.float64), warp[:, 1].astype(np.float64)
    rotation = math.degrees(math.atan2(x_axis[1], x_axis[0]))
    between = math.degrees(math.atan2(x_axis[0] * y_axis[1] - x_axis[1] * y_axis[0], float(x_axis @ y_axis)))
    return rotation, 90.0 - between


def _is_identity(matrix: np.ndarray, width: int, height: int) -> bool:
    corners = np.array([[0, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1]], dtype=np.float64)
    mapped = corners @ matrix.T
    expected = corners[:, :2] * np.array([width, height])
    return bool(np.abs(mapped - expected).max() <= IDENTITY_PX)


def _describe(matrix: np.ndarray | None, width: int = 1, height: int = 1) -> dict[str, Any]:
    """The transform in words: scales and shifts relative to the answer's frame, rotation in degrees."""
    if matrix is None:
        return {"scale": [1.0, 1.0], "shift": [0.0, 0.0], "rotation_deg": 0.0}
    sx = float(np.hypot(matrix[0, 0], matrix[1, 0])) / width
    sy = float(np.hypot(matrix[0, 1], matrix[1, 1])) / height
    rotation = math.degrees(math.atan2(float(matrix[1, 0]), float(matrix[0, 0])))
    return {
        "scale": [round(sx, 4), round(sy, 4)],
        "shift": [round(float(matrix[0, 2]) / width, 4), round(float(matrix[1, 2]) / height, 4)],
        "rotation_deg": round(rotation, 3),
        "matrix": [[round(float(v), 3) for v in row] for row in matrix],
    }


def _recoloured(rgb: np.ndarray, background: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Scale each channel so the answer's background becomes the puzzle's (a tinted or off-white
    background otherwise shifts every colour the verifier classifies)."""
    if np.abs(background - target).max() <= BACKGROUND_TOLERANCE:
        return rgb
    gain = (target + 1.0) / (background + 1.0)
    return np.clip(rgb.astype(np.float32) * gain[None, None, :], 0, 255).astype(np.uint8)


# ---------------------------------------------------------------- the verifiers' entry


@set_aligner
def answer_in_frame(task: str, meta: Mapping[str, Any], image: Any, puzzle: Any = None,
                    unit: float | None = None) -> Registration | Verdict:
    """The answer registered to the bare puzzle of ``meta`` (``puzzle`` when given, else drawn
    from meta), or the unusable verdict saying why it cannot be read; ``unit``: the smallest
    feature read (layout units), which sets the working size (``work_area``)."""
    area = work_area(meta["layout"], unit)
    try:
        rgb = load_rgb(image)
    except UnusableImage as exc:
        return Verdict.unusable(str(exc))
    if puzzle is not None:
        try:
            reference = reference_from_image(load_rgb(puzzle), area)
        except UnusableImage as exc:
            return Verdict.unusable(f"the puzzle image: {exc}")
    else:
        reference = reference_for(task, meta, area)
    result = register(reference, rgb)
    if isinstance(result, str):
        return Verdict.unusable(f"could not align the answer with the puzzle ({result})")
    return result
