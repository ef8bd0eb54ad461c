"""The stronger context-blind learners: they find a planted shortcut, stay at chance on fair sets,
and give the same figure on every run."""

from __future__ import annotations

import numpy as np
import pytest

from vrforge.pickers import option_features
from vrforge.set_probes import learner_figures, set_inputs


def option_sets(count: int, leak: str | None, seed: int = 0):
    """``count`` sets of five 64 px pictures (a few random blocks each); with ``leak``, the
    solution differs from the distractors in one way a learner can see without any rule."""
    rng = np.random.default_rng(seed)
    inputs, answers = [], []
    for _ in range(count):
        answer = int(rng.integers(5))
        options = []
        base = rng.integers(0, 4, size=(4, 2)) * 14 + 4
        for k in range(5):
            image = np.full((64, 64, 3), 255, dtype=np.uint8)
            for (y, x) in base:  # shared structure: every option of the set has these blocks
                image[y:y + 10, x:x + 10] = (40, 90, 200)
            y, x = rng.integers(0, 54, size=2)  # one block of its own
            image[y:y + 10, x:x + 10] = (200, 60, 40)
            if leak == "corner" and k == answer:
                image[:8, :8] = (20, 20, 20)
            options.append(image)
        basic = option_features(options)
        inputs.append(set_inputs(options, basic))
        answers.append(answer)
    return inputs, answers


def test_every_learner_finds_a_planted_shortcut():
    pytest.importorskip("torch")
    figures = learner_figures(*option_sets(100, "corner"), cnn_epochs=12)
    assert figures["rich_logit"] > 0.8 and figures["boosted_trees"] > 0.8, figures
    assert figures["set_cnn"] > 0.6, figures


def test_on_fair_sets_every_learner_stays_near_chance_and_repeats_itself():
    pytest.importorskip("torch")
    inputs, answers = option_sets(160, None, seed=3)
    figures = learner_figures(inputs, answers, cnn_epochs=4)
    assert all(value < 0.32 for value in figures.values()), figures
    assert learner_figures(inputs, answers, cnn_epochs=4) == figures


def test_the_set_cnn_cannot_learn_positions():
    """Every set's answer is option 0: a scorer that sees only the options (equivariant) cannot use that."""
    pytest.importorskip("torch")
    inputs, _ = option_sets(80, None, seed=5)
    figures = learner_figures(inputs, [0] * len(inputs), cnn_epochs=6)
    assert figures["set_cnn"] < 0.35, figures


def test_the_audit_runs_the_learners_on_request(built, tmp_path):
    import shutil

    from vrforge.builds.audit import AuditError, audit

    pytest.importorskip("torch")
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    report = audit(copy, progress=False, probes="budget", cnn_epochs=2)
    assert report["passed"], report["problems"]
    assert {"rich_logit", "boosted_trees", "set_cnn"} <= set(report["pickers"]["maze"])
    easy = report["pickers_by_level"]["maze"]["easy"]
    assert "rich_logit" in easy and "set_cnn" not in easy  # the budget trains the CNN per task only
    assert "boosted trees" in (copy / "README.md").read_text()
    with pytest.raises(AuditError, match="--probes must be one of basic, budget, full"):
        audit(copy, progress=False, probes="everything")
