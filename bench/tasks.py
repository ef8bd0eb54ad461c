"""Per task and level: generation time, the whole item's build cost and PNG bytes, and the
context-blind shortcut, in one run.

For N puzzles per level (every preset of every task, expert included) it times generate +
draw, counts rejected attempts, measures the CPU time of the item's build as a release builds it
(generate, draw, render, check and encode at each of 512/1024/2048 px where the level is legible)
with the PNG bytes per resolution, renders
the five options and the bare puzzle at 256 px and records what every context-blind picker
of ``vrforge.pickers`` chooses (the learned probe needs a whole task: the audit runs it). The
baseline is chance (0.20); the limit is 0.30.

    python -m vrforge.bench.tasks --puzzles 200 --workers 2 [--levels expert]

writes bench/results/tasks.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

from vrforge.builds.item import build_item
from vrforge.builds.plan import PlanItem
from vrforge.pickers import PICKERS, pick_all, picker_accuracy
from vrforge.registry import accepted_attempt, all_tasks, get_task
from vrforge.render import rasterise
from vrforge.schemas.layout import RESOLUTIONS
from vrforge.threads import one_thread_per_process

PICKER_LIMIT = 0.30
CHANCE = 0.20
SEED = 4242


def legible_widths(spec: Any, difficulty: str) -> tuple[int, ...]:
    """The release widths at which the level's every feature is at or above its floor."""
    config = spec.config(difficulty)
    return tuple(width for width in RESOLUTIONS if not spec.illegible(config, width))


def measure(job: tuple[str, str, int]) -> dict:
    task, difficulty, index = job
    spec = get_task(task)
    started = time.perf_counter()
    puzzle, rejected = accepted_attempt(spec, difficulty, index, SEED)
    svgs = [spec.draw(puzzle.meta, option) for option in puzzle.options()]
    seconds = time.perf_counter() - started
    options = [rasterise(svg, (256,))[256] for svg in svgs]
    bare = rasterise(spec.draw(puzzle.meta, None), (256,))[256]
    # A level is built only at the widths where it is legible, as a release builds it (a width
    # under a floor makes the solution fail at that width and every attempt be redrawn).
    widths = legible_widths(spec, difficulty)
    started = time.process_time()
    built = build_item(PlanItem(task, difficulty, index, SEED), widths, "bench")
    build_seconds = time.process_time() - started
    png_bytes = {res: len(images["puzzle"]) + len(images["solution"]) + sum(map(len, images["distractors"]))
                 for res, images in built.images.items()}
    return {"seconds": seconds, "rejected": rejected, "picks": pick_all(options, bare), "answer": puzzle.answer_index,
            "build_seconds": build_seconds, "png_bytes": png_bytes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--puzzles", type=int, default=200, help="puzzles per task and difficulty")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", nargs="*", help="default: every registered task")
    parser.add_argument("--levels", nargs="*", help="default: every preset of each task")
    parser.add_argument("--out", default="bench/results/tasks.json")
    args = parser.parse_args(argv)
    tasks = args.tasks or [spec.name for spec in all_tasks()]
    levels = {t: [d for d in get_task(t).difficulties if not args.levels or d in args.levels] for t in tasks}
    jobs = [(t, d, i) for t in tasks for d in levels[t] for i in range(args.puzzles)]
    with multiprocessing.get_context("forkserver").Pool(args.workers, initializer=one_thread_per_process) as pool:
        results = pool.map(measure, jobs, chunksize=8)
    report: dict = {"puzzles_per_level": args.puzzles, "resolutions": list(RESOLUTIONS), "chance": CHANCE,
                    "limit": PICKER_LIMIT, "tasks": {}}
    passed = True
    for task in tasks:
        entry = {}
        for difficulty in levels[task]:
            rows = [r for (t, d, _), r in zip(jobs, results) if t == task and d == difficulty]
            accuracy = picker_accuracy([r["picks"] for r in rows], [r["answer"] for r in rows])
            passed &= all(accuracy[name] <= PICKER_LIMIT for name in PICKERS)
            times = [r["seconds"] for r in rows]
            entry[difficulty] = {
                "pickers": {k: round(v, 3) for k, v in accuracy.items()},
                "pickers_vs_chance": {k: round(v / CHANCE, 2) for k, v in accuracy.items()},
                "generate_draw_mean_s": round(sum(times) / len(times), 4),
                "generate_draw_max_s": round(max(times), 4),
                "rejected_attempts": sum(r["rejected"] for r in rows),
                "build_cpu_ms_per_puzzle": round(1000 * sum(r["build_seconds"] for r in rows) / len(rows), 1),
                "png_bytes_per_puzzle": {str(res): round(sum(r["png_bytes"][res] for r in rows) / len(rows))
                                         for res in rows[0]["png_bytes"]},
            }
        report["tasks"][task] = entry
    report["passed"] = passed
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for task, entry in report["tasks"].items():
        for difficulty, row in entry.items():
            p = row["pickers"]
            print(f"{task:<18} {difficulty:<6} build {row['build_cpu_ms_per_puzzle']:7.1f} ms, "
                  f"{sum(row['png_bytes_per_puzzle'].values()) / 1e6:5.2f} MB  "
                  f"medoid {p['medoid']:.3f} mean {p['closest_to_mean']:.3f} "
                  f"odd {p['odd_one_out']:.3f}  gen {row['generate_draw_mean_s'] * 1000:6.1f} ms "
                  f"(max {row['generate_draw_max_s'] * 1000:6.1f})  rejected {row['rejected_attempts']}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
