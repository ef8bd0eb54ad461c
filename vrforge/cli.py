"""The ``vrforge`` command line: the parser is assembled from ``vrforge.commands``, one module per subcommand.

User mistakes end in one line on stderr, ``vrforge <command>: error: <message>``, and exit code 2.
"""

from __future__ import annotations

import argparse
import sys

from vrforge.errors import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_USAGE, UserError

__all__ = ["EXIT_FAIL", "EXIT_INTERRUPTED", "EXIT_USAGE", "UserError", "main"]


def _parser() -> argparse.ArgumentParser:
    from vrforge import __version__
    from vrforge.commands import register_all

    parser = argparse.ArgumentParser(prog="vrforge", description="Build, publish and evaluate visual-reasoning benchmarks.")
    parser.add_argument("--version", action="version", version=f"vrforge {__version__}")
    register_all(parser.add_subparsers(dest="command", required=True))
    return parser


def _command_name(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """``vrforge score generative``: the prog of the innermost subcommand that ran."""
    while True:
        action = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, action.dest, None) if action is not None else None
        if action is None or name is None:
            return parser.prog
        parser = action.choices[name]


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"\n{_command_name(parser, args)}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except UserError as exc:
        print(f"{_command_name(parser, args)}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
