"""Cellular automaton inverse verifier: read the filled-in rule table and compare it with the
rule the start and end grids force.

The puzzle shows a start grid, the grid one step later, and a rule table (current state x
number of non-empty neighbours -> next state) with some entries given and the rest empty.
The rule space is every table that agrees with the given entries. Each empty entry (s, c)
occurs at some cell of the start grid (state s, c non-empty neighbours), and that cell's
state in the end grid is the entry's value; so exactly one table in the space produces the
end grid. ``deduce`` derives it from meta alone (the generator stores no separate answer).

The verifier samples every entry's centre (nearest of the background and the state colours;
an entry left empty counts as wrong) and looks at the set E of wrong entries. A wrong table
fails exactly one check, by the shape of E (each check is True when the answer does NOT
commit that error):

- ``single_entry``: exactly one entry is wrong;
- ``within_row``: two or more wrong entries, all for one current state (one table row);
- ``within_column``: two or more wrong entries, all for one neighbour count (one column);
- ``scattered``: two or more wrong entries spread over several rows and columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vrforge.types import Verdict
from vrforge.verifiers._ca_common import (
    BLANK,
    decode,
    load_answer,
    max_count,
    neighbour_counts,
    read_states,
    step,
    table_centres,
)

CHECKS = ("single_entry", "within_row", "within_column", "scattered")
UNKNOWN = "."  # an empty entry in meta["given"]


def given_table(meta: Mapping[str, Any]) -> np.ndarray:
    """The shown table: given entries, BLANK where the puzzle leaves the entry empty."""
    return np.array([[BLANK if ch == UNKNOWN else int(ch) for ch in row] for row in meta["given"]], dtype=np.int64)


def evidence(meta: Mapping[str, Any]) -> dict[tuple[int, int], set[int]]:
    """(state, count) -> the end states observed for start cells with that state and count."""
    start, end = decode(meta["start"]), decode(meta["end"])
    counts = neighbour_counts(start, meta["neighbourhood"], meta["boundary"])
    seen: dict[tuple[int, int], set[int]] = {}
    for s, c, e in zip(start.ravel().tolist(), counts.ravel().tolist(), end.ravel().tolist()):
        seen.setdefault((s, c), set()).add(e)
    return seen


def consistent_values(meta: Mapping[str, Any]) -> np.ndarray:
    """For each entry, how many values keep the table in the shown space and consistent with the
    end grid. The end grid depends on entry (s, c) only at cells whose pair is (s, c), so the
    consistent tables are exactly the products of per-entry consistent values: the answer is
    unique iff every count is 1."""
    table = given_table(meta)
    seen = evidence(meta)
    out = np.zeros(table.shape, dtype=np.int64)
    for (s, c), value in np.ndenumerate(table):
        observed = seen.get((s, c), set())
        allowed = set(range(meta["states"])) if value == BLANK else {int(value)}
        out[s, c] = sum(1 for v in allowed if observed <= {v})
    return out


def deduce(meta: Mapping[str, Any]) -> np.ndarray:
    """The rule forced by the puzzle (BLANK where an entry is not determined; the generator
    never publishes such a puzzle)."""
    table = given_table(meta)
    for (s, c), values in evidence(meta).items():
        if table[s, c] == BLANK and len(values) == 1:
            table[s, c] = next(iter(values))
    return table


def judge(meta: Mapping[str, Any], answer: np.ndarray, expected: np.ndarray | None = None) -> dict[str, bool]:
    """Checks for an answer table (states, BLANK where empty); True = passed."""
    expected = deduce(meta) if expected is None else expected
    wrong = np.argwhere(np.asarray(answer) != expected)
    rows = {int(r) for r, _ in wrong}
    cols = {int(c) for _, c in wrong}
    several = len(wrong) >= 2
    return {
        "single_entry": len(wrong) != 1,
        "within_row": not (several and len(rows) == 1),
        "within_column": not (several and len(cols) == 1),
        "scattered": not (several and len(rows) > 1 and len(cols) > 1),
    }


def produces_end(meta: Mapping[str, Any], table: np.ndarray) -> bool:
    """Whether ``table`` turns the start grid into the end grid in one step."""
    start, end = decode(meta["start"]), decode(meta["end"])
    return bool(np.array_equal(step(start, np.asarray(table), meta["neighbourhood"], meta["boundary"]), end))


def read_answer(meta: Mapping[str, Any], rgb: np.ndarray) -> np.ndarray:
    cell = meta["layout"]["table"]["cell"]
    states = read_states(meta, rgb, table_centres(meta), cell)
    return states.reshape(meta["states"], max_count(meta["neighbourhood"]) + 1)


def verify(meta: Mapping[str, Any], image: Any, puzzle: Any = None) -> Verdict:
    """Verdict for an answer image: the puzzle with the rule table filled in."""
    frame = load_answer(meta, image, meta["layout"]["table"]["cell"], "ca_inverse", puzzle)
    if isinstance(frame, Verdict):
        return frame
    rgb = frame.image
    answer = read_answer(meta, rgb)
    expected = deduce(meta)
    checks = judge(meta, answer, expected)
    return Verdict.from_checks(checks, details={"wrong_entries": int((answer != expected).sum()),
                                                "empty_entries": int((answer == BLANK).sum()),
                                                "registration": frame.details})
