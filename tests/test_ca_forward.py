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

from vrforge.generators.tacit import ca_forward
from vrforge.registry import get_task
from vrforge.seeding import item_rng
from vrforge.verifiers import ca_forward as verifier
from vrforge.verifiers._ca_common import BLANK, decode, simulate, step

DIFFICULTIES = ("easy", "medium", "hard")
LEVELS = (*DIFFICULTIES, "expert")

# sha256 of the 512 px solution PNG for seed 0 (update deliberately when the picture changes).
# 1.3.0: the corner glyph shows the counted states, a fixed boundary a ring of empty cells.
SNAPSHOTS = {
    "easy": "aa922fe00f078a961f30fbac71b3decf59b4d2b6000bcf2187af0529f2bcc95e",
    "medium": "2ebdefb6abd7d0dca66720e8ec88d30f936a22e3a65817bd1f288795b3124a5b",
    "hard": "c7ff2b95ba2b1e7edd2c3bffa208f3f9bee4bc303c0884dfea454419421b0dbe",
}


@pytest.mark.parametrize("difficulty", LEVELS)
def test_solution_passes_at_every_resolution_resize_and_jpeg(difficulty):
    check_solution_robust("ca_forward", difficulty)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_each_distractor_fails_exactly_its_check(difficulty):
    check_distractors("ca_forward", difficulty)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_blank_noise_and_broken_images_rejected(difficulty):
    check_bad_images("ca_forward", difficulty)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_same_seed_same_svg(difficulty):
    check_determinism("ca_forward", difficulty)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_snapshot(difficulty):
    assert solution_digest("ca_forward", difficulty) == SNAPSHOTS[difficulty]


def test_registered_with_its_checks():
    spec = get_task("ca_forward")
    assert spec.domain == "causal" and spec.checks == verifier.CHECKS


def test_game_of_life_blinker():
    # Conway's life as an outer-totalistic table: birth on 3, survival on 2 or 3.
    life = np.zeros((2, 9), dtype=np.int64)
    life[0, 3] = life[1, 2] = life[1, 3] = 1
    grid = np.zeros((5, 5), dtype=np.int64)
    grid[2, 1:4] = 1
    vertical = step(grid, life, "moore", "fixed")
    assert vertical[1:4, 2].tolist() == [1, 1, 1] and vertical.sum() == 3
    assert np.array_equal(simulate(grid, life, "moore", "toroidal", 2), grid)
    # At the edge the boundary matters: a blinker across the wrap survives only on a torus.
    edge = np.zeros((5, 5), dtype=np.int64)
    edge[0, 1:4] = 1
    assert step(edge, life, "moore", "toroidal").sum() == 3
    assert step(edge, life, "moore", "fixed").sum() == 2


def _wrong_answers(meta):
    start, rule = decode(meta["start"]), decode(meta["rule"])
    nb, boundary, steps = meta["neighbourhood"], meta["boundary"], meta["steps"]
    other = "fixed" if boundary == "toroidal" else "toroidal"
    variant = rule.copy()
    variant[0, 0] = 1 - variant[0, 0] if variant[0, 0] < 2 else 0
    return {
        "wrong_steps": simulate(start, rule, nb, boundary, steps + 1),
        "wrong_boundary": simulate(start, rule, nb, other, steps),
        "wrong_rule": simulate(start, variant, nb, boundary, steps),
    }


@pytest.mark.parametrize("index", range(6))
def test_each_violation_rejected(index):
    puzzle = first_puzzle("ca_forward", DIFFICULTIES[index % 3], index)
    meta = puzzle.meta
    truth = verifier.truth(meta)
    assert np.array_equal(truth, decode(puzzle.solution))
    assert all(verifier.judge(meta, truth).values())
    for name, grid in _wrong_answers(meta).items():
        if not np.array_equal(grid, truth):
            assert name in [k for k, ok in verifier.judge(meta, grid).items() if not ok]
    blank = np.full_like(truth, BLANK)
    assert [k for k, ok in verifier.judge(meta, blank).items() if not ok] == ["wrong_cells"]


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_only_the_simulated_grid_passes(difficulty):
    """Uniqueness: the simulation is deterministic, and any single-cell change is caught."""
    puzzle = first_puzzle("ca_forward", difficulty, 3)
    truth = verifier.truth(puzzle.meta)
    index = verifier.explanation_index(puzzle.meta)
    states = puzzle.meta["states"]
    for r in range(truth.shape[0]):
        for c in range(truth.shape[1]):
            for value in range(states):
                if value != truth[r, c]:
                    changed = truth.copy()
                    changed[r, c] = value
                    checks = verifier.judge(puzzle.meta, changed, index=index, expected=truth)
                    assert sum(not ok for ok in checks.values()) >= 1


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_near_misses_fail_exactly_their_check_and_undo_like_they_edit(difficulty):
    """Every near miss of any answer fails exactly the check it names; a distractor's near misses
    hold edits of the kind that made it (one step further), so the solution, one edit back,
    looks like any of them; two misreadings together are wrong_cells."""
    meta = first_puzzle("ca_forward", difficulty, 2).meta
    answers = ca_forward.Answers(meta, item_rng(3))
    truth = verifier.truth(meta)
    assert np.array_equal(answers.grid(answers.solution), truth)
    first = answers.variants(answers.solution)
    assert {"wrong_steps", "wrong_boundary", "wrong_rule"} <= {name for name, _ in first}
    assert len(first) >= 6
    for name, state in first:
        assert [k for k, ok in verifier.judge(meta, answers.grid(state)).items() if not ok] == [name]
        grid = simulate(decode(meta["start"]), np.asarray(state.rule), meta["neighbourhood"], state.boundary, state.steps)
        assert np.array_equal(answers.grid(state), grid)
    later = next(state for name, state in first if state.steps == meta["steps"] + 1)
    second = answers.variants(later)
    assert any(state.steps == meta["steps"] + 2 and name == "wrong_steps" for name, state in second)
    assert any(state.boundary != meta["boundary"] and name == "wrong_cells" for name, state in second)
    for name, state in second:
        assert [k for k, ok in verifier.judge(meta, answers.grid(state)).items() if not ok] == [name]


@pytest.mark.parametrize("field,value,words", [
    ("size", 3, "size must be in 4..64"), ("size", 65, "size must be in 4..64"), ("size", 8.0, "size must be an integer"),
    ("states", 1, "states must be in 2..3"), ("states", 4, "states must be in 2..3"),
    ("neighbourhood", "hex", "neighbourhood must be one of von_neumann, moore"),
    ("min_steps", 0, "min_steps must be in 1..8"), ("max_steps", 9, "max_steps must be in 1..8"),
    ("min_steps", 4, "min_steps (4) must not exceed max_steps (3)"),
])
def test_config_validation(field, value, words):
    check_bad_params(ca_forward.CaForwardConfig, ca_forward.DIFFICULTIES["hard"], field, value, words)


def test_expert_at_or_beyond_the_reference_hard():
    expert = ca_forward.DIFFICULTIES["expert"]
    assert expert.size >= 32 and expert.min_steps >= 5 and expert.states == 3 and expert.neighbourhood == "moore"
    assert list(ca_forward.DIFFICULTIES) == list(LEVELS)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_legibility_is_what_is_drawn(difficulty):
    check_legibility_drawn("ca_forward", difficulty)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_every_level_legible_at_512(difficulty):
    spec = get_task("ca_forward")
    assert spec.illegible(spec.difficulties[difficulty], 512) == []
    assert set(spec.legibility(spec.difficulties[difficulty])) <= set(spec.legibility_floors)


def test_a_64_grid_is_legible_only_from_1024():
    spec = get_task("ca_forward")
    config = ca_forward.CaForwardConfig(size=64, states=3, neighbourhood="moore", min_steps=5, max_steps=8)
    assert any(p.startswith("cell is") for p in spec.illegible(config, 512)) and spec.illegible(config, 1024) == []


@pytest.mark.parametrize("difficulty", ["easy", "hard", "expert"])
def test_corner_glyph_shows_the_counted_states(difficulty):
    check_counted_states_glyph("ca_forward", difficulty)


@pytest.mark.parametrize("difficulty", ["easy", "expert"])
def test_boundary_ring_shows_what_lies_beyond_the_edge(difficulty):
    check_boundary_ring("ca_forward", difficulty)


def test_conventions_listed():
    conventions = get_task("ca_forward").conventions
    text = " ".join(conventions)
    for words in ("non-empty", "toroidal", "fixed", "von Neumann", "pips", "row of its current state"):
        assert words in text, words


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", LEVELS)
def test_context_blind_pickers_near_chance(difficulty):
    rates = picker_rates("ca_forward", difficulty, 200)
    assert all(rate <= 0.30 for rate in rates.values()), rates


@pytest.mark.slow
def test_shortcut_gate_on_expert():
    from _gate import gate

    figures = gate("ca_forward", 200, difficulties=("expert",))
    assert max(figures.values()) <= 0.30, figures
