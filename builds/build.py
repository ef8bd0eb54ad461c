"""The build: plan -> items (in worker processes) -> ordered shard writes -> gallery, card, manifest.

Items are independent and results are consumed in plan order, so the folder is
byte-identical for any number of workers. Shards are the unit of resumption: a shard whose
files were committed is never rebuilt, and nothing half-written is ever visible.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import signal
import time
from collections import Counter, deque
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

import pyarrow.parquet as pq
from tqdm import tqdm

import vrforge
from vrforge.buffers import reuse_large_buffers
from vrforge.builds.item import STAGES, BuiltItem, build_item
from vrforge.builds.plan import PlanItem, Shard, plan_shards
from vrforge.builds.recipe import Recipe
from vrforge.builds.shards import ShardWriter
from vrforge.cards.card import render_card
from vrforge.cards.gallery import gallery_sheet
from vrforge.fileio import sha256_file, write_bytes_atomic, write_json_atomic
from vrforge.registry import get_task
from vrforge.schemas.layout import CARD_FILE, MAIN_RESOLUTION, MANIFEST_FILE, config_name, gallery_path, main_first

STATE_DIR = ".build"


class BuildError(RuntimeError):
    """A build that cannot start or go on; the message is one line for the user."""


@dataclass
class BuildResult:
    out: Path
    items_built: int = 0
    shards_skipped: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys((*STAGES, "write", "finish"), 0.0))
    per_task: dict[str, dict[str, float]] = field(default_factory=dict)  # task -> {"items", "seconds"}
    wall: float = 0.0
    already_complete: bool = False


def build(recipe: Recipe, out: Path, workers: int = 1, progress: bool = True) -> BuildResult:
    out = Path(out)
    started = time.perf_counter()
    config_hash = recipe.config_hash()
    result = BuildResult(out=out)
    if _check_existing(out, config_hash):
        result.already_complete = True
        return result
    state = out / STATE_DIR
    write_json_atomic(state / "state.json", {"config_hash": config_hash, "recipe": recipe.normalised()})
    for stale in out.glob("data/*/.*.tmp"):
        stale.unlink()  # left by a killed run; its shard was never committed

    shards = plan_shards(recipe)
    todo = [s for s in shards if not (state / "shards" / f"{s.key}.json").exists()]
    result.shards_skipped = len(shards) - len(todo)
    items = [item for shard in todo for item in shard.items(recipe.seed)]
    bar = tqdm(total=len(items), desc=f"build {recipe.name}", unit="puzzle", disable=not progress, dynamic_ncols=True)
    results = _results(items, recipe.resolutions, config_hash, workers)
    try:
        for shard in todo:
            _write_shard(out, shard, recipe, results, result, bar)
    finally:
        bar.close()
        results.close()

    clock = time.perf_counter()
    _finish(recipe, out, config_hash, shards, progress)
    result.seconds["finish"] += time.perf_counter() - clock
    result.wall = time.perf_counter() - started
    return result


def _check_existing(out: Path, config_hash: str) -> bool:
    """True when ``out`` already holds this exact build; raises if it holds anything else."""
    manifest = out / MANIFEST_FILE
    if manifest.exists():
        recorded = json.loads(manifest.read_text(encoding="utf-8")).get("config_hash")
        if recorded == config_hash:
            return True
        raise BuildError(f"{out} holds a different build (config hash {str(recorded)[:12]}); choose another --out")
    state = out / STATE_DIR / "state.json"
    if state.exists():
        recorded = json.loads(state.read_text(encoding="utf-8")).get("config_hash")
        if recorded != config_hash:
            raise BuildError(f"{out} holds an unfinished build of another recipe; choose another --out or delete it")
        return False
    if out.exists() and any(out.iterdir()):
        raise BuildError(f"{out} exists and is not empty; choose another --out")
    return False


def _write_shard(out: Path, shard: Shard, recipe: Recipe, results: Iterator[BuiltItem], result: BuildResult,
                 bar: tqdm) -> None:
    writer = ShardWriter(out, shard, recipe.resolutions)
    rejections: Counter = Counter()
    stats: dict[str, float] = {}
    try:
        for _ in range(shard.stop - shard.start):
            built = next(results)
            clock = time.perf_counter()
            writer.add(built)
            result.seconds["write"] += time.perf_counter() - clock
            rejections.update(built.rejections)
            for key, value in built.stats.items():
                stats[key] = stats.get(key, 0.0) + value
            for stage, seconds in built.seconds.items():
                result.seconds[stage] += seconds
            task = result.per_task.setdefault(shard.task, {"items": 0, "seconds": 0.0})
            task["items"] += 1
            task["seconds"] += sum(built.seconds.values())
            result.items_built += 1
            bar.update(1)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    # The shard's record is written last: its presence is what marks the shard as done.
    write_json_atomic(out / STATE_DIR / "shards" / f"{shard.key}.json",
                      {"rows": shard.stop - shard.start, "rejections": dict(sorted(rejections.items())),
                       "stats_sum": dict(sorted(stats.items()))})


def _results(items: list[PlanItem], resolutions: tuple[int, ...], config_hash: str, workers: int) -> Generator[BuiltItem, None, None]:
    """Built items in plan order; with workers > 1 a bounded window runs ahead in a pool."""
    if workers <= 1:
        reuse_large_buffers()
        for item in items:
            yield build_item(item, resolutions, config_hash)
        return
    context = multiprocessing.get_context("forkserver")
    pool = context.Pool(workers, initializer=_init_worker)
    try:
        source = iter(items)
        pending = deque(pool.apply_async(build_item, (item, resolutions, config_hash))
                        for item in islice(source, 4 * workers))
        while pending:
            built = pending.popleft().get()
            for item in islice(source, 1):
                pending.append(pool.apply_async(build_item, (item, resolutions, config_hash)))
            yield built
    finally:
        pool.terminate()
        pool.join()


def _init_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the pool
    reuse_large_buffers()


def _finish(recipe: Recipe, out: Path, config_hash: str, shards: list[Shard], progress: bool) -> None:
    state = out / STATE_DIR
    steps = tqdm(total=len(recipe.tasks) + 2, desc="card, gallery, manifest", disable=not progress, dynamic_ncols=True)
    galleries = []
    for task in recipe.tasks:
        examples = []
        for difficulty in task.difficulties:
            first = next(s for s in shards if s.task == task.task and s.difficulty == difficulty and s.number == 0)
            res = MAIN_RESOLUTION if MAIN_RESOLUTION in recipe.resolutions else recipe.resolutions[-1]
            table = pq.ParquetFile(out / first.filename(res)).read_row_group(0, columns=[
                "puzzle", "solution", "distractors", "answer_index"]).slice(0, 1).to_pylist()[0]
            examples.append({
                "puzzle": table["puzzle"]["bytes"],
                "solution": table["solution"]["bytes"],
                "distractors": [d["bytes"] for d in table["distractors"]],
                "answer_index": table["answer_index"],
            })
        path = gallery_path(task.task)
        write_bytes_atomic(out / path, gallery_sheet(examples))
        galleries.append(path)
        steps.update(1)

    counts: dict[str, dict[str, int]] = {}
    sizes: dict[str, dict[str, int]] = {}
    for task in recipe.tasks:
        for res in main_first(recipe.resolutions):
            name = config_name(task.task, res)
            counts[name] = {d: task.count for d in task.difficulties}
            sizes[name] = {d: sum(p.stat().st_size for p in (out / "data" / name).glob(f"{d}-*.parquet"))
                           for d in task.difficulties}
    write_bytes_atomic(out / CARD_FILE, render_card(recipe, config_hash, counts, sizes, galleries).encode("utf-8"))
    steps.update(1)

    rejections: dict[str, Counter] = {}
    stats: dict[str, dict[str, dict[str, float]]] = {}
    for shard in shards:
        record = json.loads((state / "shards" / f"{shard.key}.json").read_text(encoding="utf-8"))
        rejections.setdefault(shard.task, Counter()).update(record["rejections"])
        bucket = stats.setdefault(shard.task, {}).setdefault(shard.difficulty, {})
        for key, value in record["stats_sum"].items():
            bucket[key] = bucket.get(key, 0.0) + value
    for task in recipe.tasks:
        for bucket in stats.get(task.task, {}).values():
            for key in bucket:
                bucket[key] = round(bucket[key] / task.count, 4)
    files = sorted(p for p in out.rglob("*") if p.is_file() and STATE_DIR not in p.relative_to(out).parts
                   and p.name != MANIFEST_FILE)
    manifest = {
        "name": recipe.name,
        "version": recipe.version,
        "package_version": vrforge.__version__,
        "config_hash": config_hash,
        "recipe": recipe.normalised(),
        "generators": {t.task: get_task(t.task).version for t in recipe.tasks},
        "rows": counts,
        "rejections": {task: dict(sorted(c.items())) for task, c in sorted(rejections.items())},
        "difficulty_stats": stats,
        # the card as built, before `vrforge audit` writes its figures into it
        "card_unaudited_sha256": sha256_file(out / CARD_FILE),
        "files": {p.relative_to(out).as_posix(): {"sha256": sha256_file(p), "bytes": p.stat().st_size} for p in files},
    }
    write_json_atomic(out / MANIFEST_FILE, manifest)
    shutil.rmtree(state)
    steps.update(1)
    steps.close()
