"""``vrforge cfeval judge|report|calibrate``: judge CF-World images with a VLM, report PRR/RRR, calibrate the gate.

The judge client is built here (an OpenAI-compatible ``ChatClient`` or a local transformers
``LocalJudgeClient``), so the judging library imports neither backend.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from vrforge.errors import EXIT_INTERRUPTED, UserError
from vrforge.fileio import write_json_atomic, write_text_atomic
from vrforge.runners import cfeval_metrics as metrics
from vrforge.runners.cfeval_judge import (
    CFEvalError,
    JudgeSettings,
    format_summary_line,
    judge_run,
    load_scenarios,
    manifest_settings,
    parse_levels,
    parse_weights,
    summarize,
    write_manifest,
    write_outputs,
)
from vrforge.runners.cfeval_personas import PersonaError, parse_persona_spec
from vrforge.runners.cfeval_report import (
    CALIBRATION_JSON,
    CALIBRATION_MD,
    PLOT_FILE,
    REPORT_JSON,
    REPORT_MD,
    build_report,
    calibration_markdown,
    load_human,
    load_run,
    plot_report,
    prompt_scores,
    report_markdown,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("cfeval", help="CF-Eval: judge CF-World images with a VLM, report PRR/RRR, calibrate the gate")
    cfeval = p.add_subparsers(dest="cfeval_command", required=True)
    q = cfeval.add_parser("judge", help="score <images>/<scenario_id>/<level>.png with a VLM judge "
                                        "(OpenAI-compatible endpoint or local transformers)")
    add_judge_arguments(q)
    q.set_defaults(func=run_judge)
    q = cfeval.add_parser("report", help="the paper-style table (L1, L2, L3, PRR, RRR per judge), per-domain tables, "
                                         "judge agreement, plot")
    add_report_arguments(q)
    q.set_defaults(func=run_report)
    q = cfeval.add_parser("calibrate", help="sweep the gating threshold against human judgements (accuracy, F1)")
    add_calibrate_arguments(q)
    q.set_defaults(func=run_calibrate)


ENDPOINT_DEFAULTS = {"timeout": 120.0, "max_retries": 3, "backoff": 1.0}  # --backend openai only


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``vrforge cfeval judge``."""
    parser.add_argument("--scenarios", required=True,
                        help="scenarios JSONL, a `vrforge cfworld import` folder, or the CF-World release folder")
    parser.add_argument("--images", required=True, help="generated images as <images>/<scenario_id>/<level>.png")
    parser.add_argument("--out", help="output folder for results.json and judgements.jsonl (default ./cfeval-<label>)")
    parser.add_argument("--backend", choices=("openai", "transformers"), default="openai",
                        help="openai: an OpenAI-compatible endpoint (default); transformers: a local vision-language model")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (--backend openai)")
    parser.add_argument("--model", required=True,
                        help="judge model: its name at the endpoint, or a hub id / local folder (--backend transformers)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    parser.add_argument("--label", help="name of the generating model in reports (default: the images folder name)")
    parser.add_argument("--persona", default=None,
                        help="judge persona per level, e.g. l1=balanced,l2=strict,l3=strict (the default) or one name for all")
    parser.add_argument("--threshold", type=float, default=metrics.DEFAULT_THRESHOLD, help="L1 gate (default 0.5)")
    parser.add_argument("--skip-gated", action="store_true", help="send no request for L2/L3 of scenarios failing the L1 gate")
    parser.add_argument("--snap", action="store_true", help="round judge scores to the nearest of 0 / 0.5 / 1")
    parser.add_argument("--weights",
                        help="override dimension weights, e.g. visual_integrity=3,assessment_point=15,logic_consistency=8")
    parser.add_argument("--levels", help="judge only these levels, e.g. l1,l2 (default all)")
    parser.add_argument("--images-per-prompt", type=int, default=1,
                        help="images per scenario and level, read as <scenario_id>/<level>_<k>.png (default 1: <level>.png)")
    parser.add_argument("--domain", action="append", help="judge only this domain (repeatable)")
    parser.add_argument("--limit", type=int, help="judge only the first N scenarios (by id)")
    parser.add_argument("--cache-dir", help="response cache folder (default <out>/cache)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    parser.add_argument("--workers", type=int, default=4, help="requests in flight at once (default 4)")
    endpoint = ENDPOINT_DEFAULTS
    parser.add_argument("--timeout", type=float, help=f"seconds per request (--backend openai; default {endpoint['timeout']:g})")
    parser.add_argument("--max-retries", type=int,
                        help=f"retries per image after a failed attempt (--backend openai; default {endpoint['max_retries']})")
    parser.add_argument("--backoff", type=float,
                        help=f"first retry delay in seconds, doubled each retry (--backend openai; default {endpoint['backoff']:g})")
    parser.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    parser.add_argument("--max-tokens", type=int, default=None, help="answer length limit")
    parser.add_argument("--seed", type=int, default=None, help="sampling seed, where the endpoint supports one")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar (default: when stderr is a terminal)")
    local = parser.add_argument_group("transformers backend (greedy decoding, one image at a time)")
    local.add_argument("--revision", help="model revision (branch, tag or commit)")
    local.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    local.add_argument("--device", default="auto", help="auto (GPUs when present, else CPU), cpu, cuda, cuda:1, ...")
    local.add_argument("--trust-remote-code", action="store_true", help="allow the model repo's own code to run")
    local.add_argument("--local-files-only", action="store_true", help="never download; use the local cache or folder")
    local.add_argument("--max-new-tokens", type=int, default=1024, help="answer length limit in tokens (default 1024)")


def _settings_from_args(args: argparse.Namespace) -> JudgeSettings:
    if not 0 <= args.threshold <= 1:
        raise CFEvalError(f"--threshold must be within [0, 1], got {args.threshold}")
    if args.workers < 1:
        raise CFEvalError(f"--workers must be at least 1, got {args.workers}")
    if args.limit is not None and args.limit < 1:
        raise CFEvalError(f"--limit must be at least 1, got {args.limit}")
    if args.backend == "openai" and (args.max_retries < 0 or args.timeout <= 0 or args.backoff < 0):
        raise CFEvalError("--max-retries and --backoff must be non-negative and --timeout positive")
    try:
        personas = parse_persona_spec(args.persona)
    except PersonaError as exc:
        raise CFEvalError(str(exc)) from None
    return JudgeSettings(personas=personas, threshold=args.threshold, snap=args.snap, skip_gated=args.skip_gated,
                         dimension_weights=parse_weights(args.weights), levels=parse_levels(args.levels, need_l1=True),
                         workers=args.workers, images_per_prompt=args.images_per_prompt)


def _check_backend_args(args: argparse.Namespace) -> None:
    """Refuses options the chosen backend would ignore; fills the endpoint's retry defaults."""
    if args.backend == "openai":
        if not args.base_url:
            raise CFEvalError("--base-url is needed with --backend openai")
        for name, value in ENDPOINT_DEFAULTS.items():
            if getattr(args, name) is None:
                setattr(args, name, value)
        return
    if args.base_url:
        raise CFEvalError("--base-url applies to --backend openai only")
    if any(getattr(args, name) is not None for name in ENDPOINT_DEFAULTS):
        raise CFEvalError("--timeout, --max-retries and --backoff apply to --backend openai only (a local model is not retried)")
    if args.temperature != 0 or args.seed is not None:
        raise CFEvalError("--backend transformers decodes greedily: --temperature and --seed do not apply")
    if args.max_tokens is not None:
        raise CFEvalError("--backend transformers: give the answer length as --max-new-tokens")


def _make_client(args: argparse.Namespace, cache_dir: Path | None) -> tuple[Any, dict[str, Any]]:
    """The judge client for ``--backend`` and what results.json says about the judge."""
    if args.backend == "transformers":
        from vrforge.runners.cfeval_local import LocalJudgeClient, LocalJudgeConfig

        config = LocalJudgeConfig(model=args.model, revision=args.revision, dtype=args.dtype, device=args.device,
                                  trust_remote_code=args.trust_remote_code, local_files_only=args.local_files_only,
                                  max_new_tokens=args.max_new_tokens)
        info = {"backend": "transformers", "model": args.model, "revision": args.revision, "dtype": args.dtype,
                "decoding": "greedy", "max_new_tokens": args.max_new_tokens}
        return LocalJudgeClient(config, cache_dir), info
    from vrforge.openai_client import ChatClient, ChatConfig

    chat = ChatConfig(base_url=args.base_url, model=args.model, api_key_env=args.api_key_env, timeout_s=args.timeout,
                      max_retries=args.max_retries, backoff_s=args.backoff, temperature=args.temperature,
                      max_tokens=args.max_tokens, seed=args.seed)
    info = {"model": args.model, "temperature": args.temperature, "seed": args.seed, "max_tokens": args.max_tokens}
    return ChatClient(chat, cache_dir), info


def run_judge(args: argparse.Namespace) -> int:
    """``vrforge cfeval judge``: 0 when every image got a judgement, 1 when some failed, 2 on bad input."""
    _check_backend_args(args)
    settings = _settings_from_args(args)
    if args.backend == "transformers":
        settings = replace(settings, workers=1)  # one model generates one answer at a time
    images_dir = Path(args.images)
    if not images_dir.is_dir():
        raise CFEvalError(f"no such images folder: {images_dir}")
    scenarios = load_scenarios(args.scenarios)
    if args.domain:
        scenarios = [s for s in scenarios if s.domain in set(args.domain)]
    if args.limit is not None:
        scenarios = scenarios[: args.limit]
    if not scenarios:
        raise CFEvalError("no scenario left to judge after --domain / --limit")
    label = args.label or images_dir.resolve().name
    out = Path(args.out) if args.out else Path.cwd() / f"cfeval-{label}"
    cache_dir = None if args.no_cache else Path(args.cache_dir) if args.cache_dir else out / "cache"
    client, judge_info = _make_client(args, cache_dir)
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    run_settings = manifest_settings(settings, judge_info, scenarios, images_dir, label)
    try:
        write_manifest(out, run_settings, completed=False, counts={})
    except OSError as exc:
        raise UserError(f"cannot write to {out} ({exc.__class__.__name__}: {exc})") from None
    try:
        with client:
            records = judge_run(client, scenarios, images_dir, settings, progress=progress)
    except KeyboardInterrupt:
        print("interrupted: judged answers are cached; run the same command again to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    results = summarize(records, settings, judge_info, label)
    try:
        results_path, _ = write_outputs(out, records, results)
        write_manifest(out, run_settings, completed=True, counts=results["counts"])
    except OSError as exc:
        raise UserError(f"cannot write to {out} ({exc.__class__.__name__}: {exc})") from None
    print(format_summary_line(results) + f"; written to {results_path}")
    for failure in results["failures"][:10]:
        print(f"failed: {failure['scenario_id']} {failure['level']}: {failure['error']}", file=sys.stderr)
    return 1 if results["counts"]["failed"] else 0


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``vrforge cfeval report``."""
    parser.add_argument("runs", nargs="+", help="judge output folders (results.json + judgements.jsonl), one per model and judge")
    parser.add_argument("--out", help="report folder (default ./cfeval-report)")
    parser.add_argument("--threshold", type=float, default=metrics.DEFAULT_THRESHOLD, help="L1 gate (default 0.5)")
    parser.add_argument("--weights", help="recompute S with these dimension weights, e.g. visual_integrity=2,assessment_point=14")
    parser.add_argument("--no-plot", action="store_true", help="do not draw cfeval_levels.png")


def run_report(args: argparse.Namespace) -> int:
    """``vrforge cfeval report``: 0 on success, 2 on bad input."""
    if not 0 <= args.threshold <= 1:
        raise CFEvalError(f"--threshold must be within [0, 1], got {args.threshold}")
    weights = parse_weights(args.weights)
    runs = [load_run(path) for path in args.runs]
    report = build_report(runs, args.threshold, weights)
    out = Path(args.out) if args.out else Path.cwd() / "cfeval-report"
    markdown = report_markdown(report)
    try:
        write_json_atomic(out / REPORT_JSON, report)
        write_text_atomic(out / REPORT_MD, markdown)
        plotted = False if args.no_plot else plot_report(report, out / PLOT_FILE)
    except OSError as exc:
        raise UserError(f"cannot write to {out} ({exc.__class__.__name__}: {exc})") from None
    print(markdown.split("\n## ")[0].rstrip())
    if not args.no_plot and not plotted:
        print("plot skipped: matplotlib is not installed (pip install 'vrforge[eval]' or matplotlib)", file=sys.stderr)
    print(f"written to {out}")
    return 0


def add_calibrate_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``vrforge cfeval calibrate``."""
    parser.add_argument("run", help="judge output folder (results.json + judgements.jsonl)")
    parser.add_argument("--human", required=True, help="CSV or JSONL: scenario_id, level, human_pass (0/1) or human_score")
    parser.add_argument("--out", help="folder for calibration.md / calibration.json (default ./cfeval-calibration)")
    parser.add_argument("--start", type=float, default=0.3, help="first threshold (default 0.3)")
    parser.add_argument("--stop", type=float, default=0.7, help="last threshold (default 0.7)")
    parser.add_argument("--step", type=float, default=0.05, help="threshold step (default 0.05)")
    parser.add_argument("--human-threshold", type=float, default=0.5, help="human_score counted as pass from here (default 0.5)")
    parser.add_argument("--levels", help="calibrate on these levels only, e.g. l1 (default all)")
    parser.add_argument("--weights", help="recompute S with these dimension weights")


def run_calibrate(args: argparse.Namespace) -> int:
    """``vrforge cfeval calibrate``: 0 on success, 2 on bad input or no image both judged and human-rated."""
    thresholds = metrics.threshold_grid(args.start, args.stop, args.step)
    levels = parse_levels(args.levels)
    run = load_run(args.run)
    human = {k: v for k, v in load_human(args.human, args.human_threshold).items() if k[1] in levels}
    scores = prompt_scores(run, parse_weights(args.weights))
    common = [k for k in human if k in scores]
    if not common:
        raise CFEvalError(f"no image of {args.human} was judged in {run.path} (match on scenario_id and level)")
    rows = metrics.calibration_sweep(scores, human, thresholds)
    best = max(rows, key=lambda r: (r["f1"] or 0.0, r["accuracy"] or 0.0, -abs(r["threshold"] - metrics.DEFAULT_THRESHOLD)))
    result = {"model": run.model, "judge": run.judge, "levels": list(levels), "human_file": Path(args.human).name,
              "human_only": len(human) - len(common), "rows": rows, "best_f1_threshold": best["threshold"]}
    markdown = calibration_markdown(rows, run)
    out = Path(args.out) if args.out else Path.cwd() / "cfeval-calibration"
    try:
        write_json_atomic(out / CALIBRATION_JSON, result)
        write_text_atomic(out / CALIBRATION_MD, markdown)
    except OSError as exc:
        raise UserError(f"cannot write to {out} ({exc.__class__.__name__}: {exc})") from None
    print(markdown.rstrip())
    print(f"best F1 at threshold {best['threshold']:.2f}; {result['human_only']} human-rated image(s) had no judgement; "
          f"written to {out}")
    return 0
