"""The CF-World v0.3 rubric validators, with failing and passing examples from the v0.2 reading (issue 26),
the record read back from a built scenario, the seed-file entry point, the change notes, and the
paraphrase-leak detector on the real all-MiniLM-L6-v2 at its calibrated thresholds."""

import json
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


import pytest
import yaml
from _cfworld_fixtures import ICE_FLOATS_RECORD as RECORD

from vrforge.generators.cfworld import changes as C
from vrforge.generators.cfworld import lawbank
from vrforge.generators.cfworld import rubric as R


def rec(**change):
    return R.RubricRecord.from_compact(RECORD | change)


def kinds(reasons):
    return {r.split(":")[0] for r in reasons}


def test_a_sound_v03_record_passes_every_check():
    assert R.validate_record(rec()) == []


# ----------------------------------------------------------------------------- copies and bare anchors

def test_l2_checks_that_copy_the_l1_checks_fail():
    # 365 of the 404 v0.2 scenarios: the L2/L3 checks word for word the L1 checks
    found = R.check_copied(rec(l1_checks=["Is the cola below the rim"], checks=["Is the cola below the rim"]))
    assert found and found[0].startswith("copied-check:") and "repeats the L1 check" in found[0]
    near = R.check_copied(rec(l1_checks=["Is the cola below the rim of the glass"], checks=["Is the cola below the glass rim"]))
    assert near and "repeats" in near[0]


def test_a_bare_scene_anchor_as_an_l2_check_fails_and_a_consequence_passes():
    record = rec(l1="A seal on the sea ice beside a breathing hole.", checks=["Is there a seal on the ice"],
                 knock_on=["Is the breathing hole ringed with a rim of fresh ice"])
    found = R.check_copied(record)
    assert len(found) == 1 and "bare scene anchor" in found[0] and "seal on the ice" in found[0]
    assert R.check_copied(rec()) == []


# ----------------------------------------------------------------------------- absences

@pytest.mark.parametrize("text", ["Is there no scab", "Are there no springs on the hillside", "Is the surface of the cola free of ice",
                                  "Are no round dimple shadows on the pond floor", "Is the scab missing"])
def test_absence_only_checks_fail(text):
    assert R.is_absence_only(text)
    found = R.check_absence_only(rec(checks=[text]))
    assert found and found[0].startswith("absence-only:")


@pytest.mark.parametrize("text", ["Is the cut an open red wound with no crust",
                                  "Is the hillside bare of springs while water seeps out along the clay line",
                                  "Are the balloons lying on the ground instead of floating",
                                  "Is the cola a smooth dark disc"])
def test_an_absence_with_the_presence_of_what_is_there_instead_passes(text):
    assert not R.is_absence_only(text)


def test_an_absence_only_outcome_fails_too():
    found = R.check_absence_only(rec(outcome="The hillside has no springs."))
    assert found and "outcome" in found[0]


# ----------------------------------------------------------------------------- objects the prompt never asks for

def test_a_knock_on_needing_an_object_no_prompt_asks_for_fails():
    # optics-mirrors-reflect-images: the knock-on needs taps that no prompt asks for
    found = R.check_prompt_objects(rec(knock_on=["Are the taps reflected in the glass"]))
    assert {"L2", "L3"} == {r.split("which the ")[1].split()[0] for r in found} and all("tap" in r for r in found)


def test_a_knock_on_needing_an_object_only_l2_names_fails_at_l3():
    # economics-queues-form-at-free-offers: the knock-on needs a second cafe that only L2 mentions
    l2 = RECORD["l2"].replace("on the cafe table", "on the cafe table, a jug beside it")
    found = R.check_prompt_objects(rec(l2=l2, knock_on=["Is the jug beside the glass full of cola"]))
    assert len(found) == 1 and "jug" in found[0] and "the L3 prompt" in found[0]


def test_anchors_need_all_three_prompts_and_l1_checks_the_l1_prompt():
    found = R.check_prompt_objects(rec(anchors=["Is there a waiter beside the table"],
                                       l1_checks=["Is there a straw in the glass"]))
    assert any(r.startswith("prompt-objects: anchor") and "waiter" in r for r in found)
    assert any(r.startswith("prompt-objects: l1_check") and "straw" in r and "L1" in r for r in found)


def test_generic_words_parts_and_absent_things_pass():
    ok = rec(knock_on=["Is the left side of the glass free of bubbles while the cubes rest on its floor"])
    assert R.check_prompt_objects(ok) == []


# ----------------------------------------------------------------------------- one still image

@pytest.mark.parametrize(("field", "text", "word"), [
    ("outcome", "The trout is lively on the grass, its gills flared red.", "lively"),
    ("factual", "The stack of books starts to topple over onto the table.", "starts to"),
    ("outcome", "The knee is still raw ten days later.", "later"),
    ("checks", ["Are the flying dishes moving in the direction of the pull"], "moving"),
    ("accept", ["the price rises slowly over the minutes of bidding"], "slowly"),
])
def test_motion_and_time_words_fail(field, text, word):
    found = R.check_still_image(rec(**{field: text}))
    assert found and found[0].startswith("still-image:") and word in found[0]


@pytest.mark.parametrize("text", ["The tower lies on the ground beside its base.", "The second cafe has a long queue.",
                                  "The fish lies still on the grass with its gill covers closed.",
                                  "The snow stays on the peaks while the valley is green."])
def test_a_still_state_passes(text):
    assert R.motion_time_words(text) == []


# ----------------------------------------------------------------------------- premise: mechanism, not the picture

@pytest.mark.parametrize(("premise", "outcome"), [
    ("Glass deforms like soft rubber under any sudden force and then springs back.",
     "The glass is squashed flat against the floor in one piece."),
    ("Litmus dye has the same colour at every pH.", "The litmus paper stays blue."),
    ("An object stays upright as long as any part of it touches the ground.", "The slanted stack of books stands still."),
])
def test_a_premise_that_is_the_visible_behaviour_fails(premise, outcome):
    found = R.check_premise_mechanism(rec(counterfactual=premise, outcome=outcome))
    assert found and found[0].startswith("premise-mechanism:")


@pytest.mark.parametrize("premise", ["Glass is ductile, like copper, rather than brittle.",
                                     "Litmus dye does not react with hydrogen ions.",
                                     "Water contracts as it freezes."])
def test_a_premise_that_changes_a_mechanism_passes(premise):
    assert R.check_premise_mechanism(rec(counterfactual=premise)) == []


# ----------------------------------------------------------------------------- v0.3 fields, yes/no questions

def test_a_record_without_anchors_or_knock_on_fails():
    record = dict(RECORD)
    del record["anchors"]
    found = R.check_v03_fields(R.RubricRecord.from_compact(record | {"knock_on": []}))
    assert [r.split(":")[0] for r in found] == ["v03-fields", "v03-fields"]
    assert any("anchors" in r for r in found) and any("knock_on" in r for r in found)


def test_an_l3_prompt_outside_its_length_fails():
    assert R.check_v03_fields(R.RubricRecord.from_compact(RECORD)) == []
    for l3 in ("Ice sinks. A pond.", " ".join(["word"] * 26)):
        found = R.check_v03_fields(R.RubricRecord.from_compact(RECORD | {"l3": l3}))
        assert len(found) == 1 and "l3 has" in found[0]


@pytest.mark.parametrize(("question", "problem"), [
    ("Is the flame blue or yellow?", "alternatives"),
    ("Which way does the compass needle point?", "auxiliary"),
    ("Is the flame blue", "'?'"),
    ("How many coins lie on the counter?", "auxiliary"),
])
def test_questions_a_rater_cannot_answer_yes_or_no_fail(question, problem):
    assert any(problem in p for p in R.yes_no_problems(question))


@pytest.mark.parametrize("question", ["Are the balloon strings slack or drooping?", "Has the cut closed over?",
                                      "Setting the changed law aside, is the image free of rendering artifacts?",
                                      "Can the tiles be seen sharply through the water?"])
def test_yes_no_questions_pass(question):
    assert R.yes_no_problems(question) == []


def test_every_generated_question_of_a_compact_record_is_yes_no():
    assert R.check_yes_no(rec().questions) == []
    assert R.check_yes_no(rec(checks=["Which cube is lowest"]).questions)  # one per level it is asked at (L2, L3)


# ----------------------------------------------------------------------------- a built scenario reads back as its record

def test_a_built_scenario_reads_back_as_its_record():
    _, scenario = lawbank.expand(RECORD, "physics", "test")
    back = R.RubricRecord.from_scenario(scenario)
    assert back.anchors == tuple(RECORD["anchors"]) and back.knock_on == tuple(RECORD["knock_on"])
    assert back.checks == tuple(RECORD["checks"]) and back.l1_checks == tuple(RECORD["l1_checks"])
    assert back.accept == tuple(RECORD["accept"]) and back.outcome == RECORD["outcome"]
    assert R.validate_scenarios([scenario]) == []
    bad = lawbank.expand(RECORD | {"checks": ["Is there no ice"]}, "physics", "test")[1]
    assert [line.split(": ")[1] for line in R.validate_scenarios([bad])] == ["absence-only"]


def test_anchors_are_optional_in_the_parser_but_must_be_strings():
    record = dict(RECORD)
    del record["anchors"]
    assert lawbank.compact_problems(record) == []
    assert lawbank.compact_problems(RECORD | {"anchors": ["ok", 3]}) == ["anchors must be a list of non-empty strings"]
    assert lawbank.compact_problems(RECORD | {"anchors": "Is there a glass"}) == ["anchors must be a list of non-empty strings"]


# ----------------------------------------------------------------------------- the entry point on seed files

def test_the_entry_point_prints_one_line_per_problem_and_the_counts(tmp_path, capsys):
    bad = RECORD | {"id": "mechanics-ice-sinks", "checks": ["Is there no ice"], "knock_on": []}
    path = tmp_path / "physics.yaml"
    path.write_text(yaml.safe_dump({"domain": "physics", "format": "compact", "scenarios": [RECORD, bad]}), encoding="utf-8")
    assert R.main(["--no-model", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "mechanics-ice-sinks: absence-only: check 'Is there no ice'" in out[0]
    assert any(line.startswith("mechanics-ice-sinks: v03-fields:") for line in out)
    assert not any(line.startswith("mechanics-ice-floats:") for line in out)
    assert "  absence-only: 1" in out and "  v03-fields: 1" in out and "  physics.yaml: 2" in out
    path.write_text(yaml.safe_dump({"domain": "physics", "format": "compact", "scenarios": [RECORD]}), encoding="utf-8")
    assert R.main(["--no-model", str(path)]) == 0


def test_the_entry_point_reports_an_unreadable_file_in_one_line(tmp_path, capsys):
    path = tmp_path / "broken.yaml"
    path.write_text("scenarios: [\n", encoding="utf-8")
    assert R.main(["--no-model", str(path), str(tmp_path / "missing.yaml")]) == 1
    out = capsys.readouterr().out
    assert "broken.yaml: cannot read" in out and "missing.yaml: no such file" in out and "Traceback" not in out


# ----------------------------------------------------------------------------- change notes

def test_change_notes_are_counted_by_kind_with_the_replacements(tmp_path):
    (tmp_path / "v9.9.9-physics.yaml").write_text(yaml.safe_dump([
        {"id": "a", "kinds": ["science", "checks"], "note": "x"},
        {"id": "b", "replaces": "old-b", "kinds": ["replaced"], "note": "y"},
        {"id": "c", "kinds": ["checks", "checks"], "note": "z"}]), encoding="utf-8")
    (tmp_path / "v9.9.9-biology.yaml").write_text("", encoding="utf-8")  # started, still empty
    summary = C.change_summary(C.read_changes("9.9.9", tmp_path))
    assert summary["scenarios_changed"] == 3 and summary["replaced"] == [{"id": "b", "replaces": "old-b"}]
    assert summary["per_kind"]["checks"] == 2 and summary["per_kind"]["science"] == 1 and summary["per_kind"]["time"] == 0
    text = C.changes_markdown("9.9.9", summary)
    assert "### What changed in 9.9.9" in text and "| checks | 2 |" in text and "`old-b` by `b`" in text


@pytest.mark.parametrize(("entry", "message"), [
    ({"id": "a", "kinds": ["spelling"], "note": "x"}, "unknown kind(s) spelling"),
    ({"id": "a", "kinds": [], "note": "x"}, "kinds must be a non-empty list"),
    ({"kinds": ["checks"], "note": "x"}, "id must be a non-empty string"),
])
def test_a_bad_change_note_gives_one_line(tmp_path, entry, message):
    (tmp_path / "v1.0.0-physics.yaml").write_text(yaml.safe_dump([entry]), encoding="utf-8")
    with pytest.raises(C.ChangesError) as info:
        C.read_changes("1.0.0", tmp_path)
    assert message in str(info.value) and "v1.0.0-physics.yaml" in str(info.value) and "\n" not in str(info.value)


# ----------------------------------------------------------------------------- paraphrase leaks on the real model

@pytest.fixture(scope="session")
def minilm():
    from vrforge.generators.cfworld.paraphrase import MODEL_MISSING, leak_embedder

    embed = leak_embedder()
    if embed is None:
        pytest.skip(MODEL_MISSING)
    return embed


def test_the_calibrated_thresholds_reproduce_the_measured_precision_and_recall(minilm):
    from shared_data import external

    from vrforge.bench import cfworld_paraphrase_leaks as B
    from vrforge.generators.cfworld import paraphrase as P

    rows = B.score(B.hand_labelled(), minilm)
    got = B.confusion(rows, P.LEAK_MARGIN, P.LEAK_MIN_COS, combined=False)
    assert {k: got[k] for k in ("tp", "fp", "fn", "tn")} == B.MEASURED["hand"]
    assert got["precision"] > 0.7 and got["recall"] > 0.7  # well above the 15-of-31 base rate
    if external("cf-world").is_dir():  # the calibration itself: best F0.5 over the hand and official labels
        official = B.score(B.official_labelled(external("cf-world")), minilm)
        mine = B.confusion(official, P.LEAK_MARGIN, P.LEAK_MIN_COS, combined=False)
        assert {k: mine[k] for k in ("tp", "fp", "fn", "tn")} == B.MEASURED["official"]
        assert B.calibrate(rows + official) == (P.LEAK_MARGIN, P.LEAK_MIN_COS)
    # the three paraphrase leaks of the reading are each caught (embedding or premise check); their
    # mechanism rewrites are not
    by_id = {r["id"]: r for r in rows}
    for sid in ("mechanics-centre-of-gravity-over-base", "mechanics-glass-shatters-when-dropped", "acid-base-litmus-turns-red"):
        r = by_id[sid]
        assert r["premise_mechanism"] or P.is_leak(r["margin"], r["cosine"]), sid
    for sid in ("mechanics-glass-shatters-when-dropped/mechanism", "acid-base-litmus-turns-red/mechanism"):
        r = by_id[sid]
        assert not r["premise_mechanism"] and not P.is_leak(r["margin"], r["cosine"]), sid


def test_an_l3_stating_the_outcome_in_other_words_is_a_warning(minilm):
    from vrforge.generators.cfworld.paraphrase import check_paraphrase_leak

    mosquito = {"l1": "A camper sitting by a lake at dusk in shorts, mosquitoes around her legs.",
                "factual": "Red bites dot the camper's legs.", "outcome": "The camper's legs are smooth and unbitten.",
                "accept": ("the mosquitoes are on the flowers rather than on her",)}
    clean = R.RubricRecord(id="m", law="", counterfactual="Mosquitoes feed only on plant nectar.", l2="", **mosquito,
                           l3="Mosquitoes feed only on plant nectar. Show a camper in shorts sitting by a lake at dusk, "
                              "mosquitoes around her.")
    leak = R.RubricRecord(id="m", law="", counterfactual="Mosquitoes feed only on plant nectar.", l2="", **mosquito,
                          l3="Show a camper in shorts by a lake at dusk whose bare skin stays clear and unmarked, "
                             "the mosquitoes busy at the flowers.")
    found = check_paraphrase_leak(leak, minilm)
    assert len(found) == 1 and found[0].startswith("paraphrase-leak:") and "paraphrase-leak" in R.WARNING_KINDS
    assert "the mosquitoes busy at the flowers" in found[0]  # the accepted depiction, in other words
    from vrforge.generators.cfworld.paraphrase import leak_score

    def margin(r):
        return leak_score(r.l3, r.outcome, r.factual, r.accept, minilm)[0]

    assert margin(leak) > margin(clean) + 0.1
    # not part of the lexical checks: without an embedder the record has no paraphrase finding
    assert not any(r.startswith("paraphrase-leak") for r in R.validate_record(rec()))


# ----------------------------------------------------------------------------- `vrforge audit` on a v0.3 release

def _release(tmp_path, records, version="0.3.0"):
    from vrforge.builds.cfworld_build import build_cfworld

    (tmp_path / "seeds").mkdir(parents=True)
    scenarios = [lawbank.expand(r, "physics", "test")[1].to_dict() for r in records]
    (tmp_path / "seeds" / "physics.yaml").write_text(yaml.safe_dump({"scenarios": scenarios}), encoding="utf-8")
    recipe = tmp_path / "cfworld.toml"
    recipe.write_text(f'kind = "cfworld"\nname = "cfworld"\nversion = "{version}"\nlicense = "cc-by-4.0"\n'
                      'seeds = "seeds"\nconfigs = ["scenarios"]\n', encoding="utf-8")
    return build_cfworld(recipe, tmp_path / "ds")


def test_the_audit_of_a_v03_release_fails_on_every_rubric_problem(tmp_path, minilm, capsys):
    from vrforge.cli import main

    bad = RECORD | {"id": "mechanics-ice-sinks", "checks": ["Is there no ice"], "knock_on": []}
    folder = _release(tmp_path, [RECORD, bad])
    assert main(["audit", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "rubric: mechanics-ice-sinks: absence-only: check 'Is there no ice'" in out
    assert "rubric: mechanics-ice-sinks: v03-fields: no knock_on check" in out and "mechanics-ice-floats" not in out
    report = json.loads((folder / "audit.json").read_text(encoding="utf-8"))
    assert not report["passed"] and report["rubric"]["applied"] and report["rubric"]["paraphrase_model"] == "all-MiniLM-L6-v2"
    failing = {k: n for k, n in report["rubric"]["per_check"].items() if k not in R.WARNING_KINDS}
    assert failing == {"absence-only": 1, "v03-fields": 1}
    assert all(": paraphrase-leak: " in w for w in report["rubric"]["warnings"])  # recorded, not failing
    assert sum(p.startswith("rubric: ") for p in report["problems"]) == 2


def test_the_audit_of_a_clean_v03_release_passes_and_an_older_one_skips_the_rubric(tmp_path, minilm):
    from vrforge.builds.cfworld_build import audit_cfworld

    report = audit_cfworld(_release(tmp_path / "a", [RECORD]))
    assert report["passed"], report["problems"]
    old = audit_cfworld(_release(tmp_path / "b", [RECORD | {"checks": ["Is there no ice"]}], version="0.2.0"))
    assert old["passed"] and not old["rubric"]["applied"] and "predates the v0.3 rubric" in old["rubric"]["reason"]


def test_the_audit_without_the_sentence_model_fails_with_one_line(tmp_path, monkeypatch):
    from vrforge.builds.cfworld_build import audit_cfworld
    from vrforge.generators.cfworld import paraphrase

    monkeypatch.setattr(paraphrase, "leak_embedder", lambda: None)
    report = audit_cfworld(_release(tmp_path, [RECORD]))
    assert report["problems"] == [f"rubric: {paraphrase.MODEL_MISSING}"]
