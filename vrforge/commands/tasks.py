"""``vrforge tasks``: the registered tasks, their domains, difficulty parameters and checks."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("tasks", help="list registered tasks, domains and difficulty parameters")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def _legibility(spec) -> dict[str, dict[str, float]]:
    """level -> feature -> pixels at 512 px (the smallest release width)."""
    return {level: spec.feature_pixels(config, 512) for level, config in spec.difficulties.items()}


def task_records() -> list[dict[str, Any]]:
    """What ``vrforge tasks --json`` prints, one record per registered task (the docs' task reference reads it too)."""
    from vrforge.params import describe
    from vrforge.registry import all_tasks

    return [{"name": t.name, "domain": t.domain, "version": t.version, "description": t.description, "checks": list(t.checks),
             "difficulties": t.parameters(), "difficulty_stat": t.difficulty_stat,
             "parameters": describe(type(t.difficulties["easy"])),
             "legibility_px_at_512": _legibility(t), "legibility_floors": dict(t.legibility_floors),
             "conventions": dict(t.conventions),
             "strict": {"check": t.strict.check, "threshold": t.strict.threshold} if t.strict else None,
             "module": t.generate.__module__} for t in all_tasks()]


def run(args: argparse.Namespace) -> int:
    from vrforge.params import describe
    from vrforge.registry import all_tasks

    if args.json:
        print(json.dumps(task_records(), indent=2, default=str))
        return 0
    tasks = all_tasks()
    for spec in tasks:
        print(f"{spec.name}  (domain: {spec.domain}, version {spec.version}, from {spec.generate.__module__})")
        print(f"  {spec.description}")
        print("  parameters:")
        for entry in describe(type(spec.difficulties["easy"])):
            doc = f": {entry['doc']}" if entry["doc"] else ""
            print(f"    {entry['name']} ({entry['type']}, {entry['bounds']}){doc}")
        print("  presets:")
        for difficulty, params in spec.parameters().items():
            print(f"    {difficulty:<7} " + ", ".join(f"{k}={v}" for k, v in params.items()))
        if spec.legibility_floors:
            print("  legibility floors: " + ", ".join(f"{k} >= {v:g} px" for k, v in spec.legibility_floors.items()))
        print(f"  checks: {', '.join(spec.checks)}; difficulty statistic: {spec.difficulty_stat}"
              + (f"; strict mode: {spec.strict.check} >= {spec.strict.threshold}" if spec.strict else ""))
    return 0
