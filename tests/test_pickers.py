"""The shortcut gate's pickers and learned probe (vrforge/pickers.py)."""

from __future__ import annotations

import numpy as np
import pytest

from vrforge.pickers import (
    FEATURES,
    PICKERS,
    PROBE,
    colour_count,
    credit,
    gate_figures,
    option_features,
    pick_all,
    picker_accuracy,
    probe_accuracy,
)


def canvas(fill=(255, 255, 255), size=(64, 96)) -> np.ndarray:
    image = np.empty((*size, 3), dtype=np.uint8)
    image[:] = fill
    return image


def with_bar(width: int, colour=(0, 0, 0)) -> np.ndarray:
    image = canvas()
    image[10:20, 5 : 5 + width] = colour
    return image


def test_ink_pickers_take_the_darkest_and_lightest_option():
    options = [with_bar(w) for w in (30, 10, 50, 20, 40)]
    picks = pick_all(options, canvas())
    assert picks["most_ink"] == (2,) and picks["least_ink"] == (1,)
    assert picks["farthest_puzzle"] == (2,) and picks["nearest_puzzle"] == (1,)


def test_without_a_puzzle_the_puzzle_pickers_are_left_out():
    picks = pick_all([with_bar(w) for w in (30, 10, 50, 20, 40)])
    assert "nearest_puzzle" not in picks and "most_ink" in picks


def test_a_tie_is_credited_as_a_fair_random_pick():
    options = [with_bar(20), with_bar(20), with_bar(20), with_bar(10), with_bar(5)]
    picks = pick_all(options, canvas())
    assert picks["most_ink"] == (0, 1, 2)
    assert credit(picks["most_ink"], 1) == pytest.approx(1 / 3)
    assert credit(picks["most_ink"], 3) == 0.0
    # Five equal options: every picker scores exactly chance, whatever the answer position.
    same = [with_bar(20)] * 5
    assert picker_accuracy([pick_all(same, canvas())] * 5, [0, 1, 2, 3, 4]) == {name: pytest.approx(0.2) for name in PICKERS}


def test_colour_count_ignores_antialiased_edges_but_sees_a_new_colour():
    image = canvas(size=(256, 256))
    image[10:40, 10:40] = (200, 30, 30)
    blurred = image.copy()
    blurred[9, 10:40] = (227, 142, 142)  # a one-pixel anti-aliased edge
    assert colour_count(image) == colour_count(blurred) == 2
    image[50:60, 50:90] = (30, 30, 200)
    assert colour_count(image) == 3


def test_the_medoid_and_the_odd_one_out():
    options = [with_bar(20), with_bar(22), with_bar(24), with_bar(26), with_bar(60)]
    picks = pick_all(options, canvas())
    assert picks["odd_one_out"] == (4,) and picks["medoid"] == (2,)


def test_option_features_have_one_column_per_feature():
    features = option_features([with_bar(w) for w in (30, 10, 50, 20, 40)], canvas())
    assert features.shape == (5, len(FEATURES))


def test_the_probe_learns_a_tell_no_single_picker_sees():
    rng = np.random.default_rng(1)
    features = rng.random((400, 5, len(FEATURES)))
    answers = rng.integers(5, size=400)
    assert probe_accuracy(features, answers) <= 0.27  # nothing to learn: about chance
    # The answer always has the second most ink: most/least ink never find it, the probe does.
    ink = np.sort(rng.random((400, 5)), axis=1)
    for row in range(400):
        slots = [k for k in range(5) if k != answers[row]]
        features[row, answers[row], 0] = ink[row, 3]
        features[row, slots, 0] = rng.permutation(np.delete(ink[row], 3))
    figures = gate_figures(features, answers)
    assert figures["most_ink"] == 0.0 and figures["least_ink"] == 0.0
    assert figures[PROBE] >= 0.9


def test_the_probe_is_scored_on_puzzles_it_was_not_fitted_on():
    rng = np.random.default_rng(2)
    features = rng.random((60, 5, len(FEATURES)))
    answers = rng.integers(5, size=60)  # noise: a probe scored on its own training sets would overfit
    assert probe_accuracy(features, answers) < 0.4
