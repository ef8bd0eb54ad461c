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
one view. A near miss of a distractor that mends its wrong view and breaks another mostly
undoes the distractor's edit, and so sits next to the solution: with such near misses always
allowed the solution would be the most central option too often, without them the least
central, so they are allowed for a share (MENDING_SHARE) of the distractors. They are
balanced: every edit that adds ink is paired with one that removes about as much, so undoing
an edit looks like making one. The four distractors are a star of near misses chosen by
``_option_set.choose_star``: one time in five around the solution, otherwise around one of
its near misses, with the solution (one edit back) among the options.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
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

VERSION = "1.3.1"
VARIANTS = 10  # near misses kept per answer: enough for a star, few enough to judge quickly
STRICT_SSIM = 0.99999  # verify --strict: only a pixel-faithful drawing of the reference solid passes
SSIM_MAX_WIDTH = 512  # larger answers are compared after the same box reduction of both images


DIFFICULTIES = _voxels.VOXEL_DIFFICULTIES


@cache
def _empty_grey(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The grey level of every sampled triangle with no solid drawn (floor or background),
    and the grey level of each label (EMPTY, TOP, LEFT, RIGHT; EMPTY's unused)."""
    lat = lattice(n)
    palette = _voxels.PALETTE
    floor = np.zeros(lat.size, dtype=bool)
    floor[[lat.index(x, y, t) for x in range(n) for y in range(n) for t in (0, 1)]] = True
    empty = np.where(floor, hex_luminance(palette["floor"]), hex_luminance(palette["background"]))[lat.sampled]
    shades = np.zeros(1 + max(_voxels.LABEL_KEY))
    for label, key in _voxels.LABEL_KEY.items():
        shades[label] = hex_luminance(palette[key])
    return empty, shades


def _grey_vector(n: int, labels: np.ndarray) -> np.ndarray:
    """Grey level of every triangle of the isometric panel: a stand-in for the option picture."""
    empty, shades = _empty_grey(n)
    sampled = labels[lattice(n).sampled]
    return np.where(sampled == EMPTY, empty, shades[sampled])


Heights = list[list[int]]
CENTRE_LEAVES = 3  # near misses a distractor needs to be the centre of a set (``choose_star``)
MENDING_SHARE = 0.3  # distractors whose near misses may mend their view and break another
SURELY_ENOUGH = 16  # a solid with this many one-edit solids failing one view has enough near misses


def _wrong_views(solids: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """(K, 3) for each of the (K, n, n) ``solids``: which views (top, front, side) differ from
    those of ``reference``."""
    return np.stack([((solids > 0) != (reference > 0)).any(axis=(1, 2)),
                     (solids.max(axis=1) != reference.max(axis=0)).any(axis=1),
                     (solids.max(axis=2) != reference.max(axis=1)).any(axis=1)], axis=1)


class _NearMisses:
    """The near misses of any answer solid for one puzzle: connected solids one edit away whose
    drawing the verifier's judge fails on exactly one view (for most distractors, their own
    view), balanced in ink (``balanced_edits``). The solution's near misses are those that can each centre a
    set (with enough near misses of their own), so that the solution centres it only by lot."""

    def __init__(self, meta: Mapping[str, Any], rng: np.random.Generator) -> None:
        self.meta, self.rng, self.n = meta, rng, meta["size"]
        self.reference = np.asarray(meta["heights"], dtype=np.int64)  # its views are the puzzle's
        self.labels: dict[str, np.ndarray] = {}
        self.failed: dict[bytes, list[str]] = {}
        self.found: dict[str, list[tuple[str, Heights]]] = {}

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
        key = str(heights)
        if key not in self.found:  # kept: the set chooser asks again for what the solution's check drew
            self.found[key] = self._variants(heights)
        return self.found[key]

    def _can_centre(self, heights: Heights) -> bool:
        """Whether a distractor has enough near misses to centre a set: surely when it has many
        candidate edits (the cheap count), otherwise by finding them."""
        wrong = _wrong_views(_voxels.solid_edits(heights), self.reference)
        own = _wrong_views(np.asarray([heights]), self.reference)[0]
        if ((wrong.sum(axis=1) == 1) & wrong[:, own].all(axis=1)).sum() >= SURELY_ENOUGH:
            return True
        return len(self.variants(heights)) >= CENTRE_LEAVES

    def _variants(self, heights: Heights) -> list[tuple[str, Heights]]:
        own = _wrong_views(np.asarray([heights]), self.reference)[0]
        solids = _voxels.solid_edits(heights)
        wrong = _wrong_views(solids, self.reference)
        keep = wrong.sum(axis=1) == 1
        if own.any() and self.rng.random() >= MENDING_SHARE:
            keep &= wrong[:, own].all(axis=1)
        base = self.stand_in(heights)
        seen = {self._labels(heights).tobytes()}
        found: list[tuple[str, Heights, np.ndarray]] = []
        for solid, views in zip(solids[keep].tolist(), wrong[keep]):
            if is_connected(solid):
                labels = self._labels(solid)
                if labels.tobytes() not in seen:
                    seen.add(labels.tobytes())
                    found.append((f"{VIEWS[int(np.argmax(views))]}_mismatch", solid, labels))
        inks = [float((base - _grey_vector(self.n, labels)).sum()) for _, _, labels in found]

        def accept(i: int) -> bool:
            kind, solid, labels = found[i]
            return self._judged(labels) == [kind] and (own.any() or self._can_centre(solid))

        kept = _voxels.balanced_edits(inks, self.rng, accept, VARIANTS)
        return [(found[i][0], found[i][1]) for i in kept]


def view_aspects(heights: Heights) -> tuple[bytes, ...]:
    """A solid's aspects: its three views, what a solver compares a candidate with."""
    views = projections(heights)
    return tuple(repr(views[v]).encode() for v in VIEWS)


def generate(config: _voxels.VoxelConfig, rng: np.random.Generator) -> Puzzle:
    n = config.size
    heights = _voxels.drawable_solid(config, rng)
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
        # the views a solver must compare with to rule out every distractor
        "aspects_in_play": _option_set.set_aspects(heights, chosen, view_aspects),
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
        legibility=_voxels.legibility,
        legibility_floors=_voxels.LEGIBILITY_FLOORS,
        conventions=_voxels.CONVENTIONS,
        strict=StrictMode(reference_ssim, STRICT_SSIM),
    )
)
