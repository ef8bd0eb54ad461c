"""The command line: exit codes, one-line errors, nothing written on a bad recipe."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import noise
from shared_data import external

from vrforge.cli import main

GOOD = 'name = "t"\nversion = "1"\nseed = 1\n[tasks.maze]\ncount = 2\n'


def run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vrforge.cli", *args], capture_output=True, text=True)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (GOOD.replace("maze", "mazee"), "unknown task 'mazee'"),
        (GOOD + 'difficulties = ["easy", "extreme"]\n', "unknown difficulty 'extreme'"),
        (GOOD.replace("count = 2", "count = -3"), "count must be a positive integer, got -3"),
        (GOOD.replace('seed = 1\n', ""), "missing required field 'seed'"),
        (GOOD.replace("count = 2\n", ""), "missing required field 'count'"),
        (GOOD.replace("[tasks.maze]", "[tasks.maze"), "invalid TOML"),
        (GOOD + "colour = 3\n", "unknown key(s) colour"),
        ('name = "t"\nversion = "1"\nseed = 1\nresolutions = [300]\n[tasks.maze]\ncount = 1\n', "unsupported resolution 300"),
    ],
)
def test_malformed_recipe_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, text, message):
    recipe = tmp_path / "bad.toml"
    recipe.write_text(text)
    out = tmp_path / "out"
    assert main(["build", str(recipe), "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]
    assert not out.exists()


def test_a_user_error_in_a_real_process_prints_no_traceback(tmp_path):
    recipe = tmp_path / "bad.toml"
    recipe.write_text(GOOD.replace("count = 2", "count = 0"))
    result = run(["build", str(recipe), "--out", str(tmp_path / "out")])
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_missing_recipe_and_bad_flags(tmp_path, capsys):
    assert main(["build", str(tmp_path / "nope.toml")]) == 2
    assert "recipe not found" in capsys.readouterr().err
    recipe = tmp_path / "r.toml"
    recipe.write_text(GOOD)
    assert main(["build", str(recipe), "--workers", "0", "--out", str(tmp_path / "o")]) == 2
    assert main(["build", str(recipe), "--limit", "0", "--out", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists()


def test_tasks_lists_domains_and_parameters(capsys):
    assert main(["tasks", "--json"]) == 0
    tasks = {t["name"]: t for t in json.loads(capsys.readouterr().out)}
    assert tasks["maze"]["domain"] == "spatial"
    assert tasks["maze"]["difficulties"]["hard"] == {"layers": 3, "size": 14, "portals": -1}  # -1: one per pair of layers


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sample")
    assert main(["sample", "maze", "--difficulty", "medium", "--index", "2", "--out", str(out)]) == 0
    return out / "maze-medium-0002"


def test_sample_writes_svgs_pngs_and_meta(sample):
    names = {p.name for p in sample.iterdir()}
    assert {"meta.json", "puzzle.svg", "solution.svg", "item.json", "puzzle_512.png", "solution_2048.png"} <= names
    assert len([n for n in names if n.startswith("distractor")]) == 12


def test_verify_exit_codes(sample, tmp_path):
    meta = str(sample / "meta.json")
    passed = run(["verify", "maze", "--meta", meta, str(sample / "solution_1024.png")])
    assert passed.returncode == 0 and json.loads(passed.stdout)["passed"] is True
    distractor = next(sample.glob("distractor0_*_512.png"))
    failed = run(["verify", "maze", "--meta", meta, str(distractor)])
    verdict = json.loads(failed.stdout)
    assert failed.returncode == 1 and verdict["failed"] == [distractor.name.split("_", 1)[1].rsplit("_", 1)[0]]
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"definitely not a png")
    unusable = run(["verify", "maze", "--meta", meta, str(junk)])
    assert unusable.returncode == 2 and json.loads(unusable.stdout)["usable"] is False
    noise(600, 300).save(tmp_path / "noise.png")
    assert run(["verify", "maze", "--meta", meta, str(tmp_path / "noise.png")]).returncode in (1, 2)


def test_verify_bad_meta_and_task_are_one_line(sample, tmp_path):
    bad = tmp_path / "meta.json"
    bad.write_text("{not json")
    for args, message in (
        (["verify", "maze", "--meta", str(bad), str(sample / "solution_512.png")], "cannot read meta"),
        (["verify", "maze", "--meta", str(tmp_path / "none.json"), "x.png"], "meta file not found"),
        (["verify", "nosuch", "--meta", str(bad), "x.png"], "unknown task 'nosuch'"),
    ):
        result = run(args)
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"task": "maze", "layout": {}}))
    result = run(["verify", "maze", "--meta", str(wrong), str(sample / "solution_512.png")])
    assert result.returncode == 2 and "not valid maze meta" in result.stderr


def test_strict_mode_only_where_a_task_has_one(sample, tmp_path, capsys):
    assert main(["verify", "maze", "--strict", "--meta", str(sample / "meta.json"), str(sample / "solution_512.png")]) == 2
    assert "has no strict (SSIM) mode" in capsys.readouterr().err
    assert main(["sample", "raven", "--difficulty", "easy", "--resolutions", "512", "--out", str(tmp_path)]) == 0
    item = tmp_path / "raven-easy-0000"
    assert main(["verify", "raven", "--strict", "--meta", str(item / "meta.json"), str(item / "solution_512.png")]) == 0
    verdict = json.loads(capsys.readouterr().out.split("wrote")[-1].split("\n", 1)[1])
    assert verdict["passed"] and "ssim" in json.dumps(verdict)


def test_cfworld_import_command(tmp_path, capsys):
    release = external("cf-world")
    if not release.is_dir():
        pytest.skip(f"the official CF-World release is absent at {release}")
    assert main(["cfworld", "import", str(release), "--out", str(tmp_path)]) == 0
    assert "1092 scenarios" in capsys.readouterr().out
    assert sum(1 for _ in (tmp_path / "scenarios.jsonl").open()) == 1092
    assert main(["cfworld", "import", str(tmp_path / "missing")]) == 2


def test_score_commands_are_wired(tmp_path, capsys):
    assert main(["score", "gap", str(tmp_path / "g.json"), str(tmp_path / "d.json")]) == 2
    assert main(["score", "discriminative", str(tmp_path / "none"), str(tmp_path / "r.json")]) == 2
    assert main(["score", "generative", str(tmp_path / "none"), str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("error") == 3
