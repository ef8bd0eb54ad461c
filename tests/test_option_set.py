"""The one distractor-set policy every generator uses (generators/tacit/_option_set.py)."""

from __future__ import annotations

import numpy as np
import pytest

from vrforge.generators.tacit import _option_set
from vrforge.seeding import item_rng


def pool(rng: np.random.Generator, lighter: int = 6, darker: int = 6, elements: int = 40):
    """A solution (grey 100 on ``elements`` cells) and candidates that each drop some of its
    cells (less ink) or add cells (more ink): like edits of a drawn answer."""
    solution = np.full(elements, 255.0)
    solution[: elements // 2] = 100.0
    rows, kinds = [solution], []
    for k in range(lighter + darker):
        row = solution.copy()
        cells = rng.choice(elements // 2, size=1 + k % 3, replace=False)
        if k < lighter:
            row[cells] = 255.0
        else:
            row[elements // 2 + cells] = 100.0
        rows.append(row)
        kinds.append(("drop", "add")[k >= lighter])
    return np.stack(rows), kinds


def test_choose_returns_four_different_candidates_in_a_seeded_order():
    vectors, kinds = pool(item_rng(1))
    first = _option_set.choose(vectors, kinds, item_rng(5))
    assert first == _option_set.choose(vectors, kinds, item_rng(5))
    assert len(set(first)) == 4 and all(0 <= i < len(kinds) for i in first)


@pytest.mark.parametrize("rule", ["distinct", "cover"])
def test_rules_on_violations(rule):
    vectors, _ = pool(item_rng(2), 6, 6)
    kinds = ["a", "b", "c", "d"] * 3
    for seed in range(20):
        chosen = [kinds[i] for i in _option_set.choose(vectors, kinds, item_rng(seed), rule=rule)]
        assert sorted(chosen) == ["a", "b", "c", "d"]


def test_the_tasks_own_sets_are_respected():
    vectors, kinds = pool(item_rng(3))
    sets = [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert sorted(_option_set.choose(vectors, kinds, item_rng(0), sets=sets)) in (sets[0], sets[1])


def test_a_solution_that_can_sit_anywhere_sits_at_every_ink_rank_about_equally():
    """The solution's rank by ink over many puzzles: about uniform, so that neither "most" nor
    "least" ink finds it, nor "never the extreme" rules it out."""
    ranks = []
    for seed in range(300):
        vectors, kinds = pool(item_rng(100 + seed))
        chosen = _option_set.choose(vectors, kinds, item_rng(seed))
        ink = (255.0 - vectors[[0, *(i + 1 for i in chosen)]]).sum(axis=1)
        ranks.append(int((ink[1:] < ink[0]).sum() + 0.5 * (ink[1:] == ink[0]).sum()))
    shares = np.bincount(ranks, minlength=5) / len(ranks)
    assert shares.min() >= 0.1 and shares.max() <= 0.35, shares


def test_identical_options_are_never_chosen():
    vectors, kinds = pool(item_rng(4))
    vectors[1] = vectors[0]  # a candidate that would draw exactly the solution
    vectors[3] = vectors[2]
    for seed in range(30):
        chosen = _option_set.choose(vectors, kinds, item_rng(seed))
        assert 0 not in chosen and not {1, 2} <= set(chosen)
    with pytest.raises(ValueError, match="distinct options"):
        _option_set.choose(np.stack([vectors[0]] * 5), ["a"] * 4, item_rng(0))
