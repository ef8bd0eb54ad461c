"""Every registered task meets the same bar (reasoning-gym style loop over the registry)."""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import pytest
from helpers import jpeg, resized
from PIL import Image

from vrforge.builds.item import build_item
from vrforge.builds.plan import PlanItem
from vrforge.pickers import PICKERS, pick_all, picker_accuracy
from vrforge.registry import DIFFICULTIES, accepted_puzzle, all_tasks, get_task
from vrforge.render import rasterise

TASKS = [spec.name for spec in all_tasks()]
PICKER_LIMIT = 0.30


def generated(task: str, difficulty: str, index: int, seed: int = 11):
    return accepted_puzzle(task, difficulty, index, seed)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_built_item_verifies_from_its_own_png_bytes(task, difficulty):
    spec = get_task(task)
    built = build_item(PlanItem(task, difficulty, 1, 3), (512, 1024), "test")
    meta = json.loads(built.fields["meta"])
    for images in built.images.values():
        assert spec.verify(meta, images["solution"]).passed
        assert not spec.verify(meta, images["puzzle"]).passed
        for png, name in zip(images["distractors"], built.fields["distractor_violations"]):
            assert spec.verify(meta, png).failed == [name]
        decoded = [np.asarray(Image.open(io.BytesIO(p)).convert("RGB")) for p in [images["solution"], *images["distractors"]]]
        assert len({hashlib.sha256(d.tobytes()).hexdigest() for d in decoded}) == 5
    assert 0 <= built.fields["answer_index"] < 5
    assert set(built.fields["distractor_violations"]) <= set(spec.checks)


@pytest.mark.parametrize("task", TASKS)
def test_solution_survives_resize_and_jpeg(task):
    spec = get_task(task)
    puzzle = generated(task, "hard", 0)
    image = rasterise(spec.draw(puzzle.meta, puzzle.solution), (512,))[512]
    for degraded in (resized(image, 0.9), resized(image, 1.1), jpeg(image, 85)):
        assert spec.verify(puzzle.meta, degraded).passed


def _picker_accuracies(task: str, per_difficulty: int) -> dict[str, float]:
    spec = get_task(task)
    choices, answers = [], []
    for difficulty in DIFFICULTIES:
        for index in range(per_difficulty):
            puzzle = generated(task, difficulty, index, seed=99)
            options = [np.asarray(rasterise(spec.draw(puzzle.meta, o), (256,))[256]) for o in puzzle.options()]
            choices.append(pick_all(options))
            answers.append(puzzle.answer_index)
    return picker_accuracy(choices, answers)


@pytest.mark.parametrize("task", TASKS)
def test_context_blind_pickers_stay_near_chance(task):
    accuracy = _picker_accuracies(task, per_difficulty=30)
    assert all(accuracy[name] <= PICKER_LIMIT for name in PICKERS), accuracy


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_context_blind_pickers_on_200_puzzles_per_difficulty(task):
    accuracy = _picker_accuracies(task, per_difficulty=200)
    assert all(accuracy[name] <= PICKER_LIMIT for name in PICKERS), accuracy
