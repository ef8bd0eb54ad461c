"""Isometric reconstruction: generator, drawing and verifier (every solid with the views passes)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import numpy as np
import pytest
from helpers import jpeg, noise, resized

from vrforge.generators.tacit import _option_set, _voxels
from vrforge.imagemetrics import ssim
from vrforge.pickers import pick_all, picker_accuracy
from vrforge.registry import accepted_puzzle, get_task, meta_errors
from vrforge.render import encode_png, rasterise
from vrforge.verifiers import iso_reconstruction as verifier
from vrforge.verifiers import voxels

TASK = "iso_reconstruction"
SPEC = get_task(TASK)


def make(difficulty: str, index: int = 0, seed: int = 0):
    return accepted_puzzle(SPEC, difficulty, index, seed)


def png(meta, answer, width: int = 512):
    return rasterise(SPEC.draw(meta, answer), (width,))[width]


def other_solids_with_the_same_views(heights):
    """Every solid one column edit away from ``heights`` with the same three views."""
    n, views, out = len(heights), voxels.projections(heights), []
    for y in range(n):
        for x in range(n):
            for h in range(n + 1):
                if h != heights[y][x]:
                    other = [row[:] for row in heights]
                    other[y][x] = h
                    if voxels.projections(other) == views:
                        out.append(other)
    return out


@pytest.fixture(scope="module", params=["easy", "medium", "hard", "expert"])
def puzzle(request):
    return make(request.param)


def test_meta_matches_its_schema(puzzle):
    assert meta_errors(TASK, puzzle.meta) == []
    assert meta_errors(TASK, {**puzzle.meta, "heights": "tall"}) != []


def test_reference_solid_has_the_views_and_an_unambiguous_drawing(puzzle):
    meta = puzzle.meta
    assert voxels.projections(puzzle.solution) == meta["views"] and voxels.is_connected(puzzle.solution)
    search = voxels.interpretations(meta["size"], voxels.render(puzzle.solution)[0], limit=5)
    assert search.solutions == [puzzle.solution]


@pytest.mark.parametrize("width", [512, 1024, 2048])
def test_solution_passes_at_every_resolution_and_matches_the_reference(puzzle, width):
    verdict = SPEC.verify(puzzle.meta, png(puzzle.meta, puzzle.solution, width))
    assert verdict.passed, verdict.reason
    assert verdict.details["heights"] == puzzle.solution
    strict = SPEC.check(puzzle.meta, png(puzzle.meta, puzzle.solution, width), strict=True)
    assert strict.passed and strict.details["ssim"] == pytest.approx(1.0)
    assert "ssim" not in verdict.details  # the reference render is paid for only in strict mode


@pytest.mark.parametrize("degrade", ["shrink", "grow", "jpeg", "png-bytes"])
def test_solution_survives_resizing_and_compression(puzzle, degrade):
    image = png(puzzle.meta, puzzle.solution)
    degraded = {"shrink": lambda: resized(image, 0.9), "grow": lambda: resized(image, 1.1),
                "jpeg": lambda: jpeg(image, 85), "png-bytes": lambda: encode_png(image)}[degrade]()
    assert SPEC.verify(puzzle.meta, degraded).passed


def test_strict_mode_needs_the_reference_pixels(puzzle):
    image = jpeg(png(puzzle.meta, puzzle.solution), 85)
    lenient, strict = SPEC.verify(puzzle.meta, image), SPEC.check(puzzle.meta, image, strict=True)
    assert lenient.passed and 0.95 < strict.details["ssim"] < SPEC.strict.threshold
    assert strict.failed == ["ssim"]


def test_every_solid_with_the_views_passes_not_only_the_reference():
    tried = 0
    for difficulty, index in [(d, i) for d in ("easy", "medium", "hard") for i in range(4)]:
        p = make(difficulty, index)
        for other in other_solids_with_the_same_views(p.solution)[:2]:
            image = png(p.meta, other, 1024)
            verdict = SPEC.verify(p.meta, image)
            assert verdict.passed, (other, verdict.reason)
            strict = SPEC.check(p.meta, image, strict=True)
            assert strict.failed == ["ssim"] and strict.details["ssim"] < SPEC.strict.threshold
            tried += 1
    assert tried >= 3


def test_a_drawing_that_hides_a_required_column_passes():
    # Views need cube (0,0,0), which sits exactly behind cube (1,1,1): a drawing without it
    # shows the same picture, so it is a drawing of a solid with those views.
    heights = [[1, 0], [0, 2]]
    meta = {"size": 2, "views": voxels.projections(heights)}
    checks, details = verifier.judge(meta, voxels.render([[0, 0], [0, 2]])[0])
    assert all(checks.values()) and details["solids"] == "several"
    checks, _ = verifier.judge(meta, voxels.render([[0, 0], [0, 1]])[0])
    assert not all(checks.values())


def test_each_violation_is_named():
    found = set()
    for index in range(4):
        p = make("medium", index)
        n, views = p.meta["size"], p.meta["views"]
        for y in range(n):
            for x in range(n):
                for h in range(n + 1):
                    other = [row[:] for row in p.solution]
                    other[y][x] = h
                    drawn = voxels.projections(other)
                    wrong = [v for v in voxels.VIEWS if drawn[v] != views[v]]
                    labels = voxels.render(other)[0]
                    if len(wrong) == 1 and len(voxels.interpretations(n, labels, limit=2).solutions) == 1:
                        checks, _ = verifier.judge(p.meta, labels)
                        assert [k for k, ok in checks.items() if not ok] == [f"{wrong[0]}_mismatch"]
                        found.add(wrong[0])
    assert found == set(voxels.VIEWS)


def test_each_distractor_fails_exactly_its_named_check(puzzle):
    assert len(puzzle.distractors) == 4 and set(puzzle.violations) <= set(verifier.CHECKS)
    for answer, name in zip(puzzle.distractors, puzzle.violations):
        assert voxels.is_connected(answer)
        for width in (512, 2048):
            assert SPEC.verify(puzzle.meta, png(puzzle.meta, answer, width)).failed == [name]
        assert SPEC.verify(puzzle.meta, jpeg(resized(png(puzzle.meta, answer), 0.9), 85)).failed == [name]


def _one_edit_apart(a, b) -> bool:
    """One cube added or removed, or one cube moved from a column onto another."""
    diff = (np.asarray(a) - np.asarray(b)).ravel()
    changed = diff[diff != 0]
    return (len(changed) == 1 and abs(changed[0]) == 1) or (sorted(changed.tolist()) == [-1, 1])


def _three_edit_code(solution, distractors) -> bool:
    """Whether the distractors are the solution plus sums of subsets of three one-edit changes
    whose masks (bit i: edit i carried; the solution's is 0) form one of ``_option_set.CODES``
    (every assignment of masks tried: moves can decompose a set in more than one way)."""
    from itertools import product

    base = np.asarray(solution)
    deltas = np.stack([(np.asarray(d) - base).ravel() for d in distractors]).astype(float)
    for rows in product(range(1, 8), repeat=len(distractors)):
        masks = np.asarray([[r >> b & 1 for b in range(3)] for r in rows], dtype=float)
        if len(set(rows)) < len(rows) or np.linalg.matrix_rank(masks) < 3:
            continue
        edits, *_ = np.linalg.lstsq(masks, deltas, rcond=None)
        if np.allclose(masks @ edits, deltas) and np.allclose(edits, edits.round()) and \
                all(_one_edit_apart(base, base + e.round().astype(int).reshape(base.shape)) for e in edits) and \
                tuple(sorted((0, *rows))) in CODES:
            return True
    return False


CODES = {tuple(sorted(code)) for code in _option_set.CODES}


def test_every_option_could_be_the_solution(puzzle):
    """The set is kept only when each of its five solids could have been the solution, so which
    one is cannot be told from the options alone."""
    config = _voxels.VOXEL_DIFFICULTIES[_level_of(puzzle)]
    options = puzzle.options()
    for i, option in enumerate(options):
        assert _voxels.could_be_solution(config, option)
        meta = {"size": config.size, "views": voxels.projections(option)}
        others = options[:i] + options[i + 1:]
        for other in others:
            checks, _ = verifier.judge(meta, voxels.render(other)[0])
            assert sum(not ok for ok in checks.values()) == 1
        cells = _voxels.view_cells(option)
        assert _option_set.aspects_in_play(cells, [_voxels.view_cells(o) for o in others]) >= 2


def _level_of(puzzle) -> str:
    n = puzzle.meta["size"]
    return next(name for name, c in _voxels.VOXEL_DIFFICULTIES.items() if c.size == n)


def test_a_set_with_one_member_unfit_to_be_the_solution_is_turned_down():
    p = make("easy", 3)
    config = _voxels.VOXEL_DIFFICULTIES["easy"]
    members = p.options()
    assert _voxels.fair_set(config, members)
    for i in range(5):  # whichever member is unfit (here: all nine columns, above easy's max_columns)
        crowded = [[max(h, 1) for h in row] for row in members[i]]
        assert not _voxels.fair_set(config, members[:i] + [crowded] + members[i + 1:])


def test_distractors_form_a_code_of_three_edits_failing_one_view():
    for index in range(6):
        for level in ("easy", "hard"):
            p = make(level, index)
            assert len(set(p.violations)) == 1  # three mistakes of one view, composed
            # Every aspect (top-view cell, front or side view column) where some option differs
            # from the solution is shared by two or three of the five, so no option stands alone in it.
            values = [_voxels.view_cells(o) for o in p.options()]
            for i in {i for v in values for i, part in enumerate(v) if part != values[0][i]}:
                assert sorted(Counter(v[i] for v in values).values()) == [2, 3], (level, index, i)
            assert p.stats["aspects_in_play"] >= 2
            # The distractors are the solution plus sums of subsets of three one-edit changes, in
            # one of the codes of _option_set (each edit carried by two or three of the five).
            assert _three_edit_code(p.solution, p.distractors), (level, index)


def test_options_are_pairwise_different_pixels(puzzle):
    digests = {hashlib.sha256(png(puzzle.meta, o).tobytes()).hexdigest() for o in puzzle.options()}
    assert len(digests) == 5


def test_blank_puzzle_and_noise_are_rejected(puzzle):
    blank = png(puzzle.meta, None)
    verdict = SPEC.verify(puzzle.meta, blank)
    assert verdict.usable and sorted(verdict.failed) == sorted(verifier.CHECKS)
    verdict = SPEC.verify(puzzle.meta, noise(blank.shape[1], blank.shape[0]))
    assert not verdict.passed and verdict.reason.startswith("unusable input: could not align the answer with the puzzle")


def test_unusable_images_give_a_verdict_not_an_exception(puzzle):
    for bad in (b"\x89PNG\r\n\x1a\nbroken", b"", np.zeros((1, 1, 3), np.uint8), "/no/such.png", 3.5, noise(512, 200)):
        verdict = SPEC.verify(puzzle.meta, bad)
        assert not verdict.passed and not verdict.usable and verdict.reason.startswith("unusable input")


def test_generation_is_deterministic():
    a, b = make("hard", 5), make("hard", 5)
    assert json.dumps(a.meta, sort_keys=True) == json.dumps(b.meta, sort_keys=True)
    assert SPEC.draw(a.meta, a.solution) == SPEC.draw(b.meta, b.solution)
    assert a.violations == b.violations and a.answer_index == b.answer_index and a.distractors == b.distractors


def test_ssim_is_one_only_for_identical_pictures():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, size=(64, 64, 3), dtype=np.uint8)
    assert ssim(image, image) == 1.0
    changed = image.copy()
    changed[30, 30] = 255 - changed[30, 30]
    assert ssim(image, changed) < SPEC.strict.threshold
    assert ssim(image, image[:, :60]) == 0.0  # different shapes are not similar


def test_pictures_have_no_text_and_share_the_drawing_code(puzzle):
    svg = SPEC.draw(puzzle.meta, puzzle.solution)
    assert "<text" not in svg
    assert svg == _voxels.draw_scene(puzzle.meta, heights=puzzle.solution, views=puzzle.meta["views"])


# sha256 of the 512 px solution PNG for seed 0, index 0.
SNAPSHOTS = {
    "easy": "082ae6d48a0d15d6a07282329d8c38ae1758d45167d2c831246e403ebb2a432b",
    "medium": "6291b6d11f19af68629dad9ba5ed41e361cf6c015b1ca51833fe8adf003193a9",
    "hard": "055f56a650c3a36c139a47656459f487a347bb6589dd734fea8bbd228f91cdc1",
}


def test_expert_solids_have_the_least_cubes_and_concavities_and_are_legible():
    config = _voxels.VOXEL_DIFFICULTIES["expert"]
    assert SPEC.illegible(config, 512) == [] and SPEC.legibility is _voxels.legibility
    for index in range(2):
        heights = make("expert", index).meta["heights"]
        assert sum(map(sum, heights)) >= config.min_cubes and _voxels.concavities(heights) >= config.min_concavities


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
