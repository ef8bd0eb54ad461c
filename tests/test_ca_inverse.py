from __future__ import annotations

import numpy as np
import pytest
from _ca_testing import (
    check_bad_images,
    check_determinism,
    check_distractors,
    check_solution_robust,
    first_puzzle,
    picker_rates,
    solution_digest,
)

from vrforge.generators.tacit import ca_inverse
from vrforge.registry import get_task
from vrforge.verifiers import ca_inverse as verifier
from vrforge.verifiers._ca_common import BLANK, decode, neighbour_counts

DIFFICULTIES = ("easy", "medium", "hard")

# sha256 of the 512 px solution PNG for seed 0 (update deliberately when the picture changes).
SNAPSHOTS = {
    "easy": "053745b06719c6476419691f6a08888fbf9cefac8b9a4426dbe0bd3e90ae8b5d",
    "medium": "116307e1af23c81aee12342f2072786f6d4fb31cf62512043e3dacf2983102d9",
    "hard": "6b36d01309b1ececc47b48f4defc33176437b38f74221a15fbd61ff00de77256",
}


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_solution_passes_at_every_resolution_resize_and_jpeg(difficulty):
    check_solution_robust("ca_inverse", difficulty)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
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


def test_config_validation():
    with pytest.raises(ValueError):
        ca_inverse.CaInverseConfig(size=6, states=2, neighbourhood="von_neumann", min_unknown=11).validate()
    with pytest.raises(ValueError):
        ca_inverse.CaInverseConfig(size=3, states=2, neighbourhood="moore", min_unknown=8).validate()


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_context_blind_pickers_near_chance(difficulty):
    rates = picker_rates("ca_inverse", difficulty, 200)
    assert all(rate <= 0.30 for rate in rates.values()), rates
