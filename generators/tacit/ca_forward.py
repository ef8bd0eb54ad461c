"""Cellular automaton, forward (domain: causal).

A start grid of k-state cells, an outer-totalistic rule drawn as a table (current state x
number of non-empty neighbours -> next state), the neighbourhood and the states that count as
a glyph in the table's corner, the boundary (a ring around the start grid of what lies beyond
the edge: the opposite edge for toroidal, empty cells behind a thick wall for fixed) and the
number of steps as pips on the arrow. The answer fills the empty frame with the grid after those steps. The
simulation is deterministic, so the answer is unique.

Distractors: misreadings of the puzzle, each failing exactly one check of
``verifiers.ca_forward`` (confirmed with the verifier's own judge). An answer is kept as the
parameters that draw it (steps, boundary, rule table), and a near miss of any answer changes
one of them: a step more or fewer, the other boundary, or one rule entry read as another
state. One edit of the solution is ``wrong_steps``, ``wrong_boundary`` or ``wrong_rule``; two
edits (say the other boundary and one step more) are explained by no single misreading, so
``wrong_cells``. The set is a star (``_option_set.choose_star``): its centre is the solution
one time in five, otherwise a distractor with the solution one edit back among its near
misses. Every edit kind is undone by an edit of the same kind, and the rule entries offered
are those whose change is nearest in size to a step's, so the solution looks like any other
option around the centre. (Cells changed at random are not offered: they share no cells with
the automaton's own changes, so the options sharing such an edit would stand together.)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from vrforge.generators.tacit import _ca_common as common
from vrforge.generators.tacit import _option_set
from vrforge.params import ParamError, check_params, param
from vrforge.registry import TaskSpec, register_task
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import ca_forward as verifier
from vrforge.verifiers._ca_common import BOUNDARIES, NEIGHBOURHOODS, decode, encode, simulate, single_entry_variants

# 1.3.0: the corner glyph fills the counted positions with the states that count (not grey),
# and a fixed boundary's start grid gets a ring of faded empty cells (what lies beyond the wall).
# 1.5.0: a set that would fall back to a star (one aspect in play) is drawn again.
VERSION = "1.5.0"
TABLE_CELL = 34
TRIES = 30  # rule/grid draws per attempt before the attempt is rejected
RULE_EDITS = 4  # rule-entry misreadings among an answer's near misses
MAX_STEPS = 8  # the arrow's pip row has room for this many


@dataclass(frozen=True)
class CaForwardConfig:
    size: int = param(doc="cells per side of the grid", low=4, high=64)
    states: int = param(doc="cell states, the empty one included (each a colour)", low=2, high=len(common.STATE_COLOURS))
    neighbourhood: str = param(doc="the neighbours counted: the 4 edge neighbours or all 8 around", choices=tuple(NEIGHBOURHOODS))
    min_steps: int = param(doc="fewest applications of the rule (pips on the arrow)", low=1, high=MAX_STEPS)
    max_steps: int = param(doc="most applications of the rule (pips on the arrow)", low=1, high=MAX_STEPS)

    def validate(self) -> None:
        check_params(self)
        if self.min_steps > self.max_steps:
            raise ParamError(f"min_steps ({self.min_steps}) must not exceed max_steps ({self.max_steps})")


DIFFICULTIES = {
    "easy": CaForwardConfig(size=6, states=2, neighbourhood="von_neumann", min_steps=1, max_steps=2),
    "medium": CaForwardConfig(size=8, states=2, neighbourhood="moore", min_steps=2, max_steps=3),
    "hard": CaForwardConfig(size=10, states=3, neighbourhood="moore", min_steps=2, max_steps=3),
    # The reference's hard (grid 32, 5 steps); three states are the palette's most.
    "expert": CaForwardConfig(size=32, states=3, neighbourhood="moore", min_steps=5, max_steps=6),
}


def _layout(config: CaForwardConfig) -> dict:
    return common.layout(config.size, config.states, config.neighbourhood, TABLE_CELL, config.max_steps)


def legibility(config: CaForwardConfig) -> dict[str, float]:
    return common.legibility(_layout(config), config.neighbourhood, config.max_steps)


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
        "layout": _layout(config),
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
        answers = Answers(meta, rng)
        try:
            chosen = _option_set.choose_set(answers.solution, answers.variants, answers.stand_in, rng, aspects=settings,
                                            fallback=False)
        except ValueError:
            continue
        break
    else:
        raise RejectedPuzzle(f"no rule and start grid with four distinct distractors in {TRIES} draws")

    stats = {
        "cells": float(config.size**2),
        "states": float(config.states),
        "steps": float(steps),
        "rule_entries": float(rule.size),
        "changed_cells": float((end != start).sum()),
        # the settings (steps, boundary, rule entries) a solver must check to rule out every distractor
        "aspects_in_play": _option_set.set_aspects(answers.solution, chosen, settings),
    }
    return common.assemble(meta, end, [(name, answers.grid(state)) for name, state in chosen], stats, rng)


@dataclass(frozen=True)
class Answer:
    """An answer grid by its provenance: the parameters of the simulation that draws it."""

    steps: int
    boundary: str
    rule: tuple[tuple[int, ...], ...]


def settings(state: Answer) -> tuple[bytes, ...]:
    """An answer's aspects: the settings of the simulation a solver must read right (the number
    of steps, the boundary and each rule entry)."""
    return (str(state.steps).encode(), state.boundary.encode(), *(bytes([v]) for row in state.rule for v in row))


class Answers:
    """The answer states of one puzzle: their grids, stand-ins and near misses.

    Every kind of edit is undone by one of its kind, so that undoing a distractor's edit (the
    solution, seen from that distractor) looks like making another one: a step more or fewer,
    the other boundary, one rule entry read as another state. The rule entries are drawn so
    that they change about as many cells as a step does on this puzzle."""

    def __init__(self, meta: dict, rng: np.random.Generator):
        self.meta, self.rng = meta, rng
        self.start = decode(meta["start"])
        self._grids: dict[Answer, np.ndarray] = {}
        rule = decode(meta["rule"])
        self.solution = Answer(meta["steps"], meta["boundary"], tuple(map(tuple, rule.tolist())))
        self.expected = self.grid(self.solution)
        self.index = verifier.explanation_index(meta)
        self.grey = common.luminance(meta["palette"]["states"])
        sizes = [self._changed(self.solution, replace(self.solution, steps=meta["steps"] + d)) for d in (-1, 1)]
        self.sizes = [s for s in sizes if s > 0] or [2]

    def grid(self, state: Answer) -> np.ndarray:
        if state in self._grids:
            return self._grids[state]
        grid = simulate(self.start, np.asarray(state.rule, dtype=np.int64), self.meta["neighbourhood"], state.boundary,
                        state.steps)
        grid.flags.writeable = False
        self._grids[state] = grid
        return grid

    def _changed(self, a: Answer, b: Answer) -> int:
        return int((self.grid(a) != self.grid(b)).sum())

    def stand_in(self, state: Answer) -> np.ndarray:
        return self.grey[self.grid(state)].ravel()

    def _rule_edits(self, state: Answer) -> list[Answer]:
        """RULE_EDITS single-entry misreadings, those whose change is nearest a random target size."""
        rule = np.asarray(state.rule, dtype=np.int64)
        edits = []
        for _, _, table in single_entry_variants(rule, self.meta["states"]):
            edited = replace(state, rule=tuple(map(tuple, table.tolist())))
            size = self._changed(state, edited)
            if size:
                edits.append((size, edited))
        if not edits:
            return []
        sizes = np.asarray([s for s, _ in edits], dtype=np.float64)
        chosen = []
        for target in self.rng.choice(self.sizes, RULE_EDITS).tolist():
            gap = np.abs(sizes - target) + self.rng.random(len(sizes))  # nearest, ties at random
            best = int(np.argmin(gap))
            chosen.append(edits[best][1])
            sizes[best] = np.inf
            if np.isinf(sizes).all():
                break
        return chosen

    def variants(self, state: Answer) -> list[tuple[str, Answer]]:
        """Near misses of ``state``, each named by the one check of the verifier it fails."""
        edits = [replace(state, steps=state.steps + d) for d in (-1, 1) if state.steps + d >= 0]
        edits.append(replace(state, boundary=BOUNDARIES[1 - BOUNDARIES.index(state.boundary)]))
        edits += self._rule_edits(state)
        out = []
        for edited in edits:
            checks = verifier.judge(self.meta, self.grid(edited), index=self.index, expected=self.expected)
            failed = [name for name, ok in checks.items() if not ok]
            if len(failed) == 1:
                out.append((failed[0], edited))
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
        legibility=legibility,
        legibility_floors=common.LEGIBILITY_FLOORS,
        conventions={**common.CONVENTIONS,
                     "the answer is the grid after exactly as many steps as the arrow has pips":
                         "the pips above the arrow, which points from the start grid into the empty frame"},
    )
)
