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
"""

from __future__ import annotations

import argparse
import json
import sys
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--puzzles", type=int, default=10, help="puzzles per task and difficulty")
    parser.add_argument("--workers", type=int, default=2, help="processes the projection assumes")
    parser.add_argument("--with-puzzle", action="store_true", help="pass the bare puzzle PNG as the scorer does")
    parser.add_argument("--out", default="bench/results/verify_speed.json")
    args = parser.parse_args(argv)
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
