"""MkDocs hook: the reference pages that are generated at build time, so they cannot drift.

- ``<!-- generated: cli -->`` becomes every subcommand and flag, read from the argparse parser
  that ``vrforge`` itself runs (``vrforge.cli._parser``);
- ``<!-- generated: tasks -->`` becomes every registered task's parameters (meaning and bounds),
  presets, legibility floors and conventions, from the records ``vrforge tasks --json`` prints.

It also lays the source folders out as the installed package (``build/docs-src/vrforge/...``, the
same links ``make lint`` makes for mypy), since mkdocstrings reads the sources statically and the
editable install maps ``generators/`` and the rest into ``vrforge.*`` only at import time.
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARKERS = {"<!-- generated: cli -->": "cli", "<!-- generated: tasks -->": "tasks"}


def _link_source_tree() -> None:
    spec = importlib.util.spec_from_file_location("vrforge_ci_typecheck", ROOT / ".ci" / "typecheck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.link_tree(ROOT / "build" / "docs-src")


def on_startup(command: str, dirty: bool) -> None:
    _link_source_tree()


def _cell(text: Any) -> str:
    """One table cell of plain text: help strings hold brackets, stars and <placeholders> that
    Markdown would read as links, emphasis and tags."""
    text = " ".join(str(text).split())
    for char in "\\`*_[]|":
        text = text.replace(char, "\\" + char)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _flag(action: argparse.Action) -> str:
    if not action.option_strings:
        return _code(action.metavar or action.dest)
    suffix = ""
    if action.nargs != 0:
        metavar = action.metavar or action.dest.upper()
        if isinstance(metavar, tuple):
            metavar = " ".join(metavar)
        suffix = {"?": f" [{metavar}]", "*": f" [{metavar} ...]", "+": f" {metavar} [...]"}.get(str(action.nargs), f" {metavar}")
    return ", ".join(_code(name + suffix) for name in action.option_strings)


def _code(value: Any) -> str:
    return f"<code>{html.escape(str(value))}</code>".replace("|", "&#124;")


def _help(action: argparse.Action, parser: argparse.ArgumentParser) -> str:
    text = action.help or ""
    if "%(" in text:
        text = parser._get_formatter()._expand_help(action)
    notes = []
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        notes.append("one of " + ", ".join(_code(c) for c in action.choices))
    default = action.default
    if action.option_strings and action.nargs != 0 and default not in (None, argparse.SUPPRESS, [], ""):
        notes.append(f"default {_code(default)}")
    text = _cell(text)
    if notes:
        text += (" " if text else "") + f"({'; '.join(notes)})"
    return text


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _command(parser: argparse.ArgumentParser, name: str, summary: str, depth: int, out: list[str]) -> None:
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=80)
    out += [f"{'#' * depth} {name}", ""]
    if summary:
        out += [summary[0].upper() + summary[1:] + ("" if summary.endswith(".") else "."), ""]
    if parser.description and parser.description != summary:
        out += [parser.description, ""]
    out += ["```text", parser.format_usage().strip(), "```", ""]
    rows = [a for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and a.help != argparse.SUPPRESS]
    if rows:
        out += ["| argument | meaning |", "|---|---|"]
        out += [f"| {_flag(a)} | {_help(a, parser)} |" for a in rows]
        out.append("")
    group = _subparsers(parser)
    if group is not None:
        helps = {a.dest: a.help or "" for a in group._choices_actions}
        for child, sub in group.choices.items():
            _command(sub, f"{name} {child}", helps.get(child, ""), min(depth + 1, 4), out)


def cli_markdown() -> str:
    """Every subcommand of ``vrforge``, its usage and each flag's meaning, choices and default."""
    from vrforge.cli import _parser

    parser = _parser()
    group = _subparsers(parser)
    assert group is not None
    helps = {a.dest: a.help or "" for a in group._choices_actions}
    out = ["`vrforge --version` prints the version. Commands: "
           + ", ".join(f"[`{name}`](#vrforge-{name.replace('_', '-')})" for name in group.choices) + ".", ""]
    for name, sub in group.choices.items():
        _command(sub, f"vrforge {name}", helps.get(name, ""), 2, out)
    return "\n".join(out)


def tasks_markdown() -> str:
    """Each registered task: description, parameters with meaning and bounds, presets, floors, conventions."""
    from vrforge.commands.tasks import task_records

    out: list[str] = []
    records = task_records()
    out += ["| task | domain | version | checks (violations) | difficulty statistic | strict mode |", "|---|---|---|---|---|---|"]
    for t in records:
        strict = f"`{t['strict']['check']}` ≥ {t['strict']['threshold']}" if t["strict"] else "—"
        out.append(f"| [`{t['name']}`](#{t['name'].replace('_', '-')}) | {t['domain']} | {t['version']} | "
                   f"{', '.join(f'`{c}`' for c in t['checks'])} | `{t['difficulty_stat']}` | {strict} |")
    out.append("")
    for t in records:
        levels = list(t["difficulties"])
        out += [f"## `{t['name']}` {{#{t['name'].replace('_', '-')}}}", "", _cell(t["description"]), "",
                f"Domain {t['domain']}, version {t['version']}, module `{t['module']}`.", "",
                "**Parameters** (a recipe's level table sets any of them; presets shown per column):", "",
                "| parameter | meaning | type | bounds | " + " | ".join(levels) + " |",
                "|---|---|---|---|" + "---|" * len(levels)]
        for p in t["parameters"]:
            values = " | ".join(f"`{t['difficulties'][level].get(p['name'])}`" for level in levels)
            out.append(f"| `{p['name']}` | {_cell(p['doc'])} | {p['type']} | {_cell(p['bounds'])} | {values} |")
        out.append("")
        floors = t["legibility_floors"]
        if floors:
            at_512 = t["legibility_px_at_512"]
            out += ["**Legibility floors**: the least pixels each feature needs, and its size at 512 px per preset "
                    "(`vrforge build` refuses a level at a resolution where a feature falls below its floor):", "",
                    "| feature | floor (px) | " + " | ".join(levels) + " |", "|---|---|" + "---|" * len(levels)]
            for feature, floor in floors.items():
                sizes = " | ".join(_cell(at_512.get(level, {}).get(feature, "—")) for level in levels)
                out.append(f"| `{feature}` | {floor:g} | {sizes} |")
            out.append("")
        if t["conventions"]:
            out += ["**Conventions** (what the verifier relies on, and where the picture shows it without words):", ""]
            out += [f"- {_cell(rule)}: {_cell(where)}." for rule, where in t["conventions"].items()]
            out.append("")
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    for marker, kind in MARKERS.items():
        if marker in markdown:
            os.environ.setdefault("OMP_NUM_THREADS", "1")
            markdown = markdown.replace(marker, cli_markdown() if kind == "cli" else tasks_markdown())
    return markdown
