"""Curricula for training: which level each streamed index is drawn from.

A curriculum is a list of stages over the stream's indices. Each stage runs up to an index
(exclusive; the last may run on) and draws every index's level from its weights, with a
generator seeded by (recipe seed, task, index) alone, so the schedule is the same for any
number of data-loader workers, ranks or restarts. The row at (level, index) is the row a
build of that level holds at that index: a streamed curriculum equals building the same rows.

Two ways to write one:
- over levels: ``Curriculum.over_levels([(2000, "easy"), (6000, {"easy": 0.3, "medium": 0.7}), (None, "hard")])``;
- over one parameter's values: ``Curriculum.over_parameter("maze", "hard", "size", [8, 12, 16], every=1000)``
  makes a level per value (named ``size8``, ``size12``, ...) from the preset ``hard``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vrforge.params import ParamError, level_config
from vrforge.registry import get_task
from vrforge.schemas.layout import LEVEL_NAME
from vrforge.seeding import derive_seed, item_rng

StageSpec = tuple[int | None, str | Mapping[str, float]]


@dataclass(frozen=True)
class Stage:
    until: int | None  # first index past the stage; None: every later index
    levels: tuple[str, ...]
    weights: tuple[float, ...]  # summing to 1


@dataclass(frozen=True)
class Curriculum:
    stages: tuple[Stage, ...]
    # Level name -> its config, for levels that are not the task's presets (None: the preset).
    configs: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def over_levels(cls, stages: Sequence[StageSpec], configs: Mapping[str, Any] | None = None) -> Curriculum:
        """Stages of (until, level) or (until, {level: weight}); ValueError (one line) for a bad schedule."""
        built: list[Stage] = []
        previous = 0
        for number, (until, levels) in enumerate(stages):
            if until is not None and (isinstance(until, bool) or not isinstance(until, int) or until <= previous):
                raise ValueError(f"stage {number}: 'until' must be an index above {previous}, got {until!r}")
            if until is None and number != len(stages) - 1:
                raise ValueError(f"stage {number}: only the last stage may run on (until None)")
            weights = {levels: 1.0} if isinstance(levels, str) else dict(levels)
            if not weights or any(not isinstance(w, (int, float)) or w < 0 for w in weights.values()) \
                    or sum(weights.values()) <= 0:
                raise ValueError(f"stage {number}: weights must be non-negative numbers with a positive sum")
            for name in weights:
                if not isinstance(name, str) or not LEVEL_NAME.match(name):
                    raise ValueError(f"stage {number}: bad level name {name!r}")
            total = float(sum(weights.values()))
            built.append(Stage(until, tuple(weights), tuple(w / total for w in weights.values())))
            previous = until or previous
        if not built:
            raise ValueError("a curriculum needs at least one stage")
        return cls(tuple(built), dict(configs or {}))

    @classmethod
    def over_parameter(cls, task: str, preset: str, name: str, values: Sequence[Any], every: int) -> Curriculum:
        """One stage of ``every`` indices per value of parameter ``name``, each a level made from
        ``preset`` with that value (the last value runs on)."""
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"'every' must be a positive integer, got {every!r}")
        if not values:
            raise ValueError("need at least one parameter value")
        spec = get_task(task)
        configs, stages = {}, []
        for position, value in enumerate(values):
            level = re.sub(r"[^a-z0-9]", "", f"{name}{value}".lower())
            try:
                configs[level] = level_config(spec.difficulties, preset, {name: value})
            except ParamError as exc:
                raise ValueError(f"{task} {name}={value!r}: {exc}") from None
            stages.append(((position + 1) * every if position < len(values) - 1 else None, level))
        return cls.over_levels(stages, configs)

    def level(self, recipe_seed: int, task: str, index: int) -> str:
        """The level of stream index ``index``."""
        for stage in self.stages:
            if stage.until is None or index < stage.until:
                break
        if len(stage.levels) == 1:
            return stage.levels[0]
        rng: np.random.Generator = item_rng(derive_seed(recipe_seed, task, "curriculum", index))
        return stage.levels[int(rng.choice(len(stage.levels), p=np.asarray(stage.weights)))]

    def config(self, task: str, level: str) -> Any:
        """The config of ``level``: the curriculum's own, else the task's preset of that name."""
        return self.configs[level] if level in self.configs else get_task(task).config(level)

    def validate(self, task: str) -> None:
        for stage in self.stages:
            for level in stage.levels:
                self.config(task, level)  # an unknown level: one clear error
