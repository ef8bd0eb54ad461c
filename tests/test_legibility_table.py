"""The legibility table at the main resolution (bench/legibility.py): every feature has a floor,
and every level of the default release is legible where it is read."""

from __future__ import annotations

import json

import pytest

from vrforge.bench import legibility
from vrforge.builds.recipe import load_recipe


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return legibility.table(load_recipe(legibility.DEFAULT_RECIPE))


def test_every_level_of_the_release_is_read_at_a_released_resolution(rows) -> None:
    assert {row["task"] for row in rows} and all(row["read_at"] is not None for row in rows)
    for row in rows:
        if row["level"] in ("easy", "medium", "hard"):
            assert row["read_at"] == 1024 and not row["below_at_1024"], row


def test_expert_maze_is_read_at_2048_because_its_cells_are_small_at_1024(rows) -> None:
    maze = next(row for row in rows if (row["task"], row["level"]) == ("maze", "expert"))
    assert maze["read_at"] == 2048
    assert any(reason.startswith("cell ") for reason in maze["below_at_1024"])


def test_every_feature_of_every_task_has_a_floor(rows) -> None:
    for row in rows:
        for name in row["pixels_at_1024"]:
            assert legibility.floor(row["task"], name) > 0
    with pytest.raises(KeyError, match="has no kind"):
        legibility.floor("maze", "no_such_feature")


def test_a_level_released_only_where_it_is_unreadable_fails_the_bench(tmp_path) -> None:
    recipe = tmp_path / "r.toml"
    recipe.write_text('name = "t"\nversion = "0.0.1"\nseed = 1\nresolutions = [512, 1024]\n'
                      '[tasks.maze]\ncount = 2\ndifficulties = ["hard", "expert"]\n'
                      '[tasks.maze.levels.expert]\nresolutions = [1024]\n', encoding="utf-8")
    out = tmp_path / "legibility.json"
    assert legibility.main(["--recipe", str(recipe), "--out", str(out)]) == 1
    rows = json.loads(out.read_text())["rows"]
    assert [(r["level"], r["read_at"]) for r in rows] == [("hard", 1024), ("expert", None)]
