"""A task is one complete TaskSpec; tasks from other packages arrive through the ``vrforge.tasks``
entry points; ``vrforge new-task`` writes a skeleton that meets the common bar."""

from __future__ import annotations

import dataclasses
import json
import os
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vrforge.cli import main
from vrforge.registry import StrictMode, TaskSpecError, accepted_attempt, accepted_puzzle, get_task, register_task
from vrforge.skeleton import render_files, write_skeleton

REPO = Path(__file__).resolve().parents[1]


def _cli(args: list[str], site: Path, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """vrforge in a fresh process that also sees the packages installed in ``site``."""
    env = {**os.environ, "PYTHONPATH": str(site), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "vrforge.cli", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("field, value, said", [
    ("instruction", "", "instruction"),
    ("answer_hint", " ", "answer_hint"),
    ("difficulty_stat", "", "difficulty_stat"),
    ("checks", (), "checks"),
    ("name", "Bad-Name", "a name of lower-case"),
])
def test_register_task_refuses_an_incomplete_task_in_one_line(field, value, said):
    spec = dataclasses.replace(get_task("maze"), name="maze_copy", meta_schema=get_task("maze").schema)
    with pytest.raises(TaskSpecError) as caught:
        register_task(dataclasses.replace(spec, **{field: value}))
    message = str(caught.value)
    assert said in message and "\n" not in message and "incomplete" in message


def test_a_missing_difficulty_a_missing_schema_and_a_duplicate_are_refused():
    maze = get_task("maze")
    with pytest.raises(TaskSpecError, match="difficulties easy, medium, hard"):
        register_task(dataclasses.replace(maze, name="maze_two_levels", difficulties={"easy": maze.config("easy")}))
    with pytest.raises(TaskSpecError, match=r"task 'no_schema_here': no meta schema at .*no_schema_here\.meta\.schema\.json"):
        register_task(dataclasses.replace(maze, name="no_schema_here"))
    with pytest.raises(TaskSpecError, match="not a valid JSON Schema"):
        register_task(dataclasses.replace(maze, name="bad_schema", meta_schema={"type": 12}))
    with pytest.raises(TaskSpecError, match="already registered"):
        register_task(maze)
    with pytest.raises(TaskSpecError, match="strict mode"):
        register_task(dataclasses.replace(maze, name="bad_strict", meta_schema=maze.schema, strict=StrictMode(len, 2.0)))


def test_the_accepted_puzzle_is_the_first_unrejected_attempt():
    puzzle, attempt = accepted_attempt("logic_grid", "hard", 2, seed=5)
    again = accepted_puzzle(get_task("logic_grid"), "hard", 2, seed=5)
    assert attempt >= 0 and puzzle.meta == again.meta and puzzle.answer_index == again.answer_index


def test_every_task_speaks_for_itself():
    from vrforge.runners.items import tacit_instruction
    from vrforge.runners.vlm_choice import Question

    maze = get_task("maze")
    assert tacit_instruction("maze") == maze.instruction
    assert maze.answer_hint in Question("maze", b"", (b"",) * 5).intro
    assert "completed correctly" in Question("not_installed", b"", (b"",) * 5).intro


def test_strict_mode_is_declared_by_the_spec():
    assert get_task("raven").strict is not None and get_task("maze").strict is None
    with pytest.raises(ValueError, match="no strict mode"):
        get_task("maze").check({}, b"", strict=True)


def test_new_task_writes_the_four_files_into_a_checkout_and_never_overwrites(tmp_path, capsys):
    for folder in ("generators/tacit", "verifiers", "schemas/json", "tests"):
        (tmp_path / folder).mkdir(parents=True)
    assert main(["new-task", "tile_mirror", "--repo", str(tmp_path), "--domain", "spatial"]) == 0
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["generators/tacit/tile_mirror.py", "schemas/json/tile_mirror.meta.schema.json",
                       "tests/test_tile_mirror.py", "verifiers/tile_mirror.py"]
    for path in written:
        if path.endswith(".py"):
            py_compile.compile(str(tmp_path / path), doraise=True)
    schema = json.loads((tmp_path / "schemas/json/tile_mirror.meta.schema.json").read_text())
    assert schema["properties"]["task"] == {"const": "tile_mirror"}
    generator = (tmp_path / "generators/tacit/tile_mirror.py").read_text()
    assert "from vrforge.verifiers import tile_mirror as verifier" in generator and 'domain="spatial"' in generator
    capsys.readouterr()
    before = (tmp_path / "verifiers/tile_mirror.py").read_text()
    assert main(["new-task", "tile_mirror", "--repo", str(tmp_path)]) == 2
    assert "exists; nothing was written" in capsys.readouterr().err
    assert (tmp_path / "verifiers/tile_mirror.py").read_text() == before
    assert main(["new-task", "maze", "--repo", str(tmp_path)]) == 2
    assert "already registered" in capsys.readouterr().err
    assert main(["new-task", "Tile", "--repo", str(tmp_path)]) == 2
    assert main(["new-task", "tile", "--repo", str(tmp_path / "elsewhere")]) == 2
    assert "not a vrforge checkout" in capsys.readouterr().err


@pytest.fixture(scope="module")
def installed_task(tmp_path_factory) -> Path:
    """The skeleton written as a package of its own, installed (pip) into a folder of its own."""
    root = tmp_path_factory.mktemp("task_package")
    write_skeleton("mirror_tiles", root / "src", package=True, taken={"maze"})
    site = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(site), str(root / "src")], check=True, capture_output=True, timeout=300)
    return site


def test_an_installed_task_package_is_listed_built_and_audited(installed_task, tmp_path):
    """The entry point makes the task appear in `vrforge tasks`, recipes, builds and audits."""
    listed = _cli(["tasks", "--json"], installed_task, tmp_path)
    assert listed.returncode == 0, listed.stderr
    tasks = {t["name"]: t for t in json.loads(listed.stdout)}
    assert tasks["mirror_tiles"]["module"] == "vrforge_task_mirror_tiles" and "maze" in tasks
    recipe = tmp_path / "recipe.toml"
    recipe.write_text('name = "pkg"\nversion = "0.0.1"\nseed = 3\nresolutions = [512]\n\n[tasks.mirror_tiles]\ncount = 2\n')
    built = _cli(["build", str(recipe), "--out", str(tmp_path / "ds"), "--quiet"], installed_task, tmp_path)
    assert built.returncode == 0, built.stderr
    manifest = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert manifest["generators"] == {"mirror_tiles": "0.1.0"} and manifest["rows"]["mirror_tiles-512"]["hard"] == 2
    audited = _cli(["audit", str(tmp_path / "ds"), "--quiet"], installed_task, tmp_path)
    assert audited.returncode == 0, audited.stdout + audited.stderr


def test_without_the_package_its_task_is_unknown_in_one_line(capsys):
    assert main(["sample", "mirror_tiles"]) == 2
    assert "unknown task 'mirror_tiles'" in capsys.readouterr().err


def test_a_broken_task_package_is_one_line(tmp_path):
    site = tmp_path / "site"
    info = site / "broken_task-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-task\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[vrforge.tasks]\nbroken = broken_task_module\n")
    (site / "broken_task_module.py").write_text("raise RuntimeError('half-finished')\n")
    result = _cli(["tasks"], site, tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "vrforge tasks: error: task package entry point 'broken' (broken_task_module) failed to load: RuntimeError: half-finished"]


def test_an_entry_point_may_name_a_task_spec_object(tmp_path):
    site = tmp_path / "site"
    info = site / "maze_again-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: maze-again\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[vrforge.tasks]\nmaze_again = maze_again_spec:SPEC\n")
    (site / "maze_again_spec.py").write_text(
        "import dataclasses\nfrom vrforge.registry import get_task\n"
        "maze = get_task('maze')\n"
        "SPEC = dataclasses.replace(maze, name='maze_again', meta_schema=maze.schema, description='The maze, again.')\n")
    result = _cli(["tasks", "--json"], site, tmp_path)
    assert result.returncode == 0, result.stderr
    listed = {t["name"]: t for t in json.loads(result.stdout)}
    assert listed["maze_again"]["difficulty_stat"] == "route_length" and "maze" in listed


@pytest.mark.slow
def test_the_package_skeleton_passes_the_common_test_and_its_own(installed_task):
    """The registry-wide test run over the installed package's task, unchanged, plus the tests it ships."""
    tests = installed_task.parent / "src" / "tests"
    env = {**os.environ, "PYTHONPATH": str(installed_task), "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "mirror_tiles",
                             str(REPO / "tests" / "test_tacit_tasks.py"), str(tests)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    assert result.stdout.splitlines()[-1].startswith("9 passed")


def test_skeleton_files_name_the_task_everywhere():
    files = render_files("dots", "graph", package=True)
    assert set(files) == {"pyproject.toml", "vrforge_task_dots/__init__.py", "vrforge_task_dots/verifier.py",
                          "vrforge_task_dots/dots.meta.schema.json", "tests/test_dots.py"}
    assert '[project.entry-points."vrforge.tasks"]\ndots = "vrforge_task_dots"' in files["pyproject.toml"]
    assert 'meta_schema=resources.files(__name__) / "dots.meta.schema.json"' in files["vrforge_task_dots/__init__.py"]
    assert all("$" not in text for path, text in files.items() if not path.endswith(".json"))


@pytest.mark.slow
def test_the_checkout_skeleton_passes_the_common_test_and_its_own(tmp_path):
    """`vrforge new-task` in a copy of this checkout, installed as a wheel would be: the new
    built-in task passes tests/test_tacit_tasks.py unchanged and the tests written beside it."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    copy = tmp_path / "checkout"
    for name in filter(None, files):
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    assert main(["new-task", "mirror_cells", "--repo", str(copy)]) == 0
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(site), str(copy)], check=True, capture_output=True, timeout=600)
    env = {**os.environ, "PYTHONPATH": str(site), "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "mirror_cells",
                             str(copy / "tests" / "test_tacit_tasks.py"), str(copy / "tests" / "test_mirror_cells.py")],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    assert result.stdout.splitlines()[-1].startswith("9 passed")
