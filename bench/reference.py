"""vrforge's build side by side with the public reference implementation, on the same 60 puzzles.

The reference (the ``tacit-benchmark`` repository, v0.1.0) builds its own release parameters,
``configs/release.yaml`` with ``count_per_difficulty`` set to ``--count`` (2: 10 tasks x 3
levels x 2 = 60 puzzles, each at 512/1024/2048 px), with ``tacit generate --config`` in one
process, ``PYTHONPATH`` set to its checkout so that the command finds ``scripts``. vrforge
builds the default recipe limited to the same levels (easy, medium, hard), count and
resolutions with ``--workers``. Both run back to back (``--rounds`` times, alternating), and
the report gives each side's wall time and CPU time (the process and all its children), and
the reference/vrforge ratios of both: on a loaded machine the CPU ratio is the steadier one.
See docs/benchmarks.md for how to set up the reference checkout and its environment.

    python -m vrforge.bench.reference --reference PATH [--python PYTHON] [--count 2] [--workers 2]

writes bench/results/reference.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

LEVELS = ("easy", "medium", "hard")
RECIPE = "builds/recipes/tacit.toml"
TARGET_RATIO = 25.0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list[str], env: dict[str, str], cwd: Path) -> dict[str, float]:
    cpu, started = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"reference bench: {' '.join(command[:3])} failed: {tail}")
    return {"wall_s": round(wall, 2), "cpu_s": round(_children_cpu() - cpu, 2)}


def run_reference(checkout: Path, python: str, count: int, scratch: Path) -> dict[str, Any]:
    config = yaml.safe_load((checkout / "configs" / "release.yaml").read_text(encoding="utf-8"))
    for task in config.get("tasks", {}).values():
        task["count_per_difficulty"] = count
    path = scratch / "reference.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = scratch / "reference-out"
    env = dict(os.environ, PYTHONPATH=str(checkout), OMP_NUM_THREADS="1")
    command = [python, "-c", "from tacit.cli import main; main()", "generate", "--config", str(path), "--output-dir", str(out)]
    timing = _timed(command, env, checkout)
    pngs = sum(1 for _ in out.rglob("*.png"))
    shutil.rmtree(out, ignore_errors=True)
    tasks = sum(1 for task in config.get("tasks", {}).values() if task.get("enabled", True))
    return {**timing, "pngs": pngs, "puzzles": tasks * len(LEVELS) * count, "resolutions": config.get("resolutions")}


def run_vrforge(count: int, workers: int, resolutions: list[int], scratch: Path) -> dict[str, Any]:
    out = scratch / "vrforge-out"
    code = ("import sys; from dataclasses import replace; from pathlib import Path\n"
            "from vrforge.builds.build import build; from vrforge.builds.recipe import load_recipe\n"
            "r = load_recipe(Path(sys.argv[1])).limited(int(sys.argv[2])).with_resolutions([int(x) for x in sys.argv[5].split(',')])\n"
            "r = replace(r, tasks=tuple(replace(t, levels=tuple(lv for lv in t.levels if lv.name in sys.argv[4].split(',')))"
            " for t in r.tasks))\n"
            "build(r, Path(sys.argv[3]), workers=int(sys.argv[6]), progress=False)\n")
    from vrforge.bench.steps import ENV_DIR, site_dir

    recipe = Path(RECIPE).resolve()  # this checkout's recipe
    # The pool's workers are children of a fork server that nobody waits for, so the child's
    # rusage misses them: every process of the build records its own CPU time (bench/steps.py).
    ledgers = scratch / "ledgers"
    ledgers.mkdir(exist_ok=True)
    path = os.pathsep.join([str(site_dir(scratch / "site")), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=path, **{ENV_DIR: str(ledgers)})
    timing = _timed([sys.executable, "-c", code, str(recipe), str(count), str(out), ",".join(LEVELS),
                     ",".join(map(str, resolutions)), str(workers)], env, Path(tempfile.gettempdir()))
    tree_cpu = sum(json.loads(p.read_text(encoding="utf-8"))["cpu_total"] for p in ledgers.glob("*.json"))
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(ledgers, ignore_errors=True)
    return {**timing, "cpu_s": round(max(timing["cpu_s"], tree_cpu), 2), "workers": workers}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", required=True, type=Path, help="a checkout of the reference repository")
    parser.add_argument("--python", default=sys.executable, help="the Python that has the reference's dependencies")
    parser.add_argument("--count", type=int, default=2, help="puzzles per task and level (the reference's count_per_difficulty)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", default="bench/results/reference.json")
    args = parser.parse_args(argv)
    if not (args.reference / "configs" / "release.yaml").is_file():
        parser.error(f"{args.reference} is not a checkout of the reference (no configs/release.yaml)")
    load = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {"reference": [], "vrforge": []}
    scratch = Path(tempfile.mkdtemp(prefix="vrforge-reference-"))
    try:
        for _ in range(args.rounds):
            runs["reference"].append(run_reference(args.reference.resolve(), args.python, args.count, scratch))
            resolutions = runs["reference"][-1]["resolutions"] or [512, 1024, 2048]
            runs["vrforge"].append(run_vrforge(args.count, args.workers, resolutions, scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    best = {side: min(values, key=lambda r: r["cpu_s"]) for side, values in runs.items()}
    wall_ratio = best["reference"]["wall_s"] / best["vrforge"]["wall_s"]
    cpu_ratio = best["reference"]["cpu_s"] / best["vrforge"]["cpu_s"]
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_average_at_start": [round(v, 2) for v in load],
                    "load_average_at_end": [round(v, 2) for v in os.getloadavg()]},
        "command": "python -m vrforge.bench.reference " + " ".join(argv if argv is not None else sys.argv[1:]),
        "puzzles": best["reference"]["puzzles"], "runs": runs, "best": best,
        "ratio_wall": round(wall_ratio, 2), "ratio_cpu": round(cpu_ratio, 2), "target_ratio": TARGET_RATIO,
        "passed": wall_ratio >= TARGET_RATIO,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("puzzles", "best", "ratio_wall", "ratio_cpu", "passed")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
