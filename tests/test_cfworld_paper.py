"""The CF-World paper's published tables (../shared/external/cf-world-paper): the main table's fourteen
models under both judges, and the gate-calibration table's shape against ``vrforge cfeval calibrate``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from shared_data import require_external

from vrforge.cli import main
from vrforge.runners import cfeval_metrics as m

JUDGES = ("qwen", "gemini")


def _rows(name: str) -> list[dict[str, str]]:
    path = require_external("cf-world-paper", name)
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_every_row_of_the_main_table_follows_the_paper_ratios():
    """PRR = E[S_L2]/sqrt(E[S_L1]) and RRR = E[S_L3]/sqrt(E[S_L2]) recomputed from each published row's
    two-decimal means give the published ratios, for all fourteen models and both judges."""
    rows = _rows("main_table.csv")
    assert len(rows) == 14 and len({r["model"] for r in rows}) == 14
    for row in rows:
        for judge in JUDGES:
            l1, l2, l3 = (float(row[f"{judge}_{k}"]) for k in ("l1", "l2", "l3"))
            prr, rrr = m.table_ratios(l1, l2, l3)
            label = f"{row['model']} ({judge})"
            assert (f"{prr:.2f}", f"{rrr:.2f}") == (row[f"{judge}_prr"], row[f"{judge}_rrr"]), label
            # The official README's formulas would not give the published figures.
            readme = (m.readme_prr(l1, l2), m.readme_rrr(l2, l3))
            assert abs(readme[0] - prr) > 0.005 or abs(readme[1] - rrr) > 0.005, label


def test_the_project_page_subset_agrees_with_the_full_table():
    full = {(r["model"], judge): r for r in _rows("main_table.csv") for judge in JUDGES}
    names = {"Qwen3-VL-235B": "qwen", "Gemini-3-Pro": "gemini"}
    subset = Path(__file__).parent / "data" / "cfworld_paper_table.csv"
    lines = [line for line in subset.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    for row in csv.DictReader(lines):
        published = full[(row["model"], names[row["judge"]])]
        judge = names[row["judge"]]
        columns = ("l1", "l2", "l3", "prr", "rrr")
        assert [row[k] for k in columns] == [published[f"{judge}_{k}"] for k in columns]


def test_calibration_report_has_the_published_table_shape(tmp_path):
    """On 150 borderline images whose human verdict follows S >= 0.5 up to a few disagreements, the
    calibration sweep over the published thresholds gives the published table's columns and shape:
    accuracy and F1 peak at 0.5 and fall off on both sides."""
    from test_cfeval_judge import calibrate_args, write_run


    published = _rows("gate_calibration_table.csv")
    thresholds = [float(r["threshold"]) for r in published]
    assert thresholds == [0.3, 0.4, 0.5, 0.6, 0.7] and set(published[0]) == {"threshold", "accuracy_percent", "f1"}

    scores, human = {}, []
    for i in range(150):  # S spread over [0.25, 0.75]; humans disagree on every 25th image
        s = round(0.25 + 0.5 * (i + 0.5) / 150, 4)
        scores[(f"s{i:03d}", "l1")] = s
        human.append(f"s{i:03d},l1,{int((s >= 0.5) != (i % 25 == 0))}")
    run = write_run(tmp_path / "run", "t2i", "judge", scores)
    (tmp_path / "human.csv").write_text("scenario_id,level,human_pass\n" + "\n".join(human) + "\n", encoding="utf-8")
    assert main(calibrate_args(run, human=tmp_path / "human.csv", out=tmp_path / "cal",
                                           start=0.3, stop=0.7, step=0.1)) == 0
    ours = json.loads((tmp_path / "cal" / "calibration.json").read_text())["rows"]
    assert [r["threshold"] for r in ours] == thresholds and all(r["n"] == 150 for r in ours)

    def shape(values: list[float]) -> list[int]:
        return [(b > a) - (b < a) for a, b in zip(values, values[1:])]

    for column, key, scale in (("accuracy_percent", "accuracy", 100), ("f1", "f1", 1)):
        paper = [float(r[column]) for r in published]
        mine = [scale * r[key] for r in ours]
        assert shape(mine) == shape(paper) == [1, 1, -1, -1], column
        assert max(range(5), key=mine.__getitem__) == max(range(5), key=paper.__getitem__) == 2
    assert json.loads((tmp_path / "cal" / "calibration.json").read_text())["best_f1_threshold"] == pytest.approx(0.5)
