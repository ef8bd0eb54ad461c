"""An installed (non-editable) wheel exposes the vrforge.* namespace and its data files."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
                   check=True, capture_output=True)
    (path,) = out.glob("vrforge-*.whl")
    return path


def test_wheel_maps_top_level_folders_into_the_namespace(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ("vrforge/generators/tacit/maze.py", "vrforge/verifiers/maze.py", "vrforge/schemas/tacit.py",
                     "vrforge/builds/build.py", "vrforge/cards/card.py", "vrforge/schemas/json/maze.meta.schema.json",
                     "vrforge/builds/recipes/tacit.toml", "vrforge/cards/templates/tacit.md", "vrforge/bench/build_throughput.py"):
        assert expected in names
    assert not any(n.split("/")[0] in {"generators", "verifiers", "schemas", "builds", "cards", "tests"} for n in names)


def test_installed_wheel_imports_from_its_own_files(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    code = (
        "import vrforge.generators, vrforge.verifiers, vrforge.schemas, vrforge.builds\n"
        "from vrforge.registry import get_task\n"
        "mods = [vrforge.generators, vrforge.verifiers, vrforge.schemas, vrforge.builds]\n"
        f"assert all(m.__file__.startswith({str(target)!r}) for m in mods), [m.__file__ for m in mods]\n"
        "assert get_task('maze').domain == 'spatial'\n"
        "assert get_task('maze').schema['title']\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                            env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
