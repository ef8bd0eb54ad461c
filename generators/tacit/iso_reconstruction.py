"""Isometric reconstruction (domain: geometry).

The puzzle shows the top, front and side views of a solid of unit cubes stacked on an n x n
floor (third-angle layout, a glyph by each grid shows the viewing direction, filled cells
in the shade of the faces that view sees) and an empty isometric floor. The answer draws,
on that floor, a solid with those three views. Several solids usually share three views;
the verifier reads the drawn solid back from the isometric lattice and accepts every one
whose views match (see verifiers/iso_reconstruction.py), not only the reference drawing.

The reference solid is drawn unambiguously (the shared solver finds exactly one solid in
its drawing). Distractors are solids that get exactly one view wrong: they come from a
random walk of single-column edits (raise, lower, add or remove a column) that starts at
the reference and also continues from earlier distractors, so distractors share edits; a
candidate is kept when the verifier's own judge, run on its drawing, fails exactly one
check. The walk lowers more often than it raises: a raised column almost always adds ink,
and without lighter candidates the solution would be the option with the least ink. The
four are chosen by the shared policy of ``_option_set`` from the triangles' grey levels.
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

VERSION = "1.1.0"
WALK_STEPS = 240
POOL_TARGET = 14
LOWER_SHARE = 0.9  # edits that lower a column: a raised column usually adds ink, a lowered one rarely removes much
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

    pool: list[tuple[str, list[list[int]], np.ndarray]] = []
    seen = {labels.tobytes()}
    for _ in range(WALK_STEPS):
        if len(pool) >= POOL_TARGET:
            break
        k = int(rng.integers(len(pool) + 1))
        base = heights if k == 0 else pool[k - 1][1]
        x, y = int(rng.integers(n)), int(rng.integers(n))
        # Lower and raise equally often: distractors with less and with more ink than the solution.
        old = base[y][x]
        lower = old > 0 and (old == n or rng.random() < LOWER_SHARE)
        new = int(rng.integers(old)) if lower else int(rng.integers(old + 1, n + 1))
        candidate = [row[:] for row in base]
        candidate[y][x] = new
        if not is_connected(candidate):
            continue
        drawn = projections(candidate)
        wrong = [v for v in VIEWS if drawn[v] != views[v]]
        if len(wrong) != 1:
            continue
        cand_labels, _ = render(candidate)
        if cand_labels.tobytes() in seen:
            continue
        checks, _ = verifier.judge(meta, cand_labels)
        failed = [name for name, ok in checks.items() if not ok]
        if failed != [f"{wrong[0]}_mismatch"]:
            continue
        seen.add(cand_labels.tobytes())
        pool.append((failed[0], candidate, cand_labels))
    if len(pool) < 4:
        raise RejectedPuzzle("too few distractor solids")
    vectors = np.asarray([_grey_vector(n, labels)] + [_grey_vector(n, lab) for _, _, lab in pool])
    bare = _grey_vector(n, np.full_like(labels, EMPTY))
    try:
        chosen = _option_set.choose(vectors, [name for name, _, _ in pool], rng, puzzle=bare)
    except ValueError as exc:
        raise RejectedPuzzle(f"distractors: {exc}") from None
    distractors = [pool[i] for i in chosen]

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
        distractors=tuple(candidate for _, candidate, _ in distractors),
        violations=tuple(name for name, _, _ in distractors),
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
