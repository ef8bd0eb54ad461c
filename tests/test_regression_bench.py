"""The build-cost guard compares against another commit's code, imported from a worktree of it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_guard_builds_the_base_commit_from_its_own_worktree(tmp_path):
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    out = tmp_path / "regression.json"
    done = subprocess.run([sys.executable, "-m", "vrforge.bench.regression", "--base", "HEAD", "--tasks", "ca_forward",
                           "--rounds", "1", "--limit", "10", "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["passed"] and report["cpu_s_per_puzzle"]["base"] > 0
    assert "vrforge-regression-" in report["packages"]["base"] and str(ROOT) in report["packages"]["current"]
    assert not (ROOT / ".git" / "worktrees").exists() or not any((ROOT / ".git" / "worktrees").iterdir())


def test_an_unknown_base_is_one_line():
    done = subprocess.run([sys.executable, "-m", "vrforge.bench.regression", "--base", "no-such-rev"], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode != 0 and "no such commit 'no-such-rev'" in done.stderr
