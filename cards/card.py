"""The dataset card (README.md) from the template: YAML with the ``configs:`` that
``datasets.load_dataset`` reads and ``dataset_info`` (features, split sizes), then prose."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from string import Template
from typing import Any, Protocol

import yaml

from vrforge.pickers import PICKERS, PROBE
from vrforge.registry import get_task
from vrforge.schemas.layout import config_name, main_first, split_glob
from vrforge.schemas.tacit import tacit_features
from vrforge.set_probes import LEARNERS


class CardTask(Protocol):
    @property
    def task(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def difficulties(self) -> tuple[str, ...]: ...
    @property
    def levels(self) -> Sequence[Any]: ...  # each with name, config, preset, resolutions

    def levels_at(self, resolution: int) -> tuple[str, ...]: ...


class CardRecipe(Protocol):
    """What the card reads of a build recipe (``vrforge.builds.recipe.Recipe``), named here so
    the card does not import the build system that calls it."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def license(self) -> str: ...
    @property
    def resolutions(self) -> tuple[int, ...]: ...
    @property
    def tasks(self) -> Sequence[CardTask]: ...


def size_category(rows: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if rows < limit:
            return label
    return "n>1M"


def card_configs(entries: Iterable[tuple[str, Any, Sequence[str]]], counts: Mapping[str, Mapping[str, int]],
                 sizes: Mapping[str, Mapping[str, int]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The card's ``configs`` (the first one the default) and ``dataset_info``, from
    (config name, features as a YAML list, splits) and the row counts and bytes per config and split."""
    configs: list[dict[str, Any]] = []
    infos: list[dict[str, Any]] = []
    for name, features, splits in entries:
        config: dict[str, Any] = {"config_name": name, "data_files": [{"split": s, "path": split_glob(name, s)} for s in splits]}
        if not configs:
            config["default"] = True
        configs.append(config)
        infos.append({"config_name": name, "features": features,
                      "splits": [{"name": s, "num_bytes": sizes[name][s], "num_examples": counts[name][s]} for s in splits]})
    return configs, infos


def pretty_name(recipe: CardRecipe) -> str:
    return f"TACIT {recipe.version}" if recipe.name == "tacit" else f"{recipe.name} {recipe.version}"


def card_metadata(recipe: CardRecipe, counts: dict[str, dict[str, int]], sizes: dict[str, dict[str, int]]) -> dict:
    """Licence, categories, one config per task x resolution (the first 1024 px one is the
    default) with its split globs, and ``dataset_info`` with features and split sizes."""
    features = tacit_features()._to_yaml_list()
    configs, infos = card_configs(((config_name(task.task, res), features, task.levels_at(res))
                                   for task in recipe.tasks for res in main_first(recipe.resolutions)), counts, sizes)
    puzzles = sum(t.count * len(t.difficulties) for t in recipe.tasks)
    return {
        "license": recipe.license,
        "pretty_name": pretty_name(recipe),
        "task_categories": ["image-to-image", "visual-question-answering"],
        "size_categories": [size_category(puzzles)],
        "tags": ["visual-reasoning", "puzzles", "synthetic"],
        "configs": configs,
        "dataset_info": infos,
    }


def level_table(recipe: CardRecipe, stats: Mapping[str, Mapping[str, Mapping[str, float]]]) -> list[str]:
    """One row per task and level: its parameters, resolutions and measured difficulty statistic
    (the mean per puzzle of the task's headline statistic, from the build's ``stats``)."""
    rows = ["| task | level | parameters | resolutions | difficulty statistic (mean) |", "|---|---|---|---|---|"]
    for task in recipe.tasks:
        spec = get_task(task.task)
        for level in task.levels:
            params = ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(level.config).items())
            origin = "" if level.preset == level.name and level.config == spec.difficulties.get(level.name) \
                else f" (from `{level.preset}`)"
            value = stats.get(task.task, {}).get(level.name, {}).get(spec.difficulty_stat)
            measured = f"{spec.difficulty_stat} {value:g}" if value is not None else ""
            rows.append(f"| `{task.task}` | `{level.name}`{origin} | {params} | "
                        f"{', '.join(map(str, level.resolutions))} | {measured} |")
    return rows


def render_card(recipe: CardRecipe, config_hash: str, counts: dict[str, dict[str, int]], sizes: dict[str, dict[str, int]],
                galleries: list[str], stats: Mapping[str, Mapping[str, Mapping[str, float]]] | None = None) -> str:
    """``counts`` and ``sizes`` (parquet bytes): config -> split -> value; ``stats``: task -> level ->
    statistic -> mean per puzzle."""
    task_rows = ["| task | domain | description |", "|---|---|---|"]
    for task in recipe.tasks:
        spec = get_task(task.task)
        task_rows.append(f"| `{task.task}` | {spec.domain} | {spec.description} |")
    task_rows += ["", *level_table(recipe, stats or {})]
    splits = list(dict.fromkeys(level for task in recipe.tasks for level in task.difficulties))
    count_rows = ["| config | " + " | ".join(splits) + " |", "|---" * (len(splits) + 1) + "|"]
    for config in counts:
        count_rows.append(f"| `{config}` | " + " | ".join(str(counts[config].get(s, 0)) for s in splits) + " |")
    template = Template((resources.files("vrforge.cards") / "templates" / "tacit.md").read_text(encoding="utf-8"))
    return template.substitute(
        yaml=yaml.safe_dump(card_metadata(recipe, counts, sizes), sort_keys=False, allow_unicode=True).rstrip("\n"),
        pretty_name=pretty_name(recipe),
        recipe_name=recipe.name,
        version=recipe.version,
        config_hash=config_hash,
        first_task=recipe.tasks[0].task,
        task_table="\n".join(task_rows),
        count_table="\n".join(count_rows),
        gallery="\n\n".join(f"![{path}]({path})" for path in galleries),
        license=recipe.license,
        audit=AUDIT_PENDING,
    )


# The card's audit section lies between these markers: the build writes AUDIT_PENDING there,
# `vrforge audit` replaces it with the figures of a passed audit.
AUDIT_START = "<!-- audit:start -->"
AUDIT_END = "<!-- audit:end -->"
AUDIT_PENDING = "Not audited yet: `vrforge audit` checks the release and writes its figures here and into `audit.json`."


def audit_section(report: dict[str, Any]) -> str:
    """The figures of an audit report as the card's Markdown."""
    learners = [name for name in LEARNERS if any(name in figures for figures in report["pickers"].values())]
    columns = (*PICKERS, PROBE, *learners)
    lines = [f"Every row was re-verified at every resolution from the released files: {report['rows_checked']:,} rows, "
             f"{report['row_failures']} failures; all {report['files_checked']} files match `manifest.json`.", "",
             "Context-blind pickers and a learned probe (accuracy choosing among the five options without solving "
             "the puzzle; chance 0.20, "
             f"limit {report['picker_limit']}, judged for tasks with at least {report['picker_min_puzzles']} puzzles):", "",
             "| task | " + " | ".join(name.replace("_", " ") for name in columns) + " |",
             "|---" * (len(columns) + 1) + "|"]
    for task, accuracy in report["pickers"].items():
        lines.append(f"| `{task}` | " + " | ".join("n/a" if accuracy.get(name) is None else f"{accuracy[name]:.3f}"
                                                  for name in columns) + " |")
    positions = report["answer_positions"]
    lines += ["", f"Answer positions {positions['counts']}: χ² {positions['chi2']:.2f}, p {positions['p_value']:.2f} "
              "(uniform).", "", "Difficulty (mean per puzzle, level by level) and rejected generation attempts:", "",
              "| task | statistic | levels | values | rejected attempts |", "|---|---|---|---|---|"]
    for task, stats in report["difficulty_stats"].items():
        name = stats["headline"] or (stats["growing"][0] if stats["growing"] else None)
        values = " / ".join(f"{v:g}" for v in stats["values"].get(name, [])) if name else ""
        rejected = sum(report["rejections"].get(task, {}).values())
        lines.append(f"| `{task}` | {name or ''} | {' / '.join(stats.get('levels', []))} | {values} | {rejected} |")
    aspects = report.get("aspects_in_play", {})
    if aspects:
        lines += ["", "Aspects in play: the fewest aspects of the answer (cells, nodes, rule entries, views, regions of a "
                  "maze, attributes of an object) a solver must check to rule out all four distractors, as puzzles "
                  "per count, level by level:", "", "| task | level | 1 | 2 | 3 | 4 | mean |", "|---|---|---|---|---|---|---|"]
        for task, levels in aspects.items():
            for level, figures in levels.items():
                counts = figures["counts"]
                lines.append(f"| `{task}` | {level} | " + " | ".join(str(counts.get(str(k), 0)) for k in range(1, 5))
                             + f" | {figures['mean']:.2f} |")
    by_level = report.get("pickers_by_level", {})
    if by_level:
        level_names = list(dict.fromkeys(lv for levels in by_level.values() for lv in levels))
        lines += ["", "The same pickers and probe level by level (highest figure of each):", "",
                  "| task | " + " | ".join(level_names) + " |", "|---" * (len(level_names) + 1) + "|"]
        for task, levels in by_level.items():
            cells = [max((v for v in levels[c].values() if v is not None), default=None) if c in levels else None
                     for c in level_names]
            lines.append(f"| `{task}` | " + " | ".join(_cell(v) for v in cells) + " |")
    return "\n".join(lines)


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def with_audit_section(card: str, section: str) -> str:
    """``card`` with ``section`` between the audit markers (unchanged when it has none)."""
    start, end = card.find(AUDIT_START), card.find(AUDIT_END)
    if start < 0 or end < start:
        return card
    return card[:start + len(AUDIT_START)] + "\n" + section + "\n" + card[end:]
