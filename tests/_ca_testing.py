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
