"""The dataset card (README.md) from the template, with the YAML ``configs:`` that
``datasets.load_dataset`` reads."""

from __future__ import annotations

import json
from importlib import resources
from string import Template

from vrforge.builds.plan import MAIN_RESOLUTION, config_name
from vrforge.builds.recipe import Recipe
from vrforge.registry import get_task


def size_category(rows: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if rows < limit:
            return label
    return "n>1M"


def configs_yaml(recipe: Recipe) -> list[str]:
    lines = ["configs:"]
    first = True
    ordered = sorted(recipe.resolutions, key=lambda r: (r != MAIN_RESOLUTION, r))
    for task in recipe.tasks:
        for res in ordered:
            name = config_name(task.task, res)
            lines.append(f"- config_name: {name}")
            lines.append("  data_files:")
            for difficulty in task.difficulties:
                lines.append(f"  - split: {difficulty}")
                lines.append(f"    path: data/{name}/{difficulty}-*.parquet")
            if first:
                lines.append("  default: true")
                first = False
    return lines


def render_card(recipe: Recipe, config_hash: str, counts: dict[str, dict[str, int]], galleries: list[str]) -> str:
    pretty = f"TACIT {recipe.version}" if recipe.name == "tacit" else f"{recipe.name} {recipe.version}"
    puzzles = sum(t.count * len(t.difficulties) for t in recipe.tasks)
    yaml = [
        f"license: {recipe.license}",
        f"pretty_name: {json.dumps(pretty)}",
        "task_categories:",
        "- image-to-image",
        "- visual-question-answering",
        "size_categories:",
        f"- {size_category(puzzles)}",
        "tags:",
        "- visual-reasoning",
        "- puzzles",
        "- synthetic",
        *configs_yaml(recipe),
    ]
    task_rows = ["| task | domain | difficulties (parameters) |", "|---|---|---|"]
    for task in recipe.tasks:
        spec = get_task(task.task)
        params = "; ".join(f"{d}: {json.dumps(spec.parameters()[d], sort_keys=True)}" for d in task.difficulties)
        task_rows.append(f"| `{task.task}` | {spec.domain} | {params} |")
    count_rows = ["| config | " + " | ".join(("easy", "medium", "hard")) + " |", "|---|---|---|---|"]
    for config in counts:
        count_rows.append(f"| `{config}` | " + " | ".join(str(counts[config].get(s, 0)) for s in ("easy", "medium", "hard")) + " |")
    template = Template((resources.files("vrforge.cards") / "templates" / "tacit.md").read_text(encoding="utf-8"))
    return template.substitute(
        yaml="\n".join(yaml),
        pretty_name=pretty,
        recipe_name=recipe.name,
        version=recipe.version,
        config_hash=config_hash,
        first_task=recipe.tasks[0].task,
        task_table="\n".join(task_rows),
        count_table="\n".join(count_rows),
        gallery="\n\n".join(f"![{path}]({path})" for path in galleries),
        license=recipe.license,
    )
