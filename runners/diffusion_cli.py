"""The command line of the image runners (``vrforge run t2i`` / ``vrforge run tacit-generate``): arguments,
the items and input settings they name, and the one-line errors. The work is ``runners/diffusion.py``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from vrforge.runners.diffusion import (
    DTYPE_NAMES,
    MANIFEST_FILE,
    CallSettings,
    ModelSpec,
    RunConfig,
    RunError,
    _first_line,
    model_source,
    run,
)
from vrforge.runners.items import GenerationItem, ItemsError


def add_generate_arguments(parser: argparse.ArgumentParser, kind: str) -> None:
    """The arguments of ``vrforge run t2i`` (kind "t2i") or ``vrforge run tacit-generate``."""
    if kind == "t2i":
        parser.add_argument("prompts", help="CF-World scenarios: .jsonl/.json file, import folder, dataset folder or release folder")
        parser.add_argument("--levels", nargs="+", default=["l1", "l2", "l3"], help="levels to draw (default l1 l2 l3)")
        parser.add_argument("--limit", type=int, help="only the first N scenarios")
        parser.add_argument("--images-per-prompt", type=int, default=1,
                            help="images per scenario and level (GenEval-style); with N > 1 image k is <id>/<level>_<k>.png")
    else:
        parser.add_argument("dataset", help="a built TACIT dataset folder")
        parser.add_argument("--tasks", nargs="+", help="only these tasks")
        parser.add_argument("--difficulties", nargs="+", choices=["easy", "medium", "hard"], help="only these difficulties")
        parser.add_argument("--input-resolution", type=int, help="which configs' puzzle images to use (default 1024 px)")
        parser.add_argument("--limit", type=int, help="only the first N puzzles per task and difficulty")
        parser.add_argument("--strength", type=float, help="img2img strength (pipeline default when unset)")
    parser.add_argument("--model", required=True, help="hub id (org/name) or a local diffusers pipeline folder")
    parser.add_argument("--out", required=True, help="output folder (resumable: existing outputs are kept)")
    parser.add_argument("--revision", help="hub branch, tag or commit")
    parser.add_argument("--variant", help="weights variant, e.g. fp16")
    parser.add_argument("--local-files-only", action="store_true", help="never download; use the local folder or hub cache")
    parser.add_argument("--pipeline-class", default="auto", help="a diffusers pipeline class name (default: auto)")
    parser.add_argument("--trust-remote-code", action="store_true", help="allow code shipped with the model repo")
    parser.add_argument("--custom-pipeline", help="a diffusers community/custom pipeline (runs its code)")
    parser.add_argument("--dtype", default="auto", help="auto (bf16 on CUDA, fp32 on CPU), bf16, fp16 or fp32")
    parser.add_argument("--steps", type=int, help="num_inference_steps (pipeline default when unset)")
    parser.add_argument("--guidance", type=float, help="guidance_scale (pipeline default when unset)")
    parser.add_argument("--size", type=int, help="square size (t2i) or longer side (image input)")
    parser.add_argument("--width", type=int)
    parser.add_argument("--height", type=int)
    parser.add_argument("--negative-prompt")
    parser.add_argument("--call-kwargs", default="{}", help="JSON object of further pipeline call arguments")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0, help="run seed; each item's seed derives from it and the item id")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(generate_kind=kind)


def _items_and_inputs(args: argparse.Namespace) -> tuple[list[GenerationItem], dict[str, Any], dict[str, Any]]:
    """(items, where they came from, the input settings compared on resume)."""
    from vrforge.runners.items import LEVELS, cfworld_items, tacit_dataset_tasks, tacit_instruction, tacit_items
    from vrforge.runners.outputs import text_sha256
    from vrforge.runners.scoring import dataset_info

    if args.limit is not None and args.limit < 1:
        raise RunError(f"--limit must be at least 1, got {args.limit}")
    if args.generate_kind == "t2i":
        # The prompt hash covers every scenario, so --limit can grow a run but another prompt file cannot join it.
        per_prompt = args.images_per_prompt
        every = cfworld_items(args.prompts, levels=args.levels, images_per_prompt=per_prompt)
        items = every[: args.limit * len(args.levels) * per_prompt] if args.limit is not None else every
        levels = [lv for lv in LEVELS if lv in args.levels]
        return items, {"prompts": str(args.prompts), "levels": levels, "limit": args.limit, "images_per_prompt": per_prompt}, {
            "levels": levels, "images_per_prompt": per_prompt, "prompts_sha256": text_sha256([[i.id, i.prompt] for i in every])}
    items = tacit_items(args.dataset, resolution=args.input_resolution, tasks=args.tasks,
                        difficulties=args.difficulties, limit=args.limit)
    resolution = items[0].info["input_resolution"]
    instructions = {task: tacit_instruction(task) for task in tacit_dataset_tasks(args.dataset, resolution)}
    return items, {"dataset": str(args.dataset), "tasks": args.tasks, "difficulties": args.difficulties,
                   "input_resolution": resolution, "limit": args.limit}, {
        "input_resolution": resolution, "dataset": dataset_info(Path(args.dataset)),
        "instructions_sha256": text_sha256(instructions)}


def cli_generate(args: argparse.Namespace) -> int:
    """``vrforge run t2i`` / ``vrforge run tacit-generate``: 0 done, 1 generation failed, 2 bad input, 130 interrupted."""
    command = f"vrforge run {args.generate_kind}"

    def fail(message: str, code: int = 2) -> int:
        print(f"{command}: error: {message}", file=sys.stderr)
        return code

    try:
        import accelerate  # noqa: F401
        import diffusers  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        return fail(f"{exc.name} is not installed (pip install 'vrforge[eval]')")
    try:
        if args.dtype not in DTYPE_NAMES:
            raise RunError(f"unknown dtype {args.dtype!r} (choose from {', '.join(DTYPE_NAMES)})")
        try:
            extra = json.loads(args.call_kwargs)
        except json.JSONDecodeError as exc:
            raise RunError(f"--call-kwargs is not valid JSON ({exc.msg})") from None
        if not isinstance(extra, dict):
            raise RunError("--call-kwargs must be a JSON object")
        settings = CallSettings(steps=args.steps, guidance=args.guidance, width=args.width, height=args.height,
                                size=args.size, strength=getattr(args, "strength", None),
                                negative_prompt=args.negative_prompt, extra=extra)
        settings.validate()
        spec = ModelSpec(model=args.model, revision=args.revision, variant=args.variant,
                         local_files_only=args.local_files_only, trust_remote_code=args.trust_remote_code,
                         custom_pipeline=args.custom_pipeline, pipeline_class=args.pipeline_class)
        model_source(spec)  # a missing folder is reported before the items are read
        items, inputs, input_settings = _items_and_inputs(args)
        config = RunConfig(kind=args.generate_kind, spec=spec, out=Path(args.out), settings=settings, dtype=args.dtype,
                           seed=args.seed, batch_size=args.batch_size, progress=not args.quiet, inputs=inputs,
                           input_settings=input_settings)
        manifest = run(config, items)
    except (RunError, ItemsError) as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        return fail("interrupted; finished images are kept, run the same command to resume", 130)
    except Exception as exc:  # noqa: BLE001 - a model crash: the manifest lists what was done
        return fail(f"generation failed ({exc.__class__.__name__}: {_first_line(exc)}); "
                    "finished images are kept, run the same command to resume", 1)
    if manifest:
        last = manifest["runs"][-1]
        rate = f", {last['images_per_second']:.2f} images/s" if last["images_per_second"] else ""
        print(f"{last['generated']} generated, {last['skipped_existing']} already there{rate}; "
              f"wrote {Path(args.out) / MANIFEST_FILE}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m vrforge.runners.diffusion {t2i,tacit-generate} ...`` (the same as ``vrforge run``)."""
    parser = argparse.ArgumentParser(prog="vrforge run")
    sub = parser.add_subparsers(dest="run_command", required=True)
    add_generate_arguments(sub.add_parser("t2i", help="text-to-image over CF-World scenarios"), "t2i")
    add_generate_arguments(sub.add_parser("tacit-generate", help="puzzle image -> answer image (TACIT generative track)"),
                           "tacit-generate")
    return cli_generate(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
