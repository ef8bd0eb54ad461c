"""What registration costs a verifier: pixel-aligned answers vs shifted ones, per task.

For N puzzles per task and difficulty it draws the solution at 1024 px and times, in one
process, ``verify(meta, png)`` as the scorer calls it (PNG bytes in, the meta parsed from
the row's JSON, and with ``--with-puzzle`` the row's bare-puzzle PNG as the reference) on
the pixel-aligned picture and on the same picture shifted by 2 % of its width, and the
registration step alone (decoding, the reference, the alignment) on each. The
projection is the time for 6,000 answers (one per puzzle of the default release, whose
tasks are equally represented) on ``--workers`` processes.

    python -m vrforge.bench.verify_speed --puzzles 10 --workers 2

writes bench/results/verify_speed.json.

``--release [DIR]`` measures instead what scoring a built release costs: the solution PNG of
every row at 1024 px (6,000 rows for the full release; default folder datasets/tacit, what
``make dataset`` builds) is written out as a model's answer folder, then the wall time of
``vrforge score generative`` on it (reading the rows and their puzzle images, verifying every
answer on ``--workers`` processes, aligned with its puzzle) is compared with the 60 s target.
Every solution must be accepted. The same answers are then verified one by one in this
process for the cost per answer by task (a small release's wall time is mostly the pool's
start-up).

    python -m vrforge.bench.verify_speed --release datasets/tacit --workers 2

writes bench/results/verify_speed_release.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from vrforge.bench.verifier_robustness import DISTORTIONS, SEED, encoded
from vrforge.imageio import load_rgb
from vrforge.registry import DIFFICULTIES, accepted_puzzle, all_tasks, get_task
from vrforge.render import rasterise
from vrforge.verifiers import registration

WIDTH = 1024
RELEASE_ANSWERS = 6000
TARGET_S = 60.0  # 6,000 answers at 1024 px on 2 workers
DEFAULT_RELEASE = "datasets/tacit"


def write_solutions(release: Path, answers: Path) -> int:
    """Every row's solution PNG at 1024 px as a model's answer, under the scorer's file names."""
    import pyarrow.parquet as pq

    from vrforge.runners.scoring import chosen_configs
    from vrforge.schemas.layout import output_name

    count = 0
    for folder in chosen_configs(release, WIDTH, None).values():
        for shard in sorted(folder.glob("*.parquet")):
            for row in pq.read_table(shard, columns=["task", "difficulty", "index", "solution"]).to_pylist():
                path = answers / output_name(row["task"], row["difficulty"], row["index"])
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(row["solution"]["bytes"])
                count += 1
    return count


def release_speed(release: Path, workers: int, out: Path) -> dict:
    """Wall time of scoring every row's solution of a built release as a model's answers."""
    from vrforge.runners.scoring import _verify_one, read_rows, score_generative
    from vrforge.schemas.layout import output_name

    with tempfile.TemporaryDirectory(prefix="verify-speed-") as scratch:
        answers = Path(scratch)
        count = write_solutions(release, answers)
        started = time.perf_counter()
        rows = read_rows(release, WIDTH, with_puzzle=True)
        reading = time.perf_counter() - started
        started = time.perf_counter()
        report = score_generative(release, answers, WIDTH, workers=workers)
        wall = time.perf_counter() - started
        # The same answers verified one by one in this process: the cost per answer by task,
        # free of the pool's start-up, which a small release's wall time is dominated by.
        serial: dict[str, list[float]] = {}
        for row in rows:
            job = (row["task"], row["meta"], str(answers / output_name(row["task"], row["difficulty"], row["index"])),
                   row["puzzle"])
            started = time.perf_counter()
            _verify_one(job)
            serial.setdefault(row["task"], []).append(time.perf_counter() - started)
    summary = report.summary
    per_task = {task: {"answers": entry["n"], "accepted": entry["correct"],
                       "serial_mean_ms": round(1000 * float(np.mean(serial[task])), 2)}
                for task, entry in sorted(summary["per_task"].items())}
    projected = wall * RELEASE_ANSWERS / count if count else 0.0
    serial_mean = float(np.mean([t for times in serial.values() for t in times])) if serial else 0.0
    result = {
        "release": str(release), "width": WIDTH, "workers": workers, "answers": count,
        "accepted": summary["overall"]["correct"], "unusable": summary["unusable"]["total"],
        "wall_s": round(wall, 2), "reading_rows_s": round(reading, 2),
        "ms_per_answer": round(1000 * wall / max(1, count), 2),
        f"projected_{RELEASE_ANSWERS}_answers_s": round(projected, 1),
        "serial_ms_per_answer": round(1000 * serial_mean, 2),
        f"projected_{RELEASE_ANSWERS}_answers_from_serial_s": round(RELEASE_ANSWERS * serial_mean / workers, 1),
        "target_s": TARGET_S,
        "within_target": projected <= TARGET_S, "per_task": per_task,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--puzzles", type=int, default=10, help="puzzles per task and difficulty")
    parser.add_argument("--workers", type=int, default=2, help="processes (the projection assumes them; --release runs them)")
    parser.add_argument("--with-puzzle", action="store_true", help="pass the bare puzzle PNG as the scorer does")
    parser.add_argument("--release", nargs="?", const=DEFAULT_RELEASE, metavar="DIR",
                        help=f"score every row's solution of a built release (default folder {DEFAULT_RELEASE})")
    parser.add_argument("--out", help="default bench/results/verify_speed.json (verify_speed_release.json with --release)")
    args = parser.parse_args(argv)
    if args.release:
        result = release_speed(Path(args.release), args.workers, Path(args.out or "bench/results/verify_speed_release.json"))
        print(f"{result['answers']} answers at {WIDTH} px scored in {result['wall_s']} s on {args.workers} workers "
              f"({result['ms_per_answer']} ms each, reading the rows {result['reading_rows_s']} s; "
              f"{result['serial_ms_per_answer']} ms each one by one in one process); {result['accepted']} accepted; "
              f"{RELEASE_ANSWERS} answers ≈ {result[f'projected_{RELEASE_ANSWERS}_answers_s']} s "
              f"({result[f'projected_{RELEASE_ANSWERS}_answers_from_serial_s']} s from the one-by-one cost) "
              f"against the {TARGET_S:.0f} s target")
        return 0 if result["within_target"] and result["accepted"] == result["answers"] else 1
    args.out = args.out or "bench/results/verify_speed.json"
    report: dict = {"width": WIDTH, "puzzles_per_difficulty": args.puzzles, "with_puzzle": args.with_puzzle, "tasks": {}}
    totals: dict[str, list[float]] = {"aligned": [], "shifted": []}
    registering: dict[str, list[float]] = {"aligned": [], "shifted": []}
    decodes: dict[str, list[float]] = {"aligned": [], "shifted": []}
    for spec in all_tasks():
        times: dict[str, list[float]] = {"aligned": [], "shifted": []}
        methods: dict[str, list[str]] = {"aligned": [], "shifted": []}
        aligning: dict[str, list[float]] = {"aligned": [], "shifted": []}
        decoding: dict[str, list[float]] = {"aligned": [], "shifted": []}
        for difficulty in DIFFICULTIES:
            for index in range(args.puzzles):
                puzzle = accepted_puzzle(spec, difficulty, index, SEED)
                meta_text = json.dumps(puzzle.meta, sort_keys=True)
                solution = Image.fromarray(rasterise(spec.draw(puzzle.meta, puzzle.solution), (WIDTH,))[WIDTH])
                bare = encoded(Image.fromarray(rasterise(spec.draw(puzzle.meta, None), (WIDTH,))[WIDTH]))
                answers = {"aligned": encoded(solution),
                           "shifted": encoded(DISTORTIONS["shift 2%"](solution, np.random.default_rng(0)))}
                reference = bare if args.with_puzzle else None
                for kind, data in answers.items():
                    task = get_task(spec.name)
                    registration._CACHE.clear()  # the scorer sees each puzzle once
                    started = time.perf_counter()
                    meta = json.loads(meta_text)  # a fresh meta per answer, as the scorer has
                    verdict = task.verify(meta, data, puzzle=reference)
                    times[kind].append(time.perf_counter() - started)
                    registration._CACHE.clear()
                    started = time.perf_counter()
                    registration.answer_in_frame(spec.name, json.loads(meta_text), data, reference)
                    aligning[kind].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    load_rgb(data)  # decoding, which reading without registration paid as well
                    decoding[kind].append(time.perf_counter() - started)
                    methods[kind].append(verdict.details.get("registration", {}).get("method", "none"))
        entry = {}
        for kind in times:
            totals[kind] += times[kind]
            registering[kind] += aligning[kind]
            decodes[kind] += decoding[kind]
            entry[kind] = {"mean_ms": round(1000 * float(np.mean(times[kind])), 2),
                           "registration_mean_ms": round(1000 * float(np.mean(aligning[kind])), 2),
                           "median_ms": round(1000 * float(np.median(times[kind])), 2),
                           "methods": {m: methods[kind].count(m) for m in sorted(set(methods[kind]))}}
        report["tasks"][spec.name] = entry
        print(f"{spec.name:<20} aligned {entry['aligned']['mean_ms']:7.1f} ms   shifted {entry['shifted']['mean_ms']:7.1f} ms")
    for kind, values in totals.items():
        mean = float(np.mean(values))
        extra = float(np.mean(registering[kind])) - float(np.mean(decodes[kind]))
        report[kind] = {"mean_ms": round(1000 * mean, 2), "registration_mean_ms": round(1000 * float(np.mean(registering[kind])), 2),
                        "decode_mean_ms": round(1000 * float(np.mean(decodes[kind])), 2),
                        "without_registration_mean_ms": round(1000 * (mean - extra), 2),
                        f"projected_{RELEASE_ANSWERS}_answers_without_registration_s":
                            round(RELEASE_ANSWERS * (mean - extra) / args.workers, 1),
                        f"projected_{RELEASE_ANSWERS}_answers_s": round(RELEASE_ANSWERS * mean / args.workers, 1)}
    report["shifted_vs_aligned"] = round(report["shifted"]["mean_ms"] / report["aligned"]["mean_ms"], 2)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"all tasks: aligned {report['aligned']['mean_ms']} ms, shifted {report['shifted']['mean_ms']} ms per answer; "
          f"{RELEASE_ANSWERS} aligned answers on {args.workers} workers ≈ "
          f"{report['aligned'][f'projected_{RELEASE_ANSWERS}_answers_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
