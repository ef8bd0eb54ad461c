"""Cellular automaton, inverse (domain: causal).

The picture shows a start grid, the grid one step later (one pip on the arrow), the
neighbourhood and boundary (as in ca_forward), and a rule table with some entries given and
the rest empty. The answer is the table with every entry filled in.

Uniqueness: the rule space shown is every table that agrees with the given entries. The
start grid is drawn (best of a few random grids) to show as many (state, neighbour count)
pairs as possible; exactly the pairs it shows are left empty, the others are given. One step
of the automaton sets each cell from its own pair's entry alone, so the tables that produce
the end grid are the per-entry products of consistent values, and each shown pair has
exactly one (the state its cells take). ``verifiers.ca_inverse.consistent_values`` counts
them; the generator rejects an instance unless every count is 1 (the tests also enumerate
the whole space on small instances).

Distractors are tables with wrong entries, each failing exactly one check of
``verifiers.ca_inverse`` (which classifies the set of wrong entries by its shape, confirmed
with its own judge): one wrong entry, several in one row, several in one column, several
scattered. A near miss of any table changes one entry that the puzzle leaves empty to another
state, so one edit of the solution is ``single_entry`` and two are ``within_row``,
``within_column`` or ``scattered`` by where they fall. The set is a star
(``_option_set.choose_star``): its centre is the solution one time in five, otherwise a
one-entry distractor with the solution (that entry changed back) among its near misses.
Changing an entry is undone by changing it again, and the rule's entries are drawn
uniformly, so the solution looks like any other option around the centre.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from vrforge.generators.tacit import _ca_common as common
from vrforge.generators.tacit import _option_set
from vrforge.registry import TaskSpec, register_task
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import ca_inverse as verifier
from vrforge.verifiers._ca_common import BLANK, BOUNDARIES, NEIGHBOURHOODS, decode, encode, max_count, neighbour_counts, step

VERSION = "1.2.0"
TABLE_CELL = 34
TRIES = 30  # rule/grid draws per attempt before the attempt is rejected
GRID_DRAWS = 6  # random start grids tried per rule, the one showing most pairs kept


@dataclass(frozen=True)
class CaInverseConfig:
    size: int
    states: int
    neighbourhood: str
    min_unknown: int  # entries the solver must deduce

    def validate(self) -> None:
        if not 4 <= self.size <= 16:
            raise ValueError(f"size must be in 4..16, got {self.size}")
        if not 2 <= self.states <= len(common.STATE_COLOURS):
            raise ValueError(f"states must be in 2..{len(common.STATE_COLOURS)}, got {self.states}")
        if self.neighbourhood not in NEIGHBOURHOODS:
            raise ValueError(f"neighbourhood must be one of {', '.join(NEIGHBOURHOODS)}, got {self.neighbourhood!r}")
        entries = self.states * (max_count(self.neighbourhood) + 1)
        if not 4 <= self.min_unknown <= entries:
            raise ValueError(f"min_unknown must be in 4..{entries}, got {self.min_unknown}")


DIFFICULTIES = {
    "easy": CaInverseConfig(size=6, states=2, neighbourhood="von_neumann", min_unknown=7),
    "medium": CaInverseConfig(size=8, states=2, neighbourhood="moore", min_unknown=12),
    "hard": CaInverseConfig(size=10, states=3, neighbourhood="moore", min_unknown=17),
}


def _shown_pairs(start: np.ndarray, neighbourhood: str, boundary: str) -> set[tuple[int, int]]:
    counts = neighbour_counts(start, neighbourhood, boundary)
    return set(zip(start.ravel().tolist(), counts.ravel().tolist()))


def _meta(config: CaInverseConfig, start: np.ndarray, end: np.ndarray, given: np.ndarray, boundary: str) -> dict:
    return {
        "task": "ca_inverse",
        "size": config.size,
        "states": config.states,
        "neighbourhood": config.neighbourhood,
        "boundary": boundary,
        "steps": 1,
        "given": ["".join(verifier.UNKNOWN if v == BLANK else str(int(v)) for v in row) for row in given],
        "start": encode(start),
        "end": encode(end),
        "layout": common.layout(config.size, config.states, config.neighbourhood, TABLE_CELL),
        "palette": common.palette(config.states),
    }


def generate(config: CaInverseConfig, rng: np.random.Generator) -> Puzzle:
    for _ in range(TRIES):
        rule = common.random_rule(rng, config.states, config.neighbourhood)
        boundary = BOUNDARIES[int(rng.integers(2))]
        grids = [common.random_grid(rng, config.size, config.states, float(rng.uniform(0.3, 0.6))) for _ in range(GRID_DRAWS)]
        shown = [_shown_pairs(g, config.neighbourhood, boundary) for g in grids]
        best = max(range(GRID_DRAWS), key=lambda i: (len(shown[i]), -i))
        start, pairs = grids[best], shown[best]
        end = step(start, rule, config.neighbourhood, boundary)
        live = float((end > 0).mean())
        if len(pairs) < config.min_unknown or not 0.15 <= live <= 0.85 or np.array_equal(start, end):
            continue
        given = rule.copy()
        for s, c in pairs:
            given[s, c] = BLANK
        meta = _meta(config, start, end, given, boundary)
        if not (verifier.consistent_values(meta) == 1).all() or not np.array_equal(verifier.deduce(meta), rule):
            continue  # cannot happen by construction; kept as the uniqueness proof
        chosen = _distractors(meta, rule, rng)
        if chosen is not None:
            break
    else:
        raise RejectedPuzzle(f"no rule and start grid with a unique answer and four distinct distractors in {TRIES} draws")

    stats = {
        "cells": float(config.size**2),
        "states": float(config.states),
        "rule_entries": float(rule.size),
        "unknown_entries": float(len(pairs)),
    }
    return common.assemble(meta, rule, chosen, stats, rng)


def near_misses(meta: dict, solution: np.ndarray, table: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Every table with one entry that the puzzle leaves empty changed to another state, named
    by the one check it fails (changing an entry is undone by changing it again)."""
    unknown = [tuple(e) for e in np.argwhere(verifier.given_table(meta) == BLANK).tolist()]
    out = []
    for e in unknown:
        for value in range(meta["states"]):
            if value != table[e]:
                edited = table.copy()
                edited[e] = value
                failed = [k for k, ok in verifier.judge(meta, edited, solution).items() if not ok]
                if len(failed) == 1:
                    out.append((failed[0], edited))
    return out


def _distractors(meta: dict, rule: np.ndarray, rng: np.random.Generator) -> list[tuple[str, np.ndarray]] | None:
    """Four (violation, table) distractors, a star of one-entry edits; None if impossible."""
    grey = common.luminance(meta["palette"]["states"])
    try:
        return list(_option_set.choose_star(rule, partial(near_misses, meta, rule), lambda table: grey[table].ravel(), rng))
    except ValueError:
        return None


def draw(meta: dict, answer: list[str] | None) -> str:
    """The puzzle SVG; ``answer`` (table rows) fills the rule table."""
    table = verifier.given_table(meta) if answer is None else decode(answer)
    return common.draw_scene(meta, decode(meta["end"]), table)


register_task(
    TaskSpec(
        name="ca_inverse",
        domain="causal",
        version=VERSION,
        checks=verifier.CHECKS,
        difficulties=DIFFICULTIES,
        generate=generate,
        draw=draw,
        verify=verifier.verify,
        description="Cellular automaton: from a start grid and the grid one step later, fill in the rule table's empty entries.",
        instruction=("Fill in the empty entries of the rule table so that one step "
                     "of the rule turns the start grid into the grid shown after it."),
        answer_hint="the rule table with its empty entries filled in",
        difficulty_stat="unknown_entries",
    )
)
