"""What image editors and cameras do to an answer: tone curves, watermarks, perspective.

Each distortion is applied to real puzzles (the benchmark's seed); the solution must pass and
every distractor must fail. A watermark the reader cannot see through is unusable input, never
a wrong answer. The whole grid (every task and difficulty) runs with ``-m slow``.
"""

from __future__ import annotations

import io

import cv2
import numpy as np
import pytest
from helpers import distorted, overlay_box, png_bytes
from PIL import Image

from vrforge.bench.verifier_robustness import EDITOR_GRID, SEED, gamma, keystone
from vrforge.registry import accepted_puzzle, all_tasks, get_task
from vrforge.render import rasterise
from vrforge.verifiers import raven as rv
from vrforge.verifiers import registration

WIDTH = 1024


def options(task: str, difficulty: str, index: int = 0, width: int = WIDTH):
    spec = get_task(task)
    puzzle = accepted_puzzle(task, difficulty, index, SEED)
    images = [Image.fromarray(rasterise(spec.draw(puzzle.meta, option), (width,))[width])
              for option in (puzzle.solution, *puzzle.distractors)]
    return spec, puzzle, images[0], images[1:]


def assert_solution_only(spec, puzzle, solution, distractors, name):
    verdict = spec.verify(puzzle.meta, distorted(name, solution))
    assert verdict.passed, (name, verdict.reason)
    for violation, distractor in zip(puzzle.violations, distractors):
        assert not spec.verify(puzzle.meta, distorted(name, distractor)).passed, (name, violation)
    return verdict


# Raven puzzles whose greys the palette's nominal shades misread under a tone curve (before the
# calibration: solutions rejected as wrong_colour and wrong_colour distractors accepted).
TONE_CASES = [("easy", 4), ("easy", 5), ("easy", 7), ("medium", 1)]


@pytest.mark.parametrize("name", ["gamma 0.7", "gamma 1.4", "contrast S-curve"])
def test_raven_reads_greys_against_the_puzzles_own_shades(name):
    misread = 0
    for difficulty, index in TONE_CASES:
        spec, puzzle, solution, distractors = options("raven", difficulty, index)
        verdict = assert_solution_only(spec, puzzle, solution, distractors, name)
        assert verdict.details["shades"]["seen"], verdict.details
        # The same picture read against the nominal palette: the case the calibration fixes.
        image = np.asarray(Image.open(io.BytesIO(distorted(name, solution))).convert("RGB"))
        misread += not all(rv.judge(puzzle.meta, rv.read_answer(puzzle.meta, image)[0]).values())
    if name != "contrast S-curve":  # the S-curve keeps every grey nearest its own nominal shade
        assert misread >= 1


def test_raven_fills_no_given_panel_shows_are_placed_on_the_fitted_curve():
    nominal_background, nominal = rv.nominal_shades(accepted_puzzle("raven", "easy", 0, SEED).meta)
    curve = 255 * (nominal / 255) ** 0.7
    seen = {1: float(curve[1]), 3: float(curve[3])}  # two fills shown; the other three inferred
    levels = rv._calibrated(nominal_background, nominal, 255.0, seen)
    assert np.abs(levels - curve).max() < 1.0


def test_raven_calls_collapsed_shades_unusable():
    spec, puzzle, solution, _ = options("raven", "easy", 0, 512)
    crushed = png_bytes(gamma(4.0)(solution, np.random.default_rng(0)))  # the darkest greys all turn black
    verdict = spec.verify(puzzle.meta, crushed)
    assert not verdict.usable and "shades cannot be told apart" in verdict.reason


@pytest.mark.parametrize(("difficulty", "index"), [("hard", 1), ("expert", 0)])
def test_raven_reads_through_a_watermark_over_the_answer_panel(difficulty, index):
    spec, puzzle, solution, distractors = options("raven", difficulty, index)
    verdict = assert_solution_only(spec, puzzle, solution, distractors, "watermark 35%")
    assert verdict.details["thin_marks_ignored"]


def test_raven_calls_an_opaque_plate_over_the_answer_panel_unusable():
    spec, puzzle, solution, distractors = options("raven", "medium", 0)
    for image in (solution, *distractors):
        covered = overlay_box(image, (0.70, 0.90, 0.99, 0.99), 0.3)
        verdict = spec.verify(puzzle.meta, png_bytes(covered))
        assert not verdict.passed and not verdict.usable, verdict.reason
        assert "a mark that is not part of the puzzle lies over the answer panel" in verdict.reason


def test_raven_still_fails_a_scribbled_answer_as_wrong():
    """Thick strokes in an otherwise clean answer panel are the answer's own (wrong) drawing."""
    spec, puzzle, solution, _ = options("raven", "hard", 0, 512)
    layout = puzzle.meta["layout"]
    scale = 512 / layout["width"]
    ox, oy = layout["origins"][layout["answer_panel"]]
    picture = np.asarray(solution).copy()
    cv2.line(picture, (round((ox + 20) * scale), round((oy + 30) * scale)),
             (round((ox + 100) * scale), round((oy + 90) * scale)), (0, 0, 0), max(4, round(12 * scale)))
    verdict = spec.verify(puzzle.meta, picture)
    assert verdict.usable and not verdict.passed


@pytest.mark.parametrize("task", ["maze", "iso_reconstruction"])
def test_keystone_is_registered_with_a_homography(task):
    spec, puzzle, solution, distractors = options(task, "hard")
    verdict = assert_solution_only(spec, puzzle, solution, distractors, "keystone 1.5%")
    assert "perspective" in verdict.details["registration"], verdict.details["registration"]


def test_an_expert_maze_is_registered_at_a_working_size_that_keeps_its_cells():
    """At the default working size an expert maze's cells are under 5 working pixels and ECC slid
    along the period of its walls under a keystone (every solution read as broken); the finer
    puzzle now gets a larger working size, and the coarser ones keep the default."""
    spec, puzzle, solution, distractors = options("maze", "expert")
    layout = puzzle.meta["layout"]
    area = registration.work_area(layout, layout["cell"])
    assert area > registration.WORK_AREA
    assert registration.reference_for("maze", puzzle.meta, area).area == area
    assert_solution_only(spec, puzzle, solution, distractors[:2], "keystone 1.5%")
    hard = accepted_puzzle("maze", "hard", 0, SEED).meta["layout"]
    assert registration.work_area(hard, hard["cell"]) == registration.WORK_AREA


@pytest.mark.parametrize("task", ["maze", "ortho_projection", "raven"])
def test_the_recovered_homography_is_the_true_keystone(task):
    """Known transform: the bare puzzle tilted by 3 %; at the puzzle's ink the recovered map is
    within a pixel of the true one (at 1024 px)."""
    spec = get_task(task)
    puzzle = accepted_puzzle(task, "hard", 0, SEED)
    bare = Image.fromarray(rasterise(spec.draw(puzzle.meta, None), (WIDTH,))[WIDTH])
    w, h = bare.size
    k = 0.03
    truth = cv2.getPerspectiveTransform(np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float32),
                                        np.array([[k * w, 0], [w - k * w, 0], [w, h], [0, h]], dtype=np.float32))
    reference = registration.reference_for(task, puzzle.meta)
    result = registration.register(reference, np.asarray(keystone(k)(bare, np.random.default_rng(0))))
    assert isinstance(result, registration.Registration), result
    matrix = np.asarray(result.details["perspective"]["matrix"])
    points = np.c_[reference.landmarks, np.ones(len(reference.landmarks))]
    expected = np.c_[reference.landmarks * [w, h], np.ones(len(points))] @ truth.T
    found = points @ matrix.T
    error = np.abs(found[:, :2] / found[:, 2:] - expected[:, :2] / expected[:, 2:]).max()
    assert error < 1.0, error


def test_a_tilted_dense_drawing_is_not_read_unresampled():
    """Filled faces stay inked a few pixels off: the aligned-answer shortcut looks at their rims."""
    spec, puzzle, solution, _ = options("iso_reconstruction", "easy")
    verdict = spec.verify(puzzle.meta, distorted("keystone 1.5%", solution))
    assert verdict.passed and verdict.details["registration"]["method"] == "registered"


@pytest.mark.slow
@pytest.mark.parametrize("task", [spec.name for spec in all_tasks()])
def test_every_editor_distortion_keeps_solutions_and_rejects_distractors(task):
    for difficulty in ("easy", "medium", "hard"):
        spec, puzzle, solution, distractors = options(task, difficulty)
        for name in EDITOR_GRID:
            assert_solution_only(spec, puzzle, solution, distractors, name)
