"""``vrforge cfworld import|draft|review-export|review-import``: CF-World scenarios from the official release or an LLM.

``cfworld`` is a command group: other command modules (``cfworld_denominalize``) add their
subcommands to it through ``vrforge.commands.subcommands_of``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from vrforge.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    from vrforge.schemas.cfworld import DOMAINS

    p = subparsers.add_parser("cfworld", help="CF-World scenarios")
    cfworld = p.add_subparsers(dest="cfworld_command", required=True)

    q = cfworld.add_parser("import", help="import the official CF-World release files into the scenario schema")
    q.add_argument("path", help="the release folder (prompt/, eval_questions/, prompt_ablation/)")
    q.add_argument("--out", help="output folder (default ./cfworld-import)")
    q.add_argument("--fill-law", action="store_true", help="fill each empty law through an LLM (OpenAI-compatible)")
    q.add_argument("--model", help="with --fill-law: model name at the endpoint")
    q.add_argument("--base-url", default="https://api.openai.com/v1", help="with --fill-law: endpoint (…/v1)")
    q.add_argument("--api-key-env", default="OPENAI_API_KEY", help="with --fill-law: variable holding the API key")
    q.add_argument("--cache-dir", help="with --fill-law: response cache folder (default OUT/cache)")
    q.add_argument("--no-cache", action="store_true", help="with --fill-law: do not read or write the response cache")
    q.add_argument("--timeout", type=float, default=60.0, help="with --fill-law: seconds per request")
    q.add_argument("--max-retries", type=int, default=3)
    q.set_defaults(func=run_import)

    q = cfworld.add_parser("draft", help="draft scenarios from the law bank with an LLM (any OpenAI-compatible endpoint); "
                                         "every draft is checked by code")
    q.add_argument("--model", required=True, help="model name at the endpoint")
    q.add_argument("--base-url", default="https://api.openai.com/v1", help="OpenAI-compatible endpoint (…/v1)")
    q.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    q.add_argument("--domain", choices=DOMAINS, help="only laws of this domain")
    q.add_argument("--law-id", action="append", help="only this law (repeatable)")
    q.add_argument("--limit", type=int, help="draft at most N laws not yet done")
    q.add_argument("--out", default="cfworld-drafts", help="folder for drafts.jsonl, rejections.jsonl and cache/")
    q.add_argument("--cache-dir", help="response cache folder (default OUT/cache)")
    q.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    q.add_argument("--laws", help="law bank folder (default: the package's laws/)")
    q.add_argument("--seeds", help="seed scenario folder (default: the package's seeds/)")
    q.add_argument("--existing", action="append", help="scenarios JSONL the drafts must not duplicate (repeatable)")
    q.add_argument("--retry-rejected", action="store_true", help="draft again the laws in rejections.jsonl")
    q.add_argument("--temperature", type=float, default=0.0)
    q.add_argument("--seed", type=int, help="sampling seed sent to the endpoint")
    q.add_argument("--max-tokens", type=int)
    q.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    q.add_argument("--max-retries", type=int, default=3)
    q.add_argument("--backoff", type=float, default=0.5, help="first retry delay in seconds (doubles each retry)")
    q.set_defaults(func=run_draft)

    q = cfworld.add_parser("review-export", help="write the drafts pending review to a .jsonl or .csv file")
    q.add_argument("drafts", help="drafts.jsonl")
    q.add_argument("--out", required=True, help="review file to write: .jsonl or .csv")
    q.set_defaults(func=run_review_export)
    q = cfworld.add_parser("review-import", help="apply a reviewed file's decisions (approve / reject / edit) to the drafts")
    q.add_argument("drafts", help="drafts.jsonl (updated in place unless --out)")
    q.add_argument("decisions", help="the reviewed .jsonl or .csv")
    q.add_argument("--out", help="write the updated scenarios here instead")
    q.add_argument("--laws", help="law bank folder for re-validating edits (default: the package's laws/)")
    q.set_defaults(func=run_review_import)


def law_config(args: argparse.Namespace) -> Any:
    """The ``ChatConfig`` for ``--fill-law`` (None without it)."""
    from vrforge.openai_client import ChatConfig

    if not args.fill_law:
        if args.model:
            raise UserError("--model is only used with --fill-law")
        return None
    if not args.model:
        raise UserError("--fill-law needs --model")
    return ChatConfig(base_url=args.base_url, model=args.model, api_key_env=args.api_key_env, timeout_s=args.timeout,
                      max_retries=args.max_retries)


def run_import(args: argparse.Namespace) -> int:
    """Writes scenarios.jsonl, probes.jsonl and import_report.json into ``--out`` (default ./cfworld-import).

    With ``--fill-law`` every empty ``law`` is filled through the endpoint, its answers cached in
    ``--cache-dir`` (default OUT/cache) unless ``--no-cache``.
    """
    from vrforge.fileio import jsonl_text, write_json_atomic, write_text_atomic
    from vrforge.generators.cfworld.importer import LawFillReport, fill_laws, import_release

    config = law_config(args)
    try:
        report = import_release(Path(args.path))
    except OSError as exc:
        raise UserError(f"{args.path}: cannot read ({exc.__class__.__name__}: {exc})") from None
    target = Path(args.out) if args.out is not None else Path.cwd() / "cfworld-import"
    law_fill: LawFillReport | None = None
    if config is not None:
        from tqdm import tqdm

        from vrforge.openai_client import ChatClient, ChatError

        cache = None if args.no_cache else Path(args.cache_dir) if args.cache_dir else target / "cache"
        try:
            with ChatClient(config, cache) as client, tqdm(total=len(report.scenarios), desc="filling laws", unit="scenario",
                                                           disable=not sys.stderr.isatty(), file=sys.stderr) as bar:
                report.scenarios, law_fill = fill_laws(report.scenarios, client, progress=bar)
        except ChatError as exc:
            raise UserError(f"{config.base_url}: {exc}") from None
        report.flags.update(flag for s in report.scenarios for flag in s.provenance.flags if flag.startswith("law_"))
    try:
        write_text_atomic(target / "scenarios.jsonl", jsonl_text(s.to_dict() for s in report.scenarios))
        write_text_atomic(target / "probes.jsonl", jsonl_text(p.to_dict() for p in report.probes))
        data = report.to_dict() | ({"law_fill": law_fill.to_dict()} if law_fill is not None else {})
        write_json_atomic(target / "import_report.json", data, ensure_ascii=False)
    except OSError as exc:
        raise UserError(f"cannot write to {target} ({exc.__class__.__name__}: {exc})") from None
    for name, count in sorted(report.files.items()):
        print(f"{name}: {count.read} {count.kind} read, {count.imported} imported, {count.rejected} rejected")
    for name in report.ignored_files:
        print(f"{name}: ignored (not under prompt/, eval_questions/ or prompt_ablation/)")
    reasons = ", ".join(f"{reason} {n}" for reason, n in report.rejection_reasons().items()) or "none"
    if law_fill is not None:
        u = law_fill.usage
        print(f"laws: {len(law_fill.filled)} filled by {args.model}, {len(law_fill.failed)} failed; "
              f"{u.get('requests', 0)} requests, {u.get('cache_hits', 0)} cache hits")
    print(f"{len(report.scenarios)} scenarios, {report.question_count} questions, {len(report.probes)} probes; "
          f"{len(report.rejected)} rejected ({reasons}); written to {target}")
    return 0


def run_draft(args: argparse.Namespace) -> int:
    from vrforge.generators.cfworld.draft import draft_laws, seed_examples, select_laws
    from vrforge.generators.cfworld.jsonl import read_scenarios
    from vrforge.generators.cfworld.lawbank import load_laws
    from vrforge.openai_client import ChatClient, ChatConfig

    out = Path(args.out)
    laws = load_laws(args.laws)
    selected = select_laws(laws, args.domain, args.law_id)
    seeds = seed_examples(args.seeds, laws)
    existing = [s for path in (args.existing or ()) for s in read_scenarios(Path(path))]
    config = ChatConfig(base_url=args.base_url, model=args.model, api_key_env=args.api_key_env, timeout_s=args.timeout,
                        max_retries=args.max_retries, backoff_s=args.backoff, temperature=args.temperature,
                        max_tokens=args.max_tokens, seed=args.seed)
    cache_dir = None if args.no_cache else Path(args.cache_dir) if args.cache_dir else out / "cache"
    try:
        with ChatClient(config, cache_dir) as client:
            report = draft_laws(selected, client, out, seeds=seeds, existing=existing, retry_rejected=args.retry_rejected,
                                limit=args.limit, progress=sys.stderr.isatty())
    except OSError as exc:
        raise UserError(f"cannot write to {out} ({exc.__class__.__name__}: {exc})") from None
    print(report.line(out))
    if report.stopped:
        raise UserError(report.stopped)
    return 0


def run_review_export(args: argparse.Namespace) -> int:
    from vrforge.generators.cfworld.jsonl import read_scenarios
    from vrforge.generators.cfworld.review import export_review

    try:
        count = export_review(read_scenarios(Path(args.drafts)), Path(args.out))
    except OSError as exc:
        raise UserError(f"cannot write {args.out} ({exc.__class__.__name__}: {exc})") from None
    print(f"{count} scenario(s) pending review written to {args.out}")
    return 0


def run_review_import(args: argparse.Namespace) -> int:
    """Applies the decisions to the drafts, all or nothing."""
    from vrforge.generators.cfworld.jsonl import read_scenarios, write_scenarios
    from vrforge.generators.cfworld.review import apply_decisions, laws_by_id, read_decisions

    drafts, decisions = Path(args.drafts), Path(args.decisions)
    for path in (drafts, decisions):
        if not path.is_file():
            raise UserError(f"{path}: no such file")
    scenarios = read_scenarios(drafts)
    updated, summary = apply_decisions(scenarios, read_decisions(decisions), laws_by_id(args.laws))
    try:
        write_scenarios(Path(args.out) if args.out else drafts, updated)
    except OSError as exc:
        raise UserError(f"cannot write ({exc.__class__.__name__}: {exc})") from None
    print(summary.line())
    return 0


__all__ = ["law_config", "register", "run_draft", "run_import", "run_review_export", "run_review_import"]
