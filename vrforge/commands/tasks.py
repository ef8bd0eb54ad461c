"""``vrforge tasks``: the registered tasks, their domains, difficulty parameters and checks."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("tasks", help="list registered tasks, domains and difficulty parameters")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vrforge.registry import all_tasks

    tasks = all_tasks()
    if args.json:
        print(json.dumps([{"name": t.name, "domain": t.domain, "version": t.version, "checks": list(t.checks),
                           "difficulties": t.parameters(), "difficulty_stat": t.difficulty_stat,
                           "strict": {"check": t.strict.check, "threshold": t.strict.threshold} if t.strict else None,
                           "module": t.generate.__module__} for t in tasks], indent=2))
        return 0
    for spec in tasks:
        print(f"{spec.name}  (domain: {spec.domain}, version {spec.version}, from {spec.generate.__module__})")
        print(f"  {spec.description}")
        for difficulty, params in spec.parameters().items():
            print(f"  {difficulty:<7} " + ", ".join(f"{k}={v}" for k, v in params.items()))
        print(f"  checks: {', '.join(spec.checks)}; difficulty statistic: {spec.difficulty_stat}"
              + (f"; strict mode: {spec.strict.check} >= {spec.strict.threshold}" if spec.strict else ""))
    return 0
