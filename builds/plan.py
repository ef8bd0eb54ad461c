"""The plan: one item per task x difficulty x index, grouped into shards."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from vrforge.builds.recipe import Recipe
from vrforge.schemas.layout import config_name, item_id, shard_path


@dataclass(frozen=True)
class PlanItem:
    task: str
    difficulty: str
    index: int
    recipe_seed: int
    # The level's config; None: the task's preset of the name ``difficulty``. Not part of the
    # item's identity: the seed derives from (recipe seed, task, level name, index) alone.
    config: Any = field(default=None, compare=False)

    @property
    def id(self) -> str:
        return item_id(self.task, self.difficulty, self.index)


@dataclass(frozen=True)
class Shard:
    """Rows [start, stop) of one (task, difficulty): one parquet file per resolution."""

    task: str
    difficulty: str
    number: int
    of: int
    start: int
    stop: int
    config: Any = field(default=None, compare=False)  # the level's config (None: the preset of that name)
    resolutions: tuple[int, ...] = ()  # the level's resolutions: one parquet file each

    @property
    def key(self) -> str:
        return f"{self.task}-{self.difficulty}-{self.number:05d}"

    def filename(self, resolution: int) -> str:
        return shard_path(config_name(self.task, resolution), self.difficulty, self.number, self.of)

    def items(self, recipe_seed: int) -> list[PlanItem]:
        return [PlanItem(self.task, self.difficulty, i, recipe_seed, self.config) for i in range(self.start, self.stop)]


def iter_shards(recipe: Recipe) -> Iterator[Shard]:
    """The shards in plan order, made one at a time: a plan of millions of puzzles is never held."""
    for task in recipe.tasks:
        of = -(-task.count // recipe.rows_per_shard)
        for level in task.levels:
            for number in range(of):
                start = number * recipe.rows_per_shard
                yield Shard(task.task, level.name, number, of, start, min(task.count, start + recipe.rows_per_shard),
                            level.config, level.resolutions)
