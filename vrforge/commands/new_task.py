"""``vrforge new-task NAME``: write a working skeleton of a new task (see ``vrforge.skeleton``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from vrforge.skeleton import DOMAINS, write_skeleton


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("new-task", help="write a working skeleton of a new task (generator, verifier, schema, tests)")
    p.add_argument("name", help="the task's name: lower-case letters, digits and underscores")
    p.add_argument("--domain", default="pattern", choices=DOMAINS)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--repo", default=".", help="the vrforge checkout to add the task to (default: this folder)")
    where.add_argument("--package", metavar="DIR", help="write an installable package of its own in DIR instead")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vrforge.registry import all_tasks

    taken = {spec.name for spec in all_tasks()}
    package = args.package is not None
    root = Path(args.package if package else args.repo)
    skeleton = write_skeleton(args.name, root, package, args.domain, taken)
    for path in skeleton.files:
        print(root / path)
    if package:
        print(f"next: pip install -e {root}  (then `vrforge tasks` lists {args.name}; run its tests with pytest {root / 'tests'})")
    else:
        print(f"next: OMP_NUM_THREADS=1 python -m pytest -q tests/test_{args.name}.py tests/test_tacit_tasks.py -k {args.name}")
    return 0
