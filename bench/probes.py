"""The context-blind learners of ``vrforge.set_probes`` beside the audit's pickers and probe, on
freshly generated puzzles: per task and level, N puzzles rendered at 512 px (the audit's
resolution), every learner cross-fitted on halves.

    python -m vrforge.bench.probes --puzzles 200 --tasks maze --levels hard expert [--no-cnn]

writes bench/results/probes.json (figures, chance 0.20, gate 0.30, seconds per learner, and how
many puzzles have each number of aspects in play).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np

from vrforge.pickers import gate_figures, option_features
from vrforge.registry import accepted_puzzle, all_tasks, get_task
from vrforge.render import rasterise
from vrforge.set_probes import SetInputs, learner_figures, set_inputs
from vrforge.threads import one_thread_per_process

WIDTH = 512
SEED = 99
LIMIT = 0.30


def measure(job: tuple[str, str, int]) -> tuple[np.ndarray, SetInputs, int, int]:
    task, level, index = job
    spec = get_task(task)
    puzzle = accepted_puzzle(spec, level, index, SEED)
    options = [rasterise(spec.draw(puzzle.meta, option), (WIDTH,))[WIDTH] for option in puzzle.options()]
    bare = rasterise(spec.draw(puzzle.meta, None), (WIDTH,))[WIDTH]
    basic = option_features(options, bare)
    return basic, set_inputs(options, basic), puzzle.answer_index, int(puzzle.stats.get("aspects_in_play", 0))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--puzzles", type=int, default=200, help="puzzles per task and level")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", nargs="*", help="default: every registered task")
    parser.add_argument("--levels", nargs="*", default=["hard"], help="default: hard")
    parser.add_argument("--no-cnn", action="store_true", help="leave the set CNN out (it needs torch)")
    parser.add_argument("--out", default="bench/results/probes.json")
    args = parser.parse_args(argv)
    tasks = args.tasks or [spec.name for spec in all_tasks()]
    report: dict = {"puzzles": args.puzzles, "width": WIDTH, "chance": 0.2, "limit": LIMIT, "figures": {}}
    passed = True
    with multiprocessing.get_context("forkserver").Pool(args.workers, initializer=one_thread_per_process) as pool:
        for task in tasks:
            for level in args.levels:
                rows = pool.map(measure, [(task, level, i) for i in range(args.puzzles)], chunksize=4)
                basic = np.stack([r[0] for r in rows])
                answers = [r[2] for r in rows]
                started = time.perf_counter()
                figures = gate_figures(basic, answers)
                figures.update(learner_figures([r[1] for r in rows], answers, cnn_epochs=None if args.no_cnn else 40))
                seconds = time.perf_counter() - started
                rounded = {k: round(v, 3) for k, v in figures.items()}
                aspects = {str(k): sum(1 for r in rows if r[3] == k) for k in sorted({r[3] for r in rows})}
                report["figures"].setdefault(task, {})[level] = {**rounded, "seconds": round(seconds, 1),
                                                                "aspects_in_play": aspects}
                passed &= all(v <= LIMIT for v in figures.values())
                print(f"{task:<18} {level:<7} " + " ".join(f"{k}={v:.3f}" for k, v in rounded.items())
                      + f"  ({seconds:.1f} s) aspects {aspects}", flush=True)
    report["passed"] = passed
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
