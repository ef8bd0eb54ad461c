"""The TACIT release: build + audit of the default recipe at two sizes, in one run.

Each size runs in a fresh process (so its peak memory is its own): the default recipe
limited to N and then 2N puzzles per task and difficulty, built with the given workers and
then audited. The report gives wall times, puzzles/s and PNGs/s (overall and per task, the
latter per worker-second), the per-stage split, peak RSS of the main process and of the
largest worker, the cost growth from N to 2N, and the projection to the full release (200
per task and difficulty: the line through the N and 2N costs, and the plain proportional
upper bound) against the targets (15 minutes, 2 GB).

    python -m vrforge.bench.release --puzzles 5 --workers 2

writes bench/results/release.json.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECIPE = "builds/recipes/tacit.toml"
FULL_PER_DIFFICULTY = 200
TARGET_SECONDS = 15 * 60
TARGET_RSS_MB = 2048


def run_child(per_difficulty: int, workers: int) -> dict:
    from importlib import resources

    from vrforge.builds.audit import audit
    from vrforge.builds.build import build
    from vrforge.builds.recipe import load_recipe

    recipe_path = Path(RECIPE)
    if not recipe_path.exists():
        recipe_path = Path(str(resources.files("vrforge.builds") / "recipes" / "tacit.toml"))
    recipe = load_recipe(recipe_path).limited(per_difficulty)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "release"
        result = build(recipe, out, workers=workers, progress=False)
        started = time.perf_counter()
        report = audit(out, workers=workers, progress=False)
        audit_seconds = time.perf_counter() - started
        shards = sum(1 for _ in out.rglob("*.parquet"))
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    puzzles = sum(len(task.levels) for task in recipe.tasks) * per_difficulty
    images = puzzles * 6 * len(recipe.resolutions)
    return {
        "per_difficulty": per_difficulty,
        "puzzles": puzzles,
        "pngs": images,
        "shards": shards,
        "bytes": size,
        "build_seconds": round(result.wall, 2),
        "audit_seconds": round(audit_seconds, 2),
        "wall_seconds": round(result.wall + audit_seconds, 2),
        "audit_passed": report["passed"],
        "puzzles_per_s": round(puzzles / result.wall, 3),
        "pngs_per_s": round(images / result.wall, 1),
        "stage_seconds_summed_over_workers": {k: round(v, 2) for k, v in result.seconds.items()},
        "per_task": {
            task: {
                "puzzles_per_worker_s": round(v["items"] / v["seconds"], 3),
                "pngs_per_worker_s": round(v["items"] * 6 * len(recipe.resolutions) / v["seconds"], 1),
            }
            for task, v in sorted(result.per_task.items())
        },
        "peak_rss_mb_main": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "peak_rss_mb_largest_worker": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--puzzles", type=int, default=5, help="puzzles per task and difficulty for the N run")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="bench/results/release.json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_child(args.puzzles, args.workers)))
        return 0

    runs = {}
    for label, size in (("N", args.puzzles), ("2N", 2 * args.puzzles)):
        command = [sys.executable, "-m", "vrforge.bench.release", "--child", "--puzzles", str(size),
                   "--workers", str(args.workers)]
        output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        runs[label] = json.loads(output.strip().splitlines()[-1])
    small, large = runs["N"], runs["2N"]
    # Cost = fixed part (process start, imports, gallery, card) + a part per puzzle: the line
    # through the N and 2N runs, extended to the full release. The plain ratio is an upper bound.
    full_extra = FULL_PER_DIFFICULTY - large["per_difficulty"]
    per_step = large["wall_seconds"] - small["wall_seconds"]
    projected = large["wall_seconds"] + per_step * full_extra / (large["per_difficulty"] - small["per_difficulty"])
    proportional = large["wall_seconds"] * FULL_PER_DIFFICULTY / large["per_difficulty"]
    peak = max(r["peak_rss_mb_main"] + args.workers * r["peak_rss_mb_largest_worker"] for r in runs.values())
    report = {
        "recipe": RECIPE,
        "workers": args.workers,
        "runs": runs,
        "cost_growth_N_to_2N": round(large["wall_seconds"] / small["wall_seconds"], 3),
        "projected_full_release_seconds": round(projected, 1),
        "proportional_full_release_seconds_upper_bound": round(proportional, 1),
        "peak_rss_mb_upper_bound": round(peak, 1),
        "targets": {"full_release_seconds": TARGET_SECONDS, "peak_rss_mb": TARGET_RSS_MB},
        "passed": projected <= TARGET_SECONDS and peak <= TARGET_RSS_MB,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
