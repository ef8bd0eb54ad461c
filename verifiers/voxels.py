"""Stacked-cube solids: projections, the isometric triangle lattice, and reading pictures back.

Shared by the ``ortho_projection`` and ``iso_reconstruction`` tasks (generators and verifiers).

A solid is a heightmap ``heights[y][x]`` on an n x n floor: column (x, y) holds cubes at
z = 0 .. h-1, so every cube rests on the floor or on another cube. x grows to the right,
y towards the viewer (the front), z upwards.

Isometric picture. The viewer looks along (-1, -1, -1): it sees the top (+z), the front
(+y, drawn on the left) and the right (+x) face of each column. A point (x, y, z) lands on
screen at sx = (x - y) * sqrt(3)/2, sy = (x + y)/2 - z (units of one cube edge), so it only
depends on (p, q) = (x - z, y - z): the screen is a triangular lattice and every visible
face is a union of its triangles. ``A(p, q)`` is the triangle (p,q), (p+1,q), (p+1,q+1) and
``B(p, q)`` the triangle (p,q), (p,q+1), (p+1,q+1). Each triangle of a picture shows one
of four things: nothing (floor or background), a top, a front ("left") or a right face.

Reading back. A column can only be hidden by columns nearer the viewer (larger x and y),
so placing columns front to back, each column's new triangles must show exactly its own
faces. ``interpretations`` enumerates every heightmap whose picture has the given triangle
labels (optionally restricted to given projections): the generator uses it to prove a
drawing unambiguous, the verifier to find a solid with the required views in a drawing.

Orthographic views (each an n x n grid of "0"/"1" strings, row 0 at the top):
- top: row = y (back at the top), column = x;
- front (seen from +y): row i is z = n-1-i, column = x;
- side (seen from +x, the right side): row i is z = n-1-i, column j is y = n-1-j (front at the left).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from vrforge.verifiers.sampling import hex_to_rgb, layout_problem, nearest_palette, sample_colours

EMPTY, TOP, LEFT, RIGHT = 0, 1, 2, 3
FACE_KEYS = ("top", "left", "right")  # palette keys of the three face shades
VIEWS = ("top", "front", "side")
SQRT3_2 = math.sqrt(3) / 2
MIN_UNIT_PX = 6.0  # the smallest lattice unit or view cell an answer may be drawn at
NODE_LIMIT = 20_000  # search nodes before a read-back gives up (generated drawings need about 1,100 at most, n = 6)

Heights = list[list[int]]


# ---------------------------------------------------------------- projections


def projections(heights: Sequence[Sequence[int]]) -> dict[str, list[str]]:
    """The top, front and side views of a heightmap as grids of "0"/"1" strings."""
    h = np.asarray(heights, dtype=np.int64)
    n = h.shape[0]
    front_h, side_h = h.max(axis=0), h.max(axis=1)  # per x, per y
    return {
        "top": ["".join("1" if h[y, x] > 0 else "0" for x in range(n)) for y in range(n)],
        "front": ["".join("1" if front_h[x] > n - 1 - i else "0" for x in range(n)) for i in range(n)],
        "side": ["".join("1" if side_h[n - 1 - j] > n - 1 - i else "0" for j in range(n)) for i in range(n)],
    }


def is_connected(heights: Sequence[Sequence[int]]) -> bool:
    """True when the occupied columns form one edge-connected piece (then so does the solid)."""
    h = np.asarray(heights)
    cells = {(int(y), int(x)) for y, x in zip(*np.nonzero(h))}
    if not cells:
        return False
    start = min(cells)
    seen, stack = {start}, [start]
    while stack:
        y, x = stack.pop()
        for other in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
            if other in cells and other not in seen:
                seen.add(other)
                stack.append(other)
    return len(seen) == len(cells)


# ---------------------------------------------------------------- the isometric lattice


@dataclass(frozen=True)
class Lattice:
    """Triangles of the isometric picture of an n x n x n box, and what each column covers."""

    n: int
    order: tuple[tuple[int, int], ...]  # columns (x, y), front to back
    column_tris: tuple[tuple[np.ndarray, ...], ...]  # [k][h] -> triangle indices
    column_labels: tuple[tuple[np.ndarray, ...], ...]  # [k][h] -> face label per triangle
    column_faces: tuple[tuple[np.ndarray, ...], ...]  # [k][h] -> unit-face id per triangle
    finalised: tuple[np.ndarray, ...]  # [k] -> triangles no column after k can cover
    never: np.ndarray  # triangles no column covers (must read as empty)
    sampled: np.ndarray  # triangles inside the drawing (columns or floor): the ones read back
    centroids: np.ndarray  # (T, 2) screen centroid of every triangle, cube-edge units
    vertices: np.ndarray  # (T, 3, 2) screen corners of every triangle
    edges: np.ndarray  # (E, 2) pairs of triangles sharing a lattice edge
    edge_ends: np.ndarray  # (E, 2, 2) screen end points of that edge

    @property
    def size(self) -> int:
        return (2 * self.n + 2) ** 2 * 2

    def index(self, p: int, q: int, t: int) -> int:
        m = self.n + 1
        return ((p + m) * 2 * m + (q + m)) * 2 + t


def _screen(p: float, q: float) -> tuple[float, float]:
    return (p - q) * SQRT3_2, (p + q) / 2


@lru_cache(maxsize=16)
def lattice(n: int) -> Lattice:
    m = n + 1  # p and q run over -m .. m-1: one spare row round the box, for its outline
    span = 2 * m
    total = span * span * 2

    def idx(p: int, q: int, t: int) -> int:
        return ((p + m) * span + (q + m)) * 2 + t

    order = tuple(sorted(((x, y) for x in range(n) for y in range(n)), key=lambda c: (-(c[0] + c[1]), c[0])))
    tris_all, labels_all, faces_all = [], [], []
    last = np.full(total, -1, dtype=np.int64)
    for k, (x, y) in enumerate(order):
        per_h_tris, per_h_labels, per_h_faces = [], [], []
        for h in range(n + 1):
            tris, labels, faces = [], [], []
            if h > 0:
                base = ((x * n + y) * (n + 1)) * 3  # unit-face ids of this column
                tris += [idx(x - h, y - h, 0), idx(x - h, y - h, 1)]
                labels += [TOP, TOP]
                faces += [base + 3 * h] * 2
                for z in range(h):
                    tris += [idx(x - z, y - z, 0), idx(x - z, y - z - 1, 1)]
                    labels += [RIGHT, RIGHT]
                    faces += [base + 3 * z + 1] * 2
                    tris += [idx(x - z, y - z, 1), idx(x - z - 1, y - z, 0)]
                    labels += [LEFT, LEFT]
                    faces += [base + 3 * z + 2] * 2
            arr = np.asarray(tris, dtype=np.int64)
            per_h_tris.append(arr)
            per_h_labels.append(np.asarray(labels, dtype=np.int8))
            per_h_faces.append(np.asarray(faces, dtype=np.int64))
            last[arr] = np.maximum(last[arr], k)
        tris_all.append(tuple(per_h_tris))
        labels_all.append(tuple(per_h_labels))
        faces_all.append(tuple(per_h_faces))
    finalised = tuple(np.flatnonzero(last == k) for k in range(len(order)))
    never = np.flatnonzero(last < 0)
    floor = [idx(x, y, t) for x in range(n) for y in range(n) for t in (0, 1)]
    sampled = np.union1d(np.flatnonzero(last >= 0), np.asarray(floor, dtype=np.int64))

    centroids = np.zeros((total, 2))
    vertices = np.zeros((total, 3, 2))
    edges, edge_ends = [], []
    for p in range(-m, m):
        for q in range(-m, m):
            a = [(p, q), (p + 1, q), (p + 1, q + 1)]
            b = [(p, q), (p, q + 1), (p + 1, q + 1)]
            for t, corners in ((0, a), (1, b)):
                pts = [_screen(*c) for c in corners]
                vertices[idx(p, q, t)] = pts
                centroids[idx(p, q, t)] = np.mean(pts, axis=0)
            # A(p, q) shares an edge with B(p, q), B(p, q-1) and B(p+1, q).
            for (pp, qq), ends in (((p, q), ((p, q), (p + 1, q + 1))), ((p, q - 1), ((p, q), (p + 1, q))),
                                   ((p + 1, q), ((p + 1, q), (p + 1, q + 1)))):
                if -m <= pp < m and -m <= qq < m:
                    edges.append((idx(p, q, 0), idx(pp, qq, 1)))
                    edge_ends.append([_screen(*ends[0]), _screen(*ends[1])])
    return Lattice(n, order, tuple(tris_all), tuple(labels_all), tuple(faces_all), finalised, never, sampled,
                   centroids, vertices, np.asarray(edges, dtype=np.int64), np.asarray(edge_ends))


def render(heights: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Per triangle: what the isometric picture shows (EMPTY/TOP/LEFT/RIGHT) and which unit face (-1: none)."""
    n = len(heights)
    lat = lattice(n)
    labels = [EMPTY] * lat.size
    faces = [-1] * lat.size
    covered = bytearray(lat.size)
    columns, column_faces = _column_lists(n), _column_face_lists(n)
    for k, (x, y) in enumerate(lat.order):  # front to back: a triangle shows the first column that covers it
        h = int(heights[y][x])
        tris, labs = columns[k][h]
        for t, label, face in zip(tris, labs, column_faces[k][h]):
            if not covered[t]:
                covered[t] = 1
                labels[t] = label
                faces[t] = face
    return np.asarray(labels, dtype=np.int8), np.asarray(faces, dtype=np.int64)


# ---------------------------------------------------------------- reading a picture as solids


@dataclass
class Search:
    solutions: list[Heights]
    nodes: int = 0
    truncated: bool = False


def interpretations(n: int, labels: np.ndarray, limit: int = 2, views: Mapping[str, Sequence[str]] | None = None,
                    node_limit: int = NODE_LIMIT) -> Search:
    """Heightmaps whose isometric picture shows exactly ``labels`` (at most ``limit`` of them).

    ``views`` restricts the search to solids whose projections equal the given ones (any
    subset of "top", "front", "side").
    """
    lat = lattice(n)
    labels = np.asarray(labels, dtype=np.int8)
    search = Search([])
    if (labels[lat.never] != EMPTY).any():
        return search
    views = views or {}
    top = [[ch == "1" for ch in row] for row in views["top"]] if "top" in views else None
    front_h = _skyline(views["front"], n).tolist() if "front" in views else None
    side_h = _skyline(views["side"], n)[::-1].tolist() if "side" in views else None  # side columns run front to back
    remaining_x = [n] * n
    remaining_y = [n] * n
    max_x = [0] * n
    max_y = [0] * n
    # Plain Python lists and a bytearray: the search touches a few triangles per step, where
    # numpy's per-call cost would dominate.
    covered = bytearray(lat.size)
    heights = [[0] * n for _ in range(n)]
    # The labels are fixed for the whole search, so what each placement needs is found once:
    # a column of height h fits when every triangle it shows wrongly is already covered by a
    # column in front; after column k, every non-empty triangle it finalises must be covered.
    shown_labels = labels.tolist()
    column_tris = _column_lists(n)
    wrong = [[[t for t, lab in zip(tris, expected) if shown_labels[t] != lab] for tris, expected in per_h]
             for per_h in column_tris]
    shown = [[t for t in fin if shown_labels[t] != EMPTY] for fin in _finalised_lists(n)]

    def visit(k: int) -> None:
        if len(search.solutions) >= limit or search.truncated:
            return
        search.nodes += 1
        if search.nodes > node_limit:
            search.truncated = True
            return
        if k == len(lat.order):
            search.solutions.append([row[:] for row in heights])
            return
        x, y = lat.order[k]
        for h in range(n + 1):
            if top is not None and (h > 0) != top[y][x]:
                continue
            if (front_h is not None and h > front_h[x]) or (side_h is not None and h > side_h[y]):
                continue
            if not all(covered[t] for t in wrong[k][h]):
                continue
            fresh = [t for t in column_tris[k][h][0] if not covered[t]]
            for t in fresh:
                covered[t] = 1
            ok = all(covered[t] for t in shown[k])
            saved = (max_x[x], max_y[y])
            max_x[x], max_y[y] = max(max_x[x], h), max(max_y[y], h)
            remaining_x[x] -= 1
            remaining_y[y] -= 1
            if front_h is not None and remaining_x[x] == 0 and max_x[x] != front_h[x]:
                ok = False
            if side_h is not None and remaining_y[y] == 0 and max_y[y] != side_h[y]:
                ok = False
            if ok:
                heights[y][x] = h
                visit(k + 1)
                heights[y][x] = 0
            remaining_x[x] += 1
            remaining_y[y] += 1
            max_x[x], max_y[y] = saved
            for t in fresh:
                covered[t] = 0
            if len(search.solutions) >= limit or search.truncated:
                return

    visit(0)
    return search


@lru_cache(maxsize=16)
def _column_lists(n: int) -> tuple[tuple[tuple[list[int], list[int]], ...], ...]:
    """``lattice(n)``'s column triangles and their face labels as Python lists: [k][h] -> (triangles, labels)."""
    lat = lattice(n)
    return tuple(tuple((tris.tolist(), labs.tolist()) for tris, labs in zip(per_h, per_h_labels))
                 for per_h, per_h_labels in zip(lat.column_tris, lat.column_labels))


@lru_cache(maxsize=16)
def _column_face_lists(n: int) -> tuple[tuple[list[int], ...], ...]:
    return tuple(tuple(faces.tolist() for faces in per_h) for per_h in lattice(n).column_faces)


@lru_cache(maxsize=16)
def _finalised_lists(n: int) -> tuple[list[int], ...]:
    return tuple(fin.tolist() for fin in lattice(n).finalised)


def _skyline(grid: Sequence[str], n: int) -> np.ndarray:
    """Column heights of a front/side view grid (number of filled cells counted from the bottom)."""
    heights = np.zeros(n, dtype=np.int64)
    for j in range(n):
        z = 0
        while z < n and grid[n - 1 - z][j] == "1":
            z += 1
        heights[j] = z
    return heights


# ---------------------------------------------------------------- sampling the picture


def image_scale(meta: Mapping[str, Any], image: np.ndarray) -> float:
    layout = meta["layout"]
    height, width = image.shape[:2]
    return min(width / layout["width"], height / layout["height"])


def read_triangles(meta: Mapping[str, Any], image: np.ndarray) -> np.ndarray:
    """The label of every triangle of the isometric panel, read by nearest palette colour."""
    n = meta["size"]
    lat = lattice(n)
    iso = meta["layout"]["iso"]
    unit_px = iso["unit"] * image_scale(meta, image)
    points = np.asarray(iso["origin"], dtype=np.float64) + lat.centroids[lat.sampled] * iso["unit"]
    points = points / np.asarray([meta["layout"]["width"], meta["layout"]["height"]], dtype=np.float64)
    palette = meta["palette"]
    colours = [palette["background"], palette["floor"], palette["top"], palette["left"], palette["right"]]
    classes = nearest_palette(sample_colours(image, points, max(1, int(unit_px * 0.1))), [hex_to_rgb(c) for c in colours])
    labels = np.zeros(lat.size, dtype=np.int8)
    labels[lat.sampled] = np.asarray([EMPTY, EMPTY, TOP, LEFT, RIGHT], dtype=np.int8)[classes]
    return labels


def read_grid(meta: Mapping[str, Any], image: np.ndarray, view: str) -> list[str]:
    """One view grid as "0"/"1" strings: a cell is filled when its centre is nearer any face shade than white."""
    n = meta["size"]
    grid = meta["layout"]["grids"][view]
    (ox, oy), cell = grid["origin"], grid["cell"]
    centres = np.asarray([(ox + (j + 0.5) * cell, oy + (i + 0.5) * cell) for i in range(n) for j in range(n)], dtype=np.float64)
    points = centres / np.asarray([meta["layout"]["width"], meta["layout"]["height"]], dtype=np.float64)
    cell_px = cell * image_scale(meta, image)
    palette = meta["palette"]
    colours = [palette["background"]] + [palette[k] for k in FACE_KEYS] + [palette["line"]]
    classes = nearest_palette(sample_colours(image, points, max(1, int(cell_px * 0.15))), [hex_to_rgb(c) for c in colours])
    filled = classes != 0
    return ["".join("1" if filled[i * n + j] else "0" for j in range(n)) for i in range(n)]


def usable_reason(meta: Mapping[str, Any], image: np.ndarray, min_unit_px: float = MIN_UNIT_PX) -> str | None:
    """Why an image cannot be read against this layout (aspect ratio, size), or None."""
    layout = meta["layout"]
    return layout_problem(layout, image, smallest_unit(meta), min_unit_px, "lattice unit")


def smallest_unit(meta: Mapping[str, Any]) -> float:
    layout = meta["layout"]
    return min(layout["iso"]["unit"], *(g["cell"] for g in layout["grids"].values()))
