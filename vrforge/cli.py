"""The ``vrforge`` command line. User mistakes end in one line on stderr and exit code 2."""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path
from typing import Any

from vrforge.errors import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_USAGE, UserError

__all__ = ["EXIT_FAIL", "EXIT_INTERRUPTED", "EXIT_USAGE", "UserError", "main"]


def _cmd_tasks(args: argparse.Namespace) -> int:
    from vrforge.registry import all_tasks

    tasks = all_tasks()
    if args.json:
        print(json.dumps([{"name": t.name, "domain": t.domain, "version": t.version, "checks": list(t.checks),
                           "difficulties": t.parameters()} for t in tasks], indent=2))
        return 0
    for spec in tasks:
        print(f"{spec.name}  (domain: {spec.domain}, version {spec.version})")
        print(f"  {spec.description}")
        for difficulty, params in spec.parameters().items():
            print(f"  {difficulty:<7} " + ", ".join(f"{k}={v}" for k, v in params.items()))
        print(f"  checks: {', '.join(spec.checks)}")
    return 0


def _cmd_sample(args: argparse.Namespace) -> int:
    from vrforge.builds.fileio import write_bytes_atomic
    from vrforge.builds.item import ItemFailed, build_item
    from vrforge.builds.plan import PlanItem
    from vrforge.builds.recipe import RecipeError, _resolutions
    from vrforge.registry import UnknownTask, get_task

    try:
        spec = get_task(args.task)
        spec.config(args.difficulty)
        resolutions = _resolutions(args.resolutions, "--resolutions")
    except (UnknownTask, KeyError, RecipeError) as exc:
        raise UserError(exc.args[0]) from None
    if args.index < 0:
        raise UserError(f"--index must be non-negative, got {args.index}")
    item = PlanItem(args.task, args.difficulty, args.index, args.seed)
    try:
        built = build_item(item, resolutions, config_hash="sample")
    except ItemFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
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


def _cmd_build(args: argparse.Namespace) -> int:
    from vrforge.builds.build import BuildError, build
    from vrforge.builds.cfworld_build import cli_build_cfworld, recipe_kind
    from vrforge.builds.recipe import RecipeError, load_recipe

    if recipe_kind(args.recipe) == "cfworld":
        return cli_build_cfworld(args)

    try:
        recipe = load_recipe(args.recipe).limited(args.limit).with_resolutions(args.resolutions)
    except RecipeError as exc:
        raise UserError(str(exc)) from None
    if args.workers < 1:
        raise UserError(f"--workers must be at least 1, got {args.workers}")
    out = Path(args.out) if args.out else Path("datasets") / f"{recipe.name}-{recipe.version}"
    try:
        result = build(recipe, out, workers=args.workers, progress=not args.quiet)
    except BuildError as exc:
        raise UserError(str(exc)) from None
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished shards in {out} are kept; run the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    if result.already_complete:
        print(f"{out} already holds this build (manifest.json); nothing to do")
    else:
        print(f"built {result.items_built} puzzles into {out} in {result.wall:.1f} s "
              f"({result.shards_skipped} shards already done)")
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from vrforge.registry import UnknownTask, get_task

    try:
        spec = get_task(args.task)
    except UnknownTask as exc:
        raise UserError(exc.args[0]) from None
    meta = _read_meta(Path(args.meta))
    if meta.get("task", args.task) != args.task:
        raise UserError(f"{args.meta} is meta for task {meta.get('task')!r}, not {args.task!r}")
    options = {}
    if args.strict:
        if "strict" not in inspect.signature(spec.verify).parameters:
            raise UserError(f"task {args.task!r} has no strict (SSIM) mode")
        options["strict"] = True
    if args.puzzle:
        if not Path(args.puzzle).is_file():
            raise UserError(f"no such puzzle image: {args.puzzle}")
        options["puzzle"] = Path(args.puzzle)
    try:
        verdict = spec.verify(meta, Path(args.image), **options)
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise UserError(f"{args.meta} is not valid {args.task} meta ({type(exc).__name__}: {exc})") from None
    print(json.dumps(verdict.to_dict(), indent=2))
    if not verdict.usable:
        return EXIT_USAGE
    return 0 if verdict.passed else EXIT_FAIL


def _cmd_audit(args: argparse.Namespace) -> int:
    from vrforge.builds.audit import AuditError, audit, summary

    folder = Path(args.folder)
    if not folder.is_dir():
        raise UserError(f"no such dataset folder: {folder}")
    if args.workers < 1:
        raise UserError(f"--workers must be at least 1, got {args.workers}")
    if _manifest_kind(folder) == "cfworld":
        from vrforge.builds.cfworld_build import cli_audit_cfworld

        return cli_audit_cfworld(str(folder))
    try:
        report = audit(folder, workers=args.workers, progress=not args.quiet)
    except AuditError as exc:
        raise UserError(str(exc)) from None
    print(summary(report))
    print(f"wrote {folder / 'audit.json'}")
    return 0 if report["passed"] else EXIT_FAIL


def _manifest_kind(folder: Path) -> str:
    """"cfworld" for a CF-World release folder, "tacit" otherwise (the audit reports a bad manifest)."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "tacit"
    return manifest.get("kind", "tacit") if isinstance(manifest, dict) else "tacit"


def _cmd_publish(args: argparse.Namespace) -> int:
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


def _cmd_cfworld_import(args: argparse.Namespace) -> int:
    from vrforge.generators.cfworld.importer import cli_import

    return cli_import(args.path, args.out)


def _cmd_score(args: argparse.Namespace) -> int:
    from vrforge.runners.scoring import cli_gap, cli_score_discriminative, cli_score_generative

    if args.score_command == "generative":
        if args.workers < 1:
            raise UserError(f"--workers must be at least 1, got {args.workers}")
        return cli_score_generative(args.dataset, args.outputs, out=args.out, config_resolution=args.resolution,
                                    tasks=args.tasks, workers=args.workers, quiet=args.quiet)
    if args.score_command == "discriminative":
        return cli_score_discriminative(args.dataset, args.results, out=args.out)
    return cli_gap(args.generative, args.discriminative, out=args.out)


def _cmd_cfworld_draft(args: argparse.Namespace) -> int:
    from vrforge.generators.cfworld.draft import cli_draft

    return cli_draft(args)


def _cmd_cfworld_review_export(args: argparse.Namespace) -> int:
    from vrforge.generators.cfworld.review import cli_review_export

    return cli_review_export(args)


def _cmd_cfworld_review_import(args: argparse.Namespace) -> int:
    from vrforge.generators.cfworld.review import cli_review_import

    return cli_review_import(args)


def _cmd_run_generate(args: argparse.Namespace) -> int:
    from vrforge.runners.diffusion import cli_generate

    return cli_generate(args)


def _cmd_run_choice(args: argparse.Namespace) -> int:
    from vrforge.runners.vlm_choice import cli_choice

    return cli_choice(args)


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


def _parser() -> argparse.ArgumentParser:
    from vrforge import __version__
    from vrforge.registry import DIFFICULTIES
    from vrforge.render import RESOLUTIONS

    parser = argparse.ArgumentParser(prog="vrforge", description="Build, publish and evaluate visual-reasoning benchmarks.")
    parser.add_argument("--version", action="version", version=f"vrforge {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("tasks", help="list registered tasks, domains and difficulty parameters")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_tasks)

    p = sub.add_parser("sample", help="write one puzzle's SVGs, PNGs and meta to look at")
    p.add_argument("task")
    p.add_argument("--difficulty", default="easy", choices=DIFFICULTIES)
    p.add_argument("--index", type=int, default=0)
    p.add_argument("--seed", type=int, default=0, help="recipe seed (default 0)")
    p.add_argument("--resolutions", type=int, nargs="+", default=list(RESOLUTIONS))
    p.add_argument("--out", default="samples")
    p.set_defaults(func=_cmd_sample)

    p = sub.add_parser("build", help="build a release from a recipe")
    p.add_argument("recipe", help="builds/recipes/<name>.toml")
    p.add_argument("--out", help="dataset folder (default datasets/<name>-<version>)")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--limit", type=int, help="at most N puzzles per task and difficulty")
    p.add_argument("--resolutions", type=int, nargs="+", help="override the recipe's resolutions")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_build)

    p = sub.add_parser("audit", help="re-check a built dataset folder; writes audit.json (exit 1 if it fails)")
    p.add_argument("folder")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_audit)

    p = sub.add_parser("publish", help="upload an audited dataset folder to the hub and tag its version")
    p.add_argument("folder")
    p.add_argument("--repo-id", required=True, help="ORG/NAME of the dataset repo")
    p.add_argument("--dry-run", action="store_true", help="list what would be uploaded and stop")
    p.add_argument("--private", action="store_true", help="create the repo private")
    p.set_defaults(func=_cmd_publish)

    p = sub.add_parser("cfworld", help="CF-World scenarios")
    cfworld = p.add_subparsers(dest="cfworld_command", required=True)
    q = cfworld.add_parser("import", help="import the official CF-World release files into the scenario schema")
    q.add_argument("path", help="the release folder (prompt/, eval_questions/, prompt_ablation/)")
    q.add_argument("--out", help="output folder (default ./cfworld-import)")
    q.set_defaults(func=_cmd_cfworld_import)
    from vrforge.generators.cfworld.draft import add_draft_arguments, add_review_arguments

    q = cfworld.add_parser("draft", help="draft scenarios from the law bank with an LLM (any OpenAI-compatible endpoint); "
                                         "every draft is checked by code")
    add_draft_arguments(q)
    q.set_defaults(func=_cmd_cfworld_draft)
    export = cfworld.add_parser("review-export", help="write the drafts pending review to a .jsonl or .csv file")
    review = cfworld.add_parser("review-import", help="apply a reviewed file's decisions (approve / reject / edit) to the drafts")
    add_review_arguments(export, review)
    export.set_defaults(func=_cmd_cfworld_review_export)
    review.set_defaults(func=_cmd_cfworld_review_import)

    from vrforge.runners.cfeval_judge import add_judge_arguments, cli_judge
    from vrforge.runners.cfeval_report import add_calibrate_arguments, add_report_arguments, cli_calibrate, cli_report

    p = sub.add_parser("cfeval", help="CF-Eval: judge CF-World images with a VLM, report PRR/RRR, calibrate the gate")
    cfeval = p.add_subparsers(dest="cfeval_command", required=True)
    for name, help_text, add_arguments, run in (
        ("judge", "score <images>/<scenario_id>/<level>.png with a VLM judge (OpenAI-compatible endpoint or local transformers)",
         add_judge_arguments, cli_judge),
        ("report", "the paper-style table (L1, L2, L3, PRR, RRR per judge), per-domain tables, judge agreement, plot",
         add_report_arguments, cli_report),
        ("calibrate", "sweep the gating threshold against human judgements (accuracy, F1)", add_calibrate_arguments, cli_calibrate),
    ):
        q = cfeval.add_parser(name, help=help_text)
        add_arguments(q)
        q.set_defaults(func=run)

    from vrforge.runners.diffusion import add_generate_arguments  # neither imports torch
    from vrforge.runners.vlm_choice import add_arguments as add_choice_arguments

    p = sub.add_parser("run", help="run models: text-to-image on CF-World, image editing and multiple choice on TACIT")
    run = p.add_subparsers(dest="run_command", required=True)
    q = run.add_parser("t2i", help="one image per CF-World scenario and level (diffusers)")
    add_generate_arguments(q, "t2i")
    q.set_defaults(func=_cmd_run_generate)
    q = run.add_parser("tacit-generate", help="puzzle image -> answer image, the TACIT generative track (diffusers)")
    add_generate_arguments(q, "tacit-generate")
    q.set_defaults(func=_cmd_run_generate)
    q = run.add_parser("tacit-choice", help="a VLM picks among the five options (discriminative track), with circular rotation")
    add_choice_arguments(q)
    q.set_defaults(func=_cmd_run_choice)

    p = sub.add_parser("score", help="score model answers on TACIT (generative, discriminative) and the gap between them")
    score = p.add_subparsers(dest="score_command", required=True)
    q = score.add_parser("generative", help="verify model_output/<task>/<difficulty>/<task>_<difficulty>_<NNNN>.png images")
    q.add_argument("dataset", help="a built TACIT dataset folder")
    q.add_argument("outputs", help="the model_output folder (or the folder holding it)")
    q.add_argument("--out", help="report folder (default ./score-generative)")
    q.add_argument("--resolution", type=int, default=1024, choices=RESOLUTIONS, help="which configs' rows to score against")
    q.add_argument("--tasks", nargs="+", help="only these tasks")
    q.add_argument("--workers", type=int, default=1)
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    q.set_defaults(func=_cmd_score)
    q = score.add_parser("discriminative", help='score {"results":[{puzzle_id, task, difficulty, correct_index, selected_index}]}')
    q.add_argument("dataset", help="a built TACIT dataset folder")
    q.add_argument("results", help="RESULTS.json in the reference format")
    q.add_argument("--out", help="report folder (default ./score-discriminative)")
    q.set_defaults(func=_cmd_score)
    q = score.add_parser("gap", help="generative vs discriminative accuracy on the same puzzles, per task")
    q.add_argument("generative", help="results.json of `vrforge score generative` (samples.jsonl beside it)")
    q.add_argument("discriminative", help="results.json of `vrforge score discriminative` (samples.jsonl beside it)")
    q.add_argument("--out", help="also write the gap as JSON to this file")
    q.set_defaults(func=_cmd_score)

    p = sub.add_parser("verify", help="check an answer image against a puzzle's meta")
    p.add_argument("task")
    p.add_argument("--meta", required=True, help="the row's meta as a JSON file")
    p.add_argument("--strict", action="store_true", help="also require SSIM against the reference (raven, iso_reconstruction)")
    p.add_argument("--puzzle", metavar="PNG", help="the bare puzzle image to align the answer with (default: drawn from meta)")
    p.add_argument("image")
    p.set_defaults(func=_cmd_verify)

    from vrforge.commands import register_all

    register_all(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except UserError as exc:
        print(f"vrforge {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
