"""The build: plan -> shards of items (local processes or a Dask cluster) -> gallery, card, manifest.

Items are independent and a shard's rows are written in plan order, so the folder is
byte-identical for any number of workers and either executor. Shards are the unit of work and of
resumption: a shard's files are committed first and its record under ``.build/shards`` last,
so a shard with a record is never rebuilt and nothing half-written is ever visible. The output
is any location ``builds.storage.Store`` opens: a local folder or an fsspec URL.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow.parquet as pq
from tqdm import tqdm

import vrforge
from vrforge.builds.executors import Executor, GalleryBlocks, LocalExecutor, gallery_resolution
from vrforge.builds.item import STAGES
from vrforge.builds.plan import Shard, iter_shards
from vrforge.builds.recipe import Recipe
from vrforge.builds.shards import SHARD_RECORDS, STATE_DIR, ShardReport
from vrforge.builds.storage import Store, open_store
from vrforge.cards.card import render_card
from vrforge.cards.gallery import Block, compose_sheet, gallery_block
from vrforge.registry import get_task
from vrforge.schemas.layout import CARD_FILE, MANIFEST_FILE, config_name, gallery_path, main_first


class BuildError(RuntimeError):
    """A build that cannot start or go on; the message is one line for the user."""


@dataclass
class BuildResult:
    out: str
    items_built: int = 0
    shards_skipped: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys((*STAGES, "write", "finish"), 0.0))
    per_task: dict[str, dict[str, float]] = field(default_factory=dict)  # task -> {"items", "seconds"}
    wall: float = 0.0
    already_complete: bool = False

    def add(self, report: ShardReport) -> None:
        self.items_built += report.rows
        for stage, seconds in report.seconds.items():
            self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds
        task = self.per_task.setdefault(report.task, {"items": 0, "seconds": 0.0})
        task["items"] += report.rows
        task["seconds"] += sum(s for stage, s in report.seconds.items() if stage in STAGES)


def build(recipe: Recipe, out: Any, workers: int = 1, progress: bool = True, executor: Executor | None = None,
          storage_options: dict[str, Any] | None = None) -> BuildResult:
    """Build ``recipe`` into ``out`` (a path, an fsspec URL or a ``Store``); resumes an unfinished build."""
    store = open_store(out, storage_options)
    started = time.perf_counter()
    config_hash = recipe.config_hash()
    result = BuildResult(out=store.location)
    if _check_existing(store, config_hash):
        result.already_complete = True
        return result
    store.write_json(f"{STATE_DIR}/state.json", {"config_hash": config_hash, "recipe": recipe.normalised()})
    store.remove_stale_temporaries("data")  # left by a killed writer; their shard was never committed

    done = store.names(SHARD_RECORDS)
    total = sum(s.stop - s.start for s in iter_shards(recipe) if f"{s.key}.json" not in done)
    result.shards_skipped = len(done)
    todo = (s for s in iter_shards(recipe) if f"{s.key}.json" not in done)
    bar = tqdm(total=total, desc=f"build {recipe.name}", unit="puzzle", disable=not progress, dynamic_ncols=True)
    runner = executor or LocalExecutor(workers)
    try:
        for report in runner.run(store, todo, recipe.seed, recipe.resolutions, config_hash, bar.update):
            result.add(report)
    finally:
        bar.close()

    clock = time.perf_counter()
    store.remove_stale_temporaries("data")  # left by attempts that died (their shard was rebuilt elsewhere)
    _finish(recipe, store, config_hash, progress, getattr(runner, "gallery_blocks", {}))
    result.seconds["finish"] += time.perf_counter() - clock
    result.wall = time.perf_counter() - started
    return result


def _check_existing(store: Store, config_hash: str) -> bool:
    """True when the store already holds this exact build; raises if it holds anything else."""
    if store.exists(MANIFEST_FILE):
        recorded = store.read_json(MANIFEST_FILE).get("config_hash")
        if recorded == config_hash:
            return True
        raise BuildError(f"{store.location} holds a different build (config hash {str(recorded)[:12]}); choose another --out")
    if store.exists(f"{STATE_DIR}/state.json"):
        if store.read_json(f"{STATE_DIR}/state.json").get("config_hash") != config_hash:
            raise BuildError(f"{store.location} holds an unfinished build of another recipe; choose another --out or delete it")
        return False
    if not store.is_empty():
        raise BuildError(f"{store.location} exists and is not empty; choose another --out")
    return False


def _finish(recipe: Recipe, store: Store, config_hash: str, progress: bool, blocks: GalleryBlocks) -> None:
    """Gallery, card and manifest. ``blocks``: the gallery tiles the workers made as they built
    each level's first item; a level without them (its first shard built by an earlier, resumed
    run) is read back from its shard."""
    steps = tqdm(total=len(recipe.tasks) + 2, desc="card, gallery, manifest", disable=not progress, dynamic_ncols=True)
    galleries = []
    for task in recipe.tasks:
        sheet = [blocks.get((task.task, level.name)) or _gallery_block(
                     store, Shard(task.task, level.name, 0, _shard_count(recipe, task.count), 0, 0),
                     gallery_resolution(recipe.resolutions, level.resolutions)) for level in task.levels]
        path = gallery_path(task.task)
        store.write_bytes(path, compose_sheet(sheet))
        galleries.append(path)
        steps.update(1)

    rejections: dict[str, Counter] = {}
    stats: dict[str, dict[str, dict[str, float]]] = {}
    files: dict[str, dict[str, Any]] = {}
    for shard in iter_shards(recipe):
        record = store.read_json(f"{SHARD_RECORDS}/{shard.key}.json")
        rejections.setdefault(shard.task, Counter()).update(record["rejections"])
        bucket = stats.setdefault(shard.task, {}).setdefault(shard.difficulty, {})
        for key, value in record["stats_sum"].items():
            bucket[key] = bucket.get(key, 0.0) + value
        files.update(record["files"])
    for task in recipe.tasks:
        for bucket in stats.get(task.task, {}).values():
            for key in bucket:
                bucket[key] = round(bucket[key] / task.count, 4)

    counts: dict[str, dict[str, int]] = {}
    sizes: dict[str, dict[str, int]] = {}
    for task in recipe.tasks:
        for res in main_first(recipe.resolutions):
            name = config_name(task.task, res)
            counts[name] = {d: task.count for d in task.levels_at(res)}
            sizes[name] = {d: sum(entry["bytes"] for rel, entry in files.items() if rel.startswith(f"data/{name}/{d}-"))
                           for d in task.levels_at(res)}
    card = render_card(recipe, config_hash, counts, sizes, galleries, stats).encode("utf-8")
    store.write_bytes(CARD_FILE, card)
    steps.update(1)

    for rel in (*galleries, CARD_FILE):
        files[rel] = {"sha256": store.sha256(rel), "bytes": store.size(rel)}
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
        "card_unaudited_sha256": files[CARD_FILE]["sha256"],
        "files": dict(sorted(files.items())),
    }
    store.write_json(MANIFEST_FILE, manifest)
    store.remove_tree(STATE_DIR)
    steps.update(1)
    steps.close()


def _shard_count(recipe: Recipe, count: int) -> int:
    return -(-count // recipe.rows_per_shard)


def _gallery_block(store: Store, first: Shard, resolution: int) -> Block:
    return gallery_block(_gallery_example(store, first, resolution))


def _gallery_example(store: Store, first: Shard, resolution: int) -> dict[str, Any]:
    with store.open(first.filename(resolution)) as handle:
        row = pq.ParquetFile(handle).read_row_group(0, columns=["puzzle", "solution", "distractors", "answer_index"]) \
            .slice(0, 1).to_pylist()[0]
    return {"puzzle": row["puzzle"]["bytes"], "solution": row["solution"]["bytes"],
            "distractors": [d["bytes"] for d in row["distractors"]], "answer_index": row["answer_index"]}

