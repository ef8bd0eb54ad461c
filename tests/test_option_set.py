"""The one distractor-set policy every generator uses (generators/tacit/_option_set.py)."""

from __future__ import annotations

import numpy as np
import pytest

from vrforge.generators.tacit import _option_set
from vrforge.pickers import gate_figures, option_features
from vrforge.seeding import item_rng

CELLS = 48



def _shuffled_pictures(solution: np.ndarray, others: list[np.ndarray], rng: np.random.Generator) -> tuple[int, list[np.ndarray]]:
    """The solution's place, drawn at random, and the five toy options as 48 x 64 RGB pictures."""
    options = [solution, *others]
    answer = int(rng.integers(5))
    options.insert(answer, options.pop(0))
    return answer, [np.repeat(np.repeat(o.reshape(6, 8), 8, 0), 8, 1).astype(np.uint8)[..., None].repeat(3, 2)
                    for o in options]

def flips(state: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
    """A symmetric toy task: 20 variants of any binary answer, each flipping 1-3 cells (the
    reverse of a flip is a flip), seeded by the state so a state's variants never change."""
    rng = np.random.default_rng(int.from_bytes(bytes(state), "little") % 2**63)
    out = []
    for k in range(20):
        cells = rng.choice(CELLS, 1 + k % 3, replace=False)
        out.append((("one", "two", "three")[k % 3], tuple(1 - v if i in cells else v for i, v in enumerate(state))))
    return out


def grey(state: tuple[int, ...]) -> np.ndarray:
    return 255.0 - 155.0 * np.asarray(state, dtype=np.float64)


def toy_solution(seed: int) -> tuple[int, ...]:
    return tuple(int(v) for v in item_rng(seed).integers(0, 2, CELLS))


def test_choose_star_is_seeded_and_returns_four_distinct_wrong_answers():
    solution = toy_solution(1)
    chosen = _option_set.choose_star(solution, flips, grey, item_rng(7))
    assert chosen == _option_set.choose_star(solution, flips, grey, item_rng(7))
    states = [state for _, state in chosen]
    assert len(set(states)) == 4 and solution not in states


def test_the_solution_is_the_centre_about_one_time_in_five():
    """The centre is the option every other one is a variant of: the solution when all four
    distractors are its own variants, otherwise the one distractor the other three come from."""
    centred = 0
    for seed in range(300):
        solution = toy_solution(seed)
        first = {state for _, state in flips(solution)}
        chosen = [state for _, state in _option_set.choose_star(solution, flips, grey, item_rng(seed))]
        centred += all(state in first for state in chosen)
    assert 0.12 <= centred / 300 <= 0.28


def test_on_a_symmetric_task_the_learned_probe_stays_near_chance():
    """Option sets of the toy task drawn as pictures: the probe of the audit finds the solution
    of a one-edit star almost always and of the star chooser's sets about by chance."""
    def figures(star: bool) -> dict[str, float]:
        features, answers = [], []
        for seed in range(400):
            rng = item_rng(seed)
            solution = toy_solution(1000 + seed)
            if star:
                chosen = _option_set.choose_star(solution, flips, grey, rng)
            else:  # the old way: four variants of the solution
                first = flips(solution)
                chosen = [first[i] for i in rng.choice(len(first), 4, replace=False)]
            answer, pictures = _shuffled_pictures(grey(solution), [grey(state) for _, state in chosen], rng)
            features.append(option_features(pictures))
            answers.append(answer)
        return gate_figures(np.stack(features), answers, with_puzzle=False)

    assert figures(star=False)["probe"] >= 0.6
    fair = figures(star=True)
    assert all(value <= 0.28 for value in fair.values()), fair


def test_the_solution_stays_the_centre_when_no_distractor_has_enough_variants():
    def few(state: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
        return flips(state)[:6] if state == solution else flips(state)[:2]

    solution = toy_solution(3)
    first = {state for _, state in flips(solution)[:6]}
    for seed in range(20):
        chosen = [state for _, state in _option_set.choose_star(solution, few, grey, item_rng(seed))]
        assert set(chosen) <= first
    with pytest.raises(ValueError, match="distinct variants"):
        _option_set.choose_star(solution, lambda state: flips(state)[:1], grey, item_rng(0))


def singles(state: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
    """A symmetric toy task whose edits compose: every single-cell flip of any answer."""
    return [(("odd", "even")[i % 2], tuple(1 - v if j == i else v for j, v in enumerate(state))) for i in range(CELLS)]


def test_aspects_in_play_is_the_fewest_checks_that_rule_out_every_distractor():
    solution = (b"a", b"b", b"c", b"d")

    def answers(*changed: set[int]) -> list[tuple[bytes, ...]]:
        return [tuple(b"x" if i in where else v for i, v in enumerate(solution)) for where in changed]

    assert _option_set.aspects_in_play(solution, answers({0}, {0, 1}, {0, 2}, {0, 3})) == 1  # all wrong in aspect 0
    assert _option_set.aspects_in_play(solution, answers({0}, {1}, {0, 2}, {1, 2})) == 2
    assert _option_set.aspects_in_play(solution, answers({0}, {1}, {2}, {0, 1, 2})) == 3
    assert _option_set.aspects_in_play(solution, answers({0}, {1}, {2}, {3})) == 4
    assert _option_set.aspects_in_play(solution, answers({0}, {0}, set(), {0})) == 2  # one unlike in no aspect: a check of its own
    grouped = _option_set.aspects_of(lambda state: np.asarray(state, dtype=np.float64), [0, 0, 1, 1])
    assert grouped((1, 2, 3, 4)) != grouped((1, 9, 3, 4)) and grouped((1, 2, 3, 4))[1] == grouped((7, 7, 3, 4))[1]
    assert len(grouped((1, 2, 3, 4))) == 2


def test_every_code_needs_two_checks_from_each_member_and_three_from_at_most_one():
    """Why the chooser cannot promise three checks: over binary aspects, at most one member of a
    set of five needs three (the one most like the others), so a set that needed three from the
    solution's side would mark it."""
    assert _option_set.CODES
    for code in _option_set.CODES:
        assert min(_option_set.hitting_numbers(code)) >= 2, code
    from itertools import combinations

    for others in combinations(range(1, 16), 4):
        assert sum(h >= 3 for h in _option_set.hitting_numbers((0, *others))) <= 1, others


def test_choose_set_needs_two_checks_on_every_set_and_the_probe_stays_near_chance():
    aspects = _option_set.aspects_of(grey)
    features, answers, counts = [], [], []
    for seed in range(200):
        rng = item_rng(seed)
        solution = toy_solution(2000 + seed)
        chosen = _option_set.choose_set(solution, singles, grey, rng)
        states = [state for _, state in chosen]
        assert len(set(states)) == 4 and solution not in states
        counts.append(_option_set.aspects_in_play(aspects(solution), [aspects(s) for s in states]))
        answer, pictures = _shuffled_pictures(grey(solution), [grey(s) for s in states], rng)
        features.append(option_features(pictures))
        answers.append(answer)
    assert min(counts) >= 2 and 3 in counts
    fair = gate_figures(np.stack(features), answers, with_puzzle=False)
    assert all(value <= 0.28 for value in fair.values()), fair
    assert _option_set.choose_set(toy_solution(5), singles, grey, item_rng(3)) == \
        _option_set.choose_set(toy_solution(5), singles, grey, item_rng(3))


def test_choose_set_falls_back_to_the_star_where_edits_do_not_compose():
    """Where the near misses of a wrong answer only move its wrong cell (each distractor keeps to
    its own check), no answer carries two edits of the solution: the set is then a star."""
    solution = toy_solution(9)

    def moves(state: tuple[int, ...]) -> list[tuple[str, tuple[int, ...]]]:
        if state == solution:
            return singles(state)
        out = []
        for w in (i for i, (a, b) in enumerate(zip(state, solution)) if a != b):
            for to in (w - 1, w + 1):
                if 0 <= to < CELLS and state[to] == solution[to]:
                    out.append(("odd", tuple(1 - v if i in (w, to) else v for i, v in enumerate(state))))
        return out

    first = {state for _, state in singles(solution)}
    for seed in range(10):
        chosen = [state for _, state in _option_set.choose_set(solution, moves, grey, item_rng(seed))]
        assert len(set(chosen)) == 4 and solution not in chosen
        assert all(state in first or any(state in {s for _, s in moves(d)} for d in first) for state in chosen)
    # A task that would rather turn the puzzle down than show a star says so.
    with pytest.raises(ValueError, match="compose"):
        _option_set.choose_set(solution, moves, grey, item_rng(0), star=False)
