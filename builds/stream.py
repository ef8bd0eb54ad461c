"""Puzzles on the fly for training: the released rows of given seeds, without writing a release.

A row here is exactly the row a release built from the same recipe holds at that resolution
(same seed derivation, same acceptance loop, same PNG bytes, same ``config_hash``), so a model
trained on streamed puzzles and one trained on the release see the same data.

Two forms:
- ``iterable_dataset``: a ``datasets.IterableDataset``. Its blocks of indices are its shards,
  so ``torch.utils.data.DataLoader`` workers each take their own blocks and
  ``datasets.distributed.split_dataset_by_node`` splits them between ranks.
- ``torch_dataset``: a ``torch.utils.data.IterableDataset`` that splits the indices itself by
  rank (``RANK`` / ``WORLD_SIZE`` or arguments) and data-loader worker, round robin, so every
  index is produced exactly once across all workers of all processes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from vrforge.builds.curriculum import Curriculum
from vrforge.builds.item import build_item
from vrforge.builds.plan import PlanItem
from vrforge.builds.recipe import Recipe, RecipeError
from vrforge.registry import get_task
from vrforge.schemas.layout import RESOLUTIONS
from vrforge.schemas.tacit import tacit_features

DEFAULT_BLOCK = 16  # indices per datasets shard: small enough to spread over loader workers


@dataclass(frozen=True)
class PuzzleSource:
    """Which puzzles: (task, level, indices [start, stop)) under a recipe seed and config hash.

    ``difficulty`` is a level name, or a ``Curriculum`` that gives each index its level.
    Pass ``recipe`` to reproduce a release's rows exactly (its seed, config hash and levels); without
    one, rows carry ``config_hash`` "stream" and the recipe seed given, and a level name is a preset.
    """

    task: str
    difficulty: str | Curriculum
    start: int
    stop: int
    resolution: int = 1024
    recipe_seed: int = 0
    config_hash: str = "stream"
    config: Any = None  # the level's config when it is not the task's preset of that name

    @classmethod
    def from_recipe(cls, recipe: Recipe, task: str, difficulty: str | Curriculum, start: int, stop: int,
                    resolution: int = 1024) -> PuzzleSource:
        levels = recipe.task(task).levels
        if isinstance(difficulty, Curriculum):
            configs = {level.name: level.config for level in levels}
            curriculum = Curriculum(difficulty.stages, {**configs, **difficulty.configs})
            return cls(task, curriculum, start, stop, resolution, recipe.seed, recipe.config_hash())
        try:
            level = next(lv for lv in levels if lv.name == difficulty)
        except StopIteration:
            raise RecipeError(f"recipe {recipe.name!r} has no level {difficulty!r} of {task} "
                              f"(choose from {', '.join(lv.name for lv in levels)})") from None
        return cls(task, difficulty, start, stop, resolution, recipe.seed, recipe.config_hash(), level.config)

    def level_of(self, index: int) -> tuple[str, Any]:
        """(level name, config) of index ``index``."""
        if isinstance(self.difficulty, Curriculum):
            name = self.difficulty.level(self.recipe_seed, self.task, index)
            return name, self.difficulty.config(self.task, name)
        return self.difficulty, self.config if self.config is not None else get_task(self.task).config(self.difficulty)

    def validate(self) -> None:
        if isinstance(self.difficulty, Curriculum):
            self.difficulty.validate(self.task)
        elif self.config is None:
            get_task(self.task).config(self.difficulty)  # unknown task or difficulty: one clear error
        if not 0 <= self.start <= self.stop:
            raise ValueError(f"need 0 <= start <= stop, got [{self.start}, {self.stop})")
        if self.resolution not in RESOLUTIONS:
            raise ValueError(f"unsupported resolution {self.resolution} (choose from {', '.join(map(str, RESOLUTIONS))})")


def iter_rows(source: PuzzleSource, indices: Sequence[int] | None = None) -> Iterator[dict[str, Any]]:
    """Encoded rows (images as ``{"bytes", "path"}``) for ``indices`` (default: the whole range)."""
    source.validate()
    features = tacit_features()
    for index in range(source.start, source.stop) if indices is None else indices:
        level, config = source.level_of(index)
        built = build_item(PlanItem(source.task, level, index, source.recipe_seed, config),
                           (source.resolution,), source.config_hash)
        images = built.images[source.resolution]
        row = dict(built.fields)
        row["puzzle"] = {"bytes": images["puzzle"], "path": None}
        row["solution"] = {"bytes": images["solution"], "path": None}
        row["distractors"] = [{"bytes": png, "path": None} for png in images["distractors"]]
        yield features.encode_example(row)


def _blocks(source: PuzzleSource, block: int) -> list[tuple[int, int]]:
    return [(start, min(source.stop, start + block)) for start in range(source.start, source.stop, block)]


def _generate_blocks(source: PuzzleSource, blocks: list[tuple[int, int]]) -> Iterator[dict[str, Any]]:
    for start, stop in blocks:
        yield from iter_rows(source, range(start, stop))


def iterable_dataset(source: PuzzleSource, block: int = DEFAULT_BLOCK):
    """A ``datasets.IterableDataset`` of the rows (images decode to PIL like a loaded release)."""
    from datasets import IterableDataset

    source.validate()
    return IterableDataset.from_generator(_generate_blocks, features=tacit_features(),
                                          gen_kwargs={"source": source, "blocks": _blocks(source, block)})


def partition(indices: range, rank: int, world_size: int, worker: int, workers: int) -> range:
    """The indices one data-loader worker of one rank produces: every ``world_size * workers``-th."""
    if not (0 <= rank < world_size and 0 <= worker < workers):
        raise ValueError(f"rank {rank} of {world_size}, worker {worker} of {workers}: out of range")
    slot = rank * workers + worker
    return indices[slot::world_size * workers]


def torch_dataset(source: PuzzleSource, rank: int | None = None, world_size: int | None = None):
    """A ``torch.utils.data.IterableDataset`` yielding each index exactly once across ranks and workers.

    ``rank`` / ``world_size`` default to the ``RANK`` / ``WORLD_SIZE`` environment variables
    (set by torchrun and accelerate), else one process.
    """
    import torch.utils.data

    source.validate()
    this_rank: int = int(os.environ.get("RANK", 0)) if rank is None else rank
    ranks: int = int(os.environ.get("WORLD_SIZE", 1)) if world_size is None else world_size

    class PuzzleStream(torch.utils.data.IterableDataset):
        def __len__(self) -> int:
            return len(partition(range(source.start, source.stop), this_rank, ranks, 0, 1))

        def __iter__(self) -> Iterator[dict[str, Any]]:
            info = torch.utils.data.get_worker_info()
            worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
            yield from iter_rows(source, partition(range(source.start, source.stop), this_rank, ranks, worker, workers))

    return PuzzleStream()
