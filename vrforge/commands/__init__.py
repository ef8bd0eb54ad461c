"""Subcommands of the ``vrforge`` CLI, one module each.

A module here defines ``register(subparsers) -> None``, which adds its parser(s) with
``set_defaults(func=run)``; ``run(args) -> int`` parses nothing itself beyond the arguments,
calls the library and returns an exit code. User mistakes are raised as
``vrforge.errors.UserError`` and printed once by ``vrforge.cli.main``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil


def subcommands_of(subparsers: argparse._SubParsersAction, name: str) -> argparse._SubParsersAction:
    """The subcommand group of the already registered command ``name``, for a module that adds to it."""
    for action in subparsers.choices[name]._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise LookupError(f"command {name!r} has no subcommands")


def register_all(subparsers: argparse._SubParsersAction) -> None:
    """Add every command module's parsers, in name order (stable ``--help``)."""
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
        importlib.import_module(f"{__name__}.{module}").register(subparsers)
