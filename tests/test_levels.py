"""Difficulty levels in recipes: custom levels build, audit and load; bad levels are one line;
legibility floors refuse unreadable pictures; curricula stream the rows a build holds."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import datasets
import pytest

from vrforge import registry
from vrforge.builds.audit import audit
from vrforge.builds.build import build
from vrforge.builds.curriculum import Curriculum
from vrforge.builds.item import build_item
from vrforge.builds.plan import PlanItem
from vrforge.builds.recipe import RecipeError, parse_recipe
from vrforge.builds.stream import PuzzleSource, iter_rows
from vrforge.params import ParamError, check_params, level_config, param
from vrforge.registry import get_task


def recipe(levels: dict | None = None, difficulties: list | None = None, task: str = "ca_forward", **top) -> dict:
    entry: dict = {"count": 2}
    if levels is not None:
        entry["levels"] = levels
    if difficulties is not None:
        entry["difficulties"] = difficulties
    return {"name": "lv", "version": "0.0.1", "seed": 5, "resolutions": [512], "rows_per_shard": 2,
            "tasks": {task: entry}, **top}


CUSTOM = {"tiny": {"preset": "easy", "size": 5}, "wide": {"preset": "easy", "size": 7, "max_steps": 3}}


def test_a_recipe_level_starts_from_a_preset_and_overrides_parameters():
    parsed = parse_recipe(recipe(CUSTOM, ["tiny", "easy", "wide"]))
    levels = parsed.tasks[0].levels
    assert [lv.name for lv in levels] == ["tiny", "easy", "wide"]
    easy = get_task("ca_forward").config("easy")
    assert levels[0].config == dataclasses.replace(easy, size=5)
    assert levels[1].config == easy
    assert levels[2].config == dataclasses.replace(easy, size=7, max_steps=3)
    assert parsed.normalised()["tasks"]["ca_forward"]["levels"]["wide"]["params"]["size"] == 7


def test_a_level_named_like_a_preset_overrides_it_and_levels_default_after_the_presets():
    parsed = parse_recipe(recipe({"hard": {"size": 9}, "tiny": {"preset": "easy", "size": 5}}))
    levels = parsed.tasks[0].levels
    assert [lv.name for lv in levels] == ["easy", "medium", "hard", "tiny"]
    assert levels[2].config.size == 9 and levels[2].preset == "hard"


def test_the_config_hash_covers_every_parameter():
    one = parse_recipe(recipe({"tiny": {"preset": "easy", "size": 5}}, ["tiny"]))
    other = parse_recipe(recipe({"tiny": {"preset": "easy", "size": 6}}, ["tiny"]))
    assert one.config_hash() != other.config_hash()


@pytest.mark.parametrize(("levels", "difficulties", "message"), [
    ({"tiny": {"preset": "easy", "colour": 3}}, ["tiny"], "unknown parameter(s) colour"),
    ({"tiny": {"preset": "easy", "size": "big"}}, ["tiny"], "size must be an integer"),
    ({"tiny": {"preset": "easy", "size": 2}}, ["tiny"], "size must be in"),
    ({"tiny": {"preset": "easy", "min_steps": 3, "max_steps": 2}}, ["tiny"], "min_steps"),
    ({"tiny": {"preset": "nightmare"}}, ["tiny"], "unknown preset 'nightmare'"),
    ({"tiny": {"size": 5}}, ["tiny"], "a new level needs 'preset'"),
    ({"tiny": {"preset": "easy"}}, ["easy"], "defined but not listed"),
    (None, ["Hard-1"], "must be lower-case letters and digits"),
    (None, ["nightmare"], "unknown difficulty 'nightmare'"),
    ({"tiny": "small"}, ["tiny"], "must be a table"),
    ({"tiny": {"preset": "easy", "resolutions": [1024]}}, ["tiny"], "not among the recipe's"),
])
def test_a_bad_level_is_one_line(levels, difficulties, message):
    with pytest.raises(RecipeError) as caught:
        parse_recipe(recipe(levels, difficulties))
    text = str(caught.value)
    assert message in text and "\n" not in text
    assert text.startswith("recipe: [tasks.ca_forward")


def test_a_bad_level_on_the_command_line_exits_2_with_one_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "lv"\nversion = "0.0.1"\nseed = 1\n[tasks.ca_forward]\ncount = 1\n'
                    '[tasks.ca_forward.levels.expert2]\npreset = "hard"\nsize = 999\n')
    done = subprocess.run([sys.executable, "-m", "vrforge.cli", "build", str(path), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "size must be in" in done.stderr
    assert not (tmp_path / "out").exists()


def test_check_params_and_level_config_enforce_declared_bounds():
    @dataclasses.dataclass(frozen=True)
    class Toy:
        size: int = param(4, doc="cells", low=2, high=8)
        rate: float = param(0.5, doc="a share", low=0.0, high=1.0)
        shape: str = param("square", doc="cell shape", choices=("square", "hex"))

        def validate(self) -> None:
            check_params(self)

    assert level_config({"a": Toy()}, "a", {"rate": 1}).rate == 1.0  # TOML's 1 for 1.0 stays a float
    assert isinstance(level_config({"a": Toy()}, "a", {"rate": 1}).rate, float)
    for overrides, words in (({"size": 9}, "size must be in 2..8"), ({"shape": "round"}, "shape must be one of square, hex"),
                             ({"size": True}, "size must be an integer"), ({"rate": "x"}, "rate must be a number")):
        with pytest.raises(ParamError, match=words):
            level_config({"a": Toy()}, "a", overrides)


@pytest.fixture
def floored(monkeypatch):
    """ca_forward with a floor on its cells: a cell under 40 px is illegible (cells are ~1/size of the width)."""
    spec = get_task("ca_forward")
    strict = dataclasses.replace(spec, legibility=lambda config: {"cell": 0.5 / config.size},
                                 legibility_floors={"cell": 40.0})
    monkeypatch.setitem(registry._TASKS, "ca_forward", strict)
    return strict


def test_the_build_refuses_a_level_below_its_legibility_floor(floored):
    # size 6 cells at 512 px: 42.7 px, legible; size 7: 36.6 px, not.
    parse_recipe(recipe({"ok": {"preset": "easy", "size": 6}}, ["ok"]))
    with pytest.raises(RecipeError) as caught:
        parse_recipe(recipe({"big": {"preset": "easy", "size": 7}}, ["big"]))
    assert "illegible at 512 px (cell is 36.57 px, below its floor of 40 px)" in str(caught.value)
    assert "release it at 1024 px and up" in str(caught.value)
    # Released only where it is legible, it is accepted.
    two = recipe({"big": {"preset": "easy", "size": 7, "resolutions": [1024]}}, ["big"], resolutions=[512, 1024])
    assert parse_recipe(two).tasks[0].levels[0].resolutions == (1024,)
    assert parse_recipe(two).with_resolutions([512, 1024]).tasks[0].levels[0].resolutions == (1024,)
    with pytest.raises(RecipeError, match="level 'big' of ca_forward is released only at 1024 px"):
        parse_recipe(two).with_resolutions([512])
    assert floored.illegible(floored.config("easy"), 512) == []


@pytest.fixture(scope="module")
def custom_release(tmp_path_factory):
    data = recipe({"tiny": {"preset": "easy", "size": 5}, "expert": {"preset": "hard", "size": 12, "resolutions": [1024]}},
                  ["tiny", "easy", "expert"], resolutions=[512, 1024])
    out = tmp_path_factory.mktemp("levels") / "ds"
    build(parse_recipe(data), out, workers=1, progress=False)
    return out, data


def test_a_recipe_with_custom_levels_builds_audits_and_loads(custom_release, tmp_path):
    import shutil

    out, data = custom_release
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    report = audit(copy, progress=False)
    assert report["passed"], report["problems"] + report["row_failure_examples"]
    assert report["difficulty_stats"]["ca_forward"]["levels"] == ["tiny", "easy", "expert"]
    assert set(report["pickers_by_level"]["ca_forward"]) == {"tiny", "easy", "expert"}
    expert = datasets.load_dataset(str(out), "ca_forward", split="expert")
    assert expert["id"] == ["ca_forward-expert-0000", "ca_forward-expert-0001"]
    assert json.loads(expert[0]["meta"])["size"] == 12
    assert json.loads(datasets.load_dataset(str(out), "ca_forward", split="tiny")[0]["meta"])["size"] == 5
    # expert is released at 1024 px only: the 512 px config has no such split
    assert not list((out / "data" / "ca_forward-512").glob("expert-*"))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["rows"]["ca_forward-512"] == {"tiny": 2, "easy": 2}
    assert manifest["recipe"]["tasks"]["ca_forward"]["levels"]["expert"]["params"]["size"] == 12
    card = (out / "README.md").read_text()
    assert "| `ca_forward` | `expert` (from `hard`) | size=12," in card


def test_a_preset_level_keeps_its_puzzles_when_custom_levels_are_added(custom_release):
    out, _ = custom_release
    row = datasets.load_dataset(str(out), "ca_forward", split="easy")[1]
    built = build_item(PlanItem("ca_forward", "easy", 1, 5), (1024,), "x")
    assert row["meta"] == built.fields["meta"] and row["seed"] == built.fields["seed"]


def test_a_curriculum_over_levels_is_deterministic_and_equals_the_built_rows():
    curriculum = Curriculum.over_levels([(3, "easy"), (6, {"easy": 0.5, "medium": 0.5}), (None, "hard")])
    levels = [curriculum.level(5, "ca_forward", i) for i in range(10)]
    assert levels[:3] == ["easy"] * 3 and levels[6:] == ["hard"] * 4
    assert set(levels[3:6]) <= {"easy", "medium"}
    assert levels == [curriculum.level(5, "ca_forward", i) for i in range(10)]
    source = PuzzleSource("ca_forward", curriculum, 2, 8, resolution=512, recipe_seed=5)
    for index, row in zip(range(2, 8), iter_rows(source)):
        built = build_item(PlanItem("ca_forward", levels[index], index, 5), (512,), "stream")
        assert row["id"] == built.fields["id"] and row["puzzle"]["bytes"] == built.images[512]["puzzle"]


def test_a_curriculum_from_a_recipe_uses_its_levels_and_config_hash():
    parsed = parse_recipe(recipe(CUSTOM, ["tiny", "easy", "wide"]))
    source = PuzzleSource.from_recipe(parsed, "ca_forward", Curriculum.over_levels([(1, "tiny"), (None, "wide")]), 0, 2,
                                      resolution=512)
    rows = list(iter_rows(source))
    assert [r["id"] for r in rows] == ["ca_forward-tiny-0000", "ca_forward-wide-0001"]
    assert json.loads(rows[1]["meta"])["size"] == 7 and rows[1]["config_hash"] == parsed.config_hash()


def test_a_curriculum_over_a_parameter_makes_a_level_per_value():
    curriculum = Curriculum.over_parameter("ca_forward", "easy", "size", [5, 6, 7], every=2)
    assert [curriculum.level(0, "ca_forward", i) for i in range(7)] == ["size5"] * 2 + ["size6"] * 2 + ["size7"] * 3
    assert curriculum.config("ca_forward", "size7").size == 7
    with pytest.raises(ValueError, match="size must be in"):
        Curriculum.over_parameter("ca_forward", "easy", "size", [5, 999], every=2)
    with pytest.raises(ValueError, match="only the last stage"):
        Curriculum.over_levels([(None, "easy"), (4, "hard")])
    with pytest.raises(ValueError, match="above 4"):
        Curriculum.over_levels([(4, "easy"), (4, "hard")])


def test_a_level_the_generator_cannot_meet_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "impossible.toml"
    path.write_text('name = "bad"\nversion = "0.0.1"\nseed = 1\nresolutions = [512]\n[tasks.graph_coloring]\ncount = 1\n'
                    'difficulties = ["tiny"]\n[tasks.graph_coloring.levels.tiny]\npreset = "easy"\ndrop_nodes = 3\ncolours = 4\n')
    done = subprocess.run([sys.executable, "-m", "vrforge.cli", "build", str(path), "--out", str(tmp_path / "out"), "--quiet"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "graph_coloring-tiny-0000: no acceptable puzzle" in done.stderr and done.stderr.strip().count("\n") == 0


def test_the_reference_recipe_parses_with_its_levels():
    from pathlib import Path

    from vrforge.builds.recipe import load_recipe

    root = Path(__file__).resolve().parents[1]
    reference = load_recipe(root / "builds" / "recipes" / "tacit-reference.toml")
    maze = reference.task("maze").level("hard")
    assert (maze.config.size, maze.config.layers, maze.config.portals) == (32, 3, 5)
    assert maze.resolutions == (1024, 2048)  # under its legibility floor at 512 px
    default = load_recipe(root / "builds" / "recipes" / "tacit.toml")
    assert all(t.difficulties == ("easy", "medium", "hard", "expert") for t in default.tasks)
