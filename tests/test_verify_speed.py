"""The release mode of the verification benchmark: every row's solution scored as a model's answer."""

from __future__ import annotations

import json

import pytest

from vrforge.bench.verify_speed import RELEASE_ANSWERS, TARGET_S, main


def test_release_mode_scores_every_solution_of_a_built_release(built, tmp_path):
    out = tmp_path / "speed.json"
    code = main(["--release", str(built), "--workers", "1", "--out", str(out)])
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["answers"] == 9  # the fixture's 3 maze puzzles per difficulty, one answer each
    assert result["accepted"] == 9 and result["unusable"] == 0
    maze = result["per_task"]["maze"]
    assert list(result["per_task"]) == ["maze"] and (maze["answers"], maze["accepted"]) == (9, 9)
    assert maze["serial_mean_ms"] > 0
    assert result["wall_s"] > 0 and result["target_s"] == TARGET_S
    projected = result[f"projected_{RELEASE_ANSWERS}_answers_s"]
    assert projected == pytest.approx(result["wall_s"] * RELEASE_ANSWERS / 9, abs=4)  # wall_s is rounded
    assert code == (0 if result["within_target"] else 1)
