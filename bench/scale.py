"""Scaling a build out: the local executor vs a Dask ``LocalCluster`` of 1 and 2 process workers.

The same recipe (every task, two difficulties, ``--count`` puzzles each, all resolutions) is
built four ways into fresh folders: local with 1 and 2 processes, Dask with 1 and 2 workers.
Reported per run: wall time, puzzles/s, peak resident memory of the driver and of each worker,
and whether the folder is byte-identical to the local one-process build (the baseline of the
ratios). The scheduler's overhead per shard is measured twice: as Dask-1-worker minus local-1
wall time per shard (same work in one process each), and as the round trip of empty tasks.
From the measured per-puzzle cost and bytes, the JSON projects a 10^6-puzzle build on N workers.

    python -m vrforge.bench.scale --count 4 --out bench/results/scale.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from vrforge.builds.build import build
from vrforge.builds.executors import DaskExecutor
from vrforge.builds.recipe import parse_recipe
from vrforge.registry import all_tasks

PROJECTED_PUZZLES = 1_000_000
PROJECTED_WORKERS = (8, 64, 512)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _folder_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _recipe(count: int, rows_per_shard: int) -> dict[str, Any]:
    return {"name": "scale", "version": "0.0.1", "seed": 3, "resolutions": [512, 1024, 2048], "rows_per_shard": rows_per_shard,
            "tasks": {spec.name: {"count": count, "difficulties": ["easy", "hard"]} for spec in all_tasks()}}


def _run(label: str, recipe_data: dict[str, Any], root: Path, workers: int, dask: bool) -> dict[str, Any]:
    from distributed import Client, LocalCluster

    out = root / label
    recipe = parse_recipe(recipe_data)
    if not dask:
        clock = time.perf_counter()
        result = build(recipe, out, workers=workers, progress=False)
        wall = time.perf_counter() - clock
        worker_peaks: list[float] = []
    else:
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
                Client(cluster) as client:
            clock = time.perf_counter()
            result = build(recipe, out, progress=False, executor=DaskExecutor(client=client))
            wall = time.perf_counter() - clock
            worker_peaks = sorted(client.run(_peak_rss_mb).values())
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    data_bytes = sum(e["bytes"] for name, e in manifest["files"].items() if name.startswith("data/"))
    shards = sum(1 for name in manifest["files"] if name.startswith("data/")) // len(recipe.resolutions)
    return {"executor": "dask-local" if dask else "local", "workers": workers, "wall_s": round(wall, 2),
            "puzzles": result.items_built, "shards": shards, "puzzles_per_s": round(result.items_built / wall, 3),
            "data_bytes": data_bytes, "driver_peak_rss_mb": round(_peak_rss_mb(), 1),
            "worker_peak_rss_mb": [round(m, 1) for m in worker_peaks], "digest": _folder_digest(out)}


def _empty_task_round_trip(tasks: int = 200) -> float:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        client.gather(client.map(int, range(10), pure=False))  # warm up
        clock = time.perf_counter()
        client.gather(client.map(int, range(tasks), pure=False))
        return (time.perf_counter() - clock) / tasks


def _projection(baseline: dict[str, Any], rows_per_shard: int, worker_peak_mb: float) -> dict[str, Any]:
    seconds_per_puzzle = baseline["wall_s"] / baseline["puzzles"]  # one process, all stages, three resolutions
    bytes_per_puzzle = baseline["data_bytes"] / baseline["puzzles"]
    shards = PROJECTED_PUZZLES / rows_per_shard
    return {
        "puzzles": PROJECTED_PUZZLES,
        "rows_per_shard": rows_per_shard,
        "shards": int(shards),
        "cpu_hours": round(PROJECTED_PUZZLES * seconds_per_puzzle / 3600, 1),
        "storage_gb": round(PROJECTED_PUZZLES * bytes_per_puzzle / 1e9, 1),
        "manifest_mb": round(shards * 3 * 150 / 1e6, 1),  # ~150 bytes per listed file, three resolutions
        "memory_per_worker_mb": round(worker_peak_mb, 0),
        "hours_on_workers": {str(n): round(PROJECTED_PUZZLES * seconds_per_puzzle / n / 3600, 2) for n in PROJECTED_WORKERS},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=4, help="puzzles per task and difficulty")
    parser.add_argument("--rows-per-shard", type=int, default=2)
    parser.add_argument("--out", default="bench/results/scale.json")
    args = parser.parse_args(argv)

    recipe = _recipe(args.count, args.rows_per_shard)
    root = Path(tempfile.mkdtemp(prefix="vrforge-scale-"))
    try:
        runs = [_run("local-1", recipe, root, 1, dask=False),
                _run("local-2", recipe, root, 2, dask=False),
                _run("dask-1", recipe, root, 1, dask=True),
                _run("dask-2", recipe, root, 2, dask=True)]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    baseline = runs[0]
    digests = [run.pop("digest") for run in runs]
    for run, digest in zip(runs, digests):
        run["identical_to_local_1"] = digest == digests[0]
        run["speedup_vs_local_1"] = round(baseline["wall_s"] / run["wall_s"], 2)
    dask_one = runs[2]
    report = {
        "recipe": {"tasks": len(recipe["tasks"]), "difficulties": 2, "count": args.count, "resolutions": recipe["resolutions"],
                   "rows_per_shard": args.rows_per_shard},
        "runs": runs,
        "scheduler_overhead_per_shard_s": round((dask_one["wall_s"] - baseline["wall_s"]) / dask_one["shards"], 4),
        "empty_task_round_trip_s": round(_empty_task_round_trip(), 5),
        "projection": _projection(baseline, 1000, max(runs[3]["worker_peak_rss_mb"] or [0.0])),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
