"""A working skeleton of a new TACIT task: generator, verifier, meta schema and tests.

Two places it can go:

- **into a vrforge checkout** (``repo``): ``generators/tacit/<name>.py`` (registers itself on
  import, like every module there), ``verifiers/<name>.py``,
  ``schemas/json/<name>.meta.schema.json`` and ``tests/test_<name>.py``;
- **into a package of its own** (``package``): ``pyproject.toml`` declaring the entry point
  ``<name> = "vrforge_task_<name>"`` in the group ``vrforge.tasks``, the module
  ``vrforge_task_<name>/`` (generator in ``__init__.py``, ``verifier.py``, the schema beside
  them) and ``tests/test_<name>.py``. Installed (``pip install -e DIR``), the task appears in
  ``vrforge tasks``, recipes, builds, audits and runners.

Either way the skeleton passes the registry-wide common test (``tests/test_tacit_tasks.py``)
unchanged. Nothing is overwritten: if any target exists, nothing is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

from vrforge.errors import UserError
from vrforge.fileio import write_text_atomic

NAME = re.compile(r"^[a-z][a-z0-9_]{1,39}$")
DOMAINS = ("spatial", "pattern", "logical", "graph", "topology", "causal", "geometry")
REPO_MARKERS = ("generators/tacit", "verifiers", "schemas/json", "tests")


class SkeletonError(UserError):
    """A name or a target folder the skeleton cannot be written to: one line."""


@dataclass(frozen=True)
class Skeleton:
    """The files written, relative paths first in the order a reader should open them."""

    root: Path
    files: tuple[str, ...]


def _template(name: str) -> Template:
    return Template((resources.files(__name__) / f"{name}.tmpl").read_text(encoding="utf-8"))


def check_name(name: str, taken: set[str] | None = None) -> None:
    if not NAME.match(name):
        raise SkeletonError(f"task name {name!r} must be 2-40 lower-case letters, digits or underscores, starting with a letter")
    if taken and name in taken:
        raise SkeletonError(f"a task named {name!r} is already registered")


def render_files(name: str, domain: str, package: bool) -> dict[str, str]:
    """relative path -> text of every file of the skeleton."""
    module = f"vrforge_task_{name}"
    values = {
        "name": name,
        "domain": domain,
        "title": name.replace("_", " ").capitalize(),
        "camel": "".join(part.capitalize() for part in name.split("_")),
        "package": module,
        "distribution": f"vrforge-task-{name.replace('_', '-')}",
        "extra_imports": "from importlib import resources\n" if package else "",
        "verifier_import": "\nfrom . import verifier" if package else f"from vrforge.verifiers import {name} as verifier",
        "schema_argument": f'        meta_schema=resources.files(__name__) / "{name}.meta.schema.json",\n' if package else "",
    }
    texts = {key: _template(key).substitute(values) for key in ("generator.py", "verifier.py", "schema.json", "test.py")}
    if package:
        return {
            "pyproject.toml": _template("pyproject.toml").substitute(values),
            f"{module}/__init__.py": texts["generator.py"],
            f"{module}/verifier.py": texts["verifier.py"],
            f"{module}/{name}.meta.schema.json": texts["schema.json"],
            f"tests/test_{name}.py": texts["test.py"],
        }
    return {
        f"generators/tacit/{name}.py": texts["generator.py"],
        f"verifiers/{name}.py": texts["verifier.py"],
        f"schemas/json/{name}.meta.schema.json": texts["schema.json"],
        f"tests/test_{name}.py": texts["test.py"],
    }


def write_skeleton(name: str, root: Path, package: bool, domain: str = "pattern", taken: set[str] | None = None) -> Skeleton:
    """Write the skeleton of task ``name`` under ``root`` (a vrforge checkout, or with ``package``
    the folder of a new package); SkeletonError before writing anything when it cannot."""
    check_name(name, taken)
    if domain not in DOMAINS:
        raise SkeletonError(f"unknown domain {domain!r} (choose from {', '.join(DOMAINS)})")
    if not package:
        missing = [m for m in REPO_MARKERS if not (root / m).is_dir()]
        if missing:
            raise SkeletonError(f"{root} is not a vrforge checkout (no {', '.join(missing)}); "
                                "give --repo, or --package DIR to write a package of its own")
    elif root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise SkeletonError(f"{root} exists and is not an empty folder")
    files = render_files(name, domain, package)
    existing = [path for path in files if (root / path).exists()]
    if existing:
        raise SkeletonError(f"{root / existing[0]} exists; nothing was written")
    for path, text in files.items():
        write_text_atomic(root / path, text)
    return Skeleton(root, tuple(files))
