"""Every code example in the documentation (docs/**/*.md and README.md) runs, in order, per page.

A page runs in a fresh folder holding ``datasets/tacit`` (a tiny release: three mazes at 512
and 1024 px) and ``builds`` (the repository's recipes), so its examples read as a user types
them. Per fenced block, by its language:

- ``python``: executed; the blocks of one page share one namespace;
- ``bash``: each command (``\\`` continuations joined, comments dropped) must exit 0; ``vrforge
  ...`` runs in this process through ``vrforge.cli.main``, anything else through bash;
- ``toml``: parsed, and validated as a recipe when it is one; ``yaml``: parsed.

A block titled with a file name (```` ```toml title="mini.toml" ````) is also written to that
file for the blocks after it. A block titled ``needs ...`` is not run: the title says what a
test machine lacks (a GPU, weights from a hub, a server, hours), and readers see it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
TITLE = re.compile(r'title="(?P<title>[^"]*)"')
FILE_NAME = re.compile(r"^[\w./-]+\.(toml|ya?ml|json|jsonl|csv|txt|py)$")
RUN = {"python", "bash", "toml", "yaml"}
TINY = {"name": "docs-tiny", "version": "0.0.1", "seed": 3, "resolutions": [512, 1024], "rows_per_shard": 2,
        "tasks": {"maze": {"count": 1, "difficulties": ["easy", "medium", "hard"]}}}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    title: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        info = match["info"].strip()
        language = info.split()[0] if info else ""
        title = TITLE.search(info)
        indent = len(match["indent"])
        body = "\n".join(line[indent:] for line in match["body"].splitlines())
        found.append(Block(page, text.count("\n", 0, match.start()) + 1, language, title["title"] if title else "", body))
    return found


def commands(script: str) -> list[str]:
    """The commands of a shell block: continuations joined, blank and comment-only lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", script)
    return [line for line in joined.splitlines() if shlex.split(line, comments=True)]


def run_shell(command: str, block: Block) -> None:
    argv = shlex.split(command, comments=True)
    if argv[0] == "vrforge":
        from vrforge.cli import main

        code = main(argv[1:])
    else:
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        code = subprocess.run(["bash", "-c", command], env=env).returncode
    assert code == 0, f"{block.where}: `{command}` exited {code}"


def run_block(block: Block, namespace: dict) -> None:
    if block.title and FILE_NAME.match(block.title):
        Path(block.title).parent.mkdir(parents=True, exist_ok=True)
        Path(block.title).write_text(block.body + "\n", encoding="utf-8")
    if block.language == "python":
        exec(compile(block.body, block.where, "exec"), namespace)  # running the docs is the point
    elif block.language == "bash":
        for command in commands(block.body):
            run_shell(command, block)
    elif block.language == "toml":
        data = tomllib.loads(block.body)
        if "tasks" in data and "name" in data:
            from vrforge.builds.recipe import parse_recipe

            parse_recipe(data)
    elif block.language == "yaml":
        yaml.safe_load(block.body)


@pytest.fixture(scope="module")
def tiny_release(tmp_path_factory) -> Path:
    from vrforge.builds.build import build
    from vrforge.builds.recipe import parse_recipe

    out = tmp_path_factory.mktemp("docs-release") / "tacit"
    build(parse_recipe(TINY), out, workers=1, progress=False)
    return out


def test_every_block_is_run_or_says_what_it_needs():
    for page in PAGES:
        for block in blocks(page):
            if block.title.startswith("needs"):
                assert len(block.title) > len("needs ") + 3, f"{block.where}: say what the example needs"
            assert block.language, f"{block.where}: a fenced block names its language (text for output and trees)"
            assert block.language in RUN | {"text"}, f"{block.where}: language {block.language!r} is neither run nor text"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_examples_run(page, tiny_release, tmp_path, monkeypatch):
    runnable = [b for b in blocks(page) if b.language in RUN and not b.title.startswith("needs")]
    if not runnable:
        pytest.skip("no example to run on this page")
    (tmp_path / "datasets").mkdir()
    shutil.copytree(tiny_release, tmp_path / "datasets" / "tacit")
    (tmp_path / "builds").symlink_to(ROOT / "builds", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for block in runnable:
        run_block(block, namespace)
