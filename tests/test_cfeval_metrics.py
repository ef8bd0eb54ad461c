"""CF-Eval metrics on small hand-made data with hand-computed expectations."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from vrforge.runners import cfeval_metrics as m

PAPER_TABLE = Path(__file__).parent / "data" / "cfworld_paper_table.csv"

VI, AP, LC = "visual_integrity", "assessment_point", "logic_consistency"


# --------------------------------------------------------------------------- one image


def test_clip_and_snap():
    assert m.clip_score(1.7) == 1.0
    assert m.clip_score(-0.2) == 0.0
    assert m.clip_score(0.3) == 0.3
    assert [m.snap_score(v) for v in (0.0, 0.2, 0.25, 0.3, 0.74, 0.75, 0.9, 1.4)] == [0.0, 0.0, 0.5, 0.5, 0.5, 1.0, 1.0, 1.0]


def test_image_score_uses_the_data_weights():
    questions = [m.ScoredQuestion(VI, 3, 1.0), m.ScoredQuestion(AP, 15, 0.5), m.ScoredQuestion(LC, 8, 0.0)]
    # (3*1 + 15*0.5 + 8*0) / 26
    assert m.image_score(questions) == pytest.approx(10.5 / 26)


def test_image_score_dimension_weight_override():
    questions = [m.ScoredQuestion(VI, 3, 1.0), m.ScoredQuestion(AP, 15, 0.5), m.ScoredQuestion(LC, 8, 0.0)]
    # the paper's lower ends: (1*1 + 12*0.5 + 7*0) / 20
    assert m.image_score(questions, {VI: 1, AP: 12, LC: 7}) == pytest.approx(7 / 20)
    # a partial override keeps the other dimensions' data weights: (3*1 + 16*0.5 + 8*0) / 27
    assert m.image_score(questions, {AP: 16}) == pytest.approx(11 / 27)


def test_dimension_score_is_the_mean_of_its_questions_and_weighs_their_total():
    questions = [m.ScoredQuestion(AP, 15, 1.0), m.ScoredQuestion(AP, 15, 0.0), m.ScoredQuestion(VI, 3, 1.0)]
    dims = m.dimension_scores(questions)
    assert dims[AP] == {"score": 0.5, "weight": 30.0}
    assert dims[VI] == {"score": 1.0, "weight": 3.0}
    # the official script's weighted mean over questions: (15 + 0 + 3) / 33
    assert m.image_score(questions) == pytest.approx(18 / 33)


def test_bad_weights_are_rejected():
    with pytest.raises(m.MetricsError):
        m.image_score([m.ScoredQuestion(VI, 0, 1.0)])
    with pytest.raises(m.MetricsError):
        m.image_score([m.ScoredQuestion(VI, 3, 1.0)], {VI: -1})
    with pytest.raises(m.MetricsError):
        m.image_score([])


# --------------------------------------------------------------------------- gating and per-model means


IMAGES = [
    # scenario A (physics) passes the gate
    {"scenario_id": "A", "domain": "physics", "level": "l1", "S": 0.8},
    {"scenario_id": "A", "domain": "physics", "level": "l2", "S": 0.6},
    {"scenario_id": "A", "domain": "physics", "level": "l3", "S": 0.3},
    # scenario B (biology) fails the gate: its 0.9 / 0.7 count as 0
    {"scenario_id": "B", "domain": "biology", "level": "l1", "S": 0.4},
    {"scenario_id": "B", "domain": "biology", "level": "l2", "S": 0.9},
    {"scenario_id": "B", "domain": "biology", "level": "l3", "S": 0.7},
    # scenario C (physics) sits exactly on the threshold: not gated
    {"scenario_id": "C", "domain": "physics", "level": "l1", "S": 0.5},
    {"scenario_id": "C", "domain": "physics", "level": "l2", "S": 0.2},
    {"scenario_id": "C", "domain": "physics", "level": "l3", "S": 0.1},
]


def test_gate():
    assert m.gate({"l1": 0.4, "l2": 0.9, "l3": 0.7}) == {"l1": 0.4, "l2": 0.0, "l3": 0.0}
    assert m.gate({"l1": 0.5, "l2": 0.9, "l3": 0.7}) == {"l1": 0.5, "l2": 0.9, "l3": 0.7}
    assert m.gate({"l1": 0.6, "l2": 0.9, "l3": 0.7}, threshold=0.7) == {"l1": 0.6, "l2": 0.0, "l3": 0.0}
    # an unjudged L1 leaves the gate undecided: L2/L3 drop out of the means
    assert m.gate({"l1": None, "l2": 0.9, "l3": 0.7}) == {"l1": None, "l2": None, "l3": None}
    assert m.gate({"l1": 0.9, "l2": None, "l3": 0.7}) == {"l1": 0.9, "l2": None, "l3": 0.7}
    # gated images need no judgement: they count as 0 either way
    assert m.gate({"l1": 0.2}) == {"l1": 0.2, "l2": 0.0, "l3": 0.0}


def test_model_summary_overall():
    summary = m.model_summary(IMAGES)
    overall = summary["overall"]
    e1, e2, e3 = 1.7 / 3, 0.8 / 3, 0.4 / 3
    assert overall["l1"] == pytest.approx(e1)
    assert overall["l2"] == pytest.approx(e2)
    assert overall["l3"] == pytest.approx(e3)
    assert overall["prr"] == pytest.approx(e2 / math.sqrt(e1))
    assert overall["rrr"] == pytest.approx(e3 / math.sqrt(e2))
    assert overall["readme_prr"] == pytest.approx(e2 / e1)
    assert overall["readme_rrr"] == pytest.approx(e3 / e2 * e3)
    assert overall["n"] == {"l1": 3, "l2": 3, "l3": 3}
    assert summary["gated_scenarios"] == 1


def test_model_summary_without_gating_effect_when_threshold_is_zero():
    overall = m.model_summary(IMAGES, threshold=0.0)["overall"]
    assert overall["l2"] == pytest.approx(1.7 / 3)  # 0.6 + 0.9 + 0.2
    assert overall["l3"] == pytest.approx(1.1 / 3)  # 0.3 + 0.7 + 0.1


def test_model_summary_per_domain():
    per_domain = m.model_summary(IMAGES)["per_domain"]
    assert sorted(per_domain) == ["biology", "physics"]
    physics = per_domain["physics"]
    assert (physics["l1"], physics["l2"], physics["l3"]) == pytest.approx((0.65, 0.4, 0.2))
    assert physics["prr"] == pytest.approx(0.4 / math.sqrt(0.65))
    assert physics["rrr"] == pytest.approx(0.2 / math.sqrt(0.4))
    biology = per_domain["biology"]
    assert (biology["l1"], biology["l2"], biology["l3"]) == (0.4, 0.0, 0.0)
    assert biology["prr"] == 0.0
    assert biology["rrr"] is None  # E[S_L2] = 0: undefined, not a division error


def test_unjudged_images_are_left_out_of_the_means():
    images = [dict(i) for i in IMAGES]
    images[0]["S"] = None  # A's L1 could not be judged: A's L2/L3 leave the means too
    overall = m.model_summary(images)["overall"]
    assert overall["n"] == {"l1": 2, "l2": 2, "l3": 2}
    assert overall["l1"] == pytest.approx(0.45)
    assert overall["l2"] == pytest.approx(0.1)
    assert overall["l3"] == pytest.approx(0.05)


def test_ratios_of_hand_computed_rows():
    # square means keep the arithmetic checkable by hand
    prr, rrr = m.table_ratios(0.64, 0.36, 0.18)
    assert (round(prr, 2), round(rrr, 2)) == (0.45, 0.30)  # 0.36 / 0.8, 0.18 / 0.6
    prr, rrr = m.table_ratios(0.81, 0.49, 0.21)
    assert (round(prr, 2), round(rrr, 2)) == (0.54, 0.30)  # 0.49 / 0.9 = 0.544, 0.21 / 0.7
    assert m.table_ratios(0.0, 0.0, 0.0) == (None, None)


def _published_rows() -> list[dict[str, str]]:
    lines = [line for line in PAPER_TABLE.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines))


def test_paper_main_table_ratios():
    """PRR and RRR of every published row, recomputed from its published two-decimal means,
    equal the published values to two decimals (tests/data/cfworld_paper_table.csv: ``#`` lines
    citing the source, then ``model,judge,l1,l2,l3,prr,rrr``)."""
    rows = _published_rows()
    assert rows
    for row in rows:
        prr, rrr = m.table_ratios(float(row["l1"]), float(row["l2"]), float(row["l3"]))
        label = f"{row['model']} ({row['judge']})"
        assert (f"{prr:.2f}", f"{rrr:.2f}") == (row["prr"], row["rrr"]), label


def test_paper_table_covers_both_judges_of_every_published_model():
    rows = _published_rows()
    assert len(rows) == 12
    judges = {}
    for row in rows:
        judges.setdefault(row["model"], set()).add(row["judge"])
    assert all(found == {"Qwen3-VL-235B", "Gemini-3-Pro"} for found in judges.values()) and len(judges) == 6


def test_official_readme_formulas_do_not_give_the_published_ratios():
    """The official README writes PRR = S_L2 / S_L1 and RRR = S_L3^2 / S_L2; the published table
    follows the paper's square-root definitions, which is why ``table_ratios`` uses them."""
    rows = _published_rows()
    misses = 0
    for row in rows:
        l1, l2, l3 = float(row["l1"]), float(row["l2"]), float(row["l3"])
        if abs(m.readme_prr(l1, l2) - float(row["prr"])) > 0.02 or abs(m.readme_rrr(l2, l3) - float(row["rrr"])) > 0.02:
            misses += 1
    assert misses == len(rows)


# --------------------------------------------------------------------------- agreement


def test_pearson_spearman_mad():
    x = [0.1, 0.4, 0.6, 0.9]
    y = [0.2, 0.3, 0.7, 0.6]
    # deviations (-.4,-.1,.1,.4) and (-.25,-.15,.25,.15): sxy .2, sxx .34, syy .17
    assert m.pearson(x, y) == pytest.approx(0.2 / math.sqrt(0.34 * 0.17))
    # ranks (1,2,3,4) vs (1,2,4,3): 1 - 6*2/(4*15)
    assert m.spearman(x, y) == pytest.approx(0.8)
    assert m.mean_abs_diff(x, y) == pytest.approx(0.15)  # (.1 + .1 + .1 + .3) / 4
    assert m.mean_abs_diff([0.1, 0.4, 0.6, 0.9], [0.2, 0.6, 0.7, 0.3]) == pytest.approx(0.25)


def test_spearman_ties_share_ranks():
    assert m.ranks([0.5, 0.1, 0.5, 1.0]) == [2.5, 1.0, 2.5, 4.0]
    assert m.spearman([0.5, 0.1, 0.5, 1.0], [0.5, 0.1, 0.5, 1.0]) == pytest.approx(1.0)


def test_degenerate_correlations_are_none():
    assert m.pearson([0.5], [0.5]) is None
    assert m.pearson([0.5, 0.5], [0.1, 0.9]) is None
    with pytest.raises(m.MetricsError):
        m.pearson([0.1, 0.2], [0.1])


def test_cohen_kappa():
    assert m.cohen_kappa([True, True, True, False, False, False], [True, True, False, False, False, True]) == pytest.approx(1 / 3)
    assert m.cohen_kappa([False, False, True, True], [False, True, True, False]) == pytest.approx(0.0)
    assert m.cohen_kappa([True, False], [True, False]) == pytest.approx(1.0)
    assert m.cohen_kappa([True, True], [True, True]) is None  # chance agreement is 1


def test_judge_agreement_uses_common_scored_images():
    a = {("A", "l1"): 0.1, ("A", "l2"): 0.4, ("B", "l1"): 0.6, ("B", "l2"): 0.9, ("C", "l1"): 0.3, ("D", "l1"): None}
    b = {("A", "l1"): 0.2, ("A", "l2"): 0.6, ("B", "l1"): 0.7, ("B", "l2"): 0.3, ("D", "l1"): 0.5}
    result = m.judge_agreement(a, b)
    assert result["n"] == 4
    assert result["mean_abs_diff"] == pytest.approx(0.25)
    assert result["kappa"] == pytest.approx(0.0)  # pass/fail (F,F,T,T) vs (F,T,T,F)
    assert result["spearman"] == pytest.approx(0.4)  # ranks (1,2,3,4) vs (1,3,4,2)
    assert result["pearson"] == pytest.approx(0.05 / math.sqrt(0.34 * 0.17))


# --------------------------------------------------------------------------- calibration


def test_threshold_grid_is_exact():
    assert m.threshold_grid(0.3, 0.7, 0.05) == (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)
    assert m.threshold_grid(0.3, 0.7, 0.05) == m.CALIBRATION_THRESHOLDS
    with pytest.raises(m.MetricsError):
        m.threshold_grid(0.3, 0.7, 0)
    with pytest.raises(m.MetricsError):
        m.threshold_grid(0.7, 0.3, 0.05)


def test_calibration_sweep():
    judge = {"k1": 0.35, "k2": 0.45, "k3": 0.55, "k4": 0.65, "k5": 0.8, "extra": 0.9}
    human = {"k1": False, "k2": True, "k3": True, "k4": False, "k5": True, "unjudged": True}
    rows = {r["threshold"]: r for r in m.calibration_sweep(judge, human)}
    assert sorted(rows) == list(m.CALIBRATION_THRESHOLDS)
    expected = {  # threshold: (accuracy, f1)
        0.3: (0.6, 0.75), 0.35: (0.6, 0.75),        # everything passes (0.35 >= 0.35)
        0.4: (0.8, 6 / 7), 0.45: (0.8, 6 / 7),      # k1 fails
        0.5: (0.6, 4 / 6), 0.55: (0.6, 4 / 6),      # k1, k2 fail
        0.6: (0.4, 2 / 5), 0.65: (0.4, 2 / 5),      # only k4, k5 pass
        0.7: (0.6, 0.5),                            # only k5 passes
    }
    for t, (accuracy, f1) in expected.items():
        assert rows[t]["n"] == 5
        assert rows[t]["accuracy"] == pytest.approx(accuracy), t
        assert rows[t]["f1"] == pytest.approx(f1), t
    assert (rows[0.5]["tp"], rows[0.5]["fp"], rows[0.5]["fn"], rows[0.5]["tn"]) == (2, 1, 1, 1)


def test_level_intervals_cover_the_estimates_and_are_seeded():
    scenarios = [m.gate({"l1": 0.3 + 0.05 * k, "l2": 0.1 * (k % 5), "l3": 0.05 * (k % 7)}) for k in range(14)]
    summary = m.model_summary([{"scenario_id": f"s{k}", "domain": "d", "level": lv, "S": v}
                               for k, levels in enumerate(scenarios) for lv, v in levels.items()])
    overall = summary["overall"]
    for key in ("l1", "l2", "l3", "prr", "rrr"):
        ci = overall["ci95"][key]
        assert ci["low"] <= overall[key] <= ci["high"] and ci["low"] < ci["high"], key
    assert m.level_intervals(scenarios) == m.level_intervals(scenarios)  # same seed, same interval
    assert m.level_intervals(scenarios, seed=1) != m.level_intervals(scenarios)
    # A bootstrap over a single scenario has no spread; no scenarios, no interval.
    one = m.level_intervals([{"l1": 0.8, "l2": 0.4, "l3": 0.2}])
    assert one["prr"]["low"] == one["prr"]["high"] == pytest.approx(0.4 / math.sqrt(0.8), abs=1e-6)
    assert m.level_intervals([])["prr"] is None
