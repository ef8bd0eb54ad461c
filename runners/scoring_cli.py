"""``vrforge score generative|discriminative|gap``: the command line over ``runners/scoring.py`` (printing, one-line errors)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vrforge.runners.scoring import (
    MAIN_RESOLUTION,
    SAMPLES_FILE,
    ScoringError,
    _json_bytes,
    constructive_selective_gap,
    format_gap,
    score_discriminative,
    score_generative,
)
from vrforge.schemas.layout import difficulty_rank


def _fail(command: str, message: str) -> int:
    print(f"vrforge score {command}: error: {message}", file=sys.stderr)
    return 2


def _print_accuracy(summary: Mapping[str, Any]) -> None:
    o = summary["overall"]
    acc = "-" if o["accuracy"] is None else f"{100 * o['accuracy']:.1f}%"
    print(f"overall: {o['correct']}/{o['n']} = {acc}")
    for task, cell in sorted(summary["per_task"].items()):
        per_diff = summary["per_task_difficulty"].get(task, {})
        diffs = "  ".join(f"{d} {c['correct']}/{c['n']}" for d, c in
                          sorted(per_diff.items(), key=lambda kv: difficulty_rank(kv[0])))
        print(f"  {task}: {cell['correct']}/{cell['n']} = {100 * cell['accuracy']:.1f}%  ({diffs})")


def cli_score_generative(dataset: str, outputs: str, out: str | None = None, config_resolution: int = MAIN_RESOLUTION,
                         tasks: Sequence[str] | None = None, workers: int = 1, quiet: bool = False) -> int:
    """``vrforge score generative DATASET OUTPUTS [--out DIR]``; ``out`` defaults to ``./score-generative``."""
    try:
        report = score_generative(dataset, outputs, config_resolution=config_resolution, tasks=tasks,
                                  workers=workers, progress=not quiet)
        target = Path(out) if out is not None else Path.cwd() / "score-generative"
        results_path, _ = report.write(target)
    except ScoringError as exc:
        return _fail("generative", str(exc))
    except OSError as exc:
        return _fail("generative", f"cannot write the report ({exc.__class__.__name__}: {exc})")
    s = report.summary
    _print_accuracy(s)
    print(f"missing outputs: {s['missing']['total']}, unusable images: {s['unusable']['total']}")
    for task, checks in sorted(s["failed_checks"].items()):
        if checks:
            print(f"  {task} failed checks: " + ", ".join(f"{c} {n}" for c, n in sorted(checks.items())))
    print(f"wrote {results_path} and {SAMPLES_FILE}")
    return 0


def cli_score_discriminative(dataset: str, results: str, out: str | None = None) -> int:
    """``vrforge score discriminative DATASET RESULTS.json [--out DIR]``; ``out`` defaults to ``./score-discriminative``."""
    try:
        report = score_discriminative(dataset, results)
        target = Path(out) if out is not None else Path.cwd() / "score-discriminative"
        results_path, _ = report.write(target)
    except ScoringError as exc:
        return _fail("discriminative", str(exc))
    except OSError as exc:
        return _fail("discriminative", f"cannot write the report ({exc.__class__.__name__}: {exc})")
    s = report.summary
    _print_accuracy(s)
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(s["rejected"]["reasons"].items())) or "none"
    print(f"{s['entries']} entries; {s['rejected']['total']} rejected ({reasons}); "
          f"{s['not_answered']['total']} puzzles not answered; "
          f"{s['answer_index_mismatches']['total']} correct_index disagreeing with the dataset")
    print(f"wrote {results_path} and {SAMPLES_FILE}")
    return 0


def cli_gap(generative_results: str, discriminative_results: str, out: str | None = None) -> int:
    """``vrforge score gap GEN_RESULTS.json DISC_RESULTS.json [--out FILE]``: prints the table, optionally writes JSON."""
    from vrforge.fileio import write_bytes_atomic

    try:
        gap = constructive_selective_gap(Path(generative_results), Path(discriminative_results))
        if out is not None:
            write_bytes_atomic(Path(out), _json_bytes(gap))
    except ScoringError as exc:
        return _fail("gap", str(exc))
    except OSError as exc:
        return _fail("gap", f"cannot write {out} ({exc.__class__.__name__}: {exc})")
    print(format_gap(gap))
    print(f"{gap['puzzles']} puzzles in both tracks ({gap['only_generative']} only generative, "
          f"{gap['only_discriminative']} only discriminative)")
    if out is not None:
        print(f"wrote {out}")
    return 0
