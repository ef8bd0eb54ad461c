"""Cellular automaton, inverse (domain: causal).

The picture shows a start grid, the grid ``steps`` steps later (one pip on the arrow per
step), the neighbourhood and boundary (as in ca_forward), and a rule table with some entries
given and the rest empty. The answer is the table with every entry filled in.

Uniqueness: the rule space shown is every table that agrees with the given entries.

- One step. The start grid is drawn (best of a few random grids) to show as many (state,
  neighbour count) pairs as possible; exactly the pairs it shows are left empty, the others
  are given. One step of the automaton sets each cell from its own pair's entry alone, so the
  tables that produce the end grid are the per-entry products of consistent values, and each
  shown pair has exactly one (the state its cells take). ``verifiers.ca_inverse.consistent_values``
  counts them; the generator rejects an instance unless every count is 1 (the tests also
  enumerate the whole space on small instances).
- Several steps. The grids on the way are not shown, so an entry's cells are not seen. Up to
  as many entries as the search allows (``verifiers.ca_inverse.SEARCH_TABLES`` tables), drawn
  among the pairs the trajectory passes through, are left empty; every table of that space is
  simulated, the entries on which another table that also reaches the end grid differs are
  given back, and the instance is kept if at least ``min_unknown`` stay empty. Then the rule is
  the only table of the shown space that reaches the end grid; meta stores it as ``rule``.

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
from vrforge.params import ParamError, check_params, param
from vrforge.registry import TaskSpec, register_task
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import ca_inverse as verifier
from vrforge.verifiers._ca_common import (
    BLANK,
    BOUNDARIES,
    NEIGHBOURHOODS,
    decode,
    encode,
    max_count,
    neighbour_counts,
    step,
)

# 1.3.0: the corner glyph fills the counted positions with the states that count (not grey), a
# fixed boundary's start grid gets a ring of faded empty cells; several steps (``steps``).
# 1.5.0: a set that would fall back to a star (one aspect in play) is drawn again.
VERSION = "1.5.0"
TABLE_CELL = 34
TRIES = 30  # rule/grid draws per attempt before the attempt is rejected
GRID_DRAWS = 6  # random start grids tried per rule, the one showing most pairs kept
MAX_STEPS = 5


def searchable(states: int) -> int:
    """Most entries a several-step puzzle can leave empty: the search tries states ** entries tables."""
    return int(np.floor(np.log(verifier.SEARCH_TABLES) / np.log(states) + 1e-9))


@dataclass(frozen=True)
class CaInverseConfig:
    size: int = param(doc="cells per side of the grid", low=4, high=64)
    states: int = param(doc="cell states, the empty one included (each a colour)", low=2, high=len(common.STATE_COLOURS))
    neighbourhood: str = param(doc="the neighbours counted: the 4 edge neighbours or all 8 around", choices=tuple(NEIGHBOURHOODS))
    min_unknown: int = param(doc="fewest empty rule entries the solver must deduce", low=4, high=27)
    steps: int = param(1, doc="applications of the rule between the start and the end grid (pips on the arrow)",
                       low=1, high=MAX_STEPS)

    def validate(self) -> None:
        check_params(self)
        entries = self.states * (max_count(self.neighbourhood) + 1)
        if self.min_unknown > entries:
            raise ParamError(f"min_unknown must be at most the table's {entries} entries, got {self.min_unknown}")
        if self.steps > 1 and self.min_unknown > searchable(self.states):
            raise ParamError(f"min_unknown over several steps must be at most {searchable(self.states)} "
                             f"for {self.states} states (the uniqueness search), got {self.min_unknown}")


DIFFICULTIES = {
    "easy": CaInverseConfig(size=6, states=2, neighbourhood="von_neumann", min_unknown=7),
    "medium": CaInverseConfig(size=8, states=2, neighbourhood="moore", min_unknown=12),
    "hard": CaInverseConfig(size=10, states=3, neighbourhood="moore", min_unknown=17),
    # The reference's hard (grid 32, 3 steps); three states are the palette's most, and seven
    # empty entries the most whose uniqueness the search proves.
    "expert": CaInverseConfig(size=32, states=3, neighbourhood="moore", min_unknown=6, steps=3),
}


def _layout(config: CaInverseConfig) -> dict:
    return common.layout(config.size, config.states, config.neighbourhood, TABLE_CELL, config.steps)


def legibility(config: CaInverseConfig) -> dict[str, float]:
    return common.legibility(_layout(config), config.neighbourhood, config.steps)


def _shown_pairs(start: np.ndarray, neighbourhood: str, boundary: str) -> set[tuple[int, int]]:
    counts = neighbour_counts(start, neighbourhood, boundary)
    return set(zip(start.ravel().tolist(), counts.ravel().tolist()))


def _meta(config: CaInverseConfig, start: np.ndarray, end: np.ndarray, given: np.ndarray, boundary: str,
          rule: np.ndarray | None = None) -> dict:
    meta = {
        "task": "ca_inverse",
        "size": config.size,
        "states": config.states,
        "neighbourhood": config.neighbourhood,
        "boundary": boundary,
        "steps": config.steps,
        "given": ["".join(verifier.UNKNOWN if v == BLANK else str(int(v)) for v in row) for row in given],
        "start": encode(start),
        "end": encode(end),
        "layout": _layout(config),
        "palette": common.palette(config.states),
    }
    if rule is not None:
        meta["rule"] = encode(rule)
    return meta


def generate(config: CaInverseConfig, rng: np.random.Generator) -> Puzzle:
    if config.steps > 1:
        return _generate_steps(config, rng)
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
        "cell_updates": float(config.size**2),  # cells x steps: what checking one candidate table takes
        "aspects_in_play": entries_in_play(rule, chosen),
    }
    return common.assemble(meta, rule, chosen, stats, rng)


def _generate_steps(config: CaInverseConfig, rng: np.random.Generator) -> Puzzle:
    """A puzzle over several steps: empty entries drawn among the pairs passed through, kept where
    the exhaustive search shows them forced."""
    for _ in range(TRIES):
        rule = common.random_rule(rng, config.states, config.neighbourhood)
        boundary = BOUNDARIES[int(rng.integers(2))]
        start = common.random_grid(rng, config.size, config.states, float(rng.uniform(0.3, 0.6)))
        grids = [start]
        for _ in range(config.steps):
            grids.append(step(grids[-1], rule, config.neighbourhood, boundary))
        end = grids[-1]
        live = float((end > 0).mean())
        if not 0.15 <= live <= 0.85 or np.array_equal(start, end) or np.array_equal(grids[-2], end):
            continue
        passed = sorted(set().union(*(_shown_pairs(g, config.neighbourhood, boundary) for g in grids[:-1])))
        if len(passed) < config.min_unknown:
            continue
        picked = rng.choice(len(passed), size=min(len(passed), searchable(config.states)), replace=False)
        given = rule.copy()
        for i in sorted(picked.tolist()):
            given[passed[i]] = BLANK
        meta = _meta(config, start, end, given, boundary, rule)
        tables = verifier.consistent_tables(meta)
        loose = ~(tables == rule[None]).all(axis=0)  # entries another consistent table sets otherwise
        given[loose] = rule[loose]
        if int((given == BLANK).sum()) < config.min_unknown:
            continue
        meta = _meta(config, start, end, given, boundary, rule)
        chosen = _distractors(meta, rule, rng)
        if chosen is not None:
            break
    else:
        raise RejectedPuzzle(f"no rule and start grid with a unique answer and four distinct distractors in {TRIES} draws")
    unknown = int((given == BLANK).sum())
    stats = {
        "cells": float(config.size**2),
        "states": float(config.states),
        "rule_entries": float(rule.size),
        "unknown_entries": float(unknown),
        "steps": float(config.steps),
        "cell_updates": float(config.size**2 * config.steps),
        "aspects_in_play": entries_in_play(rule, chosen),
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


def entries_in_play(rule: np.ndarray, chosen: list[tuple[str, np.ndarray]]) -> float:
    """The rule entries a solver must check to rule out every distractor table."""
    return _option_set.set_aspects(rule, chosen, _option_set.aspects_of(lambda table: np.asarray(table).ravel()))


def _distractors(meta: dict, rule: np.ndarray, rng: np.random.Generator) -> list[tuple[str, np.ndarray]] | None:
    """Four (violation, table) distractors, a code over three one-entry edits; None where they do not compose."""
    grey = common.luminance(meta["palette"]["states"])
    try:
        return list(_option_set.choose_set(rule, partial(near_misses, meta, rule), lambda table: grey[table].ravel(), rng,
                                           fallback=False))
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
        description=("Cellular automaton: from a start grid and the grid the shown number of steps later, "
                     "fill in the rule table's empty entries."),
        instruction=("Fill in the empty entries of the rule table so that the number of steps shown "
                     "on the arrow turns the start grid into the grid shown after it."),
        answer_hint="the rule table with its empty entries filled in",
        # Not unknown_entries: multi-step levels leave fewer entries open (uniqueness) but each
        # candidate table takes steps x cells to check.
        difficulty_stat="cell_updates",
        legibility=legibility,
        legibility_floors=common.LEGIBILITY_FLOORS,
        conventions={**common.CONVENTIONS,
                     "the end grid is the start grid after exactly as many steps as the arrow has pips":
                         "the pips above the arrow from the start grid to the end grid",
                     "given entries stay; only the white (empty) entries are to be filled":
                         "empty entries are white, a colour no state has",
                     "the answer is the one table that reaches the end grid":
                         "the end grid itself, drawn like the start"},
    )
)
