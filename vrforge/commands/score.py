"""``vrforge score generative|discriminative|gap``: accuracy of model answers on TACIT and the gap between the tracks."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vrforge.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    from vrforge.schemas.layout import MAIN_RESOLUTION, RESOLUTIONS

    p = subparsers.add_parser("score", help="score model answers on TACIT (generative, discriminative) and the gap between them")
    score = p.add_subparsers(dest="score_command", required=True)
    q = score.add_parser("generative", help="verify model_output/<task>/<difficulty>/<task>_<difficulty>_<NNNN>.png images")
    q.add_argument("dataset", help="a built TACIT dataset folder")
    q.add_argument("outputs", help="the model_output folder (or the folder holding it)")
    q.add_argument("--out", help="report folder (default ./score-generative)")
    q.add_argument("--resolution", type=int, default=MAIN_RESOLUTION, choices=RESOLUTIONS, help="which configs' rows to score against")
    q.add_argument("--tasks", nargs="+", help="only these tasks")
    q.add_argument("--workers", type=int, default=1)
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    q.set_defaults(func=run)
    q = score.add_parser("discriminative", help='score {"results":[{puzzle_id, task, difficulty, correct_index, selected_index}]}')
    q.add_argument("dataset", help="a built TACIT dataset folder")
    q.add_argument("results", help="RESULTS.json in the reference format")
    q.add_argument("--out", help="report folder (default ./score-discriminative)")
    q.set_defaults(func=run)
    q = score.add_parser("gap", help="generative vs discriminative accuracy on the same puzzles, per task")
    q.add_argument("generative", help="results.json of `vrforge score generative` (samples.jsonl beside it)")
    q.add_argument("discriminative", help="results.json of `vrforge score discriminative` (samples.jsonl beside it)")
    q.add_argument("--out", help="also write the gap as JSON to this file")
    q.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.score_command == "generative":
        return _generative(args)
    if args.score_command == "discriminative":
        return _discriminative(args)
    return _gap(args)


def _print_accuracy(summary: Mapping[str, Any]) -> None:
    from vrforge.schemas.layout import difficulty_rank

    o = summary["overall"]
    acc = "-" if o["accuracy"] is None else f"{100 * o['accuracy']:.1f}%"
    print(f"overall: {o['correct']}/{o['n']} = {acc}")
    for task, cell in sorted(summary["per_task"].items()):
        per_diff = summary["per_task_difficulty"].get(task, {})
        diffs = "  ".join(f"{d} {c['correct']}/{c['n']}" for d, c in
                          sorted(per_diff.items(), key=lambda kv: difficulty_rank(kv[0])))
        print(f"  {task}: {cell['correct']}/{cell['n']} = {100 * cell['accuracy']:.1f}%  ({diffs})")


def _write(report: Any, out: str | None, default: str) -> Path:
    """Writes results.json and samples.jsonl into ``out`` (default ./``default``); the path of results.json."""
    try:
        results_path, _ = report.write(Path(out) if out is not None else Path.cwd() / default)
    except OSError as exc:
        raise UserError(f"cannot write the report ({exc.__class__.__name__}: {exc})") from None
    return Path(results_path)


def _generative(args: argparse.Namespace) -> int:
    from vrforge.runners.scoring import SAMPLES_FILE, score_generative

    if args.workers < 1:
        raise UserError(f"--workers must be at least 1, got {args.workers}")
    report = score_generative(args.dataset, args.outputs, config_resolution=args.resolution, tasks=args.tasks,
                              workers=args.workers, progress=not args.quiet)
    results_path = _write(report, args.out, "score-generative")
    s = report.summary
    _print_accuracy(s)
    print(f"missing outputs: {s['missing']['total']}, unusable images: {s['unusable']['total']}")
    for task, checks in sorted(s["failed_checks"].items()):
        if checks:
            print(f"  {task} failed checks: " + ", ".join(f"{c} {n}" for c, n in sorted(checks.items())))
    print(f"wrote {results_path} and {SAMPLES_FILE}")
    return 0


def _discriminative(args: argparse.Namespace) -> int:
    from vrforge.runners.scoring import SAMPLES_FILE, score_discriminative

    report = score_discriminative(args.dataset, args.results)
    results_path = _write(report, args.out, "score-discriminative")
    s = report.summary
    _print_accuracy(s)
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(s["rejected"]["reasons"].items())) or "none"
    print(f"{s['entries']} entries; {s['rejected']['total']} rejected ({reasons}); "
          f"{s['not_answered']['total']} puzzles not answered; "
          f"{s['answer_index_mismatches']['total']} correct_index disagreeing with the dataset")
    print(f"wrote {results_path} and {SAMPLES_FILE}")
    return 0


def _gap(args: argparse.Namespace) -> int:
    from vrforge.fileio import write_json_atomic
    from vrforge.runners.scoring import constructive_selective_gap, format_gap

    gap = constructive_selective_gap(Path(args.generative), Path(args.discriminative))
    if args.out is not None:
        try:
            write_json_atomic(Path(args.out), gap, ensure_ascii=False)
        except OSError as exc:
            raise UserError(f"cannot write {args.out} ({exc.__class__.__name__}: {exc})") from None
    print(format_gap(gap))
    print(f"{gap['puzzles']} puzzles in both tracks ({gap['only_generative']} only generative, "
          f"{gap['only_discriminative']} only discriminative)")
    if args.out is not None:
        print(f"wrote {args.out}")
    return 0
