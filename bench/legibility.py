"""Legibility at the main resolution: every feature a solver must tell apart, in pixels, per task and level.

    python -m vrforge.bench.legibility [--recipe builds/recipes/tacit.toml] [--out bench/results/legibility.json]

The build's floors (each task's ``legibility_floors``) say where a picture stops being readable
at all, by any reader. This table asks more: whether a person, or a model that sees the picture
downscaled, reads it at the resolution a level is evaluated at. Each feature has a kind and the
kind a floor at that resolution (``SEEN_FLOORS``); two tasks have stricter floors where a model
was seen to misread (``TASK_FLOORS``). A level is read at 1024 px (the main resolution) unless a
feature falls below its floor there; it is then read at the smallest larger resolution it is
released at where none does, and the table says so. Writes JSON and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from vrforge.builds.recipe import Recipe, load_recipe
from vrforge.registry import get_task
from vrforge.schemas.layout import MAIN_RESOLUTION

DEFAULT_RECIPE = Path(__file__).resolve().parents[1] / "builds" / "recipes" / "tacit.toml"
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "legibility.json"

# A capable multimodal model sees a 1024 px picture at about 768 px (high-detail pipelines scale
# the shorter side to 768) in patches of 14-16 px; a person sees it at 100 %.
SEEN_FLOORS = {
    "unit": 12.0,  # a cell, slot or grid step: at least ~9 px after the 768 px rescale, over half a patch
    "mark": 5.0,  # a disc, pip, chevron or piece of strand: a few pixels of its colour survive the rescale
    "separation": 4.0,  # white between two marks: 3 px after the rescale, still a gap
    "stroke": 2.0,  # a line: above 1.5 px it keeps its darkness after the rescale
}
KINDS = {
    "unit": ("cell", "slot", "view_cell", "grid_step", "table_entry", "glyph_cell", "swatch", "symbol",
             "legend_symbol", "cube_edge", "node_radius"),
    "mark": ("marker", "chevron", "count_pip", "step_pip", "forbidden_mark", "row_arrow", "smallest_object",
             "cell_fill", "under_dash"),
    "separation": ("count_pip_gap", "step_pip_gap", "strand_gap", "edge_node_gap", "size_step", "crossing_gap"),
    "stroke": ("wall", "grid_line", "solid_line", "edge_stroke", "stroke", "strike", "chevron_stroke", "path"),
}
KIND_OF = {feature: kind for kind, features in KINDS.items() for feature in features}
# Where a model was seen to misread: maze walls traced at 20 px per cell, knot crossings whose
# breaks were 5.5 px at 1024 px.
TASK_FLOORS = {
    ("maze", "cell"): 24.0,
    ("unknot", "crossing_gap"): 7.0,
}


def floor(task: str, feature: str) -> float:
    """The least pixels ``feature`` of ``task`` needs at the resolution a level is read at."""
    if (task, feature) in TASK_FLOORS:
        return TASK_FLOORS[(task, feature)]
    if feature not in KIND_OF:
        raise KeyError(f"legibility feature {feature!r} of {task} has no kind: add it to KINDS")
    return SEEN_FLOORS[KIND_OF[feature]]


def below(task: str, pixels: dict[str, float]) -> list[str]:
    """The features under their floor, in words."""
    return [f"{name} {px:g} px < {floor(task, name):g}" for name, px in pixels.items() if px < floor(task, name)]


def table(recipe: Recipe) -> list[dict[str, Any]]:
    """One row per task and level: the features at 1024 px, and the resolution the level is read at."""
    rows = []
    for task_recipe in recipe.tasks:
        spec = get_task(task_recipe.task)
        for level in task_recipe.levels:
            at_main = spec.feature_pixels(level.config, MAIN_RESOLUTION)
            reading = next((r for r in sorted(level.resolutions) if r >= MAIN_RESOLUTION
                            and not below(spec.name, spec.feature_pixels(level.config, r))), None)
            rows.append({"task": spec.name, "level": level.name, "pixels_at_1024": at_main,
                         "below_at_1024": below(spec.name, at_main), "read_at": reading,
                         "smallest": min(at_main.items(), key=lambda item: item[1] / floor(spec.name, item[0]))[0]
                         if at_main else None})
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| task | level | features at 1024 px (floor) | read at |", "|---|---|---|---|"]
    for row in rows:
        cells = ", ".join(f"{name} {px:g} ({floor(row['task'], name):g})" for name, px in row["pixels_at_1024"].items())
        lines.append(f"| {row['task']} | {row['level']} | {cells} | {row['read_at'] or 'nowhere'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", type=Path, default=DEFAULT_RECIPE)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    rows = table(load_recipe(args.recipe))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"recipe": str(args.recipe.name), "floors": SEEN_FLOORS,
                                    "task_floors": {f"{t}.{f}": v for (t, f), v in TASK_FLOORS.items()},
                                    "rows": rows}, indent=2) + "\n", encoding="utf-8")
    print(markdown(rows))
    unread = [f"{row['task']} {row['level']}" for row in rows if row["read_at"] is None]
    if unread:
        print(f"not legible at any released resolution >= {MAIN_RESOLUTION}: {', '.join(unread)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
