"""``vrforge reliance audit``: does a VLM use the image? Perturbation ladder, VSS/AVR/CFC, internals, and a gate.

Exit codes: 0 the gate passed; 1 a threshold failed (each failing metric and question type is
named on stderr); 2 a user mistake; 130 interrupted (the run resumes with the same command).
"""

from __future__ import annotations

import argparse
import sys

from vrforge.errors import EXIT_FAIL, EXIT_INTERRUPTED, UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("reliance", help="visual-reliance audit: does a VLM's answer depend on the image?")
    sub = parser.add_subparsers(dest="reliance_command", required=True)
    p = sub.add_parser("audit", help="run the audit of one model on a golden (or TACIT) release and gate on the thresholds")
    p.add_argument("dataset", help="a built reliance golden release (or a TACIT release: perturbation ladder only)")
    p.add_argument("--backend", choices=("transformers", "openai", "baseline"), default="transformers",
                   help="transformers: option-letter logits of a local VLM; openai: an OpenAI-compatible endpoint "
                        "(logprobs, else n samples); baseline: the scripted blind or looking reference model")
    p.add_argument("--model", required=True, help="hub id or local folder; the served model name; or blind / looking")
    p.add_argument("--out", default="reliance-audit", help="output folder (default ./reliance-audit)")
    p.add_argument("--revision", help="model revision (transformers)")
    p.add_argument("--dtype", default="auto", help="auto, float32, bfloat16 or float16 (transformers)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, ... (transformers)")
    p.add_argument("--trust-remote-code", action="store_true", help="run the model repository's own code (transformers)")
    p.add_argument("--local-files-only", action="store_true", help="never download (transformers)")
    p.add_argument("--batch-size", type=int, default=8, help="images per forward pass (transformers)")
    p.add_argument("--base-url", help="the endpoint, e.g. http://localhost:8000/v1 (openai)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key (openai)")
    p.add_argument("--distribution", choices=("auto", "logprobs", "samples"), default="auto",
                   help="openai: logprobs where served (auto), or always estimate from samples")
    p.add_argument("--samples", type=int, default=10, help="answers sampled per request when there are no logprobs (openai)")
    p.add_argument("--workers", type=int, default=1, help="concurrent requests (openai)")
    p.add_argument("--max-retries", type=int, default=3, help="retries of a failed request, with backoff (openai)")
    p.add_argument("--types", nargs="+", help="only these question types (TACIT: tasks)")
    p.add_argument("--limit", type=int, help="at most N items per question type")
    p.add_argument("--perturbations", nargs="+", help="perturbation names or families (default: the whole ladder)")
    p.add_argument("--repeats", type=int, default=3, help="seeded repeats of each stochastic perturbation (default 3)")
    p.add_argument("--seed", type=int, default=0, help="audit seed (perturbations, noise)")
    p.add_argument("--min-confidence", type=float, default=0.5,
                   help="AVR/CFC count items whose original top answer has at least this probability; the rest are "
                        "reported apart (default 0.5)")
    p.add_argument("--internals", action="store_true",
                   help="also probe the model's internals: encoder/projector zero and noise, layer sweep, causal mediation")
    p.add_argument("--internals-items", type=int, default=5, help="items per question type probed inside (default 5)")
    p.add_argument("--noise-scale", type=float, default=3.0, help="internals noise in standard deviations of the activations")
    p.add_argument("--threshold", action="append", metavar="[TYPE.]METRIC=VALUE",
                   help="override a gate threshold (metrics: avr, cfc, vss, accuracy; defaults 0.4, 0.7, 0.05, 0.9); repeatable")
    p.add_argument("--gate-perturbation",
                   help="the perturbation whose VSS is gated (default: blank, or the last one given with --perturbations)")
    p.add_argument("--no-plots", action="store_true", help="skip the matplotlib plots")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _perturbations(values: list[str] | None) -> tuple[str, ...]:
    from vrforge.runners.reliance import perturb

    if not values:
        return tuple(perturb.ladder())
    names: list[str] = []
    for value in values:
        try:
            found = perturb.ladder([value]) if value in perturb.FAMILIES else [value]
            for name in found:
                perturb.split_name(name)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        names += [n for n in found if n not in names]
    return tuple(names)


def _scorer(args: argparse.Namespace):
    from vrforge.runners.reliance.backends import BlindBaseline, LookingBaseline, OpenAIScorer, TransformersScorer

    if args.backend == "baseline":
        if args.model not in ("blind", "looking"):
            raise UserError(f"--backend baseline takes --model blind or looking, got {args.model!r}")
        return BlindBaseline() if args.model == "blind" else LookingBaseline()
    if args.backend == "openai":
        if not args.base_url:
            raise UserError("--backend openai needs --base-url")
        return OpenAIScorer(args.base_url, args.model, api_key_env=args.api_key_env, samples=args.samples,
                            mode=args.distribution, seed=args.seed, workers=args.workers,
                            max_retries=args.max_retries)
    from vrforge.runners.vlm_backends import check_model_options
    from vrforge.runners.vlm_choice import BackendError

    try:
        check_model_options(args.model, args.dtype)
    except BackendError as exc:
        raise UserError(str(exc)) from None
    return TransformersScorer(args.model, revision=args.revision, dtype=args.dtype, device=args.device,
                              trust_remote_code=args.trust_remote_code, local_files_only=args.local_files_only,
                              batch_size=args.batch_size)


def run(args: argparse.Namespace) -> int:
    from vrforge.runners.reliance.audit import Settings, parse_thresholds, run_audit

    settings = Settings(perturbations=_perturbations(args.perturbations), repeats=args.repeats, seed=args.seed,
                        min_confidence=args.min_confidence, internals=args.internals, internals_items=args.internals_items,
                        noise_scale=args.noise_scale, limit=args.limit,
                        question_types=tuple(args.types) if args.types else None)
    thresholds = parse_thresholds(args.threshold)
    scorer = _scorer(args)
    try:
        result = run_audit(args.dataset, scorer, args.out, settings, thresholds=thresholds,
                           gate_perturbation=args.gate_perturbation, progress=not args.quiet, plots=not args.no_plots)
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished items are kept in {args.out}; run the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    report = result.report
    print(f"audited {result.asked} items ({result.skipped} already done) with {report['model'].get('model')} "
          f"[{report['distribution_source']}]; wrote {result.out}/report.json, tables.md")
    for qtype, summary in report["per_type"].items():
        def fmt(value):
            return "n/a" if value is None else f"{value:.3f}"
        print(f"  {qtype:<12} accuracy {fmt(summary['accuracy'])}  AVR {fmt(summary['avr'])}  CFC {fmt(summary['cfc'])}  "
              f"VSS[{report['gate_perturbation']}] {fmt(summary['vss'].get(report['gate_perturbation']))}")
    if result.failures:
        print("gate FAILED: " + "; ".join(result.failures), file=sys.stderr)
        return EXIT_FAIL
    print("gate passed")
    return 0
