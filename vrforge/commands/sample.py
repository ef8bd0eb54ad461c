"""``vrforge sample TASK``: one puzzle's SVGs, PNGs and meta written to a folder, to look at."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vrforge.errors import EXIT_FAIL, UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    from vrforge.schemas.layout import RESOLUTIONS

    p = subparsers.add_parser("sample", help="write one puzzle's SVGs, PNGs and meta to look at")
    p.add_argument("task")
    p.add_argument("--difficulty", default="easy", help="a preset of the task: easy, medium, hard, expert (see `vrforge tasks`)")
    p.add_argument("--index", type=int, default=0)
    p.add_argument("--seed", type=int, default=0, help="recipe seed (default 0)")
    p.add_argument("--resolutions", type=int, nargs="+", default=list(RESOLUTIONS))
    p.add_argument("--out", default="samples")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vrforge.builds.item import ItemFailed, build_item
    from vrforge.builds.plan import PlanItem
    from vrforge.builds.recipe import RecipeError, parse_resolutions
    from vrforge.fileio import write_bytes_atomic
    from vrforge.registry import UnknownTask, get_task

    try:
        spec = get_task(args.task)
        spec.config(args.difficulty)
        resolutions = parse_resolutions(args.resolutions, "--resolutions")
    except (UnknownTask, KeyError, RecipeError) as exc:
        raise UserError(exc.args[0]) from None
    if args.index < 0:
        raise UserError(f"--index must be non-negative, got {args.index}")
    # A level is never drawn where it is illegible: those sizes are left out, as a build leaves them out.
    illegible = [r for r in resolutions if spec.illegible(spec.config(args.difficulty), r)]
    if illegible and len(illegible) == len(resolutions):
        raise UserError(f"{args.task} {args.difficulty} is illegible at {', '.join(map(str, illegible))} px "
                        f"({spec.illegible(spec.config(args.difficulty), illegible[-1])[0]}); choose larger --resolutions")
    if illegible:
        print(f"vrforge sample: leaving out {', '.join(map(str, illegible))} px, where {args.task} {args.difficulty} "
              "is illegible", file=sys.stderr)
        resolutions = tuple(r for r in resolutions if r not in illegible)
    item = PlanItem(args.task, args.difficulty, args.index, args.seed)
    try:
        built = build_item(item, resolutions, config_hash="sample")
    except ItemFailed as exc:
        print(f"vrforge sample: error: {exc}", file=sys.stderr)  # the puzzle cannot be made: exit 1, not a usage error
        return EXIT_FAIL
    out = Path(args.out) / item.id
    write_bytes_atomic(out / "meta.json", (json.dumps(json.loads(built.fields["meta"]), indent=2) + "\n").encode())
    write_bytes_atomic(out / "puzzle.svg", built.fields["svg_puzzle"].encode())
    write_bytes_atomic(out / "solution.svg", built.fields["svg_solution"].encode())
    for res, images in built.images.items():
        write_bytes_atomic(out / f"puzzle_{res}.png", images["puzzle"])
        write_bytes_atomic(out / f"solution_{res}.png", images["solution"])
        for k, (png, name) in enumerate(zip(images["distractors"], built.fields["distractor_violations"])):
            write_bytes_atomic(out / f"distractor{k}_{name}_{res}.png", png)
    info = {k: built.fields[k] for k in ("id", "seed", "answer_index", "distractor_violations", "generator_version")}
    info["stats"] = built.stats
    info["rejected_attempts"] = dict(built.rejections)
    write_bytes_atomic(out / "item.json", (json.dumps(info, indent=2) + "\n").encode())
    print(f"wrote {out}")
    return 0
