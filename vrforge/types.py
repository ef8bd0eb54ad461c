"""Types shared by generators, verifiers and the build."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OPTION_COUNT = 5  # the solution plus four distractors


@dataclass(frozen=True)
class Verdict:
    """The outcome of checking one answer image against a puzzle's meta.

    ``checks`` maps each check name (the violation names distractors use) to True when the
    image passes it. ``usable`` is False when the image could not be read at all.
    """

    passed: bool
    checks: dict[str, bool]
    reason: str
    details: dict[str, Any] = field(default_factory=dict)
    usable: bool = True

    @property
    def failed(self) -> list[str]:
        return [name for name, ok in self.checks.items() if not ok]

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "usable": self.usable,
            "checks": dict(self.checks),
            "failed": self.failed,
            "reason": self.reason,
            "details": self.details,
        }

    @classmethod
    def unusable(cls, reason: str) -> Verdict:
        return cls(passed=False, checks={}, reason=f"unusable input: {reason}", usable=False)

    @classmethod
    def from_checks(cls, checks: dict[str, bool], details: dict[str, Any] | None = None) -> Verdict:
        failed = [name for name, ok in checks.items() if not ok]
        reason = "all checks passed" if not failed else "failed: " + ", ".join(failed)
        return cls(passed=not failed, checks=checks, reason=reason, details=details or {})


@dataclass(frozen=True)
class Puzzle:
    """One generated puzzle: the structured truth and its answers, not yet drawn.

    ``solution`` and each of ``distractors`` are task-specific answer objects that the task's
    ``draw(meta, answer)`` turns into SVG (``draw(meta, None)`` draws the bare puzzle).
    ``distractors`` and ``violations`` are aligned: distractor i violates exactly the check
    named ``violations[i]``. ``stats`` are difficulty statistics (path length, rule count...).
    """

    meta: dict[str, Any]
    solution: Any
    distractors: tuple[Any, ...]
    violations: tuple[str, ...]
    answer_index: int
    stats: dict[str, float]

    def options(self) -> list[Any]:
        """The five answers in presentation order: distractors with the solution inserted."""
        options = list(self.distractors)
        options.insert(self.answer_index, self.solution)
        return options


class RejectedPuzzle(Exception):
    """A generator attempt that must be redrawn with the next derived seed (and counted)."""
