"""No module imports one that imports it back, function-level and TYPE_CHECKING imports included.

The folders map into one ``vrforge`` namespace (pyproject's package-dir); every import of a
``vrforge.*`` module is an edge, so a cycle here is a module that sits both above and below another.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]


def modules() -> dict[str, Path]:
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    found: dict[str, Path] = {}
    for package, folder in mapping.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([package, *parts])
            # vrforge/ itself maps to "vrforge"; its sibling folders are other packages.
            if package == "vrforge" and parts and f"vrforge.{parts[0]}" in mapping:
                continue
            found[name] = path
    return found


def import_graph() -> nx.DiGraph:
    found = modules()
    graph = nx.DiGraph()
    for name, path in found.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            for target in targets:
                while target and target not in found:
                    target = target.rpartition(".")[0]
                if target.startswith("vrforge") and target != name:
                    graph.add_edge(name, target)
    return graph


def test_no_import_cycles():
    cycles = sorted(sorted(c) for c in nx.simple_cycles(import_graph()) if len(c) > 1)
    assert cycles == []
