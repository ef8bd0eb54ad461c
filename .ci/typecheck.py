"""Type-check the package with mypy, as it is installed: one ``vrforge`` namespace.

pyproject maps the top-level folders (generators/, builds/, ...) into ``vrforge.*``; the
editable install does that with an import hook mypy cannot follow. So this lays out a tree
of links shaped like the installed package (``build/typecheck/vrforge/...``), read from
pyproject's ``package-dir``, and runs mypy on it with the ``[tool.mypy]`` settings.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "build" / "typecheck"


def link_tree(tree: Path = TREE) -> Path:
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    shutil.rmtree(tree, ignore_errors=True)
    package = tree / "vrforge"
    package.mkdir(parents=True)
    for entry in sorted((ROOT / mapping["vrforge"]).iterdir()):
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, folder in sorted(mapping.items()):
        if name != "vrforge":
            (package / name.removeprefix("vrforge.")).symlink_to(ROOT / folder, target_is_directory=True)
    return package


def main() -> int:
    package = link_tree()
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(package.relative_to(ROOT))]
    return subprocess.run(command, cwd=ROOT, env=None).returncode


if __name__ == "__main__":
    sys.exit(main())
