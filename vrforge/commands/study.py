"""``vrforge study create|invite|serve|report|export|import``: human studies in the browser.

One SQLite file per study (``runners/study/store.py``); the server is ``runners/study/server.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vrforge.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("study", help="human studies in the browser: TACIT baselines, CF-Eval and drift ratings")
    study = p.add_subparsers(dest="study_command", required=True)

    create = study.add_parser("create", help="make a study file (refuses to replace one that holds answers)")
    kinds = create.add_subparsers(dest="kind", required=True)
    for kind, what in (("tacit-choice", "people pick the solution among the five options"),
                       ("tacit-draw", "people draw the answer with each task's answer tools")):
        q = kinds.add_parser(kind, help=what)
        q.add_argument("dataset", nargs="?", help="a built TACIT folder; without it the puzzles are generated "
                                                  "as a build with --seed would make them")
        q.add_argument("--tasks", help="comma-separated tasks (default: every task of the dataset, or every registered task)")
        q.add_argument("--difficulties", help="comma-separated difficulties (default easy,medium,hard)")
        q.add_argument("--items", type=int, default=2, help="puzzles per task and difficulty (default 2)")
        q.add_argument("--resolution", type=int, help="image width in px (default: 1024, or the dataset's main resolution)")
        _common(q)
    q = kinds.add_parser("cfeval-rate", help="people score generated images against their CF-Eval judge questions")
    q.add_argument("--scenarios", required=True, help="scenarios JSONL, a `vrforge cfworld import` folder or a CF-World release")
    q.add_argument("--images", required=True, help="a `vrforge run t2i` output: <images>/<scenario_id>/<level>.png")
    q.add_argument("--levels", default="l1,l2,l3", help="comma-separated levels (default l1,l2,l3)")
    q.add_argument("--items", type=int, help="at most this many images, drawn with --seed (default all)")
    which = q.add_mutually_exclusive_group()
    which.add_argument("--pilot", action="store_true",
                       help="only the 50-scenario pilot: a fixed seeded selection across the domains")
    which.add_argument("--ids", type=Path, help="only the scenarios listed in this file (one id a line)")
    _common(q)
    q = kinds.add_parser("drift-rate", help="people rate a `vrforge drift human-export` (Good / Medium / Poor and a rank)")
    q.add_argument("export", help="the folder written by `vrforge drift human-export` (ratings.csv, images/)")
    q.add_argument("--items", type=int, help="at most this many groups, drawn with --seed (default all)")
    _common(q)

    q = study.add_parser("invite", help="add participants; prints one unguessable link each")
    q.add_argument("study")
    q.add_argument("--participants", type=int, required=True, help="how many links to make")
    q.add_argument("--items-each", type=int, help="items per participant (default: every item); spread evenly over the items")
    q.add_argument("--base-url", default="http://127.0.0.1:8000", help="where the study will be served (default http://127.0.0.1:8000)")
    q.add_argument("--links", help="also write the links to this CSV file (participant, label, link)")
    q.add_argument("--labels", help="comma-separated labels for the new participants (e.g. initials), kept with their answers")
    q.set_defaults(func=run_invite)

    q = study.add_parser("serve", help="serve the study (loopback only unless --public)")
    q.add_argument("study")
    q.add_argument("--host", default="127.0.0.1")
    q.add_argument("--port", type=int, default=8000, help="0: any free port (printed)")
    q.add_argument("--public", action="store_true", help="allow a non-loopback --host (anyone who can reach it needs a link)")
    q.set_defaults(func=run_serve)

    q = study.add_parser("report", help="markdown and JSON tables (accuracy, agreement, people vs a model, calibration) with plots")
    q.add_argument("studies", nargs="+", help="one or more study files (a choice and a draw study give the people's gap)")
    q.add_argument("--against", action="append", default=[],
                   help="a model run: `vrforge score` / `vrforge run tacit-choice` results.json, or a `cfeval judge` folder "
                        "(repeatable)")
    q.add_argument("--out", default="study-report", help="report folder (default ./study-report)")
    q.add_argument("--no-plot", action="store_true", help="write no plots")
    q.set_defaults(func=run_report)

    q = study.add_parser("export", help="every answer as CSV or JSONL, or in the format another command reads")
    q.add_argument("study")
    q.add_argument("--out", required=True, help="output file")
    q.add_argument("--format", choices=("csv", "jsonl", "cfeval-human", "drift-ratings"), default=None,
                   help="csv / jsonl: one row per answer (default from --out's suffix); cfeval-human: the CSV of "
                        "`vrforge cfeval calibrate --human`; drift-ratings: the ratings.csv of `vrforge drift human-import`")
    q.set_defaults(func=run_export)

    q = study.add_parser("import", help="human answers collected elsewhere into the study, as one rater")
    q.add_argument("study")
    q.add_argument("file", help="cfeval-rate: a `cfeval calibrate --human` CSV/JSONL; drift-rate: a filled ratings.csv")
    q.add_argument("--rater", required=True, help="a name for the rater (shown in reports)")
    q.set_defaults(func=run_import)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="the study file to write (STUDY.sqlite)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the choice of items and every participant's order (default 0)")
    parser.add_argument("--title", help="the title participants see")
    parser.set_defaults(func=run_create)


def run_create(args: argparse.Namespace) -> int:
    from vrforge import __version__
    from vrforge.runners.study import items as make
    from vrforge.runners.study.store import create_study

    settings: dict = {"seed": args.seed, "vrforge_version": __version__}
    if args.items is not None and args.items < 1:
        raise UserError(f"--items must be at least 1, got {args.items}")
    if args.kind in ("tacit-choice", "tacit-draw"):
        tasks = make.parse_list(args.tasks, "--tasks") or None
        difficulties = make.parse_list(args.difficulties, "--difficulties") or None
        if args.resolution is not None and not 64 <= args.resolution <= 4096:
            raise UserError(f"--resolution must be from 64 to 4096 px, got {args.resolution}")
        if args.dataset:
            puzzles, spares, resolution = make.dataset_puzzles(args.dataset, args.resolution, tasks, difficulties, args.items,
                                                               args.seed)
            settings["source"] = {"dataset": str(Path(args.dataset).resolve())}
        else:
            from vrforge.registry import all_tasks

            resolution = args.resolution or 1024
            names = tasks or [spec.name for spec in all_tasks()]
            puzzles = make.generated_puzzles(names, difficulties or ["easy", "medium", "hard"], args.items, args.seed, resolution)
            spares = []
            settings["source"] = {"generated": {"recipe_seed": args.seed}}
        blocks, new_items = make.tacit_study(args.kind, puzzles, make.examples_for(puzzles, spares, args.seed, resolution))
        settings["resolution"] = resolution
        default_title = "Visual puzzles" if args.kind == "tacit-choice" else "Visual puzzles: draw the answer"
    elif args.kind == "cfeval-rate":
        levels = make.parse_list(args.levels, "--levels")
        ids = None
        if args.ids is not None:
            try:
                ids = [line.strip() for line in args.ids.read_text(encoding="utf-8").splitlines() if line.strip()]
            except (OSError, UnicodeDecodeError) as exc:
                raise UserError(f"cannot read --ids {args.ids}: {exc}") from None
        blocks, new_items = make.cfeval_study(args.scenarios, args.images, levels, args.items, args.seed, ids=ids,
                                              pilot=args.pilot)
        settings["selection"] = "pilot" if args.pilot else ("ids" if ids is not None else "all")
        settings["source"] = {"scenarios": str(Path(args.scenarios).resolve()), "images": str(Path(args.images).resolve())}
        default_title = "Rating generated images"
    else:
        blocks, new_items = make.drift_study(args.export, args.items, args.seed)
        settings["source"] = {"export": str(Path(args.export).resolve())}
        default_title = "Rating descriptions and pictures"
    settings["title"] = args.title or default_title
    path = create_study(args.out, args.kind, settings, blocks, new_items)
    print(f"wrote {path}: {args.kind}, {len(new_items)} items in {len(blocks)} part(s); "
          f"next: vrforge study invite {path} --participants N")
    return 0


def run_invite(args: argparse.Namespace) -> int:
    import csv
    import io

    from vrforge.fileio import write_text_atomic
    from vrforge.runners.study.items import parse_list
    from vrforge.runners.study.store import Study

    labels = parse_list(args.labels, "--labels") if args.labels else None
    if labels and len(labels) != args.participants:
        raise UserError(f"--labels names {len(labels)} participants, --participants asks for {args.participants}")
    base = args.base_url.rstrip("/")
    with Study(args.study) as study:
        made = study.invite(args.participants, each=args.items_each, labels=labels)
    rows = [(pid, (labels or [""] * len(made))[k], f"{base}/s/{token}") for k, (pid, token) in enumerate(made)]
    for pid, label, link in rows:
        print(f"participant {pid}{f' ({label})' if label else ''}: {link}")
    if args.links:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerows([("participant", "label", "link"), *rows])
        write_text_atomic(Path(args.links), buffer.getvalue())
    print("the study keeps only a hash of each link: hand them out now (or keep --links safe)", file=sys.stderr)
    return 0


def run_serve(args: argparse.Namespace) -> int:
    from vrforge.runners.study.server import serve
    from vrforge.runners.study.store import Study

    if not 0 <= args.port <= 65535:
        raise UserError(f"--port must be from 0 to 65535, got {args.port}")
    with Study(args.study) as study:
        serve(study, args.host, args.port, args.public)
    return 0


def run_report(args: argparse.Namespace) -> int:
    from vrforge.runners.study.report import build_report, write_report

    report = build_report(args.studies, args.against)
    paths = write_report(report, Path(args.out), plots=not args.no_plot)
    for line in report["summary"]:
        print(line)
    print(f"written to {args.out}: {', '.join(p.name for p in paths)}")
    return 0


def run_export(args: argparse.Namespace) -> int:
    from vrforge.runners.study.report import export

    count = export(args.study, Path(args.out), args.format)
    print(f"wrote {count} row(s) to {args.out}")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from vrforge.runners.study.report import import_answers

    count = import_answers(args.study, Path(args.file), args.rater)
    print(f"imported {count} answer(s) from {args.file} as rater {args.rater!r}")
    return 0
