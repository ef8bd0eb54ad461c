"""Orthographic projection: generator, drawing, shared voxel geometry and verifier."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import numpy as np
import pytest
from helpers import jpeg, noise, resized

from vrforge.generators.tacit import _voxels
from vrforge.pickers import pick_all, picker_accuracy
from vrforge.registry import accepted_puzzle, get_task, meta_errors
from vrforge.render import encode_png, rasterise
from vrforge.seeding import item_rng
from vrforge.verifiers import ortho_projection as verifier
from vrforge.verifiers import voxels

TASK = "ortho_projection"
SPEC = get_task(TASK)


def make(difficulty: str, index: int = 0, seed: int = 0):
    return accepted_puzzle(SPEC, difficulty, index, seed)


def png(meta, answer, width: int = 512):
    return rasterise(SPEC.draw(meta, answer), (width,))[width]


@pytest.fixture(scope="module", params=["easy", "medium", "hard", "expert"])
def puzzle(request):
    return make(request.param)


# ---------------------------------------------------------------- shared geometry


def test_projections_of_a_known_solid():
    heights = [[2, 0, 0],
               [1, 0, 0],
               [3, 1, 0]]
    views = voxels.projections(heights)
    assert views["top"] == ["100", "100", "110"]
    assert views["front"] == ["100", "100", "110"]  # x = 0 is 3 tall, x = 1 is 1 tall
    assert views["side"] == ["100", "101", "111"]  # seen from the right: front row (y = 2) at the left


def test_a_column_diagonally_behind_a_taller_one_is_invisible_and_the_solver_says_so():
    hidden = [[1, 0], [0, 2]]  # cube (0,0,0) lies exactly behind cube (1,1,1)
    labels, _ = voxels.render(hidden)
    assert np.array_equal(labels, voxels.render([[0, 0], [0, 2]])[0])
    search = voxels.interpretations(2, labels, limit=5)
    assert sorted(map(str, search.solutions)) == sorted(map(str, [[[0, 0], [0, 2]], [[1, 0], [0, 2]]]))


def test_the_solver_recovers_every_drawn_solid_and_rejects_impossible_labels():
    rng = item_rng(3)
    for _ in range(20):
        heights = _voxels.random_solid(4, (5, 9), rng)
        labels, _ = voxels.render(heights)
        assert heights in voxels.interpretations(4, labels, limit=50).solutions
    labels[np.flatnonzero(labels == voxels.TOP)[0]] = voxels.RIGHT
    assert voxels.interpretations(4, labels, limit=50).solutions == []


def test_uniqueness_proof_on_a_sample():
    # The generator keeps a solid only if its drawing admits exactly one solid.
    for index in range(6):
        p = make("hard", index, seed=5)
        labels, _ = voxels.render(p.meta["heights"])
        search = voxels.interpretations(p.meta["size"], labels, limit=10)
        assert search.solutions == [p.meta["heights"]] and not search.truncated
        assert voxels.is_connected(p.meta["heights"])


# ---------------------------------------------------------------- the task bar


def test_meta_matches_its_schema(puzzle):
    assert meta_errors(TASK, puzzle.meta) == []
    assert meta_errors(TASK, {**puzzle.meta, "views": {"top": ["012"]}}) != []


@pytest.mark.parametrize("width", [512, 1024, 2048])
def test_solution_passes_at_every_resolution(puzzle, width):
    verdict = SPEC.verify(puzzle.meta, png(puzzle.meta, puzzle.solution, width))
    assert verdict.passed, verdict.reason


@pytest.mark.parametrize("degrade", ["shrink", "grow", "jpeg", "png-bytes"])
def test_solution_survives_resizing_and_compression(puzzle, degrade):
    image = png(puzzle.meta, puzzle.solution)
    degraded = {"shrink": lambda: resized(image, 0.9), "grow": lambda: resized(image, 1.1),
                "jpeg": lambda: jpeg(image, 85), "png-bytes": lambda: encode_png(image)}[degrade]()
    assert SPEC.verify(puzzle.meta, degraded).passed


def test_each_distractor_fails_exactly_its_named_check(puzzle):
    assert len(puzzle.distractors) == 4 and set(puzzle.violations) <= set(verifier.CHECKS)
    for answer, name in zip(puzzle.distractors, puzzle.violations):
        for width in (512, 2048):
            assert SPEC.verify(puzzle.meta, png(puzzle.meta, answer, width)).failed == [name]
        assert SPEC.verify(puzzle.meta, jpeg(resized(png(puzzle.meta, answer), 0.9), 85)).failed == [name]


def test_options_are_pairwise_different_pixels(puzzle):
    digests = {hashlib.sha256(png(puzzle.meta, o).tobytes()).hexdigest() for o in puzzle.options()}
    assert len(digests) == 5


def test_any_fill_colour_counts_as_filled(puzzle):
    svg = SPEC.draw(puzzle.meta, puzzle.solution)
    for key in ("top", "left", "right"):
        svg = svg.replace(f'fill="{puzzle.meta["palette"][key]}" />', 'fill="#000000" />')
    assert '"#000000"' in svg
    assert SPEC.verify(puzzle.meta, rasterise(svg, (1024,))[1024]).passed


def test_each_violation_is_named():
    p = make("medium", 2)
    views = p.meta["views"]
    assert all(verifier.judge(p.meta, views).values())
    for view in voxels.VIEWS:
        grid = list(views[view])
        grid[0] = ("1" if grid[0][0] == "0" else "0") + grid[0][1:]
        checks = verifier.judge(p.meta, {**views, view: grid})
        assert [k for k, ok in checks.items() if not ok] == [f"{view}_view"]


def _changed_view(a: dict, b: dict) -> str:
    (view,) = [v for v in voxels.VIEWS if a[v] != b[v]]
    return view


def realizable(option: dict) -> bool:
    """Whether three views are those of some solid of stacked cubes: any solid with them lies under
    the tallest one they allow (every column as tall as the lower of its front and side skylines),
    so they are realizable exactly when that one has them."""
    top = np.asarray([[c == "1" for c in row] for row in option["top"]])
    front = np.asarray([[c == "1" for c in row] for row in option["front"]]).sum(axis=0)  # per x
    side = np.asarray([[c == "1" for c in row] for row in option["side"]]).sum(axis=0)[::-1]  # per y
    tallest = np.where(top, np.minimum(front[None, :], side[:, None]), 0)
    return bool(tallest.any()) and voxels.projections(tallest.tolist()) == {v: list(option[v]) for v in voxels.VIEWS}


def test_realizable_views_are_those_of_some_solid():
    heights = [[2, 0, 0],
               [1, 0, 0],
               [3, 1, 0]]
    views = voxels.projections(heights)
    assert realizable(views)
    assert realizable({**views, "top": ["100", "110", "110"]})  # a hidden column of one cube
    assert not realizable({**views, "top": ["101", "100", "110"]})  # nothing seen from the front at x = 2
    assert not realizable({**views, "top": ["000", "100", "110"]})  # no column reaches the back row's side


def test_distractors_are_views_of_solids_in_a_code_of_three_mistakes_on_one_view():
    for index in range(6):
        for level in ("easy", "hard"):
            p = make(level, index)
            (view,) = {_changed_view(p.solution, d) for d in p.distractors}
            assert all(realizable(d) for d in p.distractors)
            assert [f"{view}_view"] * 4 == list(p.violations)
            # Every aspect (top cell, front or side column) where some option differs from the
            # solution is shared by two or three of the five, so no option stands alone in it.
            values = [_voxels.aspects_of_views(o) for o in p.options()]
            for i in {i for v in values for i, part in enumerate(v) if part != values[0][i]}:
                assert sorted(Counter(v[i] for v in values).values()) == [2, 3], (level, view, i)
            assert p.stats["aspects_in_play"] >= 2


def test_blank_puzzle_and_noise_are_rejected(puzzle):
    blank = png(puzzle.meta, None)
    verdict = SPEC.verify(puzzle.meta, blank)
    assert verdict.usable and sorted(verdict.failed) == sorted(verifier.CHECKS)
    assert not SPEC.verify(puzzle.meta, noise(blank.shape[1], blank.shape[0])).passed


def test_unusable_images_give_a_verdict_not_an_exception(puzzle):
    for bad in (b"\x89PNG\r\n\x1a\nbroken", b"", np.zeros((1, 1, 3), np.uint8), "/no/such.png", 3.5, noise(512, 200)):
        verdict = SPEC.verify(puzzle.meta, bad)
        assert not verdict.passed and not verdict.usable and verdict.reason.startswith("unusable input")


def test_generation_is_deterministic():
    a, b = make("hard", 5), make("hard", 5)
    assert json.dumps(a.meta, sort_keys=True) == json.dumps(b.meta, sort_keys=True)
    assert SPEC.draw(a.meta, a.solution) == SPEC.draw(b.meta, b.solution)
    assert a.violations == b.violations and a.answer_index == b.answer_index and a.distractors == b.distractors


def test_pictures_have_no_text(puzzle):
    assert "<text" not in SPEC.draw(puzzle.meta, puzzle.solution)


def test_concavities_count_notches_and_gaps_along_rows_and_columns():
    heights = [[2, 1, 2, 0],
               [0, 0, 3, 0],
               [1, 2, 3, 3],
               [0, 0, 0, 0]]
    # Row 0, column 1 is lower than both row neighbours; rows 1 of columns 0 and 1 are lower
    # than the cells above and below them; an empty cell beside an empty one is no gap.
    assert _voxels.concavities(heights) == 3
    assert _voxels.concavities([[1, 1, 1], [1, 1, 1], [1, 1, 1]]) == 0
    assert _voxels.concavities([[3, 0, 3], [0, 0, 0], [3, 0, 3]]) == 4  # the gaps between four corner towers


def test_expert_has_the_reference_hard_cubes_and_concavities():
    config = _voxels.VOXEL_DIFFICULTIES["expert"]
    assert config.min_cubes >= 16 and config.min_concavities >= 3  # the reference's hard: 16 cubes, 3 concavities
    for index in range(3):
        heights = make("expert", index).meta["heights"]
        columns = sum(h > 0 for row in heights for h in row)
        assert len(heights) == 6 and config.min_columns <= columns <= config.max_columns
        assert sum(map(sum, heights)) >= config.min_cubes and _voxels.concavities(heights) >= config.min_concavities


@pytest.mark.parametrize(("field", "value", "words"), [
    ("size", 1, "size"), ("size", _voxels.MAX_SIZE + 1, "size"), ("min_columns", 1, "min_columns"),
    ("max_columns", 37, "max_columns"), ("min_columns", 23, "min_columns"), ("min_cubes", -1, "min_cubes"),
    ("min_cubes", 133, "min_cubes"), ("min_concavities", 33, "min_concavities"), ("size", 6.0, "size"),
])
def test_validate_rejects_each_bad_parameter_in_one_line(field, value, words):
    import dataclasses

    from vrforge.params import ParamError

    with pytest.raises(ParamError) as caught:
        dataclasses.replace(_voxels.VOXEL_DIFFICULTIES["expert"], **{field: value}).validate()
    assert "\n" not in str(caught.value) and words in str(caught.value)


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard", "expert"])
def test_legibility_shares_are_what_the_svg_draws(difficulty):
    from vrforge.generators.tacit import _voxel_drawing
    from vrforge.svgdraw import fmt

    config = _voxels.VOXEL_DIFFICULTIES[difficulty]
    assert SPEC.illegible(config, 512) == []
    shares = SPEC.legibility(config)
    p = make(difficulty)
    layout = p.meta["layout"]
    width = layout["width"]
    for grid in layout["grids"].values():
        assert grid["cell"] - _voxel_drawing.GRID_STROKE == pytest.approx(shares["view_cell"] * width)
    assert layout["iso"]["unit"] == pytest.approx(shares["cube_edge"] * width)
    svg = SPEC.draw(p.meta, p.solution)
    assert f'stroke-width="{fmt(shares["grid_line"] * width)}"' in svg
    assert f'stroke-width="{fmt(shares["solid_line"] * width)}"' in svg
    # The largest floor the bounds allow stays legible at 512 px.
    assert SPEC.illegible(_voxels.VoxelConfig(size=_voxels.MAX_SIZE, min_columns=2, max_columns=2), 512) == []


# sha256 of the 512 px solution PNG for seed 0, index 0.
SNAPSHOTS = {
    "easy": "1eb419533437aa6a570fb4e928a6904e36e49303ef32cfa6024578a770144b77",
    "medium": "4cb316db2ed3a637c3999233257a33e73c3c911b0bc965efc41fa71a90bafae1",
    "hard": "70e08ef635f568d71580982392dabd2c58baa1c48ca1db347cce9a212f3d457f",
}


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_snapshot_of_rendered_solution(difficulty):
    p = make(difficulty)
    assert hashlib.sha256(encode_png(png(p.meta, p.solution))).hexdigest() == SNAPSHOTS[difficulty]


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_context_blind_pickers_on_200_puzzles(difficulty):
    choices, answers = [], []
    for index in range(200):
        p = make(difficulty, index, seed=99)
        choices.append(pick_all([np.asarray(png(p.meta, o, 256)) for o in p.options()]))
        answers.append(p.answer_index)
    accuracy = picker_accuracy(choices, answers)
    assert all(value <= 0.30 for value in accuracy.values()), accuracy
