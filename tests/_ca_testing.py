"""Test helpers shared by test_ca_forward.py and test_ca_inverse.py (not a test module)."""

from __future__ import annotations

import hashlib
from functools import cache

import numpy as np
from helpers import jpeg, resized

from vrforge.pickers import pick_all, picker_accuracy
from vrforge.registry import accepted_puzzle, get_task, meta_errors
from vrforge.render import encode_png, rasterise

RESOLUTIONS = (512, 1024, 2048)


def first_puzzle(task: str, difficulty: str, index: int = 0):
    """The puzzle the build would make for (seed 0, task, difficulty, index): first accepted attempt."""
    return accepted_puzzle(task, difficulty, index)


@cache
def rendered(task: str, difficulty: str):
    """(puzzle, {res: bare}, {res: solution}, [{res: distractor}] * 4) for seed 0."""
    spec = get_task(task)
    puzzle = first_puzzle(task, difficulty)
    bare = _arrays(spec.draw(puzzle.meta, None))
    solution = _arrays(spec.draw(puzzle.meta, puzzle.solution))
    distractors = [_arrays(spec.draw(puzzle.meta, answer)) for answer in puzzle.distractors]
    return puzzle, bare, solution, distractors


def _arrays(svg: str) -> dict[int, np.ndarray]:
    return {res: np.asarray(image) for res, image in rasterise(svg, RESOLUTIONS).items()}


def check_solution_robust(task: str, difficulty: str) -> None:
    spec = get_task(task)
    puzzle, _, solution, _ = rendered(task, difficulty)
    assert meta_errors(task, puzzle.meta) == []
    for res in RESOLUTIONS:
        assert spec.verify(puzzle.meta, solution[res]).passed, res
    base = solution[1024]
    for variant in (resized(base, 0.9), resized(base, 1.1), jpeg(base, 85), jpeg(solution[512], 85)):
        verdict = spec.verify(puzzle.meta, variant)
        assert verdict.passed, verdict.reason


def check_distractors(task: str, difficulty: str) -> None:
    spec = get_task(task)
    puzzle, _, solution, distractors = rendered(task, difficulty)
    assert len(puzzle.distractors) == 4 and set(puzzle.violations) <= set(spec.checks)
    for name, raster in zip(puzzle.violations, distractors):
        for res in RESOLUTIONS:
            assert spec.verify(puzzle.meta, raster[res]).failed == [name], (name, res)
        assert spec.verify(puzzle.meta, jpeg(raster[1024], 85)).failed == [name], name
    digests = {hashlib.sha256(r[512].tobytes()).hexdigest() for r in [solution, *distractors]}
    assert len(digests) == 5


def check_bad_images(task: str, difficulty: str) -> None:
    spec = get_task(task)
    puzzle, bare, solution, _ = rendered(task, difficulty)
    assert not spec.verify(puzzle.meta, bare[512]).passed
    noise = np.random.default_rng(0).integers(0, 256, size=solution[512].shape, dtype=np.uint8)
    assert not spec.verify(puzzle.meta, noise).passed
    png = encode_png(solution[512])
    truncated = spec.verify(puzzle.meta, png[: len(png) // 2])
    assert not truncated.passed and not truncated.usable
    assert not spec.verify(puzzle.meta, b"not an image").usable
    square = np.full((512, 512, 3), 255, dtype=np.uint8)
    assert not spec.verify(puzzle.meta, square).usable  # wrong aspect ratio


def check_determinism(task: str, difficulty: str) -> None:
    spec = get_task(task)
    a, b = first_puzzle(task, difficulty, 7), first_puzzle(task, difficulty, 7)
    assert a.meta == b.meta and a.answer_index == b.answer_index and a.violations == b.violations
    for x, y in zip([a.solution, *a.distractors, None], [b.solution, *b.distractors, None]):
        assert spec.draw(a.meta, x) == spec.draw(b.meta, y)


def solution_digest(task: str, difficulty: str) -> str:
    _, _, solution, _ = rendered(task, difficulty)
    return hashlib.sha256(encode_png(solution[512])).hexdigest()


def picker_rates(task: str, difficulty: str, count: int, width: int = 256) -> dict[str, float]:
    spec = get_task(task)
    choices, answers = [], []
    for index in range(count):
        puzzle = first_puzzle(task, difficulty, index)
        rasters = [np.asarray(rasterise(spec.draw(puzzle.meta, option), (width,))[width]) for option in puzzle.options()]
        choices.append(pick_all(rasters))
        answers.append(puzzle.answer_index)
    return picker_accuracy(choices, answers)


def check_bad_params(config_type, base, field: str, value, words: str) -> None:
    """``validate()`` of ``base`` with ``field`` set to ``value`` raises a one-line ParamError naming it."""
    import dataclasses

    import pytest

    from vrforge.params import ParamError

    with pytest.raises(ParamError) as caught:
        dataclasses.replace(base, **{field: value}).validate()
    message = str(caught.value)
    assert "\n" not in message and words in message, message


def check_legibility_drawn(task: str, difficulty: str, index: int = 0) -> dict[str, float]:
    """Each declared legibility share times the picture's width is what the SVG draws; the shares."""
    from vrforge.generators.tacit import _ca_common as common
    from vrforge.svgdraw import fmt

    spec = get_task(task)
    config = spec.difficulties[difficulty]
    shares = spec.legibility(config)
    puzzle = first_puzzle(task, difficulty, index)
    layout = puzzle.meta["layout"]
    width = layout["width"]
    svg = spec.draw(puzzle.meta, puzzle.solution)
    assert f'viewBox="0 0 {fmt(width)} ' in svg

    def units(name: str) -> str:
        return fmt(shares[name] * width)

    # The grid's first inner line lies one cell below its top; the table's, one entry below its entries' top.
    from vrforge.verifiers._ca_common import max_count, table_entry_origin

    ox, oy = layout["start_origin"]
    cell, n = shares["cell"] * width, puzzle.meta["size"]
    assert f"M{fmt(ox)} {fmt(oy + cell)}L{fmt(ox + n * cell)} {fmt(oy + cell)}" in svg
    ex, ey = table_entry_origin(puzzle.meta)
    entry, counts = shares["table_entry"] * width, max_count(puzzle.meta["neighbourhood"]) + 1
    assert f"M{fmt(ex)} {fmt(ey + entry)}L{fmt(ex + counts * entry)} {fmt(ey + entry)}" in svg
    assert f"h{units('glyph_cell')}v{units('glyph_cell')}" in svg  # a corner glyph cell
    assert f'stroke="{puzzle.meta["palette"]["line"]}" stroke-width="{units("grid_line")}"' in svg
    assert abs((shares["cell"] - shares["cell_fill"] - shares["grid_line"]) * width) < 1e-9
    pip, step = shares["count_pip"] * width / 2, shares["step_pip"] * width / 2
    assert f"a{fmt(pip)} {fmt(pip)} 0 1 0" in svg and f"a{fmt(step)} {fmt(step)} 0 1 0" in svg
    assert fmt(shares["wall"] * width) == fmt(common.wall_width(layout.get("scale", 1.0)))
    if puzzle.meta["boundary"] == "fixed":
        assert f'stroke-width="{units("wall")}"' in svg
    return shares


def _pixel(rgb: np.ndarray, meta: dict, x: float, y: float) -> tuple[int, ...]:
    scale = rgb.shape[1] / meta["layout"]["width"]
    return tuple(int(v) for v in rgb[int(y * scale), int(x * scale)])


def check_counted_states_glyph(task: str, difficulty: str, index: int = 0) -> None:
    """The corner glyph fills each counted position with the non-empty states' colours (a
    diagonal split for two of them), the cell itself with ink, the rest with the background; the
    empty colour appears nowhere in it."""
    from vrforge.generators.tacit import _ca_common as common
    from vrforge.verifiers.sampling import hex_to_rgb

    spec = get_task(task)
    puzzle = first_puzzle(task, difficulty, index)
    meta = puzzle.meta
    rgb = np.asarray(rasterise(spec.draw(meta, None), (1024,))[1024])
    pal, table = meta["palette"], meta["layout"]["table"]
    mini = table["cell"] / common.GLYPH_CELLS
    tx, ty = table["origin"]
    gx, gy = tx + (table["cell"] - 3 * mini) / 2, ty + (table["cell"] - 3 * mini) / 2
    live = [tuple(hex_to_rgb(c)) for c in pal["states"][1:]]
    counted = set(common.counted_offsets(meta["neighbourhood"]))
    seen = set()
    for r in range(3):
        for c in range(3):
            upper = _pixel(rgb, meta, gx + (c + 0.25) * mini, gy + (r + 0.25) * mini)
            lower = _pixel(rgb, meta, gx + (c + 0.75) * mini, gy + (r + 0.75) * mini)
            if (r, c) == (1, 1):
                assert upper == lower == tuple(hex_to_rgb(pal["ink"]))
            elif (r, c) in counted:
                assert (upper, lower) == (live[0], live[-1]), (r, c)
                seen |= {upper, lower}
            else:
                assert upper == lower == tuple(hex_to_rgb(pal["background"]))
    assert seen == set(live) and tuple(hex_to_rgb(pal["states"][0])) not in seen


def check_boundary_ring(task: str, difficulty: str) -> None:
    """Around the start grid, a ring of what a border cell sees beyond the edge: the opposite
    edge's cells, faded (toroidal), or faded empty cells beyond the wall (fixed)."""
    from vrforge.generators.tacit import _ca_common as common
    from vrforge.verifiers._ca_common import decode
    from vrforge.verifiers.sampling import hex_to_rgb

    spec = get_task(task)
    boundaries = set()
    for index in range(12):
        puzzle = first_puzzle(task, difficulty, index)
        meta = puzzle.meta
        if meta["boundary"] in boundaries:
            continue
        boundaries.add(meta["boundary"])
        rgb = np.asarray(rasterise(spec.draw(meta, None), (1024,))[1024])
        ghosts = [tuple(hex_to_rgb(c)) for c in meta["palette"]["ghosts"]]
        ox, oy = meta["layout"]["start_origin"]
        start, n, cell = decode(meta["start"]), meta["size"], meta["layout"]["cell"]
        wall = common.wall_width(meta["layout"].get("scale", 1.0)) if meta["boundary"] == "fixed" else 0.0
        x = ox - cell + (cell - wall) / 2  # the left ring column, clear of the wall
        for row in range(n):
            expected = ghosts[int(start[row, -1])] if meta["boundary"] == "toroidal" else ghosts[0]
            assert _pixel(rgb, meta, x, oy + (row + 0.5) * cell) == expected, (meta["boundary"], row)
        if boundaries == {"toroidal", "fixed"}:
            return
    raise AssertionError(f"only {boundaries} among the first puzzles")
