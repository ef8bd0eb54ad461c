"""``vrforge cfworld denominalize``: both modes end to end, through the CLI, on a small scenarios file."""

from __future__ import annotations

import json
from pathlib import Path

from fakeopenai import FakeOpenAI

from vrforge.cli import main
from vrforge.schemas.cfworld import Level, Provenance, Question, Scenario


def scenario(sid: str, l2: str, counterfactual: str, outcome: str) -> Scenario:
    levels = {"l1": Level("Draw a bear.", "A bear"), "l2": Level(l2, outcome), "l3": Level("Draw a bear in the sun.", outcome)}
    questions = tuple(Question(lvl, "assessment_point", "Is it right?", "", 1.0) for lvl in ("l1", "l2", "l3"))
    return Scenario(sid, "biology", "Metabolism", "Mammals eat food.", counterfactual, levels, questions, Provenance(kind="manual"))


SCENARIOS = [
    scenario("biology-0001", "If mammals performed photosynthesis, draw a polar bear. Its fur should be green.",
             "If mammals performed photosynthesis", "The polar bear's fur is green"),
    scenario("biology-0002", "If time ran backwards, draw an hourglass on a shelf.", "If time ran backwards", "The sand rises"),
]


def write_scenarios(path: Path) -> Path:
    path.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in SCENARIOS), encoding="utf-8")
    return path


def test_lexicon_mode_writes_probes_and_report_deterministically(tmp_path, capsys):
    source = write_scenarios(tmp_path / "scenarios.jsonl")
    assert main(["cfworld", "denominalize", str(source), "--out", str(tmp_path / "a")]) == 0
    assert "2 scenarios: 1 rewritten, 1 unchanged, 0 failed (lexicon)" in capsys.readouterr().out
    (probe,) = [json.loads(line) for line in (tmp_path / "a" / "denominalized.jsonl").read_text().splitlines()]
    assert probe["scenario_id"] == "biology-0001" and probe["mode"] == "lexicon" and "polar bear" not in probe["prompt"]
    report = json.loads((tmp_path / "a" / "denominalization_report.json").read_text())
    assert report["unchanged"] == ["biology-0002"] and report["mode"] == "lexicon" and report["scenarios"] == 2
    # A folder holding scenarios.jsonl works too, and the same input gives the same bytes.
    assert main(["cfworld", "denominalize", str(tmp_path), "--out", str(tmp_path / "b")]) == 0
    for name in ("denominalized.jsonl", "denominalization_report.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_llm_mode_through_the_fake_server_is_cached(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("VRFORGE_TEST_KEY", "fake-key-123")
    source = write_scenarios(tmp_path / "scenarios.jsonl")
    answers = {
        "biology-0001": {"prompt": "If mammals performed photosynthesis, draw a large heavy four-legged animal. Its coat should "
                                   "be leaf-coloured.",
                         "replacements": [{"term": "polar bear", "description": "large heavy four-legged animal", "kind": "noun"},
                                          {"term": "fur", "description": "coat", "kind": "noun"},
                                          {"term": "green", "description": "leaf-coloured", "kind": "attribute"}]},
        "biology-0002": {"prompt": "If time ran backwards, draw a glass timer of two bulbs joined by a neck on a shelf.",
                         "replacements": [{"term": "hourglass", "description": "glass timer of two bulbs joined by a neck",
                                           "kind": "noun"}]},
    }

    def respond(request: dict) -> dict:
        content = json.loads(request["messages"][-1]["content"])
        assert "green" in content["banned_words"] or "hourglass" in content["prompt"]  # the tested colour is banned
        return answers["biology-0001" if "polar bear" in content["prompt"] else "biology-0002"]

    argv = ["cfworld", "denominalize", str(source), "--mode", "llm", "--model", "fake-llm", "--api-key-env", "VRFORGE_TEST_KEY",
            "--out", str(tmp_path / "out"), "--max-retries", "0"]
    with FakeOpenAI(responder=respond) as fake:
        assert main([*argv, "--base-url", fake.base_url]) == 0
        first = len(fake.requests)
        assert main([*argv, "--base-url", fake.base_url]) == 0
        assert len(fake.requests) == first == 2  # the rerun is answered from OUT/cache
    out = capsys.readouterr().out
    assert "2 scenarios: 2 rewritten, 0 unchanged, 0 failed (llm)" in out and "2 cache hits" in out
    probes = [json.loads(line) for line in (tmp_path / "out" / "denominalized.jsonl").read_text().splitlines()]
    assert [p["model"] for p in probes] == ["fake-llm", "fake-llm"] and probes[0]["premise"] == "If mammals performed photosynthesis"


def test_llm_answer_carrying_the_tested_attribute_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("VRFORGE_TEST_KEY", "fake-key-123")
    source = tmp_path / "one.jsonl"
    source.write_text(json.dumps(SCENARIOS[0].to_dict()) + "\n", encoding="utf-8")
    white = {"prompt": "If mammals performed photosynthesis, draw a large white animal. Its coat should be leaf-coloured.",
             "replacements": [{"term": "polar bear", "description": "large white animal", "kind": "noun"}]}
    with FakeOpenAI(answers=[white]) as fake:
        assert main(["cfworld", "denominalize", str(source), "--mode", "llm", "--model", "m", "--base-url", fake.base_url,
                     "--api-key-env", "VRFORGE_TEST_KEY", "--out", str(tmp_path / "out"), "--max-retries", "0", "--no-cache"]) == 0
    report = json.loads((tmp_path / "out" / "denominalization_report.json").read_text())
    assert "tested attribute: white" in report["failed"]["biology-0001"]


def test_bad_input_is_one_line(tmp_path, capsys):
    assert main(["cfworld", "denominalize", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no scenarios file" in err
    source = write_scenarios(tmp_path / "s.jsonl")
    assert main(["cfworld", "denominalize", str(source), "--mode", "llm"]) == 2
    assert "--mode llm needs --model" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    assert main(["cfworld", "denominalize", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "malformed JSON" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # nothing half-written
