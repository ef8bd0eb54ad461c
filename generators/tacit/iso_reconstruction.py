"""Isometric reconstruction (domain: geometry).

The puzzle shows the top, front and side views of a solid of unit cubes stacked on an n x n
floor (third-angle layout, a glyph by each grid shows the viewing direction, filled cells
in the shade of the faces that view sees) and an empty isometric floor. The answer draws,
on that floor, a solid with those three views. Several solids usually share three views;
the verifier reads the drawn solid back from the isometric lattice and accepts every one
whose views match (see verifiers/iso_reconstruction.py), not only the reference drawing.

The reference solid is drawn unambiguously (the shared solver finds exactly one solid in
its drawing). Distractors are solids that get exactly one view wrong. The near misses of a
solid are the solids one edit away (a cube added to or taken from the top of a column, so a
one-cube column added or taken away, or the top cube of a column moved onto another) whose
drawing the verifier's own judge fails on exactly one view; every edit's reverse is an edit.
Their columns need not touch: on a small floor, columns could otherwise be added far more
freely than taken away, and the solution would have the least ink of its set too often.

The four distractors come from ``_option_set.choose_set``: three edits of the solution that
break the same view in different columns (the column heights are the aspects a solver
checks), each adding or removing cubes as a fair coin says (tossed once for the set),
combined into a code in which every edit is carried by two or three of the five options;
solids that carry two or three edits are made by applying them together
(``_NearMisses.combine``), kept only when judged wrong in that one view. A solver must then
check at least two columns to rule out the four, whichever option is the solution; an
attempt whose edits do not compose into a code is rejected rather than given a star of
single edits.
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
from vrforge.verifiers.voxels import EMPTY, VIEWS, lattice, projections, render

VERSION = "1.4.0"
VARIANTS = 24  # near misses kept per answer: enough for three composing edits, few enough to judge quickly
CODE_TRIES = 30  # triples of edits tried before the attempt is rejected
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


def _wrong_views(solids: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """(K, 3) for each of the (K, n, n) ``solids``: which views (top, front, side) differ from
    those of ``reference``."""
    return np.stack([((solids > 0) != (reference > 0)).any(axis=(1, 2)),
                     (solids.max(axis=1) != reference.max(axis=0)).any(axis=1),
                     (solids.max(axis=2) != reference.max(axis=1)).any(axis=1)], axis=1)


class _NearMisses:
    """The near misses of any answer solid for one puzzle: solids one edit away whose
    drawing the verifier's judge fails on exactly one view, and the composite edits of a code
    (``combine``). Edits that add and remove cubes are as likely in a set (``choose_set``'s
    ``signed`` coin), so the pool itself need not be balanced."""

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
        if key not in self.found:  # kept: composing edits asks again
            self.found[key] = self._variants(heights)
        return self.found[key]

    def _variants(self, heights: Heights) -> list[tuple[str, Heights]]:
        solids = _voxels.solid_edits(heights)
        wrong = _wrong_views(solids, self.reference)
        keep = wrong.sum(axis=1) == 1
        seen = {self._labels(heights).tobytes()}
        found: list[tuple[str, Heights, np.ndarray]] = []
        for solid, views in zip(solids[keep].tolist(), wrong[keep]):
            labels = self._labels(solid)
            if any(map(any, solid)) and labels.tobytes() not in seen:
                seen.add(labels.tobytes())
                found.append((f"{VIEWS[int(np.argmax(views))]}_mismatch", solid, labels))
        kept: list[tuple[str, Heights]] = []
        for i in self.rng.permutation(len(found)).tolist():  # judged in random order, up to VARIANTS
            if len(kept) < VARIANTS and self._judged(found[i][2]) == [found[i][0]]:
                kept.append((found[i][0], found[i][1]))
        return kept

    def combine(self, solution: Heights, heights: Heights, edited: Heights) -> tuple[str, Heights] | None:
        """``heights`` with the cubes that ``edited`` adds to or takes from ``solution``, and the
        one check its drawing fails (None unless exactly one, or when it is no solid)."""
        joined = np.asarray(heights) + np.asarray(edited) - np.asarray(solution)
        if (joined < 0).any() or (joined > self.n).any() or np.array_equal(joined, heights):
            return None
        solid = joined.tolist()
        if not joined.any():
            return None
        failed = self._judged(self._labels(solid))
        return (failed[0], solid) if len(failed) == 1 else None


def _columns(heights: Heights) -> np.ndarray:
    return np.asarray(heights, dtype=np.float64).ravel()


column_aspects = _option_set.aspects_of(_columns)  # a solid's aspects: its column heights, one each


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
        chosen = _option_set.choose_set(heights, near.variants, near.stand_in, rng, aspects=column_aspects,
                                        combine=near.combine, signed=True, signs_per_set=True, same_kind=True, tries=CODE_TRIES,
                                        fallback=False)
    except ValueError as exc:
        raise RejectedPuzzle(f"distractors: {exc}") from None

    h = np.asarray(heights)
    stats = {
        "cubes": float(h.sum()),
        "columns": float((h > 0).sum()),
        "max_height": float(h.max()),
        "visible_unit_faces": float((labels != EMPTY).sum() / 2),
        # the column heights a solver must check to rule out every distractor
        "aspects_in_play": _option_set.set_aspects(heights, chosen, column_aspects),
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
