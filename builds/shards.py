"""Shard writing: rows stream into staged parquet files, committed together, then the shard's record."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from vrforge.builds.item import STAGES, BuiltItem
from vrforge.builds.plan import Shard
from vrforge.builds.storage import Store
from vrforge.schemas.tacit import tacit_features

ROWS_PER_ROW_GROUP = 10
STATE_DIR = ".build"  # an unfinished build's state; removed when the manifest is written
SHARD_RECORDS = f"{STATE_DIR}/shards"  # one record per committed shard: its presence marks the shard done


class ShardWriter:
    """Writes one shard (one parquet file per resolution); nothing is visible until ``commit``."""

    def __init__(self, store: Store, shard: Shard, resolutions: tuple[int, ...]) -> None:
        self.store = store
        self.shard = shard
        self.features = tacit_features()
        self.schema = self.features.arrow_schema
        self.targets = {res: shard.filename(res) for res in resolutions}
        self.staging = {res: store.staging_path(rel) for res, rel in self.targets.items()}
        self.buffers: dict[int, list[dict]] = {res: [] for res in resolutions}
        self.writers = {res: pq.ParquetWriter(path, self.schema, compression="zstd") for res, path in self.staging.items()}

    def add(self, built: BuiltItem) -> None:
        for res, images in built.images.items():
            row = dict(built.fields)
            row["puzzle"] = {"bytes": images["puzzle"], "path": None}
            row["solution"] = {"bytes": images["solution"], "path": None}
            row["distractors"] = [{"bytes": png, "path": None} for png in images["distractors"]]
            self.buffers[res].append(self.features.encode_example(row))
            if len(self.buffers[res]) >= ROWS_PER_ROW_GROUP:
                self._flush(res)

    def _flush(self, res: int) -> None:
        if self.buffers[res]:
            self.writers[res].write_table(pa.Table.from_pylist(self.buffers[res], schema=self.schema))
            self.buffers[res] = []

    def commit(self) -> None:
        for res, writer in self.writers.items():
            self._flush(res)
            writer.close()
        for res, rel in self.targets.items():
            self.store.commit_staged(self.staging[res], rel)

    def abort(self) -> None:
        for writer in self.writers.values():
            with contextlib.suppress(Exception):  # best effort while unwinding an interrupt
                writer.close()
        for path in self.staging.values():
            path.unlink(missing_ok=True)


@dataclass
class ShardReport:
    """What building one shard recorded: its commit marker's content plus timings."""

    key: str
    task: str
    rows: int
    record: dict[str, Any]  # rejections, stats_sum, files (sha256 and bytes of each committed file)
    seconds: dict[str, float]


def write_shard(store: Store, shard: Shard, resolutions: tuple[int, ...], built_items: Iterable[BuiltItem],
                on_item: Callable[[int], Any] | None = None) -> ShardReport:
    """Write one shard's rows (in plan order), commit its files, then its record (the commit marker)."""
    writer = ShardWriter(store, shard, resolutions)
    rejections: Counter = Counter()
    stats: dict[str, float] = {}
    seconds = dict.fromkeys((*STAGES, "write"), 0.0)
    rows = 0
    try:
        for built in built_items:
            clock = time.perf_counter()
            writer.add(built)
            seconds["write"] += time.perf_counter() - clock
            rejections.update(built.rejections)
            for key, value in built.stats.items():
                stats[key] = stats.get(key, 0.0) + value
            for stage, spent in built.seconds.items():
                seconds[stage] += spent
            rows += 1
            if on_item:
                on_item(1)
        clock = time.perf_counter()
        writer.commit()
        seconds["write"] += time.perf_counter() - clock
    except BaseException:
        writer.abort()
        raise
    if rows != shard.stop - shard.start:
        raise RuntimeError(f"shard {shard.key}: {rows} rows built, {shard.stop - shard.start} planned")
    # Each committed file's hash is taken here, where it was written, so the manifest never reads
    # the data back (the output may be a remote store).
    files = {rel: {"sha256": store.sha256(rel), "bytes": store.size(rel)} for rel in writer.targets.values()}
    record = {"rows": rows, "rejections": dict(sorted(rejections.items())), "stats_sum": dict(sorted(stats.items())),
              "files": files}
    store.write_json(f"{SHARD_RECORDS}/{shard.key}.json", record)
    return ShardReport(shard.key, shard.task, rows, record, seconds)
