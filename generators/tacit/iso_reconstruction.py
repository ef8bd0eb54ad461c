"""Isometric reconstruction (domain: geometry).

The puzzle shows the top, front and side views of a solid of unit cubes stacked on an n x n
floor (third-angle layout, a glyph by each grid shows the viewing direction, filled cells
in the shade of the faces that view sees) and an empty isometric floor. The answer draws,
on that floor, a solid with those three views. Several solids usually share three views;
the verifier reads the drawn solid back from the isometric lattice and accepts every one
whose views match (see verifiers/iso_reconstruction.py), not only the reference drawing.

The reference solid is drawn unambiguously (the shared solver finds exactly one solid in
its drawing). Distractors are solids that get exactly one view wrong. The near misses of a
solid (the solution or a distractor) are the connected solids one edit away (a cube added
to or taken from the top of a column, so a one-cube column added or taken away, or the top
cube of a column moved onto another) whose drawing the verifier's own judge fails on exactly
one view; a distractor's near misses keep its own view wrong (a near miss that mended it and
broke another view would mostly undo its edit, and so sit next to the solution). They are
balanced: every edit that adds ink is paired with one that removes about as much, so undoing
an edit looks like making one. The four distractors are a star of near misses chosen by
``_option_set.choose_star``: one time in five around the solution, otherwise around one of
its near misses, with the solution (one edit back) among the options.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from PIL import Image

from vrforge.generators.tacit import _option_set, _voxels
from vrforge.imagemetrics import ssim
from vrforge.registry import StrictMode, TaskSpec, register_task
from vrforge.render import rasterise_cached
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import iso_reconstruction as verifier
from vrforge.verifiers.sampling import hex_luminance
from vrforge.verifiers.voxels import EMPTY, VIEWS, is_connected, lattice, projections, render

VERSION = "1.2.0"
VARIANTS = 10  # near misses kept per answer: enough for a star, few enough to judge quickly
STRICT_SSIM = 0.99999  # verify --strict: only a pixel-faithful drawing of the reference solid passes
SSIM_MAX_WIDTH = 512  # larger answers are compared after the same box reduction of both images


DIFFICULTIES = _voxels.VOXEL_DIFFICULTIES


def _grey_vector(n: int, labels: np.ndarray) -> np.ndarray:
    """Grey level of every triangle of the isometric panel: a stand-in for the option picture."""
    lat = lattice(n)
    palette = _voxels.PALETTE
    floor = np.zeros(lat.size, dtype=bool)
    floor[[lat.index(x, y, t) for x in range(n) for y in range(n) for t in (0, 1)]] = True
    grey = np.where(floor, hex_luminance(palette["floor"]), hex_luminance(palette["background"]))
    for label, key in _voxels.LABEL_KEY.items():
        grey = np.where(labels == label, hex_luminance(palette[key]), grey)
    return grey[lat.sampled]


Heights = list[list[int]]


def _edits(heights: Heights) -> list[Heights]:
    """Every solid one edit from ``heights``: a cube added to or taken from the top of a
    column, or the top cube of a column moved onto another. Each edit's reverse is an edit."""
    n = len(heights)
    cells = [(y, x) for y in range(n) for x in range(n)]
    out = []
    for y, x in cells:
        for value in (heights[y][x] - 1, heights[y][x] + 1):
            if 0 <= value <= n:
                other = [row[:] for row in heights]
                other[y][x] = value
                out.append(other)
    for ya, xa in cells:
        for yb, xb in cells:
            if (ya, xa) != (yb, xb) and heights[ya][xa] > 0 and heights[yb][xb] < n:
                other = [row[:] for row in heights]
                other[ya][xa] -= 1
                other[yb][xb] += 1
                out.append(other)
    return out


class _NearMisses:
    """The near misses of any answer solid for one puzzle: connected solids one edit away whose
    drawing the verifier's judge fails on exactly one view (a distractor's own view), balanced
    in ink (``balanced_edits``)."""

    def __init__(self, meta: Mapping[str, Any], rng: np.random.Generator) -> None:
        self.meta, self.rng, self.n = meta, rng, meta["size"]
        self.labels: dict[str, np.ndarray] = {}
        self.failed: dict[bytes, list[str]] = {}

    def _labels(self, heights: Heights) -> np.ndarray:
        key = str(heights)
        if key not in self.labels:
            self.labels[key] = render(heights)[0]
        return self.labels[key]

    def stand_in(self, heights: Heights) -> np.ndarray:
        return _grey_vector(self.n, self._labels(heights))

    def _judged(self, labels: np.ndarray) -> list[str]:
        key = labels.tobytes()
        if key not in self.failed:
            checks, _ = verifier.judge(self.meta, labels)
            self.failed[key] = [name for name, ok in checks.items() if not ok]
        return self.failed[key]

    def variants(self, heights: Heights) -> list[tuple[str, Heights]]:
        views = self.meta["views"]
        base = self.stand_in(heights)
        seen = {self._labels(heights).tobytes()}
        own = [v for v in VIEWS if projections(heights)[v] != views[v]]
        found: list[tuple[str, Heights, np.ndarray]] = []
        for other in _edits(heights):
            if not is_connected(other):
                continue
            drawn = projections(other)
            wrong = [v for v in VIEWS if drawn[v] != views[v]]
            if len(wrong) != 1 or (own and wrong != own):
                continue
            labels = self._labels(other)
            if labels.tobytes() not in seen:
                seen.add(labels.tobytes())
                found.append((f"{wrong[0]}_mismatch", other, labels))
        inks = [float((base - _grey_vector(self.n, labels)).sum()) for _, _, labels in found]
        kept = _voxels.balanced_edits(inks, self.rng, lambda i: self._judged(found[i][2]) == [found[i][0]], VARIANTS)
        return [(found[i][0], found[i][1]) for i in kept]


def generate(config: _voxels.VoxelConfig, rng: np.random.Generator) -> Puzzle:
    n = config.size
    heights = _voxels.drawable_solid(n, (config.min_columns, config.max_columns), rng)
    views = projections(heights)
    labels, _ = render(heights)
    meta = {
        "task": "iso_reconstruction",
        "size": n,
        "views": views,
        "heights": heights,
        "layout": _voxels.layout(n),
        "palette": dict(_voxels.PALETTE),
    }

    near = _NearMisses(meta, rng)
    try:
        chosen = _option_set.choose_star(heights, near.variants, near.stand_in, rng)
    except ValueError as exc:
        raise RejectedPuzzle(f"distractors: {exc}") from None

    h = np.asarray(heights)
    stats = {
        "cubes": float(h.sum()),
        "columns": float((h > 0).sum()),
        "max_height": float(h.max()),
        "visible_unit_faces": float((labels != EMPTY).sum() / 2),
    }
    return Puzzle(
        meta=meta,
        solution=heights,
        distractors=tuple(candidate for _, candidate in chosen),
        violations=tuple(name for name, _ in chosen),
        answer_index=int(rng.integers(5)),
        stats=stats,
    )


def draw(meta: Mapping[str, Any], answer: list[list[int]] | None) -> str:
    """The three views and the floor, with the solid ``answer`` (heights[y][x]) drawn on it."""
    return _voxels.draw_scene(meta, heights=answer, views=meta["views"])


def reference_ssim(meta: Mapping[str, Any], rgb: np.ndarray) -> float:
    """SSIM between ``rgb`` and the reference solution drawn at the same size (verify --strict)."""
    height, width = rgb.shape[:2]
    reference = rasterise_cached(draw(meta, meta["heights"]), width)
    answer = Image.fromarray(rgb)
    if answer.size != reference.size:
        answer = answer.resize(reference.size, Image.Resampling.BILINEAR)
    if width > SSIM_MAX_WIDTH:
        size = (SSIM_MAX_WIDTH, max(1, round(reference.height * SSIM_MAX_WIDTH / width)))
        answer, reference = (im.resize(size, Image.Resampling.BOX) for im in (answer, reference))
    return ssim(np.asarray(answer), np.asarray(reference))


register_task(
    TaskSpec(
        name="iso_reconstruction",
        domain="geometry",
        version=VERSION,
        checks=verifier.CHECKS,
        difficulties=DIFFICULTIES,
        generate=generate,
        draw=draw,
        verify=verifier.verify,
        description="Isometric reconstruction: draw, on the isometric floor, a solid of stacked cubes with the three given views.",
        instruction=("On the isometric floor, draw a solid of stacked cubes "
                     "whose top, front and side views match the three given views."),
        answer_hint="an isometric drawing of a solid that has the three views shown",
        difficulty_stat="cubes",
        strict=StrictMode(reference_ssim, STRICT_SSIM),
    )
)
