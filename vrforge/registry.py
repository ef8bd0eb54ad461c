"""The task registry: every TACIT task registers one complete ``TaskSpec`` under a unique name.

A ``TaskSpec`` is everything the system knows about a task: how to generate a puzzle, how
to draw it, how to verify an answer image, the JSON Schema of its ``meta``, the instruction
the generative-track runners give a model, the answer hint of the discriminative prompt, the
strict (similarity) mode where the task has one and the headline difficulty statistic the
audit expects to grow. ``register_task`` refuses a spec that lacks any of it, in one line.

Tasks come from two places: every module of ``vrforge.generators.tacit`` (each registers its
task on import), and installed packages that declare an entry point in the group
``vrforge.tasks`` (the entry point names a module that registers on import, or a
``TaskSpec``). Both then appear in ``vrforge tasks``, recipes, builds, audits and runners.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from importlib import metadata, resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np

from vrforge.answer_tools import AnswerTools
from vrforge.errors import UserError
from vrforge.imageio import UnusableImage, load_rgb
from vrforge.params import RESERVED_LEVEL_KEYS
from vrforge.schemas.layout import DIFFICULTIES, LEVEL_NAME
from vrforge.seeding import derive_seed, item_rng
from vrforge.types import Puzzle, RejectedPuzzle, Verdict

__all__ = ["DIFFICULTIES", "ENTRY_POINT_GROUP", "MAX_ATTEMPTS", "StrictMode", "TaskSpec", "TaskSpecError", "UnknownTask",
           "accepted_attempt", "accepted_puzzle", "all_tasks", "get_task", "meta_errors", "register_task"]

# Every module in this package registers one task on import: adding a task is adding a module.
TASK_PACKAGE = "vrforge.generators.tacit"
# Installed packages add tasks through entry points in this group.
ENTRY_POINT_GROUP = "vrforge.tasks"
# Attempts (each with its own derived seed) before an item counts as a generator failure.
MAX_ATTEMPTS = 25
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")  # a config name, a folder name and a Python identifier


class TaskSpecError(UserError, ValueError):
    """A task that cannot be registered (incomplete, duplicate, broken schema or entry point): one line."""


class UnknownTask(KeyError):
    pass


@dataclass(frozen=True)
class StrictMode:
    """What ``verify --strict`` adds to a task's verdict: the check ``check``, passed when
    ``score(meta, rgb)`` (a similarity of the answer to the task's own reference drawing,
    1 for a pixel-identical answer) is at least ``threshold``."""

    score: Callable[[Mapping[str, Any], np.ndarray], float]
    threshold: float
    check: str = "ssim"


@dataclass(frozen=True)
class TaskSpec:
    name: str
    domain: str
    version: str
    checks: tuple[str, ...]  # the violation names the verifier reports and distractors use
    difficulties: Mapping[str, Any]  # difficulty -> frozen config dataclass with validate()
    generate: Callable[[Any, np.random.Generator], Puzzle]  # raises RejectedPuzzle to be redrawn
    draw: Callable[[Any, Any], str]  # (meta, answer or None) -> SVG text
    verify: Callable[..., Verdict]  # (meta, image, puzzle=None) -> verdict; puzzle: the bare puzzle image to align with
    description: str = ""  # one sentence for `vrforge tasks` and the card
    instruction: str = ""  # what the generative track asks a model to draw on the puzzle
    answer_hint: str = ""  # what the answer image shows, for the discriminative track's question
    # The headline difficulty statistic (a key of Puzzle.stats) that must grow from easy to hard.
    difficulty_stat: str = ""
    # The JSON Schema of meta: a path or a parsed schema. None: the packaged
    # vrforge/schemas/json/<name>.meta.schema.json of a built-in task.
    meta_schema: str | os.PathLike[str] | Traversable | Mapping[str, Any] | None = None
    strict: StrictMode | None = None
    # The smallest features a solver must tell apart, as a share of the image width (so a
    # feature is share x width pixels at a resolution): config -> {feature: share}. The build
    # refuses a level and resolution where one falls below its floor in ``legibility_floors``.
    legibility: Callable[[Any], Mapping[str, float]] | None = None
    legibility_floors: Mapping[str, float] = dataclasses.field(default_factory=dict)  # feature -> least pixels
    # The rules a verifier relies on that the puzzle shows without words: rule -> where the picture shows it.
    conventions: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # How a person answers in the browser (``vrforge study``); None: by uploading a PNG of the answer.
    answer_tools: AnswerTools | None = None

    def config(self, difficulty: str) -> Any:
        if difficulty not in self.difficulties:
            raise KeyError(
                f"task {self.name!r} has no difficulty {difficulty!r} (choose from {', '.join(self.difficulties)})"
            )
        return self.difficulties[difficulty]

    def parameters(self) -> dict[str, dict[str, Any]]:
        return {d: dataclasses.asdict(c) for d, c in self.difficulties.items()}

    def feature_pixels(self, config: Any, width: int) -> dict[str, float]:
        """Each legibility feature's size in pixels at image ``width`` (empty for a task that declares none)."""
        if self.legibility is None:
            return {}
        return {name: round(share * width, 2) for name, share in self.legibility(config).items()}

    def illegible(self, config: Any, width: int) -> list[str]:
        """The features that fall below their floor at ``width``, in words (empty: legible)."""
        pixels = self.feature_pixels(config, width)
        return [f"{name} is {pixels[name]:g} px, below its floor of {floor:g} px"
                for name, floor in self.legibility_floors.items() if name in pixels and pixels[name] < floor]

    @cached_property
    def schema(self) -> dict[str, Any]:
        """The parsed JSON Schema of this task's ``meta``; TaskSpecError when it is missing or broken."""
        source = self.meta_schema
        if isinstance(source, Mapping):
            return dict(source)
        path: Traversable | Path
        if source is None:
            path = resources.files("vrforge.schemas") / "json" / f"{self.name}.meta.schema.json"
        elif isinstance(source, Traversable):
            path = source
        else:
            path = Path(source)
        try:
            schema = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise TaskSpecError(f"task {self.name!r}: no meta schema at {path}") from None
        except (OSError, ValueError) as exc:
            raise TaskSpecError(f"task {self.name!r}: cannot read its meta schema {path} ({exc})") from None
        if not isinstance(schema, dict):
            raise TaskSpecError(f"task {self.name!r}: its meta schema {path} is not a JSON object")
        return schema

    @cached_property
    def _meta_validator(self) -> jsonschema.Draft202012Validator:
        return jsonschema.Draft202012Validator(self.schema)

    def meta_errors(self, meta: Mapping[str, Any]) -> list[str]:
        """Every way ``meta`` breaks this task's schema (empty when it validates)."""
        return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in self._meta_validator.iter_errors(meta)]

    def check(self, meta: Mapping[str, Any], image: Any, strict: bool = False, puzzle: Any = None) -> Verdict:
        """The verdict on an answer image, aligned with the bare ``puzzle`` image when one is given
        (else with the puzzle drawn from meta); ``strict`` adds the task's similarity check on the
        aligned answer (it costs a reference render, so the default leaves it out)."""
        options = {} if puzzle is None else {"puzzle": puzzle}
        if not strict:
            return self.verify(meta, image, **options)
        if self.strict is None:
            raise ValueError(f"task {self.name!r} has no strict mode")
        try:
            rgb = load_rgb(image)
        except UnusableImage as exc:
            return Verdict.unusable(str(exc))
        verdict = self.verify(meta, rgb, **options)
        if not verdict.usable:
            return verdict
        # The similarity is taken in the puzzle's frame, where the verifier read the answer.
        if _ALIGNER is None:
            raise TaskSpecError(f"task {self.name!r}: a strict check needs vrforge.verifiers.registration imported")
        frame = _ALIGNER(self.name, meta, rgb, puzzle)
        try:
            if isinstance(frame, Verdict):
                raise ValueError(frame.reason)
            score: float | None = float(self.strict.score(meta, frame.image))
        except Exception:  # noqa: BLE001 - a failed reference render fails the strict check, never the call
            score = None
        checks = {**verdict.checks, self.strict.check: score is not None and score >= self.strict.threshold}
        return Verdict.from_checks(checks, details={**verdict.details, self.strict.check: score})


# Brings an answer into its puzzle's frame for a strict check (``answer_in_frame`` of
# verifiers/registration.py, which hands it over with ``set_aligner`` when imported, as every
# verifier that registers answers imports it). The verifiers sit above the registry, so the
# registry is handed it rather than importing it.
_ALIGNER: Callable[..., Any] | None = None


def set_aligner(function: Callable[..., Any]) -> Callable[..., Any]:
    """Use ``function(task, meta, rgb, puzzle) -> Registration | Verdict`` to align answers for strict checks."""
    global _ALIGNER
    _ALIGNER = function
    return function


_TASKS: dict[str, TaskSpec] = {}
_LOADED: set[str] = set()  # built-in modules and entry points already loaded


def _problems(spec: TaskSpec) -> list[str]:
    """What makes ``spec`` incomplete, in words."""
    problems = []
    if not isinstance(spec.name, str) or not _NAME.match(spec.name):
        problems.append("a name of lower-case letters, digits and underscores")
    for name in ("domain", "version", "description", "instruction", "answer_hint", "difficulty_stat"):
        if not isinstance(getattr(spec, name), str) or not getattr(spec, name).strip():
            problems.append(name)
    if not spec.checks or not all(isinstance(c, str) and c for c in spec.checks):
        problems.append("checks")
    for name in ("generate", "draw", "verify"):
        if not callable(getattr(spec, name)):
            problems.append(f"a callable {name}")
    missing = [d for d in DIFFICULTIES if d not in spec.difficulties]
    badly_named = [d for d in spec.difficulties if not isinstance(d, str) or not LEVEL_NAME.match(d)]
    if missing or badly_named:
        problems.append(f"difficulties {', '.join(DIFFICULTIES)}"
                        + (f" (level names are lower-case letters and digits, not {', '.join(map(repr, badly_named))})"
                           if badly_named else ""))
    if spec.legibility is not None and not callable(spec.legibility):
        problems.append("a callable legibility")
    if spec.strict is not None and not (callable(spec.strict.score) and 0 < spec.strict.threshold <= 1 and spec.strict.check):
        problems.append("a strict mode with a score, a threshold in (0, 1] and a check name")
    return problems


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add ``spec`` to the registry; TaskSpecError (one line) for an incomplete or duplicate task."""
    label = spec.name if isinstance(spec.name, str) and spec.name else "<unnamed>"
    if label in _TASKS:
        raise TaskSpecError(f"task {label!r} is already registered (by {_TASKS[label].generate.__module__})")
    problems = _problems(spec)
    if problems:
        raise TaskSpecError(f"task {label!r} is incomplete: it needs {'; '.join(problems)}")
    for difficulty, config in spec.difficulties.items():
        try:
            config.validate()
        except (AttributeError, ValueError, TypeError) as exc:
            raise TaskSpecError(f"task {label!r}: difficulty {difficulty!r} has an invalid config ({exc})") from None
        reserved = [f.name for f in dataclasses.fields(config) if f.name in RESERVED_LEVEL_KEYS]
        if reserved:
            raise TaskSpecError(f"task {label!r}: parameter name(s) {', '.join(reserved)} are reserved for recipes")
    try:
        jsonschema.Draft202012Validator.check_schema(spec.schema)
    except jsonschema.SchemaError as exc:
        raise TaskSpecError(f"task {label!r}: its meta schema is not a valid JSON Schema ({exc.message})") from None
    _TASKS[spec.name] = spec
    return spec


def _load_builtin() -> None:
    package = importlib.import_module(TASK_PACKAGE)
    for module in sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")):
        name = f"{TASK_PACKAGE}.{module}"
        if name not in _LOADED:
            importlib.import_module(name)
            _LOADED.add(name)


def _load_entry_points() -> None:
    for entry in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
        key = f"{ENTRY_POINT_GROUP}:{entry.name}={entry.value}"
        if key in _LOADED:
            continue
        _LOADED.add(key)  # a broken package is reported once, not on every lookup
        where = f"entry point {entry.name!r} ({entry.value})"
        try:
            loaded = entry.load()
        except TaskSpecError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of a third-party package is one line
            raise TaskSpecError(f"task package {where} failed to load: {type(exc).__name__}: {exc}") from None
        if isinstance(loaded, TaskSpec) and _TASKS.get(loaded.name) is not loaded:
            register_task(loaded)
        elif not isinstance(loaded, TaskSpec) and not hasattr(loaded, "__path__") and not hasattr(loaded, "__file__"):
            raise TaskSpecError(f"task package {where} names neither a module nor a TaskSpec")


def _load_all() -> None:
    _load_builtin()
    _load_entry_points()


def get_task(name: str) -> TaskSpec:
    if name in _TASKS:  # scanning the installed packages' entry points costs ~7 ms: a verifier calls this per answer
        return _TASKS[name]
    _load_all()
    if name not in _TASKS:
        raise UnknownTask(f"unknown task {name!r} (registered: {', '.join(sorted(_TASKS))})")
    return _TASKS[name]


def all_tasks() -> list[TaskSpec]:
    _load_all()
    return [_TASKS[name] for name in sorted(_TASKS)]


def accepted_attempt(task: str | TaskSpec, difficulty: str, index: int, seed: int = 0) -> tuple[Puzzle, int]:
    """The puzzle a build with recipe seed ``seed`` starts from for (task, difficulty, index), and
    how many attempts the generator rejected before it: each attempt has its own derived seed.

    The build may still redraw it when a rendering check fails (rare); tests and benchmarks
    that need "the puzzle of this task at these coordinates" take this one.
    """
    spec = get_task(task) if isinstance(task, str) else task
    config = spec.config(difficulty)
    for attempt in range(MAX_ATTEMPTS):
        try:
            return spec.generate(config, item_rng(derive_seed(seed, spec.name, difficulty, index, attempt))), attempt
        except RejectedPuzzle:
            continue
    raise RuntimeError(f"{spec.name} {difficulty} {index}: every one of {MAX_ATTEMPTS} attempts was rejected")


def accepted_puzzle(task: str | TaskSpec, difficulty: str, index: int, seed: int = 0) -> Puzzle:
    """The first puzzle the generator accepts for (task, difficulty, index) under recipe seed ``seed``."""
    return accepted_attempt(task, difficulty, index, seed)[0]


def meta_errors(task: str, meta: Mapping[str, Any]) -> list[str]:
    """Every way ``meta`` breaks the schema of ``task`` (empty when it validates)."""
    return get_task(task).meta_errors(meta)
