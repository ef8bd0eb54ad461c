"""Where the project's external test data lives: ``../shared/external`` beside the repository root.

Found by walking up from this file to the folder holding ``pyproject.toml``; on a clone without
the shared folder, tests that need it skip and say so.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def repository_root() -> Path:
    here = Path(__file__).resolve().parent
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    raise RuntimeError(f"no pyproject.toml above {here}")


EXTERNAL = repository_root().parent / "shared" / "external"


def external(*parts: str) -> Path:
    """The path under ``../shared/external`` (it may not exist)."""
    return EXTERNAL.joinpath(*parts)


def require_external(*parts: str) -> Path:
    """The path under ``../shared/external``, or skip the calling test with the reason."""
    path = external(*parts)
    if not path.exists():
        pytest.skip(f"external test data {path} is absent (it lives in ../shared/external beside the repository)")
    return path
