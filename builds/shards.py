"""Parquet shard writing: rows stream into hidden temporary files, renamed when complete."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from vrforge.builds.item import BuiltItem
from vrforge.builds.plan import Shard
from vrforge.fileio import temporary_path
from vrforge.schemas.tacit import tacit_features

ROWS_PER_ROW_GROUP = 10


class ShardWriter:
    """Writes one shard (one parquet file per resolution); nothing is visible until ``commit``."""

    def __init__(self, out: Path, shard: Shard, resolutions: tuple[int, ...]) -> None:
        self.shard = shard
        self.features = tacit_features()
        self.schema = self.features.arrow_schema
        self.paths = {res: out / shard.filename(res) for res in resolutions}
        self.buffers: dict[int, list[dict]] = {res: [] for res in resolutions}
        self.writers: dict[int, pq.ParquetWriter] = {}
        for res, path in self.paths.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            self.writers[res] = pq.ParquetWriter(temporary_path(path), self.schema, compression="zstd")

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
        for path in self.paths.values():
            os.replace(temporary_path(path), path)

    def abort(self) -> None:
        for writer in self.writers.values():
            with contextlib.suppress(Exception):  # best effort while unwinding an interrupt
                writer.close()
        for path in self.paths.values():
            temporary_path(path).unlink(missing_ok=True)
