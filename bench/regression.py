"""The build-cost regression guard: the per-puzzle cost of building items here against a base
commit (default: the parent, ``HEAD~1``), both measured in the same invocation.

The base commit is checked out into a temporary git worktree and laid out in the installed
package's shape (pyproject's ``package-dir``), so a child process imports it instead of this
checkout. The children alternate (base, current, base, current, ...) so that a change in the
machine's load hits both alike, and each reports the CPU seconds (user + system) its process
spent building a fixed workload: ``--puzzles`` items per task and level (easy, medium, hard,
which every version has) at 512/1024/2048 px, as a release builds them. CPU time, unlike wall
time, barely moves with other processes on the machine. The guard fails (exit 1) when the
current cost exceeds the base's by more than ``--limit`` (default 20 %).

    python -m vrforge.bench.regression [--base REV] [--puzzles 1] [--rounds 2] [--tasks ...]

writes bench/results/regression.json. Run it (``make bench``) before merging a change to a
generator, the renderer or the build.
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
import tomllib
from datetime import UTC, datetime
from pathlib import Path

LEVELS = ("easy", "medium", "hard")
RESOLUTIONS = (512, 1024, 2048)
SEED = 20261129


def package_tree(root: Path, tree: Path) -> Path:
    """Links shaped like the installed ``vrforge`` package, for the checkout at ``root``."""
    mapping = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    package = tree / "vrforge"
    package.mkdir(parents=True)
    for entry in sorted((root / mapping["vrforge"]).iterdir()):
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry.resolve())
    for name, folder in sorted(mapping.items()):
        if name != "vrforge":
            (package / name.removeprefix("vrforge.")).symlink_to((root / folder).resolve(), target_is_directory=True)
    return tree


def run_child(puzzles: int, tasks: list[str] | None) -> dict:
    """Build the workload in this process; CPU seconds per puzzle, per task and overall."""
    import vrforge
    from vrforge.builds.item import build_item
    from vrforge.builds.plan import PlanItem
    from vrforge.registry import all_tasks

    names = tasks or [spec.name for spec in all_tasks() if spec.generate.__module__.startswith("vrforge.generators.tacit.")]
    build_item(PlanItem(names[0], "easy", 10_000, SEED), RESOLUTIONS, "warm-up")  # imports and first renders
    per_task = {}
    for name in names:
        started = _cpu()
        for level in LEVELS:
            for index in range(puzzles):
                build_item(PlanItem(name, level, index, SEED), RESOLUTIONS, "regression")
        per_task[name] = (_cpu() - started) / (puzzles * len(LEVELS))
    return {"package": str(Path(vrforge.__file__).parent), "per_task_cpu_s": per_task,
            "cpu_s_per_puzzle": sum(per_task.values()) / len(per_task)}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _child(tree: Path | None, puzzles: int, tasks: list[str] | None) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if tree is not None:  # the base commit's package first on the path, ahead of the editable install
        env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    # Both sides run this file's child (the base may not have this module), so the harness is the same.
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--puzzles", str(puzzles),
               *(["--tasks", *tasks] if tasks else [])]
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"regression: a {'base' if tree else 'current'} run failed: {tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="HEAD~1", help="the commit to compare with (default: the parent)")
    parser.add_argument("--puzzles", type=int, default=1, help="items per task and level")
    parser.add_argument("--rounds", type=int, default=2, help="alternating base/current runs of each")
    parser.add_argument("--tasks", nargs="*", help="default: every built-in task")
    parser.add_argument("--limit", type=float, default=0.20, help="allowed growth of the per-puzzle cost")
    parser.add_argument("--out", default="bench/results/regression.json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_child(args.puzzles, args.tasks)))
        return 0
    root = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                               check=True).stdout.strip())
    base = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", f"{args.base}^{{commit}}"], capture_output=True,
                          text=True)
    if base.returncode != 0:
        raise SystemExit(f"regression: no such commit {args.base!r}")
    commit = base.stdout.strip()
    scratch = Path(tempfile.mkdtemp(prefix="vrforge-regression-"))
    worktree = scratch / "base"
    try:
        subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", "-q", str(worktree), commit], check=True)
        tree = package_tree(worktree, scratch / "tree")
        started = time.perf_counter()
        runs: dict[str, list[dict]] = {"base": [], "current": []}
        for _ in range(args.rounds):
            runs["base"].append(_child(tree, args.puzzles, args.tasks))
            runs["current"].append(_child(None, args.puzzles, args.tasks))
    finally:
        subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(worktree)], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    cost = {side: min(r["cpu_s_per_puzzle"] for r in values) for side, values in runs.items()}  # least-disturbed run
    ratio = cost["current"] / cost["base"]
    tasks = sorted(runs["current"][0]["per_task_cpu_s"])
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "processor": platform.machine(), "cpus": os.cpu_count()},
        "base": commit, "puzzles_per_task_and_level": args.puzzles, "rounds": args.rounds,
        "cpu_s_per_puzzle": {k: round(v, 4) for k, v in cost.items()},
        "per_task_ratio": {t: round(min(r["per_task_cpu_s"][t] for r in runs["current"])
                                    / min(r["per_task_cpu_s"][t] for r in runs["base"]), 3)
                           for t in tasks if all(t in r["per_task_cpu_s"] for r in runs["base"])},
        "packages": {side: values[0]["package"] for side, values in runs.items()},
        "ratio": round(ratio, 3), "limit": args.limit, "passed": ratio <= 1 + args.limit,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
