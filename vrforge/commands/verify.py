"""``vrforge verify TASK --meta META.json IMAGE``: the verdict as JSON; exit 0 pass, 1 fail, 2 unusable input."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from vrforge.errors import EXIT_FAIL, EXIT_USAGE, UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("verify", help="check an answer image against a puzzle's meta")
    p.add_argument("task")
    p.add_argument("--meta", required=True, help="the row's meta as a JSON file")
    p.add_argument("--strict", action="store_true",
                   help="also require SSIM against the task's reference drawing (see `vrforge tasks`)")
    p.add_argument("--puzzle", metavar="PNG", help="the bare puzzle image to align the answer with (default: drawn from meta)")
    p.add_argument("image")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vrforge.registry import UnknownTask, get_task

    try:
        spec = get_task(args.task)
    except UnknownTask as exc:
        raise UserError(exc.args[0]) from None
    meta = _read_meta(Path(args.meta))
    if meta.get("task", args.task) != args.task:
        raise UserError(f"{args.meta} is meta for task {meta.get('task')!r}, not {args.task!r}")
    if args.strict and spec.strict is None:
        raise UserError(f"task {args.task!r} has no strict (SSIM) mode")
    if args.puzzle and not Path(args.puzzle).is_file():
        raise UserError(f"no such puzzle image: {args.puzzle}")
    try:
        verdict = spec.check(meta, Path(args.image), strict=args.strict, puzzle=Path(args.puzzle) if args.puzzle else None)
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise UserError(f"{args.meta} is not valid {args.task} meta ({type(exc).__name__}: {exc})") from None
    print(json.dumps(verdict.to_dict(), indent=2))
    if not verdict.usable:
        return EXIT_USAGE
    return 0 if verdict.passed else EXIT_FAIL


def _read_meta(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"meta file not found: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"cannot read meta {path}: {exc}") from None
    if isinstance(meta, str):  # a row's meta column holds JSON text; accept it double-encoded
        try:
            meta = json.loads(meta)
        except json.JSONDecodeError as exc:
            raise UserError(f"cannot read meta {path}: {exc}") from None
    if not isinstance(meta, dict):
        raise UserError(f"{path} must hold a JSON object")
    return meta
