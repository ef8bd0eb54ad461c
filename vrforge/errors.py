"""The one error class for mistakes a user can fix, and the CLI's exit codes.

Library code raises ``UserError`` (or a subclass) with a one-line message; the CLI's ``main``
catches it once and prints ``vrforge <command>: error: <message>``. Library modules neither
print errors nor exit.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UserError(Exception):
    """Anything the user can fix (a bad flag, a missing file, a malformed input): one line, exit 2."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message: what a one-line report of a failure shows."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
