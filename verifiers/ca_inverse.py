"""Cellular automaton inverse verifier: read the filled-in rule table and compare it with the
rule the start and end grids force.

The puzzle shows a start grid, the grid ``steps`` steps later (pips on the arrow), and a rule
table (current state x number of non-empty neighbours -> next state) with some entries given
and the rest empty. The rule space is every table that agrees with the given entries, and
exactly one table in it produces the end grid. After one step, each empty entry (s, c) occurs
at some cell of the start grid (state s, c non-empty neighbours), and that cell's state in the
end grid is the entry's value: ``deduce`` derives the answer from meta alone. After several
steps the cells' pairs on the way are not shown, so the generator proves uniqueness by trying
every table of the space (``consistent_tables``) and stores the answer in meta as ``rule``.

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
    NEIGHBOURHOODS,
    decode,
    load_answer,
    max_count,
    neighbour_counts,
    read_states,
    simulate,
    table_centres,
)

CHECKS = ("single_entry", "within_row", "within_column", "scattered")
UNKNOWN = "."  # an empty entry in meta["given"]
SEARCH_TABLES = 2187  # most tables ``consistent_tables`` tries (3 states ** 7 empty entries)
SEARCH_CHUNK = 512  # tables simulated at once


def steps_of(meta: Mapping[str, Any]) -> int:
    return int(meta.get("steps", 1))


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
    """For each entry, how many values it takes among the tables of the shown space that produce
    the end grid: the answer is unique iff every count is 1. After one step the end grid depends
    on entry (s, c) only at cells whose pair is (s, c), so the consistent tables are exactly the
    products of per-entry consistent values; after several, every table is tried."""
    if steps_of(meta) > 1:
        tables = consistent_tables(meta)
        return np.asarray([[len(set(tables[:, s, c].tolist())) for c in range(tables.shape[2])]
                           for s in range(tables.shape[1])], dtype=np.int64)
    table = given_table(meta)
    seen = evidence(meta)
    out = np.zeros(table.shape, dtype=np.int64)
    for (s, c), value in np.ndenumerate(table):
        observed = seen.get((s, c), set())
        allowed = set(range(meta["states"])) if value == BLANK else {int(value)}
        out[s, c] = sum(1 for v in allowed if observed <= {v})
    return out


def _batch_steps(start: np.ndarray, given: np.ndarray, free: list[tuple[int, int]], values: np.ndarray,
                 neighbourhood: str, boundary: str, steps: int) -> np.ndarray:
    """``steps`` steps of many automata at once from one start grid: automaton i has the given
    table with the empty entries ``free`` set to ``values[i]``; the grids after, (N, n, n).

    A cell's (state, count) pair is looked up once in the given table, then each empty entry's
    cells take that automaton's value (int8 throughout: this search is the generator's cost)."""
    counts = given.shape[1]
    lookup = given.ravel().astype(np.int8)
    keys = [s * counts + c for s, c in free]
    mode = "wrap" if boundary == "toroidal" else "constant"
    n_rows, n_cols = start.shape
    grids = np.broadcast_to(start.astype(np.int8), (len(values), n_rows, n_cols))
    columns = [values[:, k].astype(np.int8)[:, None, None] for k in range(len(free))]
    for _ in range(steps):
        padded = np.pad((grids > 0).view(np.int8), ((0, 0), (1, 1), (1, 1)), mode=mode)  # type: ignore[call-overload]
        pair = grids * np.int8(counts)
        for dr, dc in NEIGHBOURHOODS[neighbourhood]:
            pair += padded[:, 1 + dr : 1 + dr + n_rows, 1 + dc : 1 + dc + n_cols]
        nxt = lookup[pair]
        for key, column in zip(keys, columns):
            np.copyto(nxt, column, where=pair == key)
        grids = nxt
    return grids


def consistent_tables(meta: Mapping[str, Any], limit: int = SEARCH_TABLES) -> np.ndarray:
    """Every table of the shown space that turns the start grid into the end grid in the shown
    number of steps, (M, states, counts), by trying them all; ValueError when the space holds
    more than ``limit`` tables."""
    given = given_table(meta)
    free = [(int(s), int(c)) for s, c in np.argwhere(given == BLANK).tolist()]
    states = meta["states"]
    if states ** len(free) > limit:
        raise ValueError(f"the rule space holds {states ** len(free)} tables, more than {limit} to try")
    start, end = decode(meta["start"]), decode(meta["end"])
    values = np.indices((states,) * len(free)).reshape(len(free), -1).T
    found = []
    for lo in range(0, len(values), SEARCH_CHUNK):
        chunk = values[lo : lo + SEARCH_CHUNK]
        grids = _batch_steps(start, np.where(given == BLANK, 0, given), free, chunk, meta["neighbourhood"], meta["boundary"],
                             steps_of(meta))
        for row in chunk[(grids == end[None]).all(axis=(1, 2))]:
            table = given.copy()
            for (s, c), v in zip(free, row.tolist()):
                table[s, c] = v
            found.append(table)
    return np.asarray(found, dtype=np.int64).reshape(len(found), *given.shape)


def deduce(meta: Mapping[str, Any]) -> np.ndarray:
    """The rule forced by the puzzle (BLANK where an entry is not determined; the generator
    never publishes such a puzzle)."""
    table = given_table(meta)
    if steps_of(meta) > 1:
        tables = consistent_tables(meta)
        if len(tables):
            agreed = (tables == tables[:1]).all(axis=0)
            table = np.where(agreed, tables[0], BLANK)
        return table
    for (s, c), values in evidence(meta).items():
        if table[s, c] == BLANK and len(values) == 1:
            table[s, c] = next(iter(values))
    return table


def answer_table(meta: Mapping[str, Any]) -> np.ndarray:
    """The answer: meta's ``rule`` where the generator stored it (several steps), else deduced."""
    return decode(meta["rule"]) if "rule" in meta else deduce(meta)


def judge(meta: Mapping[str, Any], answer: np.ndarray, expected: np.ndarray | None = None) -> dict[str, bool]:
    """Checks for an answer table (states, BLANK where empty); True = passed."""
    expected = answer_table(meta) if expected is None else expected
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
    """Whether ``table`` turns the start grid into the end grid in the shown number of steps."""
    start, end = decode(meta["start"]), decode(meta["end"])
    grid = simulate(start, np.asarray(table), meta["neighbourhood"], meta["boundary"], steps_of(meta))
    return bool(np.array_equal(grid, end))


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
    expected = answer_table(meta)
    checks = judge(meta, answer, expected)
    return Verdict.from_checks(checks, details={"wrong_entries": int((answer != expected).sum()),
                                                "empty_entries": int((answer == BLANK).sum()),
                                                "registration": frame.details})
