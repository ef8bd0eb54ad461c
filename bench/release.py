"""The TACIT release, build + audit, with every CPU second charged to a named step, against a base commit.

One child process builds the default recipe limited to ``--puzzles`` per task and level (with
``--workers`` processes) and audits it, as ``make dataset`` does. The child and every process
it starts carry ``bench/steps.py`` (through ``sitecustomize``), which charges their CPU time
to named steps: generate, variants and star choice, draw, parse, record (the cairosvg walk),
replay (cairo paint), rasterise, PNG encode, verify at build time, IPC, shard write, gallery,
card, manifest hash and each audit stage. A process's time before its first step is its
start-up; what is left is reported as unattributed, so the table sums to the CPU time of the
whole process tree (user + system, the child and all its descendants). A sampler reads every
process's peak RSS (``VmHWM``) while it runs.

The same child runs on the base commit (default the parent, ``HEAD~1``: a temporary git
worktree laid out as the installed package, as ``vrforge.bench.regression`` does), in the same
invocation, alternating with this checkout's over ``--rounds``; the report gives the
current/base ratio of the CPU seconds of each stage and of the whole, and wall times for
reference (CPU time barely moves with the machine's load, wall time does).

    python -m vrforge.bench.release --puzzles 3 --workers 2 [--base REV | --no-base] [--rounds 1]

writes bench/results/release.json (machine and date included).
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
import threading
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RECIPE = "builds/recipes/tacit.toml"
STEPS_FILE = Path(__file__).with_name("steps.py")
SAMPLE_EVERY_S = 0.1
TARGET_WORKER_RSS_MB = 400
TARGET_MAIN_RSS_MB = 1024

# The named steps in the order a release meets them (the report's table).
STAGE_ORDER = (
    "start-up (imports)", "generate", "variants and star choice", "draw (SVG text)", "parse SVG",
    "record (cairosvg SVG walk)", "replay (cairo paint)", "direct render (cairosvg SVG walk)", "white ground",
    "rasterise (surface to image)", "render (other)", "PNG encode", "verify at build time", "item (acceptance loop, other)",
    "IPC pickle", "shard write: encode rows", "shard write: parquet", "shard write: hash files", "shard write (other)",
    "gallery: read back", "gallery", "card", "manifest hash", "finish (other)", "build driver (other)",
    "audit: manifest sha256", "audit: read parquet", "audit: decode PNG", "audit: verify", "audit: meta schema",
    "audit: picker features", "audit: set inputs", "audit: rows (other)", "audit: gate", "audit: card",
    "audit: driver (card, schema, other)", "unattributed: main process", "unattributed: build workers",
    "unattributed: audit workers", "processes without steps (forkserver, trackers)",
)
TERMINAL = {"verify at build time", "white ground", "gallery", "card", "IPC pickle", "audit: manifest sha256",
            "audit: gate", "audit: card"}
CONTAINERS = {"item": "item (acceptance loop, other)", "render": "render (other)", "shard write": "shard write (other)",
              "finish": "finish (other)", "build driver": "build driver (other)"}
AUDIT_LEAVES = {"read parquet", "decode PNG", "verify", "meta schema", "picker features", "set inputs"}


def stage_of(path: str) -> str:
    """The table's step for a ledger path ("item > render > PNG encode" -> "PNG encode")."""
    parts = path.split(" > ")
    if any(part.startswith("audit") for part in parts):
        for part in parts:
            if part in TERMINAL:
                return part
            if part == "verify":  # what a verifier does inside (decode, reference render) is verifying
                return "audit: verify"
        leaf = next((part for part in reversed(parts) if part in AUDIT_LEAVES), None)
        if leaf:
            return f"audit: {leaf}"
        if parts[-1] == "sha256":
            return "audit: manifest sha256"
        return "audit: rows (other)" if "audit: rows" in parts else "audit: driver (card, schema, other)"
    deepest = parts[-1]
    for depth, part in enumerate(parts):
        if part in TERMINAL:
            return part
        if part == "sha256":
            return "manifest hash" if "finish" in parts[:depth] else "shard write: hash files"
        deepest = part
    if deepest in ("verify", "meta schema"):
        return "verify at build time"
    return CONTAINERS.get(deepest, deepest)


# ------------------------------------------------------------------------------ the child

def run_child(recipe_path: str, per_difficulty: int, workers: int, levels: list[str] | None) -> dict[str, Any]:
    """Build and audit in this process (and its workers); nothing from vrforge.bench is imported,
    so the base commit's package serves the same harness."""
    from dataclasses import replace

    from vrforge.builds.audit import audit
    from vrforge.builds.build import build
    from vrforge.builds.recipe import load_recipe

    recipe = load_recipe(Path(recipe_path)).limited(per_difficulty)
    if levels:
        recipe = replace(recipe, tasks=tuple(replace(t, levels=tuple(lv for lv in t.levels if lv.name in levels))
                                             for t in recipe.tasks))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "release"
        started = time.perf_counter()
        build(recipe, out, workers=workers, progress=False)
        built = time.perf_counter()
        report = audit(out, workers=workers, progress=False)
        audited = time.perf_counter()
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    puzzles = sum(len(task.levels) for task in recipe.tasks) * per_difficulty
    return {"puzzles": puzzles, "bytes": size, "build_wall_s": round(built - started, 2),
            "audit_wall_s": round(audited - built, 2), "audit_passed": report["passed"],
            "levels": sorted({lv.name for t in recipe.tasks for lv in t.levels})}


# ------------------------------------------------------------------------- the sampler

class RssSampler(threading.Thread):
    """Every descendant of ``root``: its peak RSS (VmHWM) and command line, read from /proc."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.peaks: dict[int, float] = {}
        self.commands: dict[int, str] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.sample()
            self.stopped.wait(SAMPLE_EVERY_S)

    def sample(self) -> None:
        parents: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                    parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
        family = {self.root}
        grown = True
        while grown:
            grown = False
            for pid, ppid in parents.items():
                if ppid in family and pid not in family:
                    family.add(pid)
                    grown = True
        for pid in family:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                if pid not in self.commands:
                    self.commands[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    self.peaks[pid] = max(self.peaks.get(pid, 0.0), int(line.split()[1]) / 1024)


# ------------------------------------------------------------------------------ one run

def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(tree: Path | None, args: argparse.Namespace, recipe: Path) -> dict[str, Any]:
    """One child run (``tree``: the base commit's package, else this checkout's): wall, CPU by
    step and process, peak RSS of every process."""
    from vrforge.bench.steps import ENV_DIR, site_dir

    scratch = Path(tempfile.mkdtemp(prefix="vrforge-release-"))
    try:
        ledgers = scratch / "ledgers"
        ledgers.mkdir()
        path = [str(site_dir(scratch / "site"))] + ([str(tree)] if tree else [])
        env = dict(os.environ, **{ENV_DIR: str(ledgers)},
                   PYTHONPATH=os.pathsep.join([*path, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
        command = [sys.executable, str(Path(__file__).resolve()), "--child", "--recipe", str(recipe),
                   "--puzzles", str(args.puzzles), "--workers", str(args.workers),
                   *(["--levels", *args.levels] if args.levels else [])]
        cpu_before, started = _children_cpu(), time.perf_counter()
        child = subprocess.Popen(command, env=env, cwd=tempfile.gettempdir(), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        sampler = RssSampler(child.pid)
        sampler.start()
        stdout, stderr = child.communicate()
        sampler.stopped.set()
        sampler.join()
        wall, cpu_total = time.perf_counter() - started, _children_cpu() - cpu_before
        if child.returncode != 0:
            tail = (stderr.strip().splitlines() or ["no output"])[-1]
            raise SystemExit(f"release bench: a run failed: {tail}")
        outcome = json.loads(stdout.strip().splitlines()[-1])
        records = [json.loads(p.read_text()) for p in sorted(ledgers.glob("*.json"))]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return summarise(outcome, records, child.pid, sampler, cpu_total, wall)


def _role(record: dict[str, Any], root: int) -> str:
    if record["pid"] == root:
        return "main"
    tops = {path.split(" > ")[0] for path in record["steps"]}
    if "item" in tops:
        return "build worker"
    if tops & {"audit: rows", "audit: gate"}:
        return "audit worker"
    return "other"


def summarise(outcome: dict[str, Any], records: list[dict[str, Any]], root: int, sampler: RssSampler,
              cpu_total: float, wall: float) -> dict[str, Any]:
    stages: dict[str, float] = defaultdict(float)
    tree: dict[str, float] = defaultdict(float)
    processes = []
    for record in records:
        role = _role(record, root)
        attributed = sum(cpu for cpu, _, _ in record["steps"].values())
        for path, (cpu, _, _) in record["steps"].items():
            stages[stage_of(path)] += cpu
            tree[path] += cpu
        if role == "other":
            stages["processes without steps (forkserver, trackers)"] += record["cpu_total"]
        else:
            stages["start-up (imports)"] += record["startup_cpu"]
            rest = record["cpu_total"] - attributed - record["startup_cpu"]
            stages[f"unattributed: {role}{'' if role == 'main' else 's'}" if role != "main" else
                   "unattributed: main process"] += rest
        processes.append({"pid": record["pid"], "role": role, "cpu_s": round(record["cpu_total"], 2),
                          "peak_rss_mb": round(max(record["peak_rss_mb"], sampler.peaks.get(record["pid"], 0.0)), 1)})
    seen = sum(record["cpu_total"] for record in records)
    cpu_total = max(cpu_total, seen)  # a fork server's children are not reaped by the child: its rusage misses them
    # processes that left no ledger (killed before their first dump): their CPU, charged as such
    stages["processes without steps (forkserver, trackers)"] += max(0.0, cpu_total - seen)
    peaks: dict[str, float] = {}
    for process in processes:
        peaks[process["role"]] = max(peaks.get(process["role"], 0.0), process["peak_rss_mb"])
    ordered = {name: round(stages[name], 3) for name in STAGE_ORDER if stages.get(name)}
    ordered |= {name: round(value, 3) for name, value in sorted(stages.items()) if name not in ordered and value}
    return {
        **outcome,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu_total, 2),
        "cpu_s_per_puzzle": round(cpu_total / outcome["puzzles"], 4),
        "cpu_s_by_step": ordered,
        "steps_sum_s": round(sum(ordered.values()), 2),
        "peak_rss_mb": {role: round(value, 1) for role, value in sorted(peaks.items())},
        "processes": sorted(processes, key=lambda p: (p["role"], p["pid"])),
        "cpu_s_by_path": {path: round(cpu, 3) for path, cpu in sorted(tree.items(), key=lambda kv: -kv[1]) if cpu >= 0.01},
    }


def _best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The least-disturbed run (least CPU in all)."""
    return min(runs, key=lambda run: run["cpu_s"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--puzzles", type=int, default=3, help="puzzles per task and level")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--levels", nargs="*", help="only these levels (default: the recipe's)")
    parser.add_argument("--base", default="HEAD~1", help="the commit to compare with (default: the parent)")
    parser.add_argument("--no-base", action="store_true", help="measure this checkout only")
    parser.add_argument("--current", type=Path, help="a checkout to measure as the current side (default: the installed package)")
    parser.add_argument("--rounds", type=int, default=1, help="alternating base/current runs of each")
    parser.add_argument("--recipe", default=RECIPE)
    parser.add_argument("--out", default="bench/results/release.json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.puzzles < 1 or args.workers < 1 or args.rounds < 1:
        parser.error("--puzzles, --workers and --rounds must be at least 1")
    if args.child:
        print(json.dumps(run_child(args.recipe, args.puzzles, args.workers, args.levels)))
        return 0
    recipe = Path(args.recipe).resolve()
    if not recipe.exists():
        parser.error(f"no such recipe: {args.recipe}")

    from vrforge.bench.regression import package_tree

    load = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {"current": []}
    commit = None
    laid = Path(tempfile.mkdtemp(prefix="vrforge-release-current-"))
    current_tree = package_tree(args.current.resolve(), laid / "tree") if args.current else None
    if args.no_base:
        runs["current"] = [measure(current_tree, args, recipe) for _ in range(args.rounds)]
    else:
        root = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                                   check=True).stdout.strip())
        found = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", f"{args.base}^{{commit}}"],
                               capture_output=True, text=True)
        if found.returncode != 0:
            raise SystemExit(f"release bench: no such commit {args.base!r}")
        commit = found.stdout.strip()
        scratch = Path(tempfile.mkdtemp(prefix="vrforge-release-base-"))
        worktree = scratch / "base"
        runs["base"] = []
        try:
            subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", "-q", str(worktree), commit], check=True)
            tree = package_tree(worktree, scratch / "tree")
            for _ in range(args.rounds):
                runs["base"].append(measure(tree, args, recipe))
                runs["current"].append(measure(current_tree, args, recipe))
        finally:
            subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(worktree)], capture_output=True)
            shutil.rmtree(scratch, ignore_errors=True)
    shutil.rmtree(laid, ignore_errors=True)

    current = _best(runs["current"])
    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "processor": platform.machine(), "cpus": os.cpu_count(),
                    "load_average_at_start": [round(v, 2) for v in load],
                    "load_average_at_end": [round(v, 2) for v in os.getloadavg()]},
        "command": "python -m vrforge.bench.release " + " ".join(argv if argv is not None else sys.argv[1:]),
        "recipe": args.recipe, "puzzles_per_task_and_level": args.puzzles, "workers": args.workers, "rounds": args.rounds,
        "current": current,
        "targets": {"peak_rss_mb_build_worker": TARGET_WORKER_RSS_MB, "peak_rss_mb_main": TARGET_MAIN_RSS_MB},
    }
    if "base" in runs:
        base = _best(runs["base"])
        report["base_commit"] = commit
        report["base"] = base
        report["ratio_current_to_base"] = {
            "cpu_s": round(current["cpu_s"] / base["cpu_s"], 3),
            "cpu_s_per_puzzle": round(current["cpu_s_per_puzzle"] / base["cpu_s_per_puzzle"], 3),
            "wall_s": round(current["wall_s"] / base["wall_s"], 3),
            "build_wall_s": round(current["build_wall_s"] / base["build_wall_s"], 3),
            "audit_wall_s": round(current["audit_wall_s"] / base["audit_wall_s"], 3),
            "by_step": {name: round(current["cpu_s_by_step"].get(name, 0.0) / value, 3)
                        for name, value in base["cpu_s_by_step"].items() if value >= 0.05},
        }
    peaks = current["peak_rss_mb"]
    report["memory_passed"] = (peaks.get("build worker", 0.0) <= TARGET_WORKER_RSS_MB
                               and peaks.get("main", 0.0) <= TARGET_MAIN_RSS_MB)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(table(report))
    print(f"wrote {args.out}")
    return 0


def table(report: dict[str, Any]) -> str:
    """CPU seconds by step, current against base (when measured)."""
    current, base = report["current"], report.get("base")
    names = list(current["cpu_s_by_step"]) + [n for n in (base or {}).get("cpu_s_by_step", {}) if n not in current["cpu_s_by_step"]]
    lines = [f"{'step':48} {'current':>9}" + (f" {'base':>9} {'ratio':>6}" if base else "")]
    for name in names:
        now = current["cpu_s_by_step"].get(name, 0.0)
        line = f"{name:48} {now:9.2f}"
        if base:
            then = base["cpu_s_by_step"].get(name, 0.0)
            line += f" {then:9.2f} {now / then if then else float('nan'):6.2f}"
        lines.append(line)
    lines.append(f"{'total CPU (process tree)':48} {current['cpu_s']:9.2f}" + (f" {base['cpu_s']:9.2f} "
                 f"{current['cpu_s'] / base['cpu_s']:6.2f}" if base else ""))
    lines.append(f"{'wall':48} {current['wall_s']:9.2f}" + (f" {base['wall_s']:9.2f} "
                 f"{current['wall_s'] / base['wall_s']:6.2f}" if base else ""))
    lines.append(f"peak RSS MB: current {current['peak_rss_mb']}" + (f", base {base['peak_rss_mb']}" if base else ""))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
