"""``vrforge audit FOLDER``: re-check a built release (TACIT, CF-World or reliance); writes audit.json, exit 1 if it fails."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vrforge.errors import EXIT_FAIL, UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("audit", help="re-check a built dataset folder; writes audit.json (exit 1 if it fails)")
    p.add_argument("folder")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--probes", choices=("basic", "budget", "full"), default="basic",
                   help="budget/full: also a rich logit, boosted trees and a set CNN (needs torch) as context-blind "
                        "learners; budget trains the CNN per task only, full per task and level")
    p.add_argument("--human", type=Path, help="a `vrforge study report` report.json: its human accuracy goes into the card")
    p.add_argument("--cnn-epochs", type=int, default=40, help="the set CNN's training epochs with --probes full (0: leave it out)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vrforge.builds.storage import Store, is_url, local_copy

    if args.workers < 1:
        raise UserError(f"--workers must be at least 1, got {args.workers}")
    if not is_url(args.folder):
        return _audit_folder(Path(args.folder), args)
    try:
        store = Store(args.folder)
        if not store.exists("manifest.json"):
            raise UserError(f"{args.folder} has no manifest.json (not a built dataset folder)")
        # The audit reads a local folder: a remote release is audited in a local copy and its
        # outcome (audit.json, the card's Audit section, the manifest's card hash) written back.
        with local_copy(store, keep=("audit.json", "README.md", "manifest.json")) as folder:
            return _audit_folder(folder, args, shown=args.folder)
    except (ValueError, OSError) as exc:
        raise UserError(f"cannot read {args.folder}: {exc}") from None


def _audit_folder(folder: Path, args: argparse.Namespace, shown: str | None = None) -> int:
    from vrforge.builds.audit import AuditError, audit, summary

    if not folder.is_dir():
        raise UserError(f"no such dataset folder: {folder}")
    if _manifest_kind(folder) == "cfworld":
        from vrforge.builds.cfworld_build import audit_cfworld

        report = audit_cfworld(folder)
        # every problem, one line each: the rubric's findings are the to-do list of a seed rewrite
        rubric = report.get("rubric", {})
        counts = ", ".join(f"{name} {n}" for name, n in rubric.get("per_check", {}).items())
        print(f"{'passed' if report['passed'] else 'FAILED'}: {report['files_checked']} files, "
              f"{report['rows_checked']} rows checked" + (f"; rubric: {counts}" if counts else "")
              + "".join(f"\n  {p}" for p in report["problems"]))
        return 0 if report["passed"] else EXIT_FAIL
    if _manifest_kind(folder) == "reliance":
        from vrforge.builds.reliance_build import audit_reliance

        report = audit_reliance(folder)
        print(f"{'passed' if report['passed'] else 'FAILED'}: {report['files_checked']} files, "
              f"{report['rows_checked']} items verified" + "".join(f"\n  {p}" for p in report["problems"][:20]))
        return 0 if report["passed"] else EXIT_FAIL
    try:
        report = audit(folder, workers=args.workers, progress=not args.quiet, probes=args.probes,
                       cnn_epochs=args.cnn_epochs, human=args.human)
    except RuntimeError as exc:  # the set CNN without torch
        raise UserError(str(exc)) from None
    except AuditError as exc:
        raise UserError(str(exc)) from None
    print(summary(report))
    print(f"wrote {shown + '/audit.json' if shown else folder / 'audit.json'}")
    return 0 if report["passed"] else EXIT_FAIL


def _manifest_kind(folder: Path) -> str:
    """"cfworld" for a CF-World release folder, "tacit" otherwise (the audit reports a bad manifest)."""
    from vrforge.schemas.layout import MANIFEST_FILE

    try:
        manifest = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "tacit"
    return manifest.get("kind", "tacit") if isinstance(manifest, dict) else "tacit"
