"""The task registry: every TACIT task registers one ``TaskSpec`` under a unique name."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vrforge.schemas.layout import DIFFICULTIES
from vrforge.types import Puzzle, Verdict

# Every module in this package registers one task on import: adding a task is adding a module.
TASK_PACKAGE = "vrforge.generators.tacit"


@dataclass(frozen=True)
class TaskSpec:
    name: str
    domain: str
    version: str
    checks: tuple[str, ...]
    difficulties: Mapping[str, Any]  # difficulty -> frozen config dataclass with validate()
    generate: Callable[[Any, np.random.Generator], Puzzle]
    draw: Callable[[Mapping[str, Any], Any], str]  # (meta, answer or None) -> SVG text
    verify: Callable[[Mapping[str, Any], Any], Verdict]
    description: str = ""
    # The headline difficulty statistic (a key of Puzzle.stats) that must grow from easy to
    # hard in a release; None: the audit asks that some statistic grows.
    difficulty_stat: str | None = None

    def config(self, difficulty: str) -> Any:
        if difficulty not in self.difficulties:
            raise KeyError(
                f"task {self.name!r} has no difficulty {difficulty!r} (choose from {', '.join(self.difficulties)})"
            )
        return self.difficulties[difficulty]

    def parameters(self) -> dict[str, dict[str, Any]]:
        return {d: dataclasses.asdict(c) for d, c in self.difficulties.items()}


_TASKS: dict[str, TaskSpec] = {}


class UnknownTask(KeyError):
    pass


def register_task(spec: TaskSpec) -> TaskSpec:
    if spec.name in _TASKS:
        raise ValueError(f"task {spec.name!r} is already registered")
    for difficulty, config in spec.difficulties.items():
        if difficulty not in DIFFICULTIES:
            raise ValueError(f"task {spec.name!r}: unknown difficulty {difficulty!r}")
        config.validate()
    _TASKS[spec.name] = spec
    return spec


def _load_all() -> None:
    package = importlib.import_module(TASK_PACKAGE)
    for module in sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")):
        importlib.import_module(f"{TASK_PACKAGE}.{module}")


def get_task(name: str) -> TaskSpec:
    _load_all()
    if name not in _TASKS:
        raise UnknownTask(f"unknown task {name!r} (registered: {', '.join(sorted(_TASKS))})")
    return _TASKS[name]


def all_tasks() -> list[TaskSpec]:
    _load_all()
    return [_TASKS[name] for name in sorted(_TASKS)]
