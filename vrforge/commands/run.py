"""``vrforge run t2i|tacit-generate|tacit-choice``: run models on CF-World and TACIT.

``t2i`` and ``tacit-generate`` drive the diffusers runner (``runners/diffusion.py``);
``tacit-choice`` asks a VLM to pick among the five options (``runners/vlm_choice.py``) through
a backend built here from the arguments (``runners/vlm_backends.py``), so the choice runner
never imports its backends.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vrforge.errors import EXIT_FAIL, EXIT_INTERRUPTED, UserError, first_line

if TYPE_CHECKING:
    from vrforge.runners.items import GenerationItem
    from vrforge.runners.vlm_choice import Backend


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("run", help="run models: text-to-image on CF-World, image editing and multiple choice on TACIT")
    runs = p.add_subparsers(dest="run_command", required=True)
    q = runs.add_parser("t2i", help="one image per CF-World scenario and level (diffusers)")
    add_generate_arguments(q, "t2i")
    q.set_defaults(func=run_generate)
    q = runs.add_parser("tacit-generate", help="puzzle image -> answer image, the TACIT generative track (diffusers)")
    add_generate_arguments(q, "tacit-generate")
    q.set_defaults(func=run_generate)
    q = runs.add_parser("tacit-choice", help="a VLM picks among the five options (discriminative track), with circular rotation")
    add_choice_arguments(q)
    q.set_defaults(func=run_choice_command)


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
    from vrforge.runners.diffusion import RunError
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


def run_generate(args: argparse.Namespace) -> int:
    """``vrforge run t2i`` / ``vrforge run tacit-generate``: 0 done, 1 generation failed, 2 bad input, 130 interrupted."""
    from vrforge.runners.diffusion import DTYPE_NAMES, MANIFEST_FILE, CallSettings, ModelSpec, RunConfig, RunError, model_source
    from vrforge.runners.diffusion import run as generate

    command = f"vrforge run {args.generate_kind}"

    def fail(message: str, code: int) -> int:
        print(f"{command}: error: {message}", file=sys.stderr)
        return code

    try:
        import accelerate  # noqa: F401
        import diffusers  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        raise UserError(f"{exc.name} is not installed (pip install 'vrforge[eval]')") from None
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
        manifest = generate(config, items)
    except UserError:
        raise
    except KeyboardInterrupt:
        return fail("interrupted; finished images are kept, run the same command to resume", EXIT_INTERRUPTED)
    except Exception as exc:  # noqa: BLE001 - a model crash: the manifest lists what was done
        return fail(f"generation failed ({exc.__class__.__name__}: {first_line(exc)}); "
                    "finished images are kept, run the same command to resume", EXIT_FAIL)
    if manifest:
        last = manifest["runs"][-1]
        rate = f", {last['images_per_second']:.2f} images/s" if last["images_per_second"] else ""
        print(f"{last['generated']} generated, {last['skipped_existing']} already there{rate}; "
              f"wrote {Path(args.out) / MANIFEST_FILE}")
    return 0


def add_choice_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``vrforge run tacit-choice``."""
    parser.add_argument("dataset", help="a built TACIT dataset folder")
    parser.add_argument("--backend", choices=("likelihood", "openai", "vllm"), default="likelihood",
                        help="likelihood: option-letter log-likelihood with a transformers VLM; "
                             "openai: parse the letter from an OpenAI-compatible endpoint's answer; "
                             "vllm: option-letter logprobs from an offline vLLM engine (extra 'vllm', CUDA)")
    parser.add_argument("--model", required=True, help="hub id or local folder (likelihood), or the served model name (openai)")
    parser.add_argument("--out", help="output folder (default ./tacit-choice)")
    parser.add_argument("--resolution", type=int, help="which configs' images to show (default 1024 px, else the smallest present)")
    parser.add_argument("--tasks", nargs="+", help="only these tasks")
    parser.add_argument("--difficulties", nargs="+", help="only these difficulties")
    parser.add_argument("--limit", type=int, help="at most N puzzles per task and difficulty")
    parser.add_argument("--no-circular", action="store_true", help="ask each puzzle once, in the original order only")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--retry-failed", action="store_true", help="ask again the puzzles that failed in an earlier run")
    group = parser.add_argument_group("likelihood backend (transformers)")
    group.add_argument("--revision", help="model revision (branch, tag or commit)")
    group.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    group.add_argument("--device", default="auto", help="auto (GPUs when present, else CPU), cpu, cuda, cuda:1, ...")
    group.add_argument("--trust-remote-code", action="store_true", help="allow the model repo's own code to run")
    group.add_argument("--local-files-only", action="store_true", help="never download; use the local cache or folder")
    group.add_argument("--answer-template", default="{letter}",
                       help="the continuation scored per option, e.g. '{letter}' or 'The answer is {letter}.'")
    group.add_argument("--normalise", choices=("mean", "sum"), default="mean",
                       help="per-token mean (length-normalised) or sum of the continuation's log-likelihood")
    group.add_argument("--batch-size", type=int, default=5,
                       help="questions per forward pass (a puzzle's rotations are batched; default 5)")
    group.add_argument("--processor-kwargs", help="JSON object for the processor, e.g. '{\"max_pixels\": 802816}'")
    group = parser.add_argument_group("openai backend")
    group.add_argument("--base-url", help="the endpoint, e.g. http://localhost:8000/v1")
    group.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    group.add_argument("--cache-dir", help="reuse answers to identical requests from this folder")
    group.add_argument("--max-tokens", type=int, help="answer length cap")
    group.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    group.add_argument("--max-retries", type=int, default=3)
    group.add_argument("--workers", type=int, default=1, help="puzzles asked in parallel (openai backend)")


def make_backend(args: argparse.Namespace) -> Backend:
    """The backend ``--backend`` names, built from the arguments."""
    from vrforge.runners import vlm_backends
    from vrforge.runners.vlm_choice import ChoiceError

    if args.backend == "openai":
        if not args.base_url:
            raise ChoiceError("--backend openai needs --base-url (e.g. http://localhost:8000/v1)")
        if args.max_tokens is not None and args.max_tokens < 1:
            raise ChoiceError(f"--max-tokens must be at least 1, got {args.max_tokens}")
        return vlm_backends.OpenAIBackend(args.base_url, args.model, api_key_env=args.api_key_env,
                                          cache_dir=args.cache_dir, timeout_s=args.timeout,
                                          max_retries=args.max_retries, max_tokens=args.max_tokens)
    if args.workers != 1:
        raise ChoiceError(f"--workers applies to the openai backend; --backend {args.backend} batches with --batch-size")
    if args.backend == "vllm":
        return vlm_backends.VLLMBackend(args.model, engine_kwargs={"trust_remote_code": args.trust_remote_code})
    try:
        processor_kwargs = json.loads(args.processor_kwargs) if args.processor_kwargs else {}
    except json.JSONDecodeError as exc:
        raise ChoiceError(f"--processor-kwargs is not valid JSON ({exc.msg})") from None
    if not isinstance(processor_kwargs, dict):
        raise ChoiceError("--processor-kwargs must be a JSON object, e.g. '{\"max_pixels\": 802816}'")
    return vlm_backends.LikelihoodBackend(args.model, revision=args.revision, dtype=args.dtype, device=args.device,
                                          trust_remote_code=args.trust_remote_code, local_files_only=args.local_files_only,
                                          answer_template=args.answer_template, normalise=args.normalise,
                                          batch_size=args.batch_size, processor_kwargs=processor_kwargs)


def _pct(cell: dict[str, Any] | None) -> str:
    if not cell or cell["accuracy"] is None:
        return "-"
    return f"{cell['correct']}/{cell['n']} = {100 * cell['accuracy']:.1f}%"


def run_choice_command(args: argparse.Namespace) -> int:
    """``vrforge run tacit-choice DATASET --model M [...]``: ask, write results.json + samples.jsonl, print accuracies."""
    from vrforge.runners.vlm_choice import OPTION_COUNT, RESULTS_FILE, SAMPLES_FILE, plan_rows, run_choice

    out = Path(args.out) if args.out else Path.cwd() / "tacit-choice"
    dataset = Path(args.dataset)
    if not dataset.is_dir():
        raise UserError(f"no such dataset folder: {dataset}")
    try:
        # The dataset selection is checked before a model is built: a typo must not wait for gigabytes to load.
        plan_rows(dataset, args.resolution, args.tasks, args.difficulties, args.limit)
        backend = make_backend(args)
        result = run_choice(dataset, backend, out, rotations=1 if args.no_circular else OPTION_COUNT,
                            resolution=args.resolution, tasks=args.tasks, difficulties=args.difficulties,
                            limit=args.limit, workers=args.workers, progress=not args.quiet,
                            retry_failed=args.retry_failed)
    except OSError as exc:
        raise UserError(f"cannot write into {out} ({exc.__class__.__name__}: {exc})") from None
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished puzzles are kept in {out / SAMPLES_FILE}; run the same command to resume",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    s = result.summary
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"{s['puzzles']} puzzles ({result.asked} asked now, {result.skipped} already done)")
    print(f"single pass: {_pct(s['single_pass']['overall'])}")
    if s["circular"] is not None:
        print(f"circular ({s['rotations']} rotations): {_pct(s['circular']['overall'])}; "
              f"same option in every rotation: {s['consistent']['count']}/{s['consistent']['n']}")
    for task, cell in sorted(s["single_pass"]["per_task"].items()):
        circ = f", circular {_pct(s['circular']['per_task'][task])}" if s["circular"] is not None else ""
        print(f"  {task}: {_pct(cell)}{circ}")
    hist = s["position_histogram"]["all_rotations"]
    print("letters chosen: " + "  ".join(f"{k} {v}" for k, v in hist.items()))
    print(f"no answer: {s['no_answer']['all_rotations']} of {s['no_answer']['answers']}")
    failed = s["failed"]
    if failed["count"]:
        reasons = ", ".join(f"{k} {v}" for k, v in failed["reasons"].items())
        print(f"failed puzzles: {failed['count']} ({reasons}); left out of the accuracies, "
              "--retry-failed asks them again", file=sys.stderr)
    print(f"wrote {out / RESULTS_FILE} and {SAMPLES_FILE}")
    return 1 if failed["count"] else 0
