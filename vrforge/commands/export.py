"""``vrforge export lmms-eval|vlmevalkit DATASET --out PATH``: the TACIT discriminative track in other frameworks' formats."""

from __future__ import annotations

import argparse

from vrforge.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("export", help="the TACIT discriminative track as an lmms-eval task or a VLMEvalKit TSV")
    formats = parser.add_subparsers(dest="export_format", required=True)
    q = formats.add_parser("lmms-eval", help="a task folder (YAMLs + utils.py) for lmms-eval")
    q.add_argument("dataset", help="a built TACIT dataset folder")
    q.add_argument("--out", required=True, help="the task folder to write")
    q.add_argument("--dataset-path", help="what lmms-eval loads (a hub id such as org/tacit; default: this folder)")
    q.add_argument("--resolution", type=int, help="which configs' images (default 1024 px, else the smallest)")
    q.set_defaults(func=run)
    q = formats.add_parser("vlmevalkit", help="one multiple-choice TSV in VLMEvalKit's layout (images as base64)")
    q.add_argument("dataset", help="a built TACIT dataset folder")
    q.add_argument("--out", required=True, help="the .tsv file, or a folder for TACIT_<resolution>.tsv")
    q.add_argument("--resolution", type=int, help="which configs' images (default 1024 px, else the smallest)")
    q.add_argument("--tasks", nargs="+", help="only these tasks")
    q.add_argument("--difficulties", nargs="+", help="only these difficulties")
    q.add_argument("--limit", type=int, help="at most N puzzles per task and difficulty")
    q.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vrforge.runners.exports import ExportError, export_lmms_eval, export_vlmevalkit

    try:
        if args.export_format == "lmms-eval":
            written = export_lmms_eval(args.dataset, args.out, dataset_path=args.dataset_path, resolution=args.resolution)
            print(f"wrote {len(written) - 3} lmms-eval tasks (group tacit_choice) into {args.out}; "
                  f"run: lmms-eval --include_path {args.out} --tasks tacit_choice ...")
            return 0
        path, rows = export_vlmevalkit(args.dataset, args.out, resolution=args.resolution, tasks=args.tasks,
                                       difficulties=args.difficulties, limit=args.limit)
    except ExportError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(f"cannot write {args.out} ({exc.__class__.__name__}: {exc})") from None
    print(f"wrote {rows} questions to {path}")
    return 0
