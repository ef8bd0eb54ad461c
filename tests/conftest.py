import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

RECIPE = {"name": "mini", "version": "0.0.1", "seed": 7, "resolutions": [512, 1024, 2048], "rows_per_shard": 2,
          "tasks": {"maze": {"count": 3, "difficulties": ["easy", "medium", "hard"]}}}


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    """One small release built once per session; tests that change it work on a copy."""
    from vrforge.builds.build import build
    from vrforge.builds.recipe import parse_recipe

    out = tmp_path_factory.mktemp("release") / "ds"
    build(parse_recipe(RECIPE), out, workers=1, progress=False)
    return out


@pytest.fixture
def audited_copy(built, tmp_path) -> Path:
    from vrforge.builds.audit import audit

    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    assert audit(copy, progress=False)["passed"]
    return copy
