"""The shortcut gate on freshly generated puzzles (not a test module): every context-blind
picker and the learned probe over ``count`` puzzles of a task, rendered like a release's
smallest resolution."""

from __future__ import annotations

import numpy as np

from vrforge.pickers import gate_figures, option_features
from vrforge.registry import DIFFICULTIES, accepted_puzzle, get_task
from vrforge.render import rasterise

WIDTH = 512  # the release's smallest resolution, where the audit measures


def puzzle_features(task: str, difficulty: str, index: int, seed: int = 0, width: int = WIDTH):
    """(features (5, F), answer index) of the puzzle the build makes for (seed, task, difficulty, index)."""
    spec = get_task(task)
    puzzle = accepted_puzzle(spec, difficulty, index, seed)
    bare = rasterise(spec.draw(puzzle.meta, None), (width,))[width]
    options = [rasterise(spec.draw(puzzle.meta, option), (width,))[width] for option in puzzle.options()]
    return option_features(options, bare), puzzle.answer_index


def task_features(task: str, count: int, seed: int = 0, width: int = WIDTH, difficulties: tuple[str, ...] = DIFFICULTIES):
    """(features (sets, 5, F), answers) of ``count`` puzzles per difficulty."""
    rows = [puzzle_features(task, d, i, seed, width) for i in range(count) for d in difficulties]
    return np.stack([f for f, _ in rows]), [a for _, a in rows]


def gate(task: str, count: int, seed: int = 0, width: int = WIDTH,
         difficulties: tuple[str, ...] = DIFFICULTIES) -> dict[str, float]:
    """Picker and probe accuracies over ``count`` puzzles per difficulty."""
    return gate_figures(*task_features(task, count, seed, width, difficulties))


if __name__ == "__main__":  # python tests/_gate.py COUNT [TASK ...]: the table, one row per task
    import os
    import sys

    from vrforge.registry import all_tasks

    count = int(sys.argv[1])
    for name in sys.argv[2:] or [spec.name for spec in all_tasks()]:
        features, answers = task_features(name, count)
        if os.environ.get("GATE_SAVE"):  # keep the features, to study the probe without re-rendering
            np.savez(f"{os.environ['GATE_SAVE']}-{name}.npz", features=features, answers=np.asarray(answers))
        figures = gate_figures(features, answers)
        print(name, " ".join(f"{k}={v:.3f}" for k, v in figures.items()), flush=True)
