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
    q = formats.add_parser("vlmevalkit", help="multiple-choice TSVs in VLMEvalKit's layout (images as base64 PNG)")
    q.add_argument("dataset", help="a built TACIT dataset folder")
    q.add_argument("--out", required=True,
                   help="a folder for TACIT_<resolution>_<task>[_<difficulty>][_circular].tsv, or one .tsv file with --split none")
    q.add_argument("--split", choices=("task", "level", "none"),
                   help="one TSV per task (default for a folder), per task and difficulty, or one in all (default for a .tsv)")
    q.add_argument("--circular", action="store_true",
                   help="add the four rotated copies of every puzzle (index + k * 10**6) for VLMEvalKit's circular scoring")
    q.add_argument("--max-bytes", type=int, default=2**30,
                   help="refuse to write a TSV larger than this: past 1 GiB (the default) VLMEvalKit re-encodes its images")
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
            leaves = sum(1 for p in written if p.read_text(encoding="utf-8").startswith("include:"))
            print(f"wrote {leaves} lmms-eval tasks (group tacit_choice) into {args.out}; "
                  f"run: lmms-eval --include_path {args.out} --tasks tacit_choice ...")
            return 0
        files = export_vlmevalkit(args.dataset, args.out, resolution=args.resolution, tasks=args.tasks,
                                  difficulties=args.difficulties, limit=args.limit, split=args.split,
                                  circular=args.circular, max_bytes=args.max_bytes)
    except ExportError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(f"cannot write {args.out} ({exc.__class__.__name__}: {exc})") from None
    for path, rows in files:
        print(f"wrote {rows} questions{' (x5 rotations)' if args.circular else ''} to {path}")
    return 0
