"""``vrforge cfworld denominalize``: de-nominalised L2 prompts of a scenario file, by lexicon or through an LLM.

``SCENARIOS`` is a scenarios JSONL file (``vrforge cfworld import`` or ``draft`` output), a folder
holding ``scenarios.jsonl``, or ``packaged`` for the curated seeds. Writes ``OUT/denominalized.jsonl``
(one probe per rewritten prompt) and ``OUT/denominalization_report.json`` (unchanged prompts, terms
left alone and why, LLM failures, token usage), both atomically.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from vrforge.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    from vrforge.commands import subcommands_of

    cfworld = subcommands_of(subparsers, "cfworld")
    q = cfworld.add_parser("denominalize", help="rewrite L2 prompts so the outcome names nothing (lexicon, or an LLM "
                                                "through any OpenAI-compatible endpoint)")
    q.add_argument("scenarios", help="scenarios .jsonl, a folder holding scenarios.jsonl, or 'packaged' (the curated seeds)")
    q.add_argument("--mode", choices=("lexicon", "llm"), default="lexicon")
    q.add_argument("--out", default="cfworld-denominalized", help="folder for denominalized.jsonl and the report")
    q.add_argument("--lexicon", help="lexicon YAML (default: the packaged one); in llm mode its attribute kinds are used")
    q.add_argument("--all-terms", action="store_true", help="lexicon mode: replace every lexicon term outside the premise, "
                                                            "not only those the assessment point names")
    q.add_argument("--limit", type=int, help="only the first N scenarios")
    q.add_argument("--model", help="llm mode: model name at the endpoint")
    q.add_argument("--base-url", default="https://api.openai.com/v1", help="llm mode: OpenAI-compatible endpoint (…/v1)")
    q.add_argument("--api-key-env", default="OPENAI_API_KEY", help="llm mode: environment variable holding the API key")
    q.add_argument("--cache-dir", help="llm mode: response cache folder (default OUT/cache)")
    q.add_argument("--no-cache", action="store_true", help="llm mode: do not read or write the response cache")
    q.add_argument("--temperature", type=float, default=0.0)
    q.add_argument("--seed", type=int, help="llm mode: sampling seed sent to the endpoint")
    q.add_argument("--max-tokens", type=int)
    q.add_argument("--timeout", type=float, default=60.0, help="llm mode: seconds per request")
    q.add_argument("--max-retries", type=int, default=3)
    q.add_argument("--backoff", type=float, default=0.5, help="llm mode: first retry delay in seconds (doubles each retry)")
    q.set_defaults(func=run)


def _scenarios(source: str) -> list[Any]:
    from vrforge.generators.cfworld.jsonl import ScenarioFileError, read_scenarios
    from vrforge.generators.cfworld.lawbank import LawBankError, load_seed_scenarios

    try:
        if source == "packaged":
            return load_seed_scenarios(validate=False)
        path = Path(source)
        if path.is_dir():
            path = path / "scenarios.jsonl"
        if not path.is_file():
            raise UserError(f"no scenarios file at {path}")
        scenarios = read_scenarios(path)
    except (ScenarioFileError, LawBankError) as exc:
        raise UserError(str(exc)) from None
    if not scenarios:
        raise UserError(f"{path} holds no scenarios")
    return scenarios


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from vrforge.fileio import write_bytes_atomic
    from vrforge.generators.cfworld.probes.denominalize import (
        LexiconError,
        denominalize_with_lexicon,
        denominalize_with_llm,
        load_lexicon,
    )

    if args.mode == "llm" and not args.model:
        raise UserError("--mode llm needs --model")
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit must be at least 1, got {args.limit}")
    scenarios = _scenarios(args.scenarios)[:args.limit]
    out = Path(args.out)
    usage: dict[str, int] = {}
    try:
        lexicon = load_lexicon(args.lexicon)
        if args.mode == "lexicon":
            report = denominalize_with_lexicon(scenarios, lexicon, outcome_only=not args.all_terms)
        else:
            from vrforge.openai_client import ChatClient, ChatConfig, ChatError

            config = ChatConfig(base_url=args.base_url, model=args.model, api_key_env=args.api_key_env, timeout_s=args.timeout,
                                max_retries=args.max_retries, backoff_s=args.backoff, temperature=args.temperature,
                                max_tokens=args.max_tokens, seed=args.seed)
            cache_dir = None if args.no_cache else Path(args.cache_dir) if args.cache_dir else out / "cache"
            with ChatClient(config, cache_dir) as client, tqdm(total=len(scenarios), desc="denominalizing", unit="prompt",
                                                               disable=not sys.stderr.isatty(), file=sys.stderr) as bar:
                try:
                    report = denominalize_with_llm(scenarios, client, lexicon, progress=bar)
                except ChatError as exc:
                    raise UserError(f"{args.base_url}: {exc}") from None
                usage = client.usage_dict()
    except LexiconError as exc:
        raise UserError(str(exc)) from None
    lines = "".join(json.dumps(p.to_dict(), ensure_ascii=False, sort_keys=True) + "\n" for p in report.probes)
    summary = report.to_dict() | {"mode": args.mode, "scenarios": len(scenarios), "usage": usage}
    try:
        write_bytes_atomic(out / "denominalized.jsonl", lines.encode("utf-8"))
        write_bytes_atomic(out / "denominalization_report.json",
                           (json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"))
    except OSError as exc:
        raise UserError(f"cannot write to {out} ({exc.__class__.__name__}: {exc})") from None
    tokens = (f"; {usage.get('prompt_tokens', 0)} prompt + {usage.get('completion_tokens', 0)} completion tokens in "
              f"{usage.get('requests', 0)} requests, {usage.get('cache_hits', 0)} cache hits" if usage else "")
    print(f"{len(scenarios)} scenarios: {len(report.probes)} rewritten, {len(report.unchanged)} unchanged, "
          f"{len(report.failed)} failed ({args.mode}){tokens}; written to {out}")
    return 0
