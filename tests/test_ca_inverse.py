from __future__ import annotations

import numpy as np
import pytest
from _ca_testing import (
    check_bad_images,
    check_bad_params,
    check_boundary_ring,
    check_counted_states_glyph,
    check_determinism,
    check_distractors,
    check_legibility_drawn,
    check_solution_robust,
    first_puzzle,
    picker_rates,
    solution_digest,
)

from vrforge.generators.tacit import ca_inverse
from vrforge.registry import get_task
from vrforge.seeding import item_rng
from vrforge.svgdraw import fmt
from vrforge.verifiers import ca_inverse as verifier
from vrforge.verifiers._ca_common import BLANK, decode, neighbour_counts, simulate

DIFFICULTIES = ("easy", "medium", "hard")
LEVELS = (*DIFFICULTIES, "expert")

# sha256 of the 512 px solution PNG for seed 0 (update deliberately when the picture changes).
# 1.3.0: the corner glyph shows the counted states, a fixed boundary a ring of empty cells.
SNAPSHOTS = {
    "easy": "0f103f1461acb868a9edf05a5d19865763ed7453ab7fb72dd941879eea8e288e",
    "medium": "8a7439e46b29b75ec6a6cb57d65b724aab3638c58580931aeed77678747b3db9",
    "hard": "93724259e40abcbf888c661f7f503de2f23ab6c3d93156aee7b2c4719c524842",
}


@pytest.mark.parametrize("difficulty", LEVELS)
def test_solution_passes_at_every_resolution_resize_and_jpeg(difficulty):
    check_solution_robust("ca_inverse", difficulty)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_each_distractor_fails_exactly_its_check(difficulty):
    check_distractors("ca_inverse", difficulty)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_blank_noise_and_broken_images_rejected(difficulty):
    check_bad_images("ca_inverse", difficulty)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_same_seed_same_svg(difficulty):
    check_determinism("ca_inverse", difficulty)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_snapshot(difficulty):
    assert solution_digest("ca_inverse", difficulty) == SNAPSHOTS[difficulty]


def test_registered_with_its_checks():
    spec = get_task("ca_inverse")
    assert spec.domain == "causal" and spec.checks == verifier.CHECKS


def _all_consistent_tables(meta: dict) -> list[np.ndarray]:
    """Brute force: every table in the shown rule space (givens kept, empty entries free) that
    turns the start grid into the end grid."""
    given = verifier.given_table(meta)
    free = [tuple(e) for e in np.argwhere(given == BLANK).tolist()]
    states = meta["states"]
    start, end = decode(meta["start"]), decode(meta["end"])
    counts = neighbour_counts(start, meta["neighbourhood"], meta["boundary"])
    # Every completion at once: tables (N, states, counts) indexed by each cell's pair.
    digits = np.indices((states,) * len(free)).reshape(len(free), -1).T  # (N, free)
    tables = np.broadcast_to(given, (len(digits), *given.shape)).copy()
    for k, (s, c) in enumerate(free):
        tables[:, s, c] = digits[:, k]
    produced = tables[:, start, counts]  # (N, n, n)
    ok = (produced == end[None]).all(axis=(1, 2))
    return [tables[i] for i in np.flatnonzero(ok)]


@pytest.mark.parametrize("difficulty,index", [("easy", i) for i in range(5)] + [("medium", i) for i in range(2)])
def test_unique_rule_by_exhaustive_search(difficulty, index):
    puzzle = first_puzzle("ca_inverse", difficulty, index)
    free = int((verifier.given_table(puzzle.meta) == BLANK).sum())
    if puzzle.meta["states"] ** free > 2**17:
        pytest.skip("rule space too large to enumerate in a fast test")
    tables = _all_consistent_tables(puzzle.meta)
    assert len(tables) == 1
    assert np.array_equal(tables[0], decode(puzzle.solution))


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_unique_rule_by_per_entry_argument(difficulty):
    for index in range(5):
        puzzle = first_puzzle("ca_inverse", difficulty, index)
        assert (verifier.consistent_values(puzzle.meta) == 1).all()
        solution = decode(puzzle.solution)
        assert np.array_equal(verifier.deduce(puzzle.meta), solution)
        assert verifier.produces_end(puzzle.meta, solution)
        for table in puzzle.distractors:
            assert not verifier.produces_end(puzzle.meta, decode(table))


def _hidden_given(meta: dict) -> list[tuple[int, int]]:
    """Given entries whose (state, count) pair the start grid never shows."""
    start = decode(meta["start"])
    counts = neighbour_counts(start, meta["neighbourhood"], meta["boundary"])
    shown = set(zip(start.ravel().tolist(), counts.ravel().tolist()))
    given = verifier.given_table(meta)
    return [(s, c) for (s, c), v in np.ndenumerate(given) if v != BLANK and (s, c) not in shown]


def test_ambiguous_instance_detected():
    # Empty an entry that the start grid never shows: the space then holds several tables.
    puzzle = next(p for p in (first_puzzle("ca_inverse", "easy", i) for i in range(20)) if _hidden_given(p.meta))
    meta = dict(puzzle.meta)
    hidden = _hidden_given(meta)
    s, c = hidden[0]
    rows = [list(row) for row in meta["given"]]
    rows[s][c] = verifier.UNKNOWN
    meta["given"] = ["".join(row) for row in rows]
    assert verifier.consistent_values(meta)[s, c] == meta["states"]
    assert len(_all_consistent_tables(meta)) == meta["states"] * len(_all_consistent_tables(puzzle.meta))


def test_each_violation_rejected():
    puzzle = first_puzzle("ca_inverse", "hard", 1)
    meta, truth = puzzle.meta, decode(puzzle.solution)
    states = meta["states"]

    def wrong(entries):
        table = truth.copy()
        for s, c in entries:
            table[s, c] = (table[s, c] + 1) % states
        return [k for k, ok in verifier.judge(meta, table).items() if not ok]

    assert all(verifier.judge(meta, truth).values())
    assert wrong([(0, 3)]) == ["single_entry"]
    assert wrong([(1, 2), (1, 5), (1, 7)]) == ["within_row"]
    assert wrong([(0, 4), (2, 4)]) == ["within_column"]
    assert wrong([(0, 1), (2, 6)]) == ["scattered"]
    assert wrong([(0, 1), (0, 2), (2, 2)]) == ["scattered"]
    empty = np.full_like(truth, BLANK)
    assert [k for k, ok in verifier.judge(meta, empty).items() if not ok] == ["scattered"]
    one_empty = truth.copy()
    one_empty[2, 8] = BLANK
    assert [k for k, ok in verifier.judge(meta, one_empty).items() if not ok] == ["single_entry"]


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_near_misses_fail_exactly_their_check_and_undo_like_they_edit(difficulty):
    """Near misses of any table change one empty-in-the-puzzle entry and fail exactly the check
    they name; the solution is one such change away from each one-entry distractor."""
    meta = first_puzzle("ca_inverse", difficulty, 1).meta
    solution = verifier.deduce(meta)
    empty = verifier.given_table(meta) == BLANK
    first = ca_inverse.near_misses(meta, solution, solution)
    assert len(first) == empty.sum() * (meta["states"] - 1) >= 6
    assert {name for name, _ in first} == {"single_entry"}
    for name, table in first:
        assert [k for k, ok in verifier.judge(meta, table).items() if not ok] == [name]
    names = set()
    for _, centre in first:
        second = ca_inverse.near_misses(meta, solution, centre)
        names |= {name for name, _ in second}
        for name, table in second:
            assert [k for k, ok in verifier.judge(meta, table).items() if not ok] == [name]
        for table in [solution, *(t for _, t in second)]:
            changed = table != centre
            assert changed.sum() == 1 and empty[changed].all()
    assert names >= {"within_row", "within_column", "scattered"}  # and single_entry: the third state


@pytest.mark.parametrize("field,value,words", [
    ("size", 3, "size must be in 4..64"), ("size", 65, "size must be in 4..64"),
    ("states", 1, "states must be in 2..3"), ("states", 4, "states must be in 2..3"),
    ("neighbourhood", "hex", "neighbourhood must be one of von_neumann, moore"),
    ("min_unknown", 3, "min_unknown must be in 4..27"), ("steps", 0, "steps must be in 1..5"), ("steps", 6, "steps must be in 1..5"),
    ("steps", True, "steps must be an integer"),
])
def test_config_validation(field, value, words):
    check_bad_params(ca_inverse.CaInverseConfig, ca_inverse.DIFFICULTIES["hard"], field, value, words)


def test_config_validation_of_combinations():
    easy = ca_inverse.DIFFICULTIES["easy"]  # 2 states, von Neumann: 10 entries
    check_bad_params(ca_inverse.CaInverseConfig, easy, "min_unknown", 11, "at most the table's 10 entries")
    expert = ca_inverse.DIFFICULTIES["expert"]  # 3 states: the search proves at most 7 empty entries
    check_bad_params(ca_inverse.CaInverseConfig, expert, "min_unknown", 8, "must be at most 7 for 3 states")
    assert ca_inverse.searchable(2) == 11 and ca_inverse.searchable(3) == 7


def test_expert_at_or_beyond_the_reference_hard():
    expert = ca_inverse.DIFFICULTIES["expert"]
    assert expert.size >= 32 and expert.steps >= 3 and expert.states == 3 and expert.neighbourhood == "moore"
    assert list(ca_inverse.DIFFICULTIES) == list(LEVELS)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_legibility_is_what_is_drawn(difficulty):
    check_legibility_drawn("ca_inverse", difficulty)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_every_level_legible_at_512(difficulty):
    spec = get_task("ca_inverse")
    assert spec.illegible(spec.difficulties[difficulty], 512) == []
    assert set(spec.legibility(spec.difficulties[difficulty])) <= set(spec.legibility_floors)


@pytest.mark.parametrize("difficulty", ["medium", "expert"])
def test_corner_glyph_shows_the_counted_states(difficulty):
    check_counted_states_glyph("ca_inverse", difficulty)


@pytest.mark.parametrize("difficulty", ["hard", "expert"])
def test_boundary_ring_shows_what_lies_beyond_the_edge(difficulty):
    check_boundary_ring("ca_inverse", difficulty)


def test_step_pips_drawn():
    for difficulty, steps in (("hard", 1), ("expert", 3)):
        meta = first_puzzle("ca_inverse", difficulty).meta
        assert meta["steps"] == steps
        k = meta["layout"].get("scale", 1.0)
        svg = get_task("ca_inverse").draw(meta, None)
        radius = fmt(4 * k)
        assert svg.count(f"a{radius} {radius} 0 1 0") == 2 * steps  # two half-circle arcs per pip


def _brute_force_tables(meta: dict) -> list[np.ndarray]:
    """Every completion of the shown table, simulated one at a time for the shown steps: those that reach the end grid."""
    given = verifier.given_table(meta)
    free = [tuple(e) for e in np.argwhere(given == BLANK).tolist()]
    start, end = decode(meta["start"]), decode(meta["end"])
    out = []
    for digits in np.ndindex(*(meta["states"],) * len(free)):
        table = given.copy()
        for (s, c), v in zip(free, digits):
            table[s, c] = v
        if np.array_equal(simulate(start, table, meta["neighbourhood"], meta["boundary"], meta["steps"]), end):
            out.append(table)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_several_steps_unique_by_plain_simulation(seed):
    """A small several-step instance: the batched search finds exactly what one-by-one simulation finds, one table, the answer."""
    config = ca_inverse.CaInverseConfig(size=6, states=2, neighbourhood="moore", min_unknown=5, steps=2)
    puzzle = ca_inverse.generate(config, item_rng(seed))
    meta = puzzle.meta
    tables = _brute_force_tables(meta)
    assert len(tables) == 1 and np.array_equal(tables[0], decode(puzzle.solution))
    assert np.array_equal(verifier.consistent_tables(meta), np.asarray(tables))
    assert np.array_equal(verifier.deduce(meta), decode(meta["rule"]))
    assert (verifier.consistent_values(meta) == 1).all()


@pytest.mark.parametrize("index", range(3))
def test_expert_answer_unique_and_distractors_miss_the_end(index):
    puzzle = first_puzzle("ca_inverse", "expert", index)
    meta, solution = puzzle.meta, decode(puzzle.solution)
    given = verifier.given_table(meta)
    assert meta["steps"] == 3 and 6 <= int((given == BLANK).sum()) <= 7
    assert np.array_equal(verifier.consistent_tables(meta), solution[None])
    assert np.array_equal(decode(meta["rule"]), solution) and verifier.produces_end(meta, solution)
    assert ((given == BLANK) | (given == solution)).all()
    for table in puzzle.distractors:
        assert not verifier.produces_end(meta, decode(table))


def test_search_refuses_a_space_too_large():
    meta = dict(first_puzzle("ca_inverse", "expert").meta)
    meta["given"] = ["." * len(row) for row in meta["given"]]
    with pytest.raises(ValueError, match="more than 2187"):
        verifier.consistent_tables(meta)


def test_conventions_listed():
    conventions = get_task("ca_inverse").conventions
    text = " ".join(conventions)
    for words in ("non-empty", "toroidal", "fixed", "von Neumann", "pips", "white"):
        assert words in text, words


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", LEVELS)
def test_context_blind_pickers_near_chance(difficulty):
    rates = picker_rates("ca_inverse", difficulty, 200)
    assert all(rate <= 0.30 for rate in rates.values()), rates


@pytest.mark.slow
def test_shortcut_gate_on_expert():
    from _gate import gate

    figures = gate("ca_inverse", 200, difficulties=("expert",))
    assert max(figures.values()) <= 0.30, figures
