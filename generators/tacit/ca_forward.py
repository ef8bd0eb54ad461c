"""Cellular automaton, forward (domain: causal).

A start grid of k-state cells, an outer-totalistic rule drawn as a table (current state x
number of non-empty neighbours -> next state), the neighbourhood as a glyph in the table's
corner, the boundary (wrap ring = toroidal, thick wall = fixed) and the number of steps as
pips on the arrow. The answer fills the empty frame with the grid after those steps. The
simulation is deterministic, so the answer is unique.

Distractors, one per check of ``verifiers.ca_forward`` (each fails exactly that check, which
the generator confirms with the verifier's own judge): the simulation with one step fewer or
more (``wrong_steps``), with the other boundary (``wrong_boundary``), with one rule entry
misread (``wrong_rule``), and a grid explained by none of these (``wrong_cells``): the
cell-wise majority of the other three distractors (possibly with part of it reverted to the
solution), or the solution with one or three cells changed. The majority shares its edits with
the others (I-RAVEN), so the solution need not be the centre of the option set. The set is
chosen among the candidate sets (one grid of each kind) by the shared policy of
``_option_set`` from the grids' cell grey levels.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

import numpy as np

from vrforge.generators.tacit import _ca_common as common
from vrforge.generators.tacit import _option_set
from vrforge.registry import TaskSpec, register_task
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import ca_forward as verifier
from vrforge.verifiers._ca_common import BOUNDARIES, NEIGHBOURHOODS, decode, encode, simulate

VERSION = "1.1.0"
TABLE_CELL = 34
TRIES = 30  # rule/grid draws per attempt before the attempt is rejected
MAX_RULE_CANDIDATES = 6


@dataclass(frozen=True)
class CaForwardConfig:
    size: int
    states: int
    neighbourhood: str
    min_steps: int
    max_steps: int

    def validate(self) -> None:
        if not 4 <= self.size <= 16:
            raise ValueError(f"size must be in 4..16, got {self.size}")
        if not 2 <= self.states <= len(common.STATE_COLOURS):
            raise ValueError(f"states must be in 2..{len(common.STATE_COLOURS)}, got {self.states}")
        if self.neighbourhood not in NEIGHBOURHOODS:
            raise ValueError(f"neighbourhood must be one of {', '.join(NEIGHBOURHOODS)}, got {self.neighbourhood!r}")
        if not 1 <= self.min_steps <= self.max_steps <= 6:
            raise ValueError(f"need 1 <= min_steps <= max_steps <= 6, got {self.min_steps}..{self.max_steps}")


DIFFICULTIES = {
    "easy": CaForwardConfig(size=6, states=2, neighbourhood="von_neumann", min_steps=1, max_steps=2),
    "medium": CaForwardConfig(size=8, states=2, neighbourhood="moore", min_steps=2, max_steps=3),
    "hard": CaForwardConfig(size=10, states=3, neighbourhood="moore", min_steps=2, max_steps=3),
}


def _meta(config: CaForwardConfig, start: np.ndarray, rule: np.ndarray, boundary: str, steps: int) -> dict:
    return {
        "task": "ca_forward",
        "size": config.size,
        "states": config.states,
        "neighbourhood": config.neighbourhood,
        "boundary": boundary,
        "steps": steps,
        "rule": encode(rule),
        "start": encode(start),
        "layout": common.layout(config.size, config.states, config.neighbourhood, TABLE_CELL),
        "palette": common.palette(config.states),
    }


def _interesting(start: np.ndarray, end: np.ndarray, before: np.ndarray) -> bool:
    live = float((end > 0).mean())
    return 0.2 <= live <= 0.8 and not np.array_equal(end, start) and not np.array_equal(end, before)


def generate(config: CaForwardConfig, rng: np.random.Generator) -> Puzzle:
    for _ in range(TRIES):
        rule = common.random_rule(rng, config.states, config.neighbourhood)
        boundary = BOUNDARIES[int(rng.integers(2))]
        steps = int(rng.integers(config.min_steps, config.max_steps + 1))
        start = common.random_grid(rng, config.size, config.states, float(rng.uniform(0.3, 0.55)))
        before = simulate(start, rule, config.neighbourhood, boundary, steps - 1)
        end = simulate(before, rule, config.neighbourhood, boundary, 1)
        if not _interesting(start, end, before):
            continue
        meta = _meta(config, start, rule, boundary, steps)
        chosen = _distractors(meta, end, rng)
        if chosen is not None:
            break
    else:
        raise RejectedPuzzle(f"no rule and start grid with all four distractor kinds in {TRIES} draws")

    stats = {
        "cells": float(config.size**2),
        "states": float(config.states),
        "steps": float(steps),
        "rule_entries": float(rule.size),
        "changed_cells": float((end != start).sum()),
    }
    return common.assemble(meta, end, chosen, stats, rng)


def _distractors(meta: dict, end: np.ndarray, rng: np.random.Generator) -> list[tuple[str, np.ndarray]] | None:
    """One grid per check, or None when some kind has no grid failing exactly its check."""
    index = verifier.explanation_index(meta)

    def fails_only(grid: np.ndarray, name: str) -> bool:
        checks = verifier.judge(meta, grid, index=index, expected=end)
        return [k for k, ok in checks.items() if not ok] == [name]

    candidates: dict[str, list[np.ndarray]] = {"wrong_steps": [], "wrong_boundary": [], "wrong_rule": []}
    seen: set[bytes] = set()
    for name, grid in verifier.explanation_grids(meta):
        key = grid.tobytes()
        if key in seen:
            continue
        seen.add(key)
        if name == "wrong_steps" and abs(_steps_of(meta, grid) - meta["steps"]) != 1:
            continue
        if fails_only(grid, name):
            candidates[name].append(grid)
    if any(not grids for grids in candidates.values()):
        return None
    rules = candidates["wrong_rule"]
    if len(rules) > MAX_RULE_CANDIDATES:
        rules = [rules[i] for i in sorted(rng.choice(len(rules), MAX_RULE_CANDIDATES, replace=False).tolist())]

    grids = [end]
    where: dict[str, list[int]] = {}
    pools = (("wrong_steps", candidates["wrong_steps"]), ("wrong_boundary", candidates["wrong_boundary"]), ("wrong_rule", rules))
    for name, pool in pools:
        where[name] = list(range(len(grids), len(grids) + len(pool)))
        grids += pool
    where_any = {i for members in where.values() for i in members}
    sets: list[list[int]] = []
    for fixed in product(where["wrong_steps"], where["wrong_boundary"], where["wrong_rule"]):
        for cells_grid in _cell_candidates(end, [grids[i] for i in fixed], meta["states"], rng):
            if fails_only(cells_grid, "wrong_cells"):
                sets.append([0, *fixed, len(grids)])
                grids.append(cells_grid)
    if not sets:
        return None
    grey = common.luminance(meta["palette"]["states"])
    features = np.stack([grey[g].ravel() for g in grids])
    kinds = [next(name for name, members in where.items() if i in members) if i in where_any else "wrong_cells"
             for i in range(1, len(grids))]
    bare = np.full(features.shape[1], grey[-1])  # the puzzle's result frame is empty
    try:
        chosen = _option_set.choose(features, kinds, rng, puzzle=bare, sets=np.asarray(sets, dtype=np.int64)[:, 1:] - 1)
    except ValueError:
        return None
    return [(kinds[i], grids[i + 1]) for i in chosen]


def _steps_of(meta: dict, grid: np.ndarray) -> int:
    """The first step count whose simulation gives ``grid`` (-1 if none up to steps + EXTRA_STEPS)."""
    current = decode(meta["start"])
    rule = decode(meta["rule"])
    for count in range(meta["steps"] + verifier.EXTRA_STEPS + 1):
        if np.array_equal(current, grid):
            return count
        current = simulate(current, rule, meta["neighbourhood"], meta["boundary"], 1)
    return -1


def _cell_candidates(end: np.ndarray, others: list[np.ndarray], states: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Grids that share their edits with the other distractors (their cell-wise majority, and
    that majority with part of its differences from the solution reverted), and a plain slip."""
    stack = np.stack(others)
    majority = others[0].copy()
    for grid in others[1:]:
        agree = (stack == grid).sum(axis=0)
        majority = np.where(agree >= 2, grid, majority)
    out = [majority]
    diff = np.argwhere(majority != end)
    if len(diff) >= 2:
        keep = rng.permutation(len(diff))[: len(diff) // 2]
        partial = majority.copy()
        for r, c in diff[keep]:
            partial[r, c] = end[r, c]
        out.append(partial)
    # Plain slips (one or three cells of the solution changed): here the solution is the centre,
    # which the set choice needs now and then so that "never the medoid" gives nothing away.
    for size in (1, 3):
        slip = end.copy()
        for flat in rng.choice(end.size, size, replace=False).tolist():
            r, c = divmod(flat, end.shape[1])
            slip[r, c] = (slip[r, c] + 1 + int(rng.integers(states - 1))) % states
        out.append(slip)
    return out


def draw(meta: dict, answer: list[str] | None) -> str:
    """The puzzle SVG; ``answer`` (grid rows) fills the empty frame."""
    result = None if answer is None else decode(answer)
    return common.draw_scene(meta, result, decode(meta["rule"]))


register_task(
    TaskSpec(
        name="ca_forward",
        domain="causal",
        version=VERSION,
        checks=verifier.CHECKS,
        difficulties=DIFFICULTIES,
        generate=generate,
        draw=draw,
        verify=verifier.verify,
        description="Cellular automaton: fill the empty frame with the grid after the shown number of steps of the drawn rule.",
        instruction=("Fill the empty grid with the cellular automaton's state after the number "
                     "of steps shown on the arrow, applying the drawn rule table and boundary."),
        answer_hint="the grid after the shown number of steps of the rule",
        difficulty_stat="cells",
    )
)
