"""Orthographic projection (domain: geometry).

The puzzle shows an isometric drawing of a solid made of unit cubes stacked on an n x n
floor, and three empty grids in third-angle layout (top view above the front view, right
side view beside it; a glyph by each grid shows the viewing direction). The answer fills
the grids with the solid's top, front and side views.

Uniqueness: the drawing is read back by the shared solver (every heightmap whose picture
shows exactly the same face shades on the isometric lattice); an attempt whose drawing
admits more than one solid is rejected, so the three views follow from the picture.

Distractors each get exactly one view wrong (and so fail exactly that check): plausible
mistakes such as the view mirrored (seen from the opposite side), the front and side views
swapped, a column miscounted by one, a front view that keeps the nearest column instead of
the tallest, or a top view with one column missing or added. Mistakes are also applied on
top of each other (a mirrored view with one column miscounted), so distractors share edits;
the four are chosen by the shared policy of ``_option_set`` from the view cells' grey levels.
"""

from __future__ import annotations

import numpy as np

from vrforge.generators.tacit import _option_set, _voxels
from vrforge.registry import TaskSpec, register_task
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import ortho_projection as verifier
from vrforge.verifiers.sampling import hex_luminance
from vrforge.verifiers.voxels import VIEWS, projections, render

VERSION = "1.1.0"
POOL = 12
Grid = list[str]


DIFFICULTIES = _voxels.VOXEL_DIFFICULTIES


def _to_grid(array: np.ndarray) -> Grid:
    return ["".join("1" if v else "0" for v in row) for row in array]


def _from_grid(grid: Grid) -> np.ndarray:
    return np.asarray([[ch == "1" for ch in row] for row in grid], dtype=bool)


def _skyline_grid(heights: np.ndarray, n: int) -> Grid:
    return _to_grid(np.asarray([[heights[j] > n - 1 - i for j in range(n)] for i in range(n)]))


def _mistakes(view: str, grid: Grid, h: np.ndarray, rng: np.random.Generator) -> list[Grid]:
    """Plausible wrong versions of one view grid."""
    n = len(grid)
    a = _from_grid(grid)
    out: list[np.ndarray] = []
    if view == "top":
        out += [a[:, ::-1], a[::-1, :], a.T]
        occupied = [tuple(c) for c in np.argwhere(a)]
        empty = [tuple(c) for c in np.argwhere(~a)]
        for cells, value in ((occupied, False), (empty, True)):
            for k in rng.permutation(len(cells))[:2].tolist():
                b = a.copy()
                b[cells[k]] = value
                out.append(b)
    else:
        sky = a.sum(axis=0)
        out += [a[:, ::-1]]
        other = _from_grid(projections(h.tolist())["side" if view == "front" else "front"])
        out.append(other)
        nearest = [next((int(h[y, x]) for y in range(n - 1, -1, -1) if h[y, x] > 0), 0) for x in range(n)] if view == "front" \
            else [next((int(h[n - 1 - j, x]) for x in range(n - 1, -1, -1) if h[n - 1 - j, x] > 0), 0) for j in range(n)]
        out.append(_from_grid(_skyline_grid(np.asarray(nearest), n)))
        for j in rng.permutation(n)[:3].tolist():
            for step in (-1, 1):
                if 0 <= sky[j] + step <= n and not (sky[j] + step == 0 and sky.sum() == sky[j]):
                    b = sky.copy()
                    b[j] += step
                    out.append(_from_grid(_skyline_grid(b, n)))
    return [_to_grid(b) for b in out]


def generate(config: _voxels.VoxelConfig, rng: np.random.Generator) -> Puzzle:
    n = config.size
    heights = _voxels.drawable_solid(n, (config.min_columns, config.max_columns), rng)
    h = np.asarray(heights)
    labels, _ = render(heights)
    views = projections(heights)
    meta = {
        "task": "ortho_projection",
        "size": n,
        "heights": heights,
        "views": views,
        "layout": _voxels.layout(n),
        "palette": dict(_voxels.PALETTE),
    }

    # Candidate wrong grids: first-level mistakes, and families of a mistake with further
    # mistakes made on top of it (distractors that share an edit).
    candidates: list[tuple[str, dict[str, Grid]]] = []
    families: list[list[int]] = []
    seen = {tuple(tuple(views[v]) for v in VIEWS)}

    def add(view: str, grid: Grid) -> int | None:
        option = {**views, view: grid}
        key = tuple(tuple(option[v]) for v in VIEWS)
        if key in seen or verifier.judge(meta, option) != {c: c != f"{view}_view" for c in verifier.CHECKS}:
            return None
        seen.add(key)
        candidates.append((f"{view}_view", option))
        return len(candidates) - 1

    for view in VIEWS:
        first = _mistakes(view, views[view], h, rng)
        added = [add(view, grid) for grid in first]
        for k in rng.permutation(len(first))[:2].tolist():
            second = _mistakes(view, first[k], h, rng)
            family = [added[k]] + [add(view, second[j]) for j in rng.permutation(len(second))[:5].tolist()]
            families.append([i for i in family if i is not None])
    if len(candidates) < 4:
        raise RejectedPuzzle("too few distinct mistakes")
    # At most POOL candidates (every set of four of them is then scored): one whole family, the rest at random.
    family = families[int(rng.integers(len(families)))] if families else []
    rest = [i for i in rng.permutation(len(candidates)).tolist() if i not in family]
    keep = sorted((family + rest)[:POOL])
    candidates = [candidates[i] for i in keep]
    options = [views] + [option for _, option in candidates]
    shade = {v: hex_luminance(_voxels.PALETTE[_voxels.VIEW_SHADE[v]]) for v in VIEWS}
    vectors = np.asarray([np.concatenate([np.where(_from_grid(o[v]).ravel(), shade[v], 255.0) for v in VIEWS]) for o in options])
    try:  # the puzzle's grids are empty: white
        chosen = _option_set.choose(vectors, [name for name, _ in candidates], rng, puzzle=np.full(vectors.shape[1], 255.0))
    except ValueError as exc:
        raise RejectedPuzzle(f"distractors: {exc}") from None
    distractors = [candidates[i] for i in chosen]

    stats = {
        "cubes": float(h.sum()),
        "columns": float((h > 0).sum()),
        "max_height": float(h.max()),
        "visible_unit_faces": float((labels > 0).sum() / 2),
    }
    return Puzzle(
        meta=meta,
        solution=views,
        distractors=tuple(option for _, option in distractors),
        violations=tuple(name for name, _ in distractors),
        answer_index=int(rng.integers(5)),
        stats=stats,
    )


def draw(meta: dict, answer: dict | None) -> str:
    """The isometric drawing with empty grids, or with ``answer`` ({"top", "front", "side"} grids) filled in."""
    return _voxels.draw_scene(meta, heights=meta["heights"], views=answer)


register_task(
    TaskSpec(
        name="ortho_projection",
        domain="geometry",
        version=VERSION,
        checks=verifier.CHECKS,
        difficulties=DIFFICULTIES,
        generate=generate,
        draw=draw,
        verify=verifier.verify,
        description="Orthographic projection: fill in the top, front and side views of the solid drawn in isometric.",
        instruction="Fill in the top, front and side view grids of the solid of stacked cubes drawn in isometric.",
        answer_hint="the top, front and side view grids filled in",
        difficulty_stat="cubes",
    )
)
