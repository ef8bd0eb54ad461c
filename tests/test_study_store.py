"""The study file, its server's API (through Starlette's test client), reports, exports and imports."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("starlette")

import _study_browser as sb  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from vrforge.cli import main  # noqa: E402
from vrforge.runners.study.agreement import fleiss_kappa, krippendorff_alpha  # noqa: E402
from vrforge.runners.study.server import make_app  # noqa: E402
from vrforge.runners.study.store import Study, StudyError  # noqa: E402

TASKS = "graph_coloring,unknot"


def _create(kind: str, out: Path) -> Path:
    assert main(["study", "create", kind, "--tasks", TASKS, "--difficulties", "easy", "--items", "2", "--resolution", "512",
                 "--out", str(out), "--seed", "0"]) == 0
    return out


@pytest.fixture(scope="module")
def pilot(tmp_path_factory) -> dict[str, Path]:
    """A choice and a draw study on the same four puzzles, each answered by three scripted participants
    through the server's API: participant 1 always right, 2 right on graph_coloring only, 3 always wrong."""
    root = tmp_path_factory.mktemp("pilot")
    out = {"choice": _create("tacit-choice", root / "choice.sqlite"), "draw": _create("tacit-draw", root / "draw.sqlite")}
    for kind, path in out.items():
        with Study(path) as study:
            tokens = [token for _, token in study.invite(3)]
            client = TestClient(make_app(study))
            for number, token in enumerate(tokens, 1):
                state = client.post(f"/s/{token}/api/seen", json={"block": "__welcome__"}).json()
                while state["page"] != "done":
                    if state["page"] == "instructions":
                        state = client.post(f"/s/{token}/api/seen", json={"block": state["block"]["name"]}).json()
                        continue
                    item = study.items()[state["item"]["id"]]
                    right = number == 1 or (number == 2 and item.task == "graph_coloring")
                    answer = _answer(kind, study, token, item, right)
                    body = {"item": item.id, "answer": answer, "elapsed_ms": 1000 * number}
                    response = client.post(f"/s/{token}/api/answer", json=body)
                    assert response.status_code == 200, response.text
                    state = response.json()
    return out


def _answer(kind: str, study: Study, token: str, item, right: bool) -> dict:
    if kind == "choice":
        rotation = dict(study.assignment(study.participant(token)))[item.id]
        place = (item.private["answer_index"] - rotation) % 5
        return {"position": place if right else (place + 1) % 5}
    if right:
        return {"tool": sb.tool_answer(item, sb.puzzle_of(item).solution)}
    return {"tool": sb.wrong_answer(item)[0]}


def _model_run(folder: Path, track: str, correct: dict[str, bool]) -> Path:
    """A `vrforge score` results.json and samples.jsonl with the given outcomes."""
    folder.mkdir(parents=True)
    key = "correct" if track == "discriminative" else "passed"
    samples = [{"id": k, "task": k.rsplit("-", 2)[0], "difficulty": "easy", key: v, "status": "ok"}
               for k, v in sorted(correct.items())]
    (folder / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    (folder / "results.json").write_text(json.dumps({"format_version": 1, "kind": f"score-{track}", "summary": {"track": track}}))
    return folder / "results.json"


def test_pilot_report_tables_are_what_the_script_did(pilot, tmp_path, capsys):
    ids = ["graph_coloring-easy-0000", "graph_coloring-easy-0001", "unknot-easy-0000", "unknot-easy-0001"]
    disc = _model_run(tmp_path / "disc", "discriminative", dict(zip(ids, [True, True, True, False])))
    gen = _model_run(tmp_path / "gen", "generative", dict(zip(ids, [True, False, False, False])))
    out = tmp_path / "report"
    assert main(["study", "report", str(pilot["choice"]), str(pilot["draw"]), "--against", str(disc), "--against", str(gen),
                 "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    choice, draw = report["studies"]
    for study in (choice, draw):
        cells = {r["task"]: r for r in study["accuracy"]["per_task_difficulty"]}
        assert cells["graph_coloring"]["accuracy"] == pytest.approx(2 / 3) and cells["unknot"]["accuracy"] == pytest.approx(1 / 3)
        assert cells["graph_coloring"]["answers"] == 6 and cells["graph_coloring"]["median_seconds"] == 2.0
        assert study["accuracy"]["overall"]["ci95"]["low"] <= 0.5 <= study["accuracy"]["overall"]["ci95"]["high"]
    # People majority: graph_coloring solved (2 of 3), unknot not (1 of 3).
    versus = {v["track"]: v for v in choice["versus"]}
    assert versus["discriminative"]["same_track"] and versus["discriminative"]["people"] == 0.5
    assert versus["discriminative"]["model"] == 0.75 and versus["discriminative"]["mcnemar"]["only_second"] == 1
    gap = {r["task"]: r for r in report["gap"]["rows"]}
    assert gap["all"]["people_gap"] == 0.0 and gap["all"]["model_gap"] == 0.5
    assert choice["agreement"]["overall"]["kappa"] is not None
    md = (out / "report.md").read_text()
    assert "| graph_coloring | easy | 3 | 6 | 0.667 |" in md and "McNemar" in md and "Generative / discriminative gap" in md
    assert (out / "human_performance.md").read_text().startswith("## Human performance")
    assert {p.name for p in out.glob("*.png")} >= {"1-tacit-choice-accuracy.png", "1-tacit-choice-versus-1.png", "gap.png"}
    # The same inputs give the same report.
    assert main(["study", "report", str(pilot["choice"]), str(pilot["draw"]), "--against", str(disc), "--against", str(gen),
                 "--out", str(tmp_path / "again"), "--no-plot"]) == 0
    assert (tmp_path / "again" / "report.json").read_bytes() == (out / "report.json").read_bytes()


def test_export_csv_and_jsonl(pilot, tmp_path):
    assert main(["study", "export", str(pilot["draw"]), "--out", str(tmp_path / "a.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and {r["participant"] for r in rows} == {1, 2, 3}
    wrong = [r for r in rows if r["participant"] == 3]
    assert all(r["correct"] is False and len(r["failed"]) == 1 for r in wrong)
    assert main(["study", "export", str(pilot["choice"]), "--out", str(tmp_path / "a.csv")]) == 0
    header = (tmp_path / "a.csv").read_text().splitlines()[0]
    assert header.startswith("kind,participant,label,source,item,source_id,task")


def test_create_never_replaces_a_study_with_answers(pilot, tmp_path, capsys):
    before = pilot["choice"].read_bytes()
    assert main(["study", "create", "tacit-choice", "--tasks", "maze", "--difficulties", "easy", "--items", "1",
                 "--resolution", "512", "--out", str(pilot["choice"])]) == 2
    err = capsys.readouterr().err
    assert "already holds 12 answer(s)" in err and err.count("\n") == 1
    assert pilot["choice"].read_bytes() == before
    # Without answers, a study file is replaced (atomically, by rename).
    fresh = _create("tacit-choice", tmp_path / "fresh.sqlite")
    assert main(["study", "create", "tacit-choice", "--tasks", "maze", "--difficulties", "easy", "--items", "1",
                 "--resolution", "512", "--out", str(fresh)]) == 0
    with Study(fresh) as study:
        assert {i.task for i in study.items().values()} == {"maze"}
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_changed_item_is_found_and_the_study_is_not_served(pilot, tmp_path, capsys):
    path = sb.copy_study(pilot["choice"], tmp_path / "tampered.sqlite")
    with sqlite3.connect(path) as db:
        (content,) = db.execute("SELECT content FROM items WHERE position = 0").fetchone()
        db.execute("UPDATE items SET content = ? WHERE position = 0", (content.replace('"answer_index":', '"answer_index": '),))
    with Study(path) as study, pytest.raises(StudyError, match="changed after the study was created"):
        study.check_integrity()
    assert main(["study", "serve", str(path), "--port", "0"]) == 2
    assert "changed after the study was created" in capsys.readouterr().err
    assert main(["study", "report", str(path), "--out", str(tmp_path / "r")]) == 2


def test_public_addresses_need_public(pilot, capsys):
    assert main(["study", "serve", str(pilot["choice"]), "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "add --public" in capsys.readouterr().err


def test_invitations_seeded_blocks_and_even_spread(tmp_path, capsys):
    path = _create("tacit-choice", tmp_path / "s.sqlite")
    assert main(["study", "invite", str(path), "--participants", "4", "--items-each", "2", "--labels", "a,b,c,d",
                 "--links", str(tmp_path / "links.csv")]) == 0
    links = (tmp_path / "links.csv").read_text().splitlines()
    assert links[0] == "participant,label,link" and len(links) == 5 and len({line.split("/s/")[1] for line in links[1:]}) == 4
    with Study(path) as study:
        counts = {}
        for pid in range(1, 5):
            order = study.assignment(pid)
            blocks = [study.items()[i].block for i, _ in order]
            assert blocks == sorted(blocks, key=blocks.index)  # one block after the other
            for item_id, _ in order:
                counts[item_id] = counts.get(item_id, 0) + 1
        assert sorted(counts.values()) == [2, 2, 2, 2]
        with sqlite3.connect(path) as db:  # only hashes of the tokens are kept
            assert all(len(h) == 64 for (h,) in db.execute("SELECT token_sha256 FROM participants"))
    assert main(["study", "invite", str(path), "--participants", "2", "--labels", "x"]) == 2


def test_bad_create_inputs_are_one_line(tmp_path, capsys):
    for argv, needle in ((["tacit-choice", "--tasks", "nonesuch"], "unknown task"),
                         (["tacit-draw", "--tasks", "maze", "--difficulties", "impossible"], "no difficulty"),
                         (["tacit-choice", str(tmp_path / "missing")], "no such dataset folder"),
                         (["drift-rate", str(tmp_path)], "no ratings.csv"),
                         (["cfeval-rate", "--scenarios", str(tmp_path / "s.jsonl"), "--images", str(tmp_path)], "no such")):
        assert main(["study", "create", *argv, "--out", str(tmp_path / "x.sqlite")]) == 2, argv
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1, err
    assert not (tmp_path / "x.sqlite").exists()
    assert main(["study", "serve", str(tmp_path / "none.sqlite")]) == 2
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 100)
    assert main(["study", "serve", str(tmp_path / "junk.sqlite")]) == 2
    assert "not a study file" in capsys.readouterr().err


def test_a_study_from_a_built_dataset_uses_its_puzzles_and_a_spare_as_example(tmp_path):
    from vrforge.builds.build import build
    from vrforge.builds.recipe import parse_recipe

    recipe = {"name": "study-mini", "version": "0.0.1", "seed": 3, "resolutions": [512], "rows_per_shard": 4,
              "tasks": {"maze": {"count": 3, "difficulties": ["easy"]}}}
    dataset = tmp_path / "ds"
    build(parse_recipe(recipe), dataset, workers=1, progress=False)
    path = tmp_path / "from-dataset.sqlite"
    assert main(["study", "create", "tacit-choice", str(dataset), "--items", "2", "--out", str(path)]) == 0
    with Study(path) as study:
        assert study.info["resolution"] == 512
        ids = sorted(i.source_id for i in study.items().values())
        assert len(ids) == 2 and all(i.startswith("maze-easy-") for i in ids)
        block = study.blocks()["maze"]
        assert set(block["images"]) == {"example-puzzle", "example-solution"}
        spare = ({"maze-easy-0000", "maze-easy-0001", "maze-easy-0002"} - set(ids)).pop()
        import pyarrow.parquet as pq

        rows = [r for shard in sorted((dataset / "data").glob("maze-512/*.parquet"))
                for r in pq.read_table(shard, columns=["id", "puzzle"]).to_pylist()]
        example = study.blob(block["images"]["example-puzzle"])[0]
        assert example == next(r["puzzle"]["bytes"] for r in rows if r["id"] == spare)


def _rating_study(tmp_path: Path) -> Path:
    scenarios, images, _ = sb.cfeval_inputs(tmp_path)
    path = tmp_path / "cfeval.sqlite"
    assert main(["study", "create", "cfeval-rate", "--scenarios", str(scenarios), "--images", str(images), "--out", str(path)]) == 0
    return path


def test_cfeval_answers_collected_elsewhere_import_all_or_nothing(tmp_path, capsys):
    path = _rating_study(tmp_path)
    good = tmp_path / "human.csv"
    good.write_text("scenario_id,level,human_pass,human_score\noptics-mirror,l1,1,\noptics-mirror,l2,,0.25\n")
    assert main(["study", "import", str(path), str(good), "--rater", "expert-1"]) == 0
    bad = tmp_path / "bad.csv"
    bad.write_text("scenario_id,level,human_score\noptics-mirror,l1,0.5\nother,l1,0.5\n")
    assert main(["study", "import", str(path), str(bad), "--rater", "expert-2"]) == 2
    assert "other/l1 is not an image of this study" in capsys.readouterr().err
    with Study(path) as study:
        rows = study.answer_rows()
        assert [(r["label"], r["result"]["S"]) for r in rows] == [("expert-1", 1.0), ("expert-1", 0.25)]
        assert [p["source"] for p in study.participants()] == ["import:human.csv"]


def test_agreement_statistics_match_published_examples():
    # Fleiss (1971) as in Wikipedia's worked example: 10 subjects, 14 raters, 5 categories, kappa 0.210.
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1], [7, 7, 0, 0, 0],
             [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    units = {i: [c for c, k in enumerate(row) for _ in range(k)] for i, row in enumerate(table)}
    assert fleiss_kappa(units)["kappa"] == pytest.approx(0.210, abs=5e-4)
    # Krippendorff (2011), interval data of 4 coders and 12 units with gaps: alpha 0.849.
    n = None
    coders = [[1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n], [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3], [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
              [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n]]
    assert krippendorff_alpha({u: [c[u] for c in coders] for u in range(12)})["alpha"] == pytest.approx(0.849, abs=5e-4)
    assert fleiss_kappa({1: ["a"], 2: ["b"]})["kappa"] is None
    assert krippendorff_alpha({1: [1.0, 1.0], 2: [1.0, None]})["alpha"] is None


def test_drift_ratings_collected_elsewhere_import_and_report_alpha(tmp_path, capsys):
    path = tmp_path / "drift.sqlite"
    assert main(["study", "create", "drift-rate", str(sb.drift_export(tmp_path)), "--out", str(path)]) == 0
    header = "group,candidate,kind,source,output,rating,rank\n"
    for rater, rows in (("ann", "g1,c1,I2T,,,Good,1\ng1,c2,I2T,,,Poor,2\ng2,c3,T2I,,,Medium,1\ng2,c4,T2I,,,,\n"),
                        ("bo", "g1,c1,I2T,,,Good,1\ng1,c2,I2T,,,Medium,2\ng2,c3,T2I,,,Medium,2\ng2,c4,T2I,,,Good,1\n")):
        (tmp_path / f"{rater}.csv").write_text(header + rows)
        assert main(["study", "import", str(path), str(tmp_path / f"{rater}.csv"), "--rater", rater]) == 0
    (tmp_path / "bad.csv").write_text(header + "g1,c1,I2T,,,Excellent,1\n")
    assert main(["study", "import", str(path), str(tmp_path / "bad.csv"), "--rater", "cy"]) == 2
    assert "Good, Medium or Poor" in capsys.readouterr().err
    assert main(["study", "report", str(path), "--out", str(tmp_path / "r"), "--no-plot"]) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    alpha = report["studies"][0]["agreement"]["overall"]
    assert alpha["items"] == 3 and alpha["alpha"] is not None  # c4 has one rating: not pairable
    assert main(["study", "export", str(path), "--format", "drift-ratings", "--out", str(tmp_path / "out.csv")]) == 0
    assert len((tmp_path / "out.csv").read_text().splitlines()) == 1 + 7
