"""``vrforge build RECIPE``: a TACIT, CF-World or visual-reliance release from its recipe, resumable."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from vrforge.errors import EXIT_INTERRUPTED, UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("build", help="build a release from a recipe")
    p.add_argument("recipe", help="builds/recipes/<name>.toml")
    p.add_argument("--out", help="dataset folder or fsspec URL such as s3://bucket/tacit (default datasets/<name>-<version>)")
    p.add_argument("--workers", type=int, default=1, help="local worker processes (local and dask-local executors)")
    p.add_argument("--executor", choices=("local", "dask", "dask-local"), default="local",
                   help="local processes (default), a Dask cluster (--scheduler) or a Dask LocalCluster of --workers processes")
    p.add_argument("--scheduler", help="Dask scheduler address for --executor dask (tcp://host:8786)")
    p.add_argument("--limit", type=int, help="at most N puzzles per task and difficulty")
    p.add_argument("--resolutions", type=int, nargs="+", help="override the recipe's resolutions")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vrforge.builds.build import BuildError, build
    from vrforge.builds.cfworld_build import recipe_kind
    from vrforge.builds.item import ItemFailed
    from vrforge.builds.recipe import RecipeError, load_recipe
    from vrforge.builds.storage import is_url

    if recipe_kind(args.recipe) == "cfworld":
        return _build_cfworld(args)
    from vrforge.builds.reliance_build import is_reliance_recipe

    if is_reliance_recipe(args.recipe):
        return _build_reliance(args)

    try:
        recipe = load_recipe(args.recipe).limited(args.limit).with_resolutions(args.resolutions)
    except RecipeError as exc:
        raise UserError(str(exc)) from None
    if args.workers < 1:
        raise UserError(f"--workers must be at least 1, got {args.workers}")
    executor = _executor(args)
    out = args.out if args.out and is_url(args.out) else Path(args.out or Path("datasets") / f"{recipe.name}-{recipe.version}")
    try:
        result = build(recipe, out, workers=args.workers, progress=not args.quiet, executor=executor)
    except (BuildError, ValueError, OSError) as exc:
        raise UserError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    except ItemFailed as exc:  # a level whose parameters the generator cannot meet: finished shards stay
        raise UserError(f"{exc} (are the level's parameters possible?); finished shards in {out} are kept") from None
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished shards in {out} are kept; run the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    if result.already_complete:
        print(f"{out} already holds this build (manifest.json); nothing to do")
    else:
        print(f"built {result.items_built} puzzles into {out} in {result.wall:.1f} s "
              f"({result.shards_skipped} shards already done)")
    return 0


def _executor(args: argparse.Namespace) -> Any:
    """None for the local executor; a Dask one for ``--executor dask`` (``--scheduler``) or ``dask-local``."""
    if args.executor == "local":
        if args.scheduler:
            raise UserError("--scheduler needs --executor dask")
        return None
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise UserError("the Dask executors need the distributed extra: pip install 'vrforge[distributed]'") from None
    from vrforge.builds.executors import DaskExecutor

    if args.executor == "dask":
        if not args.scheduler:
            raise UserError("--executor dask needs --scheduler ADDRESS (tcp://host:8786); for a local cluster use dask-local")
        return DaskExecutor(address=args.scheduler)
    if args.scheduler:
        raise UserError("--scheduler is for --executor dask; dask-local starts its own cluster of --workers processes")
    return DaskExecutor(workers=args.workers)


def _build_cfworld(args: argparse.Namespace) -> int:
    from vrforge.builds.cfworld_build import SPLIT, CfworldBuildError, build_cfworld, load_cfworld_recipe
    from vrforge.schemas.layout import MANIFEST_FILE

    recipe = load_cfworld_recipe(args.recipe)
    if args.resolutions:
        raise CfworldBuildError("--resolutions does not apply to CF-World (it has no images)")
    out = Path(args.out) if args.out else Path("datasets") / f"{recipe.name}-{recipe.version}"
    try:
        build_cfworld(args.recipe, out, limit=args.limit)
        manifest = json.loads((out / MANIFEST_FILE).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot write ({exc.__class__.__name__}: {exc})") from None
    if not args.quiet:
        rows = ", ".join(f"{config} {splits[SPLIT]}" for config, splits in manifest["rows"].items())
        unchanged = manifest["denominalization"].get("unchanged", [])
        print(f"built {out}: {rows} rows" + (f"; {len(unchanged)} L2 prompts left unchanged by the lexicon "
                                             f"(listed in manifest.json)" if unchanged else ""))
    return 0


def _build_reliance(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from vrforge.builds.reliance_build import SPLIT, RelianceBuildError, build_reliance, load_reliance_recipe
    from vrforge.schemas.layout import MANIFEST_FILE

    recipe = load_reliance_recipe(args.recipe)
    if args.resolutions:
        raise RelianceBuildError("--resolutions does not apply to the reliance release (its scenes are 256 px)")
    if args.limit is not None:
        if args.limit < 1:
            raise RelianceBuildError(f"--limit must be a positive integer, got {args.limit}")
        recipe = replace(recipe, count=min(recipe.count, args.limit))
    out = Path(args.out) if args.out else Path("datasets") / f"{recipe.name}-{recipe.version}"
    try:
        build_reliance(recipe, out, workers=args.workers, progress=not args.quiet)
    except OSError as exc:
        raise RelianceBuildError(f"cannot write ({exc.__class__.__name__}: {exc})") from None
    manifest = json.loads((out / MANIFEST_FILE).read_text(encoding="utf-8"))
    print(f"built {out}: " + ", ".join(f"{q} {s[SPLIT]}" for q, s in manifest["rows"].items()) + " items")
    return 0
