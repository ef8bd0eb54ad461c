"""``vrforge drift``: semantic-drift chains (describe -> draw -> describe ...) and their scores.

- ``drift run``: run a model (captioner + generator pair, or a unified model) over pairs and/or
  GenEval prompts for G steps, score the chains (MCD, MGG) and write the report;
- ``drift score``: score (again) a run folder, or any folder in the public scorer's layout;
- ``drift table``: several scored runs side by side, with the paper's rows;
- ``drift human-export`` / ``drift human-import``: the single-step human cross-check.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from vrforge.errors import EXIT_FAIL, EXIT_INTERRUPTED, UserError


def _scoring_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("scoring (flags override --scoring-config)")
    group.add_argument("--scoring-config", type=Path, help="TOML with ScoringConfig keys (models, detector, threshold)")
    group.add_argument("--text-embedder", help="sentence-transformers model for text-text (default all-mpnet-base-v2)")
    group.add_argument("--image-embedder", help="transformers DINO model for image-image (default facebook/dino-vitb16)")
    group.add_argument("--clip", help="transformers CLIP model for text-image, image-text, colours, style")
    group.add_argument("--detector", help="OWLv2 model for MGG (default google/owlv2-large-patch14-ensemble)")
    group.add_argument("--detector-threshold", type=float, help="detection score threshold (default 0.1)")
    group.add_argument("--colour-classifier", choices=["clip", "pixels"], help="colour of a detected object (default clip)")
    group.add_argument("--vocabulary", help="objects queried besides the spec's: specs (default), none, or a file of names")
    group.add_argument("--scoring-device", help="device of the scoring models (default auto)")
    group.add_argument("--scoring-batch-size", type=int)
    group.add_argument("--paper-table", type=Path, help="the paper's table1.csv, shown beside the run in report.md")
    group.add_argument("--no-plots", action="store_true")


def _model_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model (a captioner + a generator, or --unified)")
    group.add_argument("--captioner", help="transformers vision-language model (hub id or folder)")
    group.add_argument("--captioner-endpoint", help="OpenAI-compatible base URL for the captioner (with --captioner-model)")
    group.add_argument("--captioner-model", help="model name at --captioner-endpoint")
    group.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the endpoint's key")
    group.add_argument("--caption-prompt", default=None, help="the instruction given with every image")
    group.add_argument("--max-new-tokens", type=int, default=77, help="caption length limit (default 77)")
    group.add_argument("--generator", help="diffusers text-to-image pipeline (hub id or folder)")
    group.add_argument("--gen-steps", type=int, help="num_inference_steps of the generator")
    group.add_argument("--guidance", type=float, help="guidance_scale of the generator")
    group.add_argument("--size", type=int, help="square image size of the generator")
    group.add_argument("--unified", help="module:factory or file.py:factory giving an object with caption() and generate()")
    group.add_argument("--unified-kwargs", default="{}", help="JSON keyword arguments for the --unified factory")
    group.add_argument("--dtype", default="auto", help="model dtype: auto, bf16/bfloat16, fp16/float16, fp32/float32")
    group.add_argument("--device", default="auto")
    group.add_argument("--local-files-only", action="store_true", help="never download models (also for scoring)")
    group.add_argument("--trust-remote-code", action="store_true")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("drift", help="semantic drift: describe -> draw chains scored with MCD and MGG")
    sub = parser.add_subparsers(dest="drift_command", required=True)

    q = sub.add_parser("run", help="run chains for G steps, score them and write the report")
    q.add_argument("--out", type=Path, required=True, help="run folder (resumable: finished steps are kept)")
    q.add_argument("--pairs", help="image-caption pairs for MCD: a folder, a .jsonl file or hf:NAME")
    q.add_argument("--split", default="train", help="split of an hf: dataset")
    q.add_argument("--image-column", default="image")
    q.add_argument("--text-column", default="caption")
    q.add_argument("--limit", type=int, help="only the first N pairs")
    q.add_argument("--geneval", type=Path, help="GenEval evaluation_metadata.jsonl for MGG")
    q.add_argument("--geneval-limit", type=int, help="only the first N GenEval prompts (after --geneval-tags)")
    q.add_argument("--geneval-tags", nargs="+", help="only these GenEval tasks")
    q.add_argument("--steps", type=int, default=20, help="G, the number of single-direction steps (default 20)")
    q.add_argument("--seed", type=int, default=0, help="run seed; every step's seed derives from it, the sample and the step")
    q.add_argument("--batch-size", type=int, default=4)
    q.add_argument("--name", help="the model's name in the report (default: the folder name)")
    q.add_argument("--no-score", action="store_true", help="only run the chains")
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    _model_arguments(q)
    _scoring_arguments(q)

    q = sub.add_parser("score", help="score a run folder (or one in the public scorer's layout) and write the report")
    q.add_argument("folder", type=Path, help="a folder holding pairs/ and/or geneval/")
    q.add_argument("--name")
    q.add_argument("--steps", type=int, help="score only the first N steps")
    q.add_argument("--geneval-metadata", type=Path, help="GenEval metadata when geneval/ has no specs.jsonl")
    q.add_argument("--local-files-only", action="store_true")
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    _scoring_arguments(q)

    q = sub.add_parser("table", help="scored runs side by side (MCDavg, MGG, the four relations), with the paper's rows")
    q.add_argument("folders", nargs="+", type=Path)
    q.add_argument("--paper-table", type=Path, help="the paper's table1.csv")
    q.add_argument("--out", type=Path, help="also write the table to this Markdown file")

    q = sub.add_parser("human-export", help="blinded, shuffled step-1 outputs of one or more runs for human rating")
    q.add_argument("runs", nargs="+", help="NAME=FOLDER (or FOLDER: named by its folder)")
    q.add_argument("--to", type=Path, required=True, help="a new folder for the raters")
    q.add_argument("--key", type=Path, help="where the unblinding key goes (default <to>.key.json, outside the folder)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--limit", type=int, help="at most N samples")

    q = sub.add_parser("human-import", help="ratings back: human scores, asymmetry rates, Pearson r with MCD / MGG")
    q.add_argument("--key", type=Path, required=True, help="the key written by human-export")
    q.add_argument("--ratings", type=Path, required=True, help="the filled ratings.csv")
    q.add_argument("--out", type=Path, help="write the summary JSON here (default: print it)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return {"run": _run, "score": _score, "table": _table, "human-export": _human_export,
                "human-import": _human_import}[args.drift_command](args)
    except KeyboardInterrupt:
        print("vrforge drift: interrupted; finished steps are kept, run the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - a model crash: what was finished is on disk, the cause in one line
        if args.drift_command not in ("run", "score"):
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        print(f"vrforge drift {args.drift_command}: error: {exc.__class__.__name__}: {first}; finished steps are kept, "
              "run the same command to resume", file=sys.stderr)
        return EXIT_FAIL


def _scoring_config(args: argparse.Namespace) -> Any:
    from vrforge.runners.drift.run import ScoringConfig

    overrides = {"text_embedder": args.text_embedder, "image_embedder": args.image_embedder, "clip": args.clip,
                 "detector": args.detector, "detector_threshold": args.detector_threshold,
                 "colour_classifier": args.colour_classifier, "vocabulary": args.vocabulary,
                 "device": args.scoring_device, "batch_size": args.scoring_batch_size,
                 "local_files_only": True if args.local_files_only else None}
    return ScoringConfig.load(args.scoring_config, overrides)


_DTYPES = {"auto": "auto", "bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16",
           "fp32": "float32", "float32": "float32"}


def _build_model(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    from vrforge.runners.drift import backends

    if args.dtype not in _DTYPES:
        raise UserError(f"--dtype must be one of {', '.join(_DTYPES)}, got {args.dtype!r}")
    vlm_dtype = _DTYPES[args.dtype]
    pipe_dtype = {"auto": "auto", "bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}[vlm_dtype]
    prompt = args.caption_prompt or backends.DEFAULT_CAPTION_PROMPT
    if args.unified:
        if args.captioner or args.generator or args.captioner_endpoint:
            raise UserError("--unified replaces --captioner / --captioner-endpoint / --generator; give one or the other")
        try:
            kwargs = json.loads(args.unified_kwargs)
        except json.JSONDecodeError as exc:
            raise UserError(f"--unified-kwargs is not valid JSON ({exc.msg})") from None
        if not isinstance(kwargs, dict):
            raise UserError("--unified-kwargs must be a JSON object")
        model = backends.load_unified(args.unified, kwargs)
        return model, {"kind": "unified", "target": args.unified, "kwargs": kwargs, "describe": backends.describe(model)}
    if not args.generator:
        raise UserError("give a --generator (diffusers pipeline) with a captioner, or a --unified model")
    if bool(args.captioner) == bool(args.captioner_endpoint):
        raise UserError("give exactly one of --captioner (transformers) and --captioner-endpoint (OpenAI-compatible)")
    if args.max_new_tokens < 1:
        raise UserError(f"--max-new-tokens must be at least 1, got {args.max_new_tokens}")
    if args.captioner:
        captioner: Any = backends.VlmCaptioner(args.captioner, prompt=prompt, max_new_tokens=args.max_new_tokens,
                                               dtype=vlm_dtype, device=args.device, local_files_only=args.local_files_only,
                                               trust_remote_code=args.trust_remote_code)
    else:
        if not args.captioner_model:
            raise UserError("--captioner-endpoint needs --captioner-model")
        captioner = backends.OpenAICaptioner(args.captioner_endpoint, args.captioner_model, prompt=prompt,
                                             api_key_env=args.api_key_env, cache_dir=args.out / "captioner-cache",
                                             max_tokens=args.max_new_tokens, seed=args.seed)
    generator = backends.DiffusersGenerator(args.generator, steps=args.gen_steps, guidance=args.guidance, size=args.size,
                                            dtype=pipe_dtype, device=args.device, local_files_only=args.local_files_only,
                                            trust_remote_code=args.trust_remote_code)
    model = backends.PairModel(captioner, generator)
    return model, model.describe()


def _run(args: argparse.Namespace) -> int:
    from vrforge.runners.drift.inputs import load_geneval, load_pairs
    from vrforge.runners.drift.run import build_scorers, config_dict, run_drift, score_run

    if args.steps < 1:
        raise UserError(f"--steps must be at least 1, got {args.steps}")
    config = None if args.no_score else _scoring_config(args)
    pairs = load_pairs(args.pairs, split=args.split, image_column=args.image_column, text_column=args.text_column,
                       limit=args.limit) if args.pairs else None
    geneval = load_geneval(args.geneval, limit=args.geneval_limit, tags=args.geneval_tags) if args.geneval else None
    if not pairs and not geneval:
        raise UserError("give --pairs and/or --geneval")
    model, settings = _build_model(args)
    inputs = {"pairs": args.pairs, "limit": args.limit, "geneval": str(args.geneval) if args.geneval else None,
              "geneval_limit": args.geneval_limit, "geneval_tags": args.geneval_tags}
    manifest, timings = run_drift(args.out, model, pairs=pairs, geneval=geneval, steps=args.steps, seed=args.seed,
                                  batch_size=args.batch_size, progress=not args.quiet, model_settings=settings, inputs=inputs)
    print(f"chains: {timings.captions} captions ({timings.caption_seconds:.1f} s), {timings.images} images "
          f"({timings.generate_seconds:.1f} s); wrote {args.out}")
    if config is None:
        return 0
    specs = {s.id: s.spec for s in geneval} if geneval else None
    scorers = build_scorers(config, args.out, specs, progress=not args.quiet)
    results = score_run(args.out, scorers, name=args.name, steps=args.steps, specs=specs, scoring=config_dict(config),
                        paper_table=args.paper_table, plots=not args.no_plots)
    _print_summary(results, args.out)
    return 0


def _print_summary(results: dict[str, Any], out: Path) -> None:
    mcd, mgg = results.get("mcd") or {}, results.get("mgg") or {}
    parts = []
    if mcd:
        parts.append(f"MCDavg {mcd['mcd_avg']:.4f}")
    if mgg:
        parts.append(f"MGG {mgg['mgg']:.1f} (single step {mgg['single_step']:.1f})")
    print(f"{results['name']}: {', '.join(parts)} over {results['steps']} steps; report in {out / 'report.md'}")


def _score(args: argparse.Namespace) -> int:
    from vrforge.runners.drift import metrics
    from vrforge.runners.drift.run import build_scorers, config_dict, score_run

    if not args.folder.is_dir():
        raise UserError(f"no such run folder: {args.folder}")
    if args.steps is not None and args.steps < 1:
        raise UserError(f"--steps must be at least 1, got {args.steps}")
    config = _scoring_config(args)
    specs = None
    if (args.folder / "geneval").is_dir():
        specs = metrics.read_specs(args.folder / "geneval", args.geneval_metadata)
    scorers = build_scorers(config, args.folder, specs, progress=not args.quiet)
    results = score_run(args.folder, scorers, name=args.name, steps=args.steps, specs=specs, scoring=config_dict(config),
                        paper_table=args.paper_table, plots=not args.no_plots)
    _print_summary(results, args.folder)
    return 0


def _table(args: argparse.Namespace) -> int:
    from vrforge.runners.drift import report

    runs = [(r.get("name") or folder.name, r) for folder in args.folders for r in [report.load_results(folder)]]
    text = report.table_markdown(runs, report.reference_rows(args.paper_table))
    if args.out:
        from vrforge.fileio import write_bytes_atomic

        write_bytes_atomic(args.out, text.encode("utf-8"))
    print(text, end="")
    return 0


def _named_runs(values: list[str]) -> list[tuple[str, Path]]:
    runs = []
    for value in values:
        name, sep, folder = value.partition("=")
        path = Path(folder if sep else value)
        if not path.is_dir():
            raise UserError(f"no such run folder: {path}")
        runs.append((name if sep else path.resolve().name, path))
    return runs


def _human_export(args: argparse.Namespace) -> int:
    from vrforge.runners.drift.human import export

    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit must be at least 1, got {args.limit}")
    info = export(_named_runs(args.runs), args.to, seed=args.seed, limit=args.limit, key_path=args.key)
    print(f"{info['candidates']} candidates in {info['groups']} groups: rate {info['ratings']}; "
          f"keep the key {info['key']} away from the raters")
    return 0


def _human_import(args: argparse.Namespace) -> int:
    from vrforge.runners.drift import report
    from vrforge.runners.drift.human import import_ratings

    if not args.key.is_file():
        raise UserError(f"no such key file: {args.key}")
    key = json.loads(args.key.read_text(encoding="utf-8"))
    results: dict[str, Any] = {}
    samples: dict[str, dict[str, Any]] = {}
    for name, folder in (key.get("runs") or {}).items():
        path = Path(folder)
        if (path / report.RESULTS_FILE).is_file():
            results[name] = report.load_results(path)
            samples[name] = {}
            for line in (path / report.SAMPLES_FILE).read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                if record.get("track") == "pairs":
                    samples[name][record["id"]] = record
    summary = import_ratings(args.key, args.ratings, results, samples)
    text = json.dumps(summary, indent=2, sort_keys=True) + "\n"
    if args.out:
        from vrforge.fileio import write_bytes_atomic

        write_bytes_atomic(args.out, text.encode("utf-8"))
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return 0
