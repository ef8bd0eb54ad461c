"""Release recipes (TOML): what to build. Every mistake in one is reported as one line."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from vrforge.errors import UserError
from vrforge.params import ParamError, level_config
from vrforge.registry import TaskSpec, UnknownTask, get_task
from vrforge.schemas.layout import DIFFICULTIES, LEVEL_NAME, MAIN_RESOLUTION, MANIFEST_FILE, RESOLUTIONS

KNOWN_KEYS = {"name", "version", "seed", "license", "resolutions", "rows_per_shard", "tasks"}
TASK_KEYS = {"count", "difficulties", "levels"}


class RecipeError(UserError, ValueError):
    """A malformed recipe; the message is the one line the user sees."""


def recipe_header(data: dict[str, Any], source: str, kind: str, known: set[str]) -> tuple[str, str, str]:
    """(name, version, license) of a recipe of another ``kind`` of release (CF-World, reliance), after checking
    that it names only ``known`` keys."""
    unknown = sorted(set(data) - known)
    if unknown:
        raise RecipeError(f"{source}: unknown key(s) {', '.join(unknown)}")
    if data.get("kind") != kind:
        raise RecipeError(f"{source}: 'kind' must be \"{kind}\"")
    for key in ("name", "version"):
        if key not in data:
            raise RecipeError(f"{source}: missing required field '{key}'")
        if not isinstance(data[key], str) or not data[key].strip():
            raise RecipeError(f"{source}: '{key}' must be a non-empty string")
    license_ = data.get("license", "cc-by-4.0")
    if not isinstance(license_, str) or not license_.strip():
        raise RecipeError(f"{source}: 'license' must be a non-empty string")
    return data["name"].strip(), data["version"].strip(), license_.strip()


def holds_build(out: Path, config_hash: str) -> bool:
    """True when the folder ``out`` holds the finished build of this config hash (its manifest says so), False
    when it holds no finished build; RecipeError when it holds another one."""
    manifest = out / MANIFEST_FILE
    if not manifest.exists():
        return False
    try:
        recorded = json.loads(manifest.read_text(encoding="utf-8")).get("config_hash")
    except (OSError, json.JSONDecodeError):
        recorded = None
    if recorded != config_hash:
        raise RecipeError(f"{out} holds a different build (config hash {str(recorded)[:12]}); choose another --out")
    return True


@dataclass(frozen=True)
class Level:
    """One split of a task: its name, the config its puzzles are generated from, the preset that
    config starts from and the resolutions it is released at (a subset of the recipe's)."""

    name: str
    config: Any
    preset: str
    resolutions: tuple[int, ...]

    def normalised(self) -> dict[str, Any]:
        return {"preset": self.preset, "params": dataclasses.asdict(self.config), "resolutions": list(self.resolutions)}


@dataclass(frozen=True)
class TaskRecipe:
    task: str
    count: int  # puzzles per level
    levels: tuple[Level, ...]

    @property
    def difficulties(self) -> tuple[str, ...]:
        """The level names, in the recipe's order (easiest first): the splits."""
        return tuple(level.name for level in self.levels)

    def level(self, name: str) -> Level:
        for level in self.levels:
            if level.name == name:
                return level
        raise KeyError(f"task {self.task!r} has no level {name!r} (choose from {', '.join(self.difficulties)})")

    def levels_at(self, resolution: int) -> tuple[str, ...]:
        """The levels released at ``resolution``: the splits of that resolution's config."""
        return tuple(level.name for level in self.levels if resolution in level.resolutions)


@dataclass(frozen=True)
class Recipe:
    name: str
    version: str
    seed: int
    license: str
    resolutions: tuple[int, ...]
    rows_per_shard: int
    tasks: tuple[TaskRecipe, ...]

    def normalised(self) -> dict[str, Any]:
        """Plain sorted data: what the config hash and the manifest record."""
        return {
            "name": self.name,
            "version": self.version,
            "seed": self.seed,
            "license": self.license,
            "resolutions": list(self.resolutions),
            "rows_per_shard": self.rows_per_shard,
            "tasks": {t.task: {"count": t.count, "difficulties": list(t.difficulties),
                               "levels": {level.name: level.normalised() for level in t.levels}} for t in self.tasks},
        }

    def config_hash(self) -> str:
        """sha256 of the normalised recipe plus each task's generator version (never reprs)."""
        data = {"recipe": self.normalised(), "generators": {t.task: get_task(t.task).version for t in self.tasks}}
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def limited(self, limit: int | None) -> Recipe:
        if limit is None:
            return self
        if limit < 1:
            raise RecipeError(f"--limit must be a positive integer, got {limit}")
        return replace(self, tasks=tuple(replace(t, count=min(t.count, limit)) for t in self.tasks))

    def with_resolutions(self, resolutions: list[int] | None) -> Recipe:
        if not resolutions:
            return self
        chosen = parse_resolutions(resolutions, "--resolutions")
        tasks = []
        for task in self.tasks:
            levels = []
            for level in task.levels:
                kept = tuple(r for r in level.resolutions if r in chosen)
                if not kept:
                    raise RecipeError(f"--resolutions: level {level.name!r} of {task.task} is released only at "
                                      f"{', '.join(map(str, level.resolutions))} px")
                levels.append(replace(level, resolutions=kept))
            tasks.append(replace(task, levels=tuple(levels)))
        recipe = replace(self, resolutions=chosen, tasks=tuple(tasks))
        check_legibility(recipe, "--resolutions")
        return recipe

    def task(self, name: str) -> TaskRecipe:
        for task in self.tasks:
            if task.task == name:
                return task
        raise RecipeError(f"recipe {self.name!r} has no task {name!r}")


def parse_resolutions(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise RecipeError(f"{where} must be a non-empty list of {'/'.join(map(str, RESOLUTIONS))}")
    for item in value:
        if item not in RESOLUTIONS or isinstance(item, bool):
            raise RecipeError(f"{where}: unsupported resolution {item!r} (choose from {', '.join(map(str, RESOLUTIONS))})")
    if len(set(value)) != len(value):
        raise RecipeError(f"{where}: repeated resolution")
    return tuple(sorted(value))


def _positive_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RecipeError(f"{where} must be a positive integer, got {value!r}")
    return value


def read_recipe_toml(path: str | Path) -> dict[str, Any]:
    """A recipe file's TOML table; RecipeError (one line) when it is missing, unreadable or not TOML."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecipeError(f"recipe not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecipeError(f"cannot read recipe {path}: {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RecipeError(f"{path}: invalid TOML: {exc}") from None


def load_recipe(path: str | Path) -> Recipe:
    return parse_recipe(read_recipe_toml(path), str(path))


def parse_recipe(data: dict[str, Any], source: str = "recipe") -> Recipe:
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise RecipeError(f"{source}: unknown key(s) {', '.join(unknown)}")
    for key in ("name", "version", "seed", "tasks"):
        if key not in data:
            raise RecipeError(f"{source}: missing required field '{key}'")
    for key in ("name", "version"):
        if not isinstance(data[key], str) or not data[key].strip():
            raise RecipeError(f"{source}: '{key}' must be a non-empty string")
    seed = data["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise RecipeError(f"{source}: 'seed' must be a non-negative integer, got {seed!r}")
    license_ = data.get("license", "cc-by-4.0")
    if not isinstance(license_, str):
        raise RecipeError(f"{source}: 'license' must be a string")
    resolutions = parse_resolutions(data.get("resolutions", list(RESOLUTIONS)), f"{source}: 'resolutions'")
    rows_per_shard = _positive_int(data.get("rows_per_shard", 100), f"{source}: 'rows_per_shard'")
    tasks_table = data["tasks"]
    if not isinstance(tasks_table, dict) or not tasks_table:
        raise RecipeError(f"{source}: [tasks] must list at least one task, e.g. [tasks.maze]")
    tasks = []
    for name in sorted(tasks_table):
        entry = tasks_table[name]
        where = f"{source}: [tasks.{name}]"
        try:
            spec = get_task(name)
        except UnknownTask as exc:
            raise RecipeError(f"{where}: {exc.args[0]}") from None
        if not isinstance(entry, dict):
            raise RecipeError(f"{where} must be a table")
        extra = sorted(set(entry) - TASK_KEYS)
        if extra:
            raise RecipeError(f"{where}: unknown key(s) {', '.join(extra)}")
        if "count" not in entry:
            raise RecipeError(f"{where}: missing required field 'count'")
        count = _positive_int(entry["count"], f"{where} count")
        tasks.append(TaskRecipe(task=name, count=count, levels=_parse_levels(spec, entry, resolutions, where)))
    recipe = Recipe(
        name=data["name"].strip(),
        version=data["version"].strip(),
        seed=seed,
        license=license_,
        resolutions=resolutions,
        rows_per_shard=rows_per_shard,
        tasks=tuple(tasks),
    )
    check_legibility(recipe, source)
    return recipe


def _parse_levels(spec: TaskSpec, entry: dict[str, Any], resolutions: tuple[int, ...], where: str) -> tuple[Level, ...]:
    """The task's levels: ``difficulties`` lists them in order (presets by name, or levels defined
    under ``levels``); a ``[tasks.T.levels.NAME]`` table starts from ``preset`` (default: the preset
    of the same name) and overrides parameters. Without ``difficulties``: easy, medium, hard, then
    the defined levels in the order the recipe writes them."""
    tables = entry.get("levels", {})
    if not isinstance(tables, dict):
        raise RecipeError(f"{where}: 'levels' must be a table of levels, e.g. [tasks.{spec.name}.levels.expert]")
    defined = list(tables)
    names = entry.get("difficulties", [*DIFFICULTIES, *(n for n in defined if n not in DIFFICULTIES)])
    if not isinstance(names, list) or not names:
        raise RecipeError(f"{where}: 'difficulties' must be a non-empty list")
    if len(set(names)) != len(names):
        raise RecipeError(f"{where}: repeated difficulty")
    unlisted = [n for n in defined if n not in names]
    if unlisted:
        raise RecipeError(f"{where}: level(s) {', '.join(unlisted)} are defined but not listed in 'difficulties'")
    levels = []
    for name in names:
        if not isinstance(name, str) or not LEVEL_NAME.match(name):
            raise RecipeError(f"{where}: level name {name!r} must be lower-case letters and digits, starting with a letter")
        table = tables.get(name)
        if table is None:
            if name not in spec.difficulties:
                raise RecipeError(f"{where}: unknown difficulty {name!r} (choose from {', '.join(spec.difficulties)}, "
                                  f"or define it under [tasks.{spec.name}.levels.{name}])")
            levels.append(Level(name, spec.difficulties[name], name, resolutions))
            continue
        here = f"{where[:-1]}.levels.{name}]"
        if not isinstance(table, dict):
            raise RecipeError(f"{here} must be a table")
        overrides = dict(table)
        preset = overrides.pop("preset", name if name in spec.difficulties else None)
        if preset is None:
            raise RecipeError(f"{here}: a new level needs 'preset', the level it starts from "
                              f"(one of {', '.join(spec.difficulties)})")
        if not isinstance(preset, str):
            raise RecipeError(f"{here}: 'preset' must be a level name, got {preset!r}")
        level_resolutions = resolutions
        if "resolutions" in overrides:
            level_resolutions = parse_resolutions(overrides.pop("resolutions"), f"{here} 'resolutions'")
            outside = [r for r in level_resolutions if r not in resolutions]
            if outside:
                raise RecipeError(f"{here}: resolution(s) {', '.join(map(str, outside))} are not among the recipe's")
            if MAIN_RESOLUTION in resolutions and MAIN_RESOLUTION not in level_resolutions:
                raise RecipeError(f"{here}: 'resolutions' must include the main resolution {MAIN_RESOLUTION}")
        try:
            config = level_config(spec.difficulties, preset, overrides)
        except ParamError as exc:
            raise RecipeError(f"{here}: {exc}") from None
        levels.append(Level(name, config, preset, level_resolutions))
    return tuple(levels)


def check_legibility(recipe: Recipe, source: str) -> None:
    """RecipeError (one line) for the first level released at a resolution where one of its
    features is smaller than the task's floor: the build never writes an unreadable picture."""
    for task in recipe.tasks:
        spec = get_task(task.task)
        for level in task.levels:
            for resolution in level.resolutions:
                problems = spec.illegible(level.config, resolution)
                if problems:
                    legible = [r for r in RESOLUTIONS if r > resolution and not spec.illegible(level.config, r)]
                    hint = (f"release it at {legible[0]} px and up (resolutions = [...] in its level table)"
                            if legible else "choose smaller parameters")
                    raise RecipeError(f"{source}: {task.task} level {level.name!r} is illegible at {resolution} px "
                                      f"({'; '.join(problems)}); {hint}")
