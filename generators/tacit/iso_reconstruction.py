"""Isometric reconstruction (domain: geometry).

The puzzle shows the top, front and side views of a solid of unit cubes stacked on an n x n
floor (third-angle layout, a glyph by each grid shows the viewing direction, filled cells
in the shade of the faces that view sees) and an empty isometric floor. The answer draws,
on that floor, a solid with those three views. Several solids usually share three views;
the verifier reads the drawn solid back from the isometric lattice and accepts every one
whose views match (see verifiers/iso_reconstruction.py), not only the reference drawing.

The reference solid is drawn unambiguously (the shared solver finds exactly one solid in
its drawing). Distractors are connected solids that get exactly one view wrong, as the
verifier's own judge reads their drawing. The near misses of the solution are the solids
one edit away (a cube added to or taken from the top of a column, or the top cube of a
column moved onto another; every edit's reverse is an edit) with exactly one wrong view,
NEAR_MISS_DRAWS of them drawn at random and judged. On a level whose solids have hidden notches
(``expert``), every near miss must also be drawn unambiguously, as the solution is.

The four distractors come from ``_option_set.choose_set``: three near misses in different
aspects (a top-view cell, or a front or side view column: what a solver compares), their
ink added or removed as a coin tossed once per puzzle says, combined into a code in which
every edit is carried by two or three of the five options. Options that carry two or three
edits are the solution with those edits applied together (``_NearMisses.combine``), kept
only when still connected and wrong in exactly one view. A solver must then compare at
least two aspects to rule out the four, whichever option is the solution, and the solution
is a random member of the code, so neither the set's structure nor its ink points at it.
A solid whose edits do not compose into a code is replaced by a new one (SOLID_DRAWS at
most) rather than given a star of single edits.
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
from vrforge.verifiers.voxels import EMPTY, is_connected, lattice, projections, render

VERSION = "1.4.0"
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
CODE_TRIES = 30  # triples of near misses tried on one solid
SOLID_DRAWS = 40  # solids drawn for one set's signs before the attempt is rejected
NEAR_MISS_DRAWS = 60  # one-edit solids judged per solution: judging every one (hundreds on a large floor) costs most


def _wrong_views(solids: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """(K, 3) for each of the (K, n, n) ``solids``: which views (top, front, side) differ from
    those of ``reference``."""
    return np.stack([((solids > 0) != (reference > 0)).any(axis=(1, 2)),
                     (solids.max(axis=1) != reference.max(axis=0)).any(axis=1),
                     (solids.max(axis=2) != reference.max(axis=1)).any(axis=1)], axis=1)


def view_cells(heights: Heights) -> tuple[bytes, ...]:
    """A solid's aspects, what a solver compares with the puzzle's views: every cell of its top
    view, and every column of its front and side views."""
    views = projections(heights)
    n = len(views["top"])
    top = [cell for row in views["top"] for cell in row]
    columns = ["".join(row[j] for row in views[v]) for v in ("front", "side") for j in range(n)]
    return tuple(part.encode() for part in top + columns)


class _NearMisses:
    """The near misses of the solution for one puzzle: connected solids one edit away whose
    drawing the verifier's judge fails on exactly one view, and the composite mistakes of a
    code (``combine``)."""

    def __init__(self, meta: Mapping[str, Any], rng: np.random.Generator, unambiguous: bool = False) -> None:
        # unambiguous: every near miss drawn, like the solution, as exactly one solid. A level whose
        # solids must have hidden notches (min_concavities) needs it: most notched solids draw
        # ambiguously, so an ambiguous drawing marked a distractor (the set CNN found expert
        # solutions 0.335 of the time without it, 0.26 with it).
        self.meta, self.rng, self.n, self.unambiguous = meta, rng, meta["size"], unambiguous
        self.reference = np.asarray(meta["heights"], dtype=np.int64)  # its views are the puzzle's
        self.labels: dict[str, np.ndarray] = {}

    def _labels(self, heights: Heights) -> np.ndarray:
        key = str(heights)
        if key not in self.labels:
            self.labels[key] = render(heights)[0]
        return self.labels[key]

    def stand_in(self, heights: Heights) -> np.ndarray:
        return _grey_vector(self.n, self._labels(heights))

    def fault(self, heights: Heights) -> str | None:
        """The one check a connected solid's drawing fails (None: none, several, not connected,
        or a drawing that shows more than one solid)."""
        if not is_connected(heights):
            return None
        checks, _ = verifier.judge(self.meta, self._labels(heights))
        failed = [name for name, ok in checks.items() if not ok]
        if len(failed) != 1 or (self.unambiguous and not _voxels.draws_one_solid(self.n, self._labels(heights))):
            return None  # the solver, the costly check, last
        return failed[0]

    def variants(self, heights: Heights) -> list[tuple[str, Heights]]:
        """Every solid one edit from ``heights`` (``solid_edits``) that fails exactly one view,
        its drawing judged as the verifier judges it, among NEAR_MISS_DRAWS drawn at random; only
        the solution's are asked for (the composites come from ``combine``)."""
        if heights != self.meta["heights"]:
            return []
        solids = _voxels.solid_edits(heights)
        candidates = solids[_wrong_views(solids, self.reference).sum(axis=1) == 1]
        drawn = self.rng.permutation(len(candidates))[:NEAR_MISS_DRAWS]
        found: list[tuple[str, Heights]] = []
        for solid in candidates[np.sort(drawn)].tolist():
            name = self.fault(solid)
            if name is not None:
                found.append((name, solid))
        return found

    def combine(self, solution: Heights, answer: Heights, edited: Heights) -> tuple[str, Heights] | None:
        """``answer`` with the cubes that ``edited`` adds to or takes from ``solution``, and the one
        check its drawing fails (None unless exactly one)."""
        joined = np.asarray(answer) + np.asarray(edited) - np.asarray(solution)
        if joined.min() < 0 or joined.max() > self.n:
            return None
        name = self.fault(joined.tolist())
        return None if name is None else (name, joined.tolist())


def generate(config: _voxels.VoxelConfig, rng: np.random.Generator) -> Puzzle:
    n = config.size
    # The set's signs are drawn with the first solid and kept for every solid drawn after it: a
    # solid drawn again with new signs would keep the signs whose edits compose more easily.
    signs: list[float] | None = None
    problem = ""
    for _ in range(SOLID_DRAWS):
        try:
            heights = _voxels.drawable_solid(config, rng)
        except RejectedPuzzle as exc:
            problem = str(exc)
            continue
        signs = signs or _option_set.set_signs(rng)
        meta = {
            "task": "iso_reconstruction",
            "size": n,
            "views": projections(heights),
            "heights": heights,
            "layout": _voxels.layout(n),
            "palette": dict(_voxels.PALETTE),
        }
        near = _NearMisses(meta, rng, unambiguous=config.min_concavities > 0)
        try:
            chosen = _option_set.choose_set(heights, near.variants, near.stand_in, rng, aspects=view_cells,
                                            combine=near.combine, signed=True, signs=signs, same_kind=True,
                                            tries=CODE_TRIES, fallback=False)
            break
        except ValueError as exc:
            problem = f"distractors: {exc}"
    else:
        raise RejectedPuzzle(problem)

    h = np.asarray(heights)
    labels, _ = render(heights)
    stats = {
        "cubes": float(h.sum()),
        "columns": float((h > 0).sum()),
        "max_height": float(h.max()),
        "visible_unit_faces": float((labels != EMPTY).sum() / 2),
        # the top-view cells and front or side view columns a solver must compare to rule out every distractor
        "aspects_in_play": _option_set.set_aspects(heights, chosen, view_cells),
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
