"""The CF-World importer on the real release files (../shared/external/cf-world) and on small broken copies."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from shared_data import external

from vrforge.cli import main
from vrforge.generators.cfworld.importer import ProbeRecord, ReleaseError, import_release
from vrforge.schemas.cfworld import DIMENSIONS, Scenario, cfworld_features, scenario_schema_errors

RELEASE = external("cf-world")
needs_release = pytest.mark.skipif(not (RELEASE / "prompt").is_dir(), reason=f"CF-World release files not found at {RELEASE}")

SCENARIOS_PER_FILE = {
    "prompt/Biology.json": 285,
    "prompt/Chemical.json": 173,
    "prompt/Geography.json": 26,
    "prompt/Sociology.json": 22,
    "prompt/physics/Astronomy.json": 75,
    "prompt/physics/Classical Mechanics.json": 259,
    "prompt/physics/Electromagnetism.json": 55,
    "prompt/physics/Optics.json": 102,
    "prompt/physics/Thermodynamics.json": 95,
}
QUESTIONS_PER_FILE = {  # (read, imported)
    "eval_questions/Biology_gemini.json": (3159, 3157),  # two "Prompt Adherence" questions rejected
    "eval_questions/Chemical_gemini.json": (1616, 1616),
    "eval_questions/Geography_gemini.json": (239, 239),
    "eval_questions/Sociology_gemini.json": (215, 215),
    "eval_questions/physics/Astronomy_gemini.json": (766, 766),
    "eval_questions/physics/Classical Mechanics_gemini.json": (2560, 2560),
    "eval_questions/physics/Electromagnetism_gemini.json": (535, 535),
    "eval_questions/physics/Optics_gemini.json": (918, 918),
    "eval_questions/physics/Thermodynamics_gemini.json": (880, 880),
}
PROBES_PER_KIND = {"rule_decouple": 198, "attribute_decouple": 226, "de_norm": 1092}


@pytest.fixture(scope="module")
def report():
    if not (RELEASE / "prompt").is_dir():
        pytest.skip(f"CF-World release files not found at {RELEASE}")
    return import_release(RELEASE)


@pytest.fixture(scope="module")
def by_id(report) -> dict[str, Scenario]:
    return {s.id: s for s in report.scenarios}


# ----------------------------------------------------------------------------- counts

@needs_release
def test_scenario_counts_per_file_and_total(report):
    scenario_files = {name: c.imported for name, c in report.files.items() if c.kind == "scenarios"}
    assert scenario_files == SCENARIOS_PER_FILE
    assert len(report.scenarios) == 1092
    assert report.per_domain == {"biology": 285, "chemistry": 173, "geography": 26, "physics": 586, "sociology": 22}


@needs_release
def test_question_counts_per_file_and_total(report):
    question_files = {name: (c.read, c.imported) for name, c in report.files.items() if c.kind == "questions"}
    assert question_files == QUESTIONS_PER_FILE
    assert sum(read for read, _ in question_files.values()) == 10888
    assert report.question_count == 10886
    assert report.rejection_reasons() == {"unknown question_type": 2}
    assert sorted((r.file, r.record) for r in report.rejected) == [
        ("eval_questions/Biology_gemini.json", "id=354"), ("eval_questions/Biology_gemini.json", "id=359")]
    assert all("Prompt Adherence" in r.reason for r in report.rejected)


@needs_release
def test_probe_counts(report):
    assert dict(Counter(p.kind for p in report.probes)) == PROBES_PER_KIND
    assert Counter(p.variant for p in report.probes if p.kind == "rule_decouple") == {"cf": 138, "original": 60}
    assert Counter(p.variant for p in report.probes if p.kind == "attribute_decouple") == {"unusual": 113, "factual": 113}


@needs_release
def test_nothing_lost_per_file(report):
    on_disk = sorted(p.relative_to(RELEASE).as_posix() for p in RELEASE.rglob("*.json"))
    assert sorted(report.files) == on_disk  # every JSON file was read, including names with spaces
    assert report.ignored_files == []
    rejected_per_file = Counter(r.file for r in report.rejected)
    for name, count in report.files.items():
        records = json.loads((RELEASE / name).read_text(encoding="utf-8"))
        assert count.read == len(records), name
        assert count.imported + count.rejected == count.read, name
        assert rejected_per_file[name] == count.rejected, name
    assert sum(c.imported for c in report.files.values() if c.kind == "probes") == len(report.probes)


@needs_release
def test_every_question_attached_to_exactly_one_scenario_or_reported(report):
    read = set()
    for name, count in report.files.items():
        if count.kind == "questions":
            read |= {(name, r["id"]) for r in json.loads((RELEASE / name).read_text(encoding="utf-8"))}
    attached = Counter()
    for s in report.scenarios:
        prompt_file = s.provenance.source.split(":", 1)[1].rsplit("#", 1)[0]
        eval_file = prompt_file.replace("prompt/", "eval_questions/", 1).replace(".json", "_gemini.json")
        attached.update((eval_file, q.source_id) for q in s.questions)
    rejected = Counter((r.file, r.record.removeprefix("id=")) for r in report.rejected if r.file.startswith("eval_questions/"))
    assert max(attached.values()) == 1 and max(rejected.values()) == 1
    assert set(attached).isdisjoint(rejected)
    assert set(attached) | set(rejected) == read
    assert len(attached) + len(rejected) == 10888


@needs_release
def test_ids_unique_stable_and_joined_by_file(report, by_id):
    assert len(by_id) == len(report.scenarios)
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*-\d{4}", s.id) for s in report.scenarios)
    assert len({p.id for p in report.probes}) == len(report.probes)
    # id "0" exists in all nine prompt files; each becomes its own scenario with its own questions
    zeros = [s for s in report.scenarios if s.id.endswith("-0000")]
    assert len(zeros) == 9
    assert by_id["physics-optics-0000"].provenance.source == "cf-world:prompt/physics/Optics.json#0"
    assert by_id["physics-classical-mechanics-0000"].provenance.source == "cf-world:prompt/physics/Classical Mechanics.json#0"
    assert by_id["biology-0000"].levels["l1"].prompt == "Draw a polar bear walking on snow."
    first_q = by_id["biology-0000"].questions[0]
    assert (first_q.source_id, first_q.level, first_q.dimension, first_q.weight) == ("1", "l1", "visual_integrity", 3.0)


# ----------------------------------------------------------------------------- messy fields

@needs_release
def test_ap_3_alias_maps_to_l3_and_l2(by_id):
    s = by_id["physics-classical-mechanics-0051"]  # {"ap_l1": "Bag flying high", "ap_3": "Bag on ground"}, no ap_l2
    assert s.levels["l1"].assessment_point == "Bag flying high"
    assert s.levels["l3"].assessment_point == "Bag on ground"
    assert s.levels["l2"].assessment_point == "Bag on ground"
    assert {"ap_3_alias", "ap_l2_from_l3"} <= set(s.provenance.flags)
    # the release generated no L2/L3 questions for it: kept, flagged, sent to review
    assert {"no_questions_l2", "no_questions_l3"} <= set(s.provenance.flags)
    assert s.provenance.review_status == "needs_review"


@needs_release
def test_ap_l3_only_and_both_points(by_id):
    geo = by_id["geography-0000"]  # ap_l3 only
    assert geo.levels["l2"].assessment_point == geo.levels["l3"].assessment_point == "Sun rises in the west."
    assert "ap_l2_from_l3" in geo.provenance.flags
    bat = by_id["biology-0082"]  # distinct ap_l2 and ap_l3
    assert bat.levels["l2"].assessment_point == "The bat has eagle eyes."
    assert bat.levels["l3"].assessment_point == "The bat has large eagle-like eyes and small ears."
    usual = by_id["physics-optics-0000"]  # ap_l2 only: the one counterfactual point serves L2 and L3
    assert usual.levels["l2"].assessment_point == usual.levels["l3"].assessment_point
    assert "ap_l3_from_l2" in usual.provenance.flags and usual.provenance.review_status == "imported"


@needs_release
def test_missing_category_takes_file_stem(report, by_id):
    assert by_id["biology-0218"].subdomain == "Biology"
    assert by_id["physics-astronomy-0000"].subdomain == "Astronomy"
    assert by_id["physics-thermodynamics-0082"].subdomain == "Thermodynamics"
    assert all("category_from_filename" in by_id[i].provenance.flags for i in ("biology-0218", "physics-astronomy-0000"))
    assert report.flags["category_from_filename"] == 41
    # stray spaces in categories (" Astronomy ", " Statics ") are collapsed
    assert not any(s.subdomain != s.subdomain.strip() for s in report.scenarios)


@needs_release
def test_missing_ap_l1_is_kept_flagged(report, by_id):
    s = by_id["chemistry-0047"]  # tarnished silver spoon, no ap_l1 and no L1 questions in the release
    assert s.levels["l1"].assessment_point == ""
    assert s.levels["l2"].assessment_point == "Gold spots on silver."
    assert {"missing_ap_l1", "no_questions_l1"} <= set(s.provenance.flags)
    assert s.provenance.review_status == "needs_review"
    assert "l1: assessment_point is empty" in s.validate()
    assert report.flags["missing_ap_l1"] == 1
    assert sorted(x.id for x in report.scenarios if x.provenance.review_status == "needs_review") == [
        "chemistry-0047", "geography-0000", "geography-0001", "geography-0002", "geography-0003",
        "physics-classical-mechanics-0051", "physics-classical-mechanics-0052"]


@needs_release
def test_flag_counts(report):
    assert dict(report.flags) == {
        "ap_3_alias": 2, "ap_l2_from_l3": 6, "ap_l3_from_l2": 945, "category_from_filename": 41,
        "missing_ap_l1": 1, "no_questions_l1": 1, "no_questions_l2": 6, "no_questions_l3": 6,
    }


@needs_release
def test_every_official_premise_is_extracted_verbatim(report, by_id):
    assert all(s.counterfactual for s in report.scenarios)
    assert dict(report.premise_patterns) == {"leading_clause": 1004, "if_clause": 53, "assume_clause": 25, "world_where": 8,
                                             "l2_statement": 2}
    for s in report.scenarios:
        prompts = [" ".join(s.levels[lv].prompt.split()) for lv in ("l3", "l2")]
        assert any(s.counterfactual in p for p in prompts), s.id
    expected = {
        "physics-classical-mechanics-0207": "if the gravitational acceleration is zero",
        "sociology-0015": "If the lawn becomes the private property of a rational person",  # not the factual "If overused"
        "physics-astronomy-0046": "assume hydrogen nuclear fusion inside it has ceased",
        "physics-astronomy-0003": "in a world where the speed of light is extremely slow (e.g., 100 km/h)",
        "physics-astronomy-0000": "Gravity is repulsive",
        "sociology-0011": "If an internalization strategy is used to make the decisions of two manufacturers dependent on "
                          "their overall interests",
    }
    assert {key: by_id[key].counterfactual for key in expected} == expected


@pytest.mark.parametrize(("l3", "l2", "premise", "pattern"), [
    ("If rivers ran uphill, draw a valley.", "", "If rivers ran uphill", "leading_clause"),
    ("A pond in winter. If ice sank, please draw the pond.", "", "If ice sank", "if_clause"),
    ("Draw a lake, but assume water is densest when frozen.", "", "assume water is densest when frozen", "assume_clause"),
    ("A forest in a world where trees grow downwards. Photo.", "", "in a world where trees grow downwards", "world_where"),
    ("A bridge.", "Steel is soft. A bridge sagging.", "Steel is soft", "l2_statement"),
    ("A map where rain never falls.", "A map where rain never falls.", "where rain never falls", "where_clause"),
    ("A photograph of a cat.", "A photograph of a cat. It is grey.", "", ""),
])
def test_premise_patterns(l3, l2, premise, pattern):
    from vrforge.generators.cfworld.importer import extract_premise

    assert extract_premise(l3, l2 or l3) == (premise, pattern)


@needs_release
def test_questions_and_weights(report, by_id):
    assert {q.dimension for s in report.scenarios for q in s.questions} == set(DIMENSIONS)
    assert Counter(q.weight for s in report.scenarios for q in s.questions) == {8.0: 4351, 3.0: 3272, 15.0: 3263}
    assert by_id["physics-optics-0000"].level_weights("l1") == {"visual_integrity": 3.0, "assessment_point": 15.0,
                                                                 "logic_consistency": 8.0}
    assert by_id["biology-0000"].counterfactual == "If mammals performed photosynthesis like plants"


@needs_release
def test_probes_link_to_scenarios(report, by_id):
    de_norm = [p for p in report.probes if p.kind == "de_norm"]
    assert sorted(p.source_scenario_id for p in de_norm) == sorted(by_id)
    p = next(p for p in de_norm if p.source_scenario_id == "biology-0000")
    assert p.id == "de-norm-biology-0000" and p.assessment_point == "The bear's fur is green."
    rule = next(p for p in report.probes if p.id == "rule-decouple-0000")
    assert (rule.variant, rule.group, rule.assessment_point) == ("original", "0", "Red arrow pointing bottom-right")
    pair = {p.id: p for p in report.probes if p.group == "93" and p.kind == "attribute_decouple"}
    assert sorted(pair) == ["attribute-decouple-0093", "attribute-decouple-0093-factual"]
    assert dict(pair["attribute-decouple-0093"].attributes) == {"A": "Giant Otter", "B": "St. Peter's Basilica"}
    assert ProbeRecord.from_dict(rule.to_dict()) == rule


# ----------------------------------------------------------------------------- schema

@needs_release
def test_every_scenario_validates_against_json_schema_and_round_trips(report):
    for s in report.scenarios:
        data = s.to_dict()
        assert scenario_schema_errors(data) == [], s.id
        assert Scenario.from_dict(data) == s
    bad = report.scenarios[0].to_dict() | {"domain": "alchemy"}
    assert scenario_schema_errors(bad)


@needs_release
def test_features_encode_scenarios(report):
    import datasets

    rows = [s.to_dict() for s in report.scenarios[:5]]
    ds = datasets.Dataset.from_list(rows, features=cfworld_features())
    assert ds[0]["id"] == rows[0]["id"] and len(ds[0]["questions"]) == len(rows[0]["questions"])


# ----------------------------------------------------------------------------- CLI and bad input

@needs_release
def test_cli_import_writes_deterministic_jsonl(tmp_path, capsys):
    assert main(["cfworld", "import", str(RELEASE), "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "prompt/physics/Classical Mechanics.json: 259 scenarios read, 259 imported, 0 rejected" in out
    assert "1092 scenarios, 10886 questions, 1516 probes; 2 rejected (unknown question_type 2)" in out
    assert main(["cfworld", "import", str(RELEASE), "--out", str(tmp_path / "b")]) == 0
    for name in ("scenarios.jsonl", "probes.jsonl", "import_report.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    lines = (tmp_path / "a" / "scenarios.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1092
    saved = json.loads((tmp_path / "a" / "import_report.json").read_text(encoding="utf-8"))
    assert saved["totals"] == {"scenarios": 1092, "questions": 10886, "probes": 1516, "rejected": 2}
    assert not list((tmp_path / "a").glob(".*.tmp"))


def _mini_release(root: Path, records: list, questions: list | None = None) -> Path:
    (root / "prompt").mkdir(parents=True)
    (root / "prompt" / "Biology.json").write_text(json.dumps(records), encoding="utf-8")
    if questions is not None:
        (root / "eval_questions").mkdir()
        (root / "eval_questions" / "Biology_gemini.json").write_text(json.dumps(questions), encoding="utf-8")
    return root


GOOD = {"id": "0", "category": "Metabolism", "prompt_l1": "a", "ap_l1": "b", "prompt_l2": "If x, draw c.", "ap_l2": "d",
        "prompt_l3": "If x, draw e."}


def test_missing_path_is_one_clear_line(tmp_path, capsys):
    assert main(["cfworld", "import", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vrforge cfworld import: error: ") and "no such file or directory" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()
    with pytest.raises(ReleaseError):
        import_release(tmp_path)  # a folder with no prompt/


def test_malformed_json_is_one_clear_line(tmp_path, capsys):
    root = _mini_release(tmp_path / "rel", [GOOD])
    (root / "prompt" / "Biology.json").write_text('[{"id": "0",', encoding="utf-8")
    assert main(["cfworld", "import", str(root), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vrforge cfworld import: error: prompt/Biology.json: malformed JSON (line 1")
    assert err.count("\n") == 1 and "Traceback" not in err
    (root / "prompt" / "Biology.json").write_text('{"id": "0"}', encoding="utf-8")
    with pytest.raises(ReleaseError, match="expected a JSON list"):
        import_release(root)


def test_bad_records_are_rejected_with_reasons(tmp_path):
    records = [GOOD, dict(GOOD), "text", {k: v for k, v in GOOD.items() if k != "prompt_l3"} | {"id": "2"},
               GOOD | {"id": "3", "colour": "red"}, {k: v for k, v in GOOD.items() if k != "id"}]
    question = {"id": "1", "source_id": "0", "prompt_level": "l1", "category": "Metabolism", "question_type": "Visual Integrity",
                "question": "q", "evaluation_criteria": "c", "weight": 3, "generator_model": "m"}
    questions = [question, question | {"id": "2", "source_id": "9"}, question | {"id": "3", "weight": 0},
                 question | {"id": "4", "prompt_level": "l4"}, question]
    root = _mini_release(tmp_path / "rel", records, questions)
    (root / "notes.json").write_text("{}", encoding="utf-8")
    report = import_release(root)
    assert report.ignored_files == ["notes.json"]
    reasons = [(r.record, r.reason.split(":")[0]) for r in report.rejected]
    assert reasons == [
        ("id=0", "duplicate id within file"), ("#2", "record is not an object"), ("id=2", "missing prompt"),
        ("id=3", "unknown fields"), ("#5", "missing id"),
        ("id=2", "unmatched source_id"), ("id=3", "bad weight"), ("id=4", "unknown prompt_level"),
        ("id=1", "duplicate id within file"),
    ]
    assert [s.id for s in report.scenarios] == ["biology-0000"]
    assert report.files["prompt/Biology.json"].to_dict() == {"kind": "scenarios", "read": 6, "imported": 1, "rejected": 5}
    assert report.files["eval_questions/Biology_gemini.json"].to_dict() == {"kind": "questions", "read": 5, "imported": 1,
                                                                            "rejected": 4}


# ----------------------------------------------------------------------------- optional LLM fill of `law`

PLANTS = GOOD | {"id": "1", "prompt_l1": "Draw a sunflower in a field.", "prompt_l2": "If plants ate insects, draw a sunflower.",
                 "prompt_l3": "If plants ate insects, draw a sunflower snapping at a fly."}


def test_law_fill_through_the_fake_server_is_checked_and_cached(tmp_path, capsys, monkeypatch):
    from fakeopenai import FakeOpenAI

    from vrforge.cli import main

    monkeypatch.setenv("VRFORGE_TEST_KEY", "fake-key-123")
    root = _mini_release(tmp_path / "rel", [GOOD, PLANTS])

    def respond(request: dict) -> dict:
        content = json.loads(request["messages"][-1]["content"])
        if content["counterfactual_premise"] == "If plants ate insects":
            return {"law": "Green plants make their food by photosynthesis."}
        return {"law": "If x, then y."}  # a condition, not a law: rejected every time

    argv = ["cfworld", "import", str(root), "--out", str(tmp_path / "out"), "--fill-law", "--model", "fake-llm",
            "--api-key-env", "VRFORGE_TEST_KEY", "--max-retries", "1"]
    with FakeOpenAI(responder=respond) as fake:
        assert main([*argv, "--base-url", fake.base_url]) == 0
        first = len(fake.requests)
        assert first == 3  # one answer accepted, one rejected twice (1 + 1 retry)
        assert main([*argv, "--base-url", fake.base_url]) == 0
        assert len(fake.requests) == first + 2  # the accepted answer comes from OUT/cache; the rejected one is asked again
    out = capsys.readouterr().out
    assert "laws: 1 filled by fake-llm, 1 failed" in out
    scenarios = {s["id"]: s for s in map(json.loads, (tmp_path / "out" / "scenarios.jsonl").read_text().splitlines())}
    plants, other = scenarios["biology-0001"], scenarios["biology-0000"]
    assert plants["law"] == "Green plants make their food by photosynthesis."
    assert plants["provenance"]["model"] == "fake-llm" and "law_from_llm" in plants["provenance"]["flags"]
    assert other["law"] == "" and "law_not_filled" in other["provenance"]["flags"]
    report = json.loads((tmp_path / "out" / "import_report.json").read_text())
    assert report["law_fill"]["filled"] == 1 and "states a condition" in report["law_fill"]["failed"]["biology-0000"]
    assert report["flags"]["law_from_llm"] == 1 and report["flags"]["law_not_filled"] == 1


def test_law_fill_needs_a_model_and_stops_on_http_errors(tmp_path, capsys):
    from fakeopenai import FakeOpenAI, HttpError

    from vrforge.cli import main

    root = _mini_release(tmp_path / "rel", [GOOD])
    assert main(["cfworld", "import", str(root), "--out", str(tmp_path / "o"), "--fill-law"]) == 2
    assert "--fill-law needs --model" in capsys.readouterr().err
    with FakeOpenAI(answers=[HttpError(401)]) as fake:
        assert main(["cfworld", "import", str(root), "--out", str(tmp_path / "o"), "--fill-law", "--model", "m",
                     "--base-url", fake.base_url, "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "401" in err and not (tmp_path / "o").exists()


def test_law_problems(tmp_path):
    from vrforge.generators.cfworld.importer import law_problems

    scenario = import_release(_mini_release(tmp_path / "rel", [PLANTS])).scenarios[0]
    assert law_problems(scenario, "Green plants make their food by photosynthesis.") == []
    assert law_problems(scenario, "If x happens, y follows.") == ["states a condition, not a law"]
    assert law_problems(scenario, "Plants grow. They need light.") == ["more than one sentence"]
    assert "longer than 40 words" in law_problems(scenario, " ".join(["word"] * 41) + ".")

