"""``vrforge publish FOLDER --repo-id ORG/NAME``: upload an audited dataset folder to the hub and tag its version."""

from __future__ import annotations

import argparse
from pathlib import Path

from vrforge.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("publish", help="upload an audited dataset folder to the hub and tag its version")
    p.add_argument("folder")
    p.add_argument("--repo-id", required=True, help="ORG/NAME of the dataset repo")
    p.add_argument("--dry-run", action="store_true", help="list what would be uploaded and stop")
    p.add_argument("--private", action="store_true", help="create the repo private")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vrforge.builds.publish import PublishError, plan_upload, publish

    folder = Path(args.folder)
    if not folder.is_dir():
        raise UserError(f"no such dataset folder: {folder}")
    if args.repo_id.count("/") != 1 or not all(args.repo_id.split("/")):
        raise UserError(f"--repo-id must look like ORG/NAME, got {args.repo_id!r}")
    try:
        plan = plan_upload(folder, args.repo_id)
        if args.dry_run:
            for name, size in plan.files:
                print(f"{size:>12}  {name}")
            print(f"would upload {len(plan.files)} files ({plan.total_bytes} bytes) to datasets/{plan.repo_id} "
                  f"and tag {plan.tag}")
            return 0
        url = publish(folder, plan, private=args.private)
    except PublishError as exc:
        raise UserError(str(exc)) from None
    print(f"published {len(plan.files)} files to {url} and tagged {plan.tag}")
    return 0
