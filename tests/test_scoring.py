"""Scoring of the TACIT generative and discriminative tracks and the constructive-selective gap."""

import json
import math
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from vrforge.cli import main
from vrforge.runners import scoring
from vrforge.runners.scoring import (
    ScoringError,
    constructive_selective_gap,
    load_report,
    output_name,
    read_reference_results,
    score_discriminative,
    score_generative,
    write_reference_results,
)

RECIPE = {"name": "score-mini", "version": "0.0.1", "seed": 11, "resolutions": [512, 1024], "rows_per_shard": 100,
          "tasks": {"maze": {"count": 2, "difficulties": ["easy", "hard"]},
                    "graph_coloring": {"count": 2, "difficulties": ["easy", "hard"]}}}



def cell(overall: dict) -> dict:
    """An accuracy cell without its bootstrap interval (checked on its own)."""
    assert overall["ci95"] is None or overall["ci95"]["low"] <= overall["accuracy"] <= overall["ci95"]["high"]
    return {k: v for k, v in overall.items() if k != "ci95"}


@pytest.fixture(scope="session")
def scoring_dataset(tmp_path_factory) -> Path:
    from vrforge.builds.build import build
    from vrforge.builds.recipe import parse_recipe

    out = tmp_path_factory.mktemp("scoring") / "ds"
    build(parse_recipe(RECIPE), out, workers=1, progress=False)
    return out


def _rows(dataset: Path, config: str) -> dict[str, dict]:
    rows = {}
    for shard in sorted((dataset / "data" / config).glob("*.parquet")):
        for row in pq.read_table(shard).to_pylist():
            rows[row["id"]] = row
    return rows


@pytest.fixture(scope="session")
def rows(scoring_dataset) -> dict[str, dict]:
    return {**_rows(scoring_dataset, "maze"), **_rows(scoring_dataset, "graph_coloring")}


# What the fake model answered, per puzzle: the solution, distractor k, nothing, or junk bytes.
PLAN = {
    "graph_coloring-easy-0000": "solution",
    "graph_coloring-easy-0001": 0,
    "graph_coloring-hard-0000": 1,
    "graph_coloring-hard-0001": "missing",
    "maze-easy-0000": "solution",
    "maze-easy-0001": "solution-512",  # another resolution still passes
    "maze-hard-0000": 2,
    "maze-hard-0001": "corrupt",
}


@pytest.fixture(scope="session")
def model_output(scoring_dataset, rows, tmp_path_factory) -> Path:
    small = {**_rows(scoring_dataset, "maze-512"), **_rows(scoring_dataset, "graph_coloring-512")}
    root = tmp_path_factory.mktemp("run") / "model_output"
    for pid, plan in PLAN.items():
        row = rows[pid]
        path = root / output_name(row["task"], row["difficulty"], row["index"])
        path.parent.mkdir(parents=True, exist_ok=True)
        if plan == "solution":
            path.write_bytes(row["solution"]["bytes"])
        elif plan == "solution-512":
            path.write_bytes(small[pid]["solution"]["bytes"])
        elif plan == "corrupt":
            path.write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
        elif isinstance(plan, int):
            path.write_bytes(row["distractors"][plan]["bytes"])
    return root


def test_output_naming_follows_the_reference():
    assert output_name("maze", "hard", 42) == "maze/hard/maze_hard_0042.png"


def test_generative_accuracies_and_why_answers_fail(scoring_dataset, rows, model_output):
    report = score_generative(scoring_dataset, model_output)
    s = report.summary
    assert s["track"] == "generative" and s["config_resolution"] == 1024
    assert cell(s["overall"]) == {"n": 8, "correct": 3, "accuracy": 0.375}
    assert s["per_task"] == {"graph_coloring": {"n": 4, "correct": 1, "accuracy": 0.25},
                             "maze": {"n": 4, "correct": 2, "accuracy": 0.5}}
    assert s["per_difficulty"] == {"easy": {"n": 4, "correct": 3, "accuracy": 0.75},
                                   "hard": {"n": 4, "correct": 0, "accuracy": 0.0}}
    assert s["per_task_difficulty"]["maze"]["easy"] == {"n": 2, "correct": 2, "accuracy": 1.0}
    assert s["per_task_difficulty"]["graph_coloring"]["hard"] == {"n": 2, "correct": 0, "accuracy": 0.0}

    # Each distractor fails exactly its named check, so the per-check counts are known.
    expected = {"graph_coloring": Counter(), "maze": Counter()}
    for pid, plan in PLAN.items():
        if isinstance(plan, int):
            expected[rows[pid]["task"]][rows[pid]["distractor_violations"][plan]] += 1
    assert s["failed_checks"] == {task: dict(c) for task, c in expected.items()}
    by_difficulty: dict = {"graph_coloring": {"easy": Counter(), "hard": Counter()}, "maze": {"easy": Counter(), "hard": Counter()}}
    for pid, plan in PLAN.items():
        if isinstance(plan, int):
            by_difficulty[rows[pid]["task"]][rows[pid]["difficulty"]][rows[pid]["distractor_violations"][plan]] += 1
    assert s["failed_checks_per_difficulty"] == {t: {d: dict(c) for d, c in per.items()} for t, per in by_difficulty.items()}
    assert s["missing"] == {"total": 1, "per_task": {"graph_coloring": 1}}
    assert s["unusable"]["total"] == 1 and s["unusable"]["per_task"] == {"maze": 1}
    assert s["dataset"]["name"] == "score-mini"

    samples = {x["id"]: x for x in report.samples}
    assert list(samples) == sorted(PLAN, key=lambda p: (rows[p]["task"], rows[p]["difficulty"] != "easy", rows[p]["index"]))
    missing = samples["graph_coloring-hard-0001"]
    assert missing["missing"] and not missing["passed"] and missing["reason"] == "missing output"
    assert missing["output"] == "graph_coloring/hard/graph_coloring_hard_0001.png"
    corrupt = samples["maze-hard-0001"]
    assert not corrupt["usable"] and not corrupt["missing"] and corrupt["reason"].startswith("unusable input")
    wrong = samples["graph_coloring-easy-0001"]
    assert wrong["usable"] and wrong["failed"] == [rows["graph_coloring-easy-0001"]["distractor_violations"][0]]
    assert samples["maze-easy-0001"]["passed"]


def test_generative_results_are_deterministic(scoring_dataset, model_output, tmp_path):
    first = score_generative(scoring_dataset, model_output).write(tmp_path / "a")
    # The folder above model_output is accepted too, and two workers give the same bytes.
    second = score_generative(scoring_dataset, model_output.parent, workers=2).write(tmp_path / "b")
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes()
    assert [p.name for p in first] == ["results.json", "samples.jsonl"]
    assert not list((tmp_path / "a").glob(".*"))  # no temporary file left behind
    lines = first[1].read_text().splitlines()
    assert len(lines) == 8 and all(json.loads(line)["id"] for line in lines)
    written = json.loads(first[0].read_text())
    assert written["kind"] == "score-generative" and written["format_version"] == 1
    assert written["counts"] == {"items": 8, "correct": written["summary"]["overall"]["correct"]}
    assert load_report(first[0]).summary == written["summary"]
    flat = tmp_path / "flat" / "results.json"  # the flat summary an older version wrote still loads
    flat.parent.mkdir()
    flat.write_text(json.dumps(written["summary"]))
    (flat.parent / "samples.jsonl").write_bytes(first[1].read_bytes())
    assert load_report(flat).summary == written["summary"]


def test_generative_task_filter_and_resolution(scoring_dataset, model_output):
    s = score_generative(scoring_dataset, model_output, tasks=["maze"], config_resolution=512).summary
    assert cell(s["overall"]) == {"n": 4, "correct": 2, "accuracy": 0.5} and list(s["per_task"]) == ["maze"]
    with pytest.raises(ScoringError, match="2048 px"):
        score_generative(scoring_dataset, model_output, config_resolution=2048)
    with pytest.raises(ScoringError, match="unknot"):
        score_generative(scoring_dataset, model_output, tasks=["unknot"])


def _disc_entries(rows):
    def entry(pid, selected, correct=None):
        row = rows[pid]
        return {"puzzle_id": pid, "task": row["task"], "difficulty": row["difficulty"],
                "correct_index": row["answer_index"] if correct is None else correct, "selected_index": selected}

    a = {pid: row["answer_index"] for pid, row in rows.items()}
    off = (a["maze-hard-0001"] + 1) % 5
    underscored = entry("maze-easy-0000", a["maze-easy-0000"])
    underscored["puzzle_id"] = "maze_easy_0000"  # the file-name form of the id
    return [
        entry("graph_coloring-easy-0000", a["graph_coloring-easy-0000"]),          # correct
        entry("graph_coloring-easy-0001", (a["graph_coloring-easy-0001"] + 1) % 5),  # wrong
        underscored,                                                                # correct
        entry("maze-hard-0000", None),                                              # no answer: wrong
        entry("maze-hard-0001", off, correct=off),       # correct by its correct_index, which disagrees with the dataset
        {**entry("maze-hard-0000", 0), "puzzle_id": "maze-hard-0099"},              # unknown id
        entry("graph_coloring-hard-0000", 7),                                       # out of range
        entry("graph_coloring-easy-0000", 0),                                       # duplicate
        "not an entry",
    ]


def test_discriminative_accuracies_and_rejections(scoring_dataset, rows, tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"results": _disc_entries(rows)}))
    report = score_discriminative(scoring_dataset, path)
    s = report.summary
    assert cell(s["overall"]) == {"n": 5, "correct": 3, "accuracy": 0.6}
    assert s["per_task"] == {"graph_coloring": {"n": 2, "correct": 1, "accuracy": 0.5},
                             "maze": {"n": 3, "correct": 2, "accuracy": 0.666667}}
    assert s["per_difficulty"] == {"easy": {"n": 3, "correct": 2, "accuracy": 0.666667},
                                   "hard": {"n": 2, "correct": 1, "accuracy": 0.5}}
    assert s["entries"] == 9 and s["no_selection"] == 1
    assert s["rejected"]["total"] == 4
    assert s["rejected"]["reasons"] == {"unknown puzzle_id": 1, "selected_index out of range": 1,
                                        "duplicate puzzle_id": 1, "entry is not an object": 1}
    assert [r["entry"] for r in s["rejected"]["entries"]] == [5, 6, 7, 8]
    assert s["answer_index_mismatches"]["total"] == 1
    assert s["answer_index_mismatches"]["entries"][0]["id"] == "maze-hard-0001"
    assert s["not_answered"] == {"total": 3, "per_task": {"graph_coloring": 2, "maze": 1}}
    assert [x["id"] for x in report.samples] == ["graph_coloring-easy-0000", "graph_coloring-easy-0001",
                                                 "maze-easy-0000", "maze-hard-0000", "maze-hard-0001"]
    a, b = report.write(tmp_path / "x"), score_discriminative(scoring_dataset, path).write(tmp_path / "y")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_reference_results_round_trip(rows, tmp_path):
    entries = [e for e in _disc_entries(rows) if isinstance(e, dict)]
    path = write_reference_results(tmp_path / "ref.json", entries)
    assert read_reference_results(path) == entries
    assert list(json.loads(path.read_text())) == ["results"]
    with pytest.raises(ValueError, match="selected_index"):
        write_reference_results(tmp_path / "bad.json", [{"puzzle_id": "x", "task": "maze", "difficulty": "easy",
                                                          "correct_index": 0}])


def test_constructive_selective_gap(scoring_dataset, rows, model_output, tmp_path):
    gen = score_generative(scoring_dataset, model_output)
    disc = score_discriminative(scoring_dataset, entries=_disc_entries(rows))
    gap = constructive_selective_gap(gen, disc)
    assert gap["puzzles"] == 5 and gap["only_generative"] == 3 and gap["only_discriminative"] == 0
    overall = dict(gap["overall"])
    mcnemar, ci = overall.pop("mcnemar"), overall.pop("gap_ci95")
    assert overall == {"n": 5, "generative_correct": 2, "discriminative_correct": 3,
                       "generative_accuracy": 0.4, "discriminative_accuracy": 0.6, "gap": 0.2}
    assert gap["circular"] is None  # reference-format results have no rotations
    # McNemar on the paired outcomes: the discordant pairs and the exact binomial p-value.
    assert mcnemar["discordant"] == mcnemar["only_first"] + mcnemar["only_second"] >= 1
    k, n = min(mcnemar["only_first"], mcnemar["only_second"]), mcnemar["discordant"]
    assert mcnemar["p_value"] == pytest.approx(min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n), abs=1e-6)
    assert ci["low"] <= 0.2 <= ci["high"]
    assert gap["per_task"]["graph_coloring"]["gap"] == 0.0
    assert gap["per_task"]["maze"] == {"n": 3, "generative_correct": 1, "discriminative_correct": 2,
                                       "generative_accuracy": 0.333333, "discriminative_accuracy": 0.666667,
                                       "gap": 0.333333}
    assert gap["per_difficulty"]["hard"]["n"] == 2
    # The same from the written files.
    g, _ = gen.write(tmp_path / "gen")
    d, _ = disc.write(tmp_path / "disc")
    assert constructive_selective_gap(g, d) == gap
    with pytest.raises(ScoringError, match="generative then a discriminative"):
        constructive_selective_gap(disc, gen)


def test_cli_functions(scoring_dataset, rows, model_output, tmp_path, capsys):
    assert main(["score", "generative", str(scoring_dataset), str(model_output), "--out", str(tmp_path / "g"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "overall: 3/8 = 37.5%" in out and "missing outputs: 1, unusable images: 1" in out
    ref = write_reference_results(tmp_path / "ref.json", [e for e in _disc_entries(rows) if isinstance(e, dict)])
    assert main(["score", "discriminative", str(scoring_dataset), str(ref), "--out", str(tmp_path / "d")]) == 0
    assert "3 rejected" in capsys.readouterr().out
    assert main(["score", "gap", str(tmp_path / "g" / "results.json"), str(tmp_path / "d" / "results.json"),
                 "--out", str(tmp_path / "gap.json")]) == 0
    out = capsys.readouterr().out
    assert "overall" in out and "+20.0pp" in out
    assert json.loads((tmp_path / "gap.json").read_text())["overall"]["gap"] == 0.2


@pytest.mark.parametrize("argv, message", [
    (lambda t, ds, mo: ["generative", t / "nope", mo, "--out", t / "o", "--quiet"], "no such dataset folder"),
    (lambda t, ds, mo: ["generative", ds, t / "nope", "--out", t / "o", "--quiet"], "no such outputs folder"),
    (lambda t, ds, mo: ["discriminative", ds, t / "bad.json", "--out", t / "o"], "not valid JSON"),
    (lambda t, ds, mo: ["discriminative", ds, t / "list.json", "--out", t / "o"], "reference format"),
    (lambda t, ds, mo: ["discriminative", ds, t / "absent.json", "--out", t / "o"], "no such file"),
    (lambda t, ds, mo: ["gap", t / "bad.json", t / "list.json"], "not valid JSON"),
    (lambda t, ds, mo: ["gap", t / "list.json", t / "list.json"], "not a vrforge score results.json"),
])
def test_cli_errors_are_one_line(argv, message, scoring_dataset, model_output, tmp_path, capsys):
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    assert main(["score", *map(str, argv(tmp_path, scoring_dataset, model_output))]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("vrforge score ") and ": error: " in err
    assert not (tmp_path / "o").exists()


def test_module_is_importable_by_its_documented_path():
    assert scoring.RESULTS_FILE == "results.json" and scoring.SAMPLES_FILE == "samples.jsonl"
