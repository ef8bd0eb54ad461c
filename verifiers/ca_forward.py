"""Cellular automaton forward verifier: read the answer grid and compare it with the simulation.

The answer is the puzzle with the empty answer frame filled in: each cell in the colour of
its state after the shown number of steps. The verifier samples every answer-frame cell
centre, classifies it to the nearest of the background and the state colours, and compares
the grid with the simulation of the shown start grid, rule, neighbourhood and boundary.

The answer passes only when every cell matches. A wrong grid fails exactly one check, the
first explanation it matches (each check is True when the answer does NOT commit that error):

- ``wrong_steps``: it is the simulation for another number of steps (0 .. steps+2);
- ``wrong_boundary``: it is the simulation with the other boundary (toroidal <-> fixed);
- ``wrong_rule``: it is the simulation with one rule-table entry read wrong;
- ``wrong_cells``: any other wrong grid (slips in single cells, blank cells, ...).

So a wrong answer that is fully explained by a misread parameter is named by that
parameter; anything else is ``wrong_cells``. An answer that matches two explanations at
once fails both (the generator never uses such a distractor).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vrforge.types import Verdict
from vrforge.verifiers._ca_common import (
    BOUNDARIES,
    decode,
    grid_centres,
    load_answer,
    read_states,
    simulate,
    single_entry_variants,
)

CHECKS = ("wrong_steps", "wrong_boundary", "wrong_rule", "wrong_cells")
EXTRA_STEPS = 2  # step counts 0 .. steps + EXTRA_STEPS count as "another number of steps"


def truth(meta: Mapping[str, Any]) -> np.ndarray:
    return simulate(decode(meta["start"]), decode(meta["rule"]), meta["neighbourhood"], meta["boundary"], meta["steps"])


def explanation_grids(meta: Mapping[str, Any]) -> list[tuple[str, np.ndarray]]:
    """Every grid a misreading of the puzzle produces, named by the check it fails."""
    start, rule = decode(meta["start"]), decode(meta["rule"])
    neighbourhood, boundary, steps = meta["neighbourhood"], meta["boundary"], meta["steps"]
    out: list[tuple[str, np.ndarray]] = []
    grid = start
    for count in range(steps + EXTRA_STEPS + 1):
        if count != steps:
            out.append(("wrong_steps", grid))
        grid = simulate(grid, rule, neighbourhood, boundary, 1)
    other = BOUNDARIES[1 - BOUNDARIES.index(boundary)]
    out.append(("wrong_boundary", simulate(start, rule, neighbourhood, other, steps)))
    for _, _, variant in single_entry_variants(rule, meta["states"]):
        out.append(("wrong_rule", simulate(start, variant, neighbourhood, boundary, steps)))
    return out


def explanation_index(meta: Mapping[str, Any]) -> dict[bytes, set[str]]:
    """Grid bytes -> names of the misreadings that produce that grid (for judging many answers)."""
    index: dict[bytes, set[str]] = {}
    for name, grid in explanation_grids(meta):
        index.setdefault(np.ascontiguousarray(grid, dtype=np.int64).tobytes(), set()).add(name)
    return index


def judge(meta: Mapping[str, Any], answer: np.ndarray, index: dict[bytes, set[str]] | None = None,
          expected: np.ndarray | None = None) -> dict[str, bool]:
    """Checks for an answer grid (states, BLANK = -1 where nothing is drawn); True = passed.

    ``index`` (from ``explanation_index``) and ``expected`` (from ``truth``) may be passed in
    when judging many answers to one puzzle.
    """
    answer = np.ascontiguousarray(answer, dtype=np.int64)
    expected = truth(meta) if expected is None else expected
    if np.array_equal(answer, expected):
        return dict.fromkeys(CHECKS, True)
    index = explanation_index(meta) if index is None else index
    hits = index.get(answer.tobytes(), set())
    checks = {name: name not in hits for name in CHECKS[:-1]}
    checks["wrong_cells"] = bool(hits)
    return checks


def read_answer(meta: Mapping[str, Any], rgb: np.ndarray) -> np.ndarray:
    layout, n = meta["layout"], meta["size"]
    centres = grid_centres(layout["result_origin"], layout["cell"], n)
    return read_states(meta, rgb, centres, layout["cell"]).reshape(n, n)


def verify(meta: Mapping[str, Any], image: Any, puzzle: Any = None) -> Verdict:
    """Verdict for an answer image: the puzzle with the answer frame filled in."""
    frame = load_answer(meta, image, meta["layout"]["cell"], "ca_forward", puzzle)
    if isinstance(frame, Verdict):
        return frame
    rgb = frame.image
    answer = read_answer(meta, rgb)
    checks = judge(meta, answer)
    return Verdict.from_checks(checks, details={"blank_cells": int((answer < 0).sum()), "registration": frame.details})
