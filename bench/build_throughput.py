"""Build throughput: vrforge's pipeline against the naive way, in one run.

Builds N and 2N maze puzzles (every difficulty, 512/1024/2048 px) with the real build
(generate, draw, render, check, encode, write parquet), each size in a fresh process so its
peak RSS is its own. The same SVGs are then rendered twice more: vrforge's way (parse once,
rasterise at each size, ``encode_png``) and the naive way (``cairosvg.svg2png`` once per
size, then Pillow's default PNG save). The target ratio compares those two renderings; the
whole pipeline, which also verifies every option and writes parquet, is reported beside it.

    python -m vrforge.bench.build_throughput --puzzles 30

writes bench/results/build_throughput.json. Targets: ratio >= 3, peak RSS < 1 GB.
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vrforge.schemas.layout import DIFFICULTIES, RESOLUTIONS

TASK = "maze"
IMAGES_PER_PUZZLE = 6  # puzzle, solution, four distractors


def _recipe(per_difficulty: int) -> dict:
    return {
        "name": "bench", "version": "0.0.0", "seed": 1, "resolutions": list(RESOLUTIONS), "rows_per_shard": 50,
        "tasks": {TASK: {"count": per_difficulty, "difficulties": list(DIFFICULTIES)}},
    }


def run_pipeline(per_difficulty: int) -> dict:
    from vrforge.builds.build import build
    from vrforge.builds.recipe import parse_recipe

    recipe = parse_recipe(_recipe(per_difficulty))
    with tempfile.TemporaryDirectory() as tmp:
        result = build(recipe, Path(tmp) / "out", workers=1, progress=False)
    puzzles = per_difficulty * 3
    return {
        "puzzles": puzzles,
        "seconds": round(result.wall, 3),
        "puzzles_per_s": round(puzzles / result.wall, 3),
        "pngs_per_s": round(puzzles * IMAGES_PER_PUZZLE * len(RESOLUTIONS) / result.wall, 2),
        "stage_seconds": {k: round(v, 3) for k, v in result.seconds.items()},
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _svgs(per_difficulty: int) -> list[bytes]:
    """The SVGs of the same puzzles the build makes (puzzle, solution, four distractors)."""
    from vrforge.registry import accepted_puzzle, get_task

    spec = get_task(TASK)
    svgs = []
    for difficulty in DIFFICULTIES:
        for index in range(per_difficulty):
            puzzle = accepted_puzzle(spec, difficulty, index, seed=1)
            svgs += [spec.draw(puzzle.meta, answer).encode() for answer in [None, puzzle.solution, *puzzle.distractors]]
    return svgs


def run_rendering(per_difficulty: int, naive: bool) -> dict:
    import cairosvg
    from PIL import Image

    from vrforge.render import encode_png, rasterise_images

    svgs = _svgs(per_difficulty)
    started = time.perf_counter()
    for svg in svgs:
        if naive:
            for width in RESOLUTIONS:
                png = cairosvg.svg2png(bytestring=svg, output_width=width)
                Image.open(io.BytesIO(png)).save(io.BytesIO(), format="PNG")
        else:
            for image in rasterise_images(svg, RESOLUTIONS).values():
                encode_png(image)
    seconds = time.perf_counter() - started
    puzzles = per_difficulty * 3
    return {
        "puzzles": puzzles,
        "seconds": round(seconds, 3),
        "puzzles_per_s": round(puzzles / seconds, 3),
        "pngs_per_s": round(puzzles * IMAGES_PER_PUZZLE * len(RESOLUTIONS) / seconds, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _child(mode: str, per_difficulty: int) -> dict:
    output = subprocess.run([sys.executable, "-m", "vrforge.bench.build_throughput", "--child", mode,
                             "--puzzles", str(per_difficulty)], check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--puzzles", type=int, default=30, help="puzzles per difficulty for the N run")
    parser.add_argument("--out", default="bench/results/build_throughput.json")
    parser.add_argument("--child", choices=("pipeline", "rendering", "naive"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        result = run_pipeline(args.puzzles) if args.child == "pipeline" else run_rendering(args.puzzles, args.child == "naive")
        print(json.dumps(result))
        return 0

    n = args.puzzles
    pipeline_n = _child("pipeline", n)
    pipeline_2n = _child("pipeline", 2 * n)
    rendering_n = _child("rendering", n)
    naive_n = _child("naive", n)
    ratio = rendering_n["puzzles_per_s"] / naive_n["puzzles_per_s"]
    peak = max(pipeline_n["peak_rss_mb"], pipeline_2n["peak_rss_mb"])
    report = {
        "task": TASK,
        "resolutions": list(RESOLUTIONS),
        "pipeline": {"N": pipeline_n, "2N": pipeline_2n},
        "rendering": rendering_n,
        "naive_rendering": naive_n,
        "throughput_ratio": round(ratio, 2),
        "pipeline_vs_naive_rendering": round(pipeline_2n["puzzles_per_s"] / naive_n["puzzles_per_s"], 2),
        "cost_growth_N_to_2N": round(pipeline_2n["seconds"] / pipeline_n["seconds"], 3),
        "peak_rss_mb": peak,
        "targets": {"throughput_ratio": ">= 3", "peak_rss_mb": "< 1024"},
        "passed": ratio >= 3 and peak < 1024,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
