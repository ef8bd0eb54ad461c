"""The curated CF-World set: the compact authoring form, the set validators (premise-outcome leakage,
template uniformity, law-level near-duplicates, question visibility) with passing and failing examples,
their thresholds re-measured on the official release, and the coverage of its categories."""

import dataclasses
from collections import Counter

import pytest
import yaml
from _cfworld_fixtures import ICE_FLOATS_RECORD as RECORD
from _cfworld_fixtures import fall, mirror, small_bank, with_level
from shared_data import require_external

from vrforge.generators.cfworld import lawbank
from vrforge.generators.cfworld import validation as V
from vrforge.generators.cfworld.importer import import_release
from vrforge.schemas.cfworld import LEVELS, Question, Scenario


@pytest.fixture(scope="module")
def official():
    root = require_external("cf-world")
    scenarios = import_release(root).scenarios
    return [s for s in scenarios if all(s.levels[n].prompt and s.levels[n].assessment_point for n in LEVELS)], scenarios


@pytest.fixture(scope="module")
def packaged():
    return lawbank.load_seed_scenarios(embed=None)


# ----------------------------------------------------------------------------- compact form

def test_compact_record_expands_into_a_law_and_a_valid_scenario():
    law_, scenario = lawbank.expand(RECORD, "physics", "vrforge:seeds/physics.yaml")
    assert law_.scene == RECORD["l1"] and law_.counterfactual_outcome == RECORD["outcome"]
    assert scenario.levels["l3"].assessment_point == scenario.levels["l2"].assessment_point == RECORD["outcome"]
    assert scenario.provenance.flags == ("topic:density_buoyancy",) and lawbank.topic_of(scenario) == "density_buoyancy"
    assert V.validate_scenario(scenario, law_, embed=None) == []
    l3 = [q for q in scenario.questions if q.level == "l3"]
    point = next(q for q in l3 if q.dimension == "assessment_point")
    assert "the ice cubes are fully under the cola" in point.question and "ice cubes lie at the bottom" in point.question
    logic = [q.question for q in l3 if q.dimension == "logic_consistency"]
    assert logic == [f"{q}?" for q in RECORD["checks"] + RECORD["knock_on"]]  # one check each
    assert sum(q.weight for q in l3 if q.dimension == "logic_consistency") == pytest.approx(8.0)


@pytest.mark.parametrize(("change", "message"), [
    ({"l3": ""}, "l3 must be a non-empty string"),
    ({"checks": []}, "checks must be a non-empty list"),
    ({"accept": "one"}, "accept must be a list of non-empty strings"),
    ({"colour": "red"}, "unknown field(s): colour"),
    ({"id": "Ice"}, "id 'Ice' is not kebab-case"),
])
def test_bad_compact_records_give_one_line(tmp_path, change, message):
    (tmp_path / "physics.yaml").write_text(yaml.safe_dump({"domain": "physics", "format": "compact",
                                                           "scenarios": [RECORD | change]}), encoding="utf-8")
    with pytest.raises(lawbank.LawBankError) as info:
        lawbank.read_compact(tmp_path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_law_bank_files_are_generated_from_the_seeds():
    texts = lawbank.law_files_text()
    assert set(texts) == {p.name for p in lawbank.LAWS_DIR.glob("*.yaml")}
    for name, text in texts.items():
        assert (lawbank.LAWS_DIR / name).read_text(encoding="utf-8") == text, f"regenerate laws/{name}"


# ----------------------------------------------------------------------------- the packaged set

def test_packaged_set_size_lengths_and_set_checks(packaged):
    assert len(packaged) >= 400
    assert V.validate_set(packaged) == []
    l3_words = [len(s.levels["l3"].prompt.split()) for s in packaged]
    assert min(l3_words) >= 12 and max(l3_words) <= 25
    figures = V.template_figures(packaged)
    assert all(row["top_opening_share"] <= V.OPENING_SHARE_MAX for row in figures["levels"].values())
    assert figures["l3_prefix_of_l2_share"] == 0.0 and set(figures["l1_outcome_share"].values()) == {0.0}


def test_packaged_set_covers_every_topic_group(packaged):
    covered = Counter((s.domain, lawbank.topic_of(s)) for s in packaged)
    expected = {(domain, topic) for domain, topics in lawbank.all_topics().items() for topic in topics}
    assert set(covered) == expected
    assert min(covered.values()) >= 2


def test_every_official_category_maps_to_a_topic_group(official):
    _, everything = official
    topics = {(s.domain, lawbank.official_topic(s)) for s in everything}
    assert all(topic for _, topic in topics)
    assert topics == {(domain, topic) for domain, ts in lawbank.all_topics().items() for topic in ts}


# ----------------------------------------------------------------------------- premise-outcome leakage

def leaf(premise: str) -> Scenario:
    s = dataclasses.replace(mirror(), id="botany-leaves-are-green", law="Leaves are green because of chlorophyll.",
                            counterfactual=premise)
    s = with_level(s, "l1", prompt="Draw an oak tree in a summer meadow.", point="The oak's leaves are green.")
    s = with_level(s, "l2", prompt=f"{premise} Draw an oak tree in a summer meadow; its leaves are bright blue.",
                   point="The oak's leaves are bright blue.")
    return with_level(s, "l3", prompt=f"{premise} Draw an oak tree in a summer meadow.", point="The oak's leaves are bright blue.")


def test_premise_leak_fails_a_premise_that_names_the_outcome_and_passes_a_mechanism():
    assert V.check_premise_outcome_leak(mirror()) == []
    assert V.check_premise_outcome_leak(leaf("Chlorophyll absorbs green light and reflects red light.")) == []
    found = V.check_premise_outcome_leak(leaf("Plant leaves contain a blue pigment instead of chlorophyll."))
    assert found == ["premise-leak: the premise names 50% of the outcome's attribute words ('blu'; at most 0%)"]
    # a derived form counts as the same word ("cubic" / "cube")
    assert V.premise_outcome_leak(leaf("Leaves grow in cubic shapes."))[1] == []
    cube = with_level(leaf("Leaves grow in cubic shapes."), "l2", point="The oak's leaves are cubes.")
    assert V.premise_outcome_leak(cube)[1] == ["cub"]


# ----------------------------------------------------------------------------- question visibility

def test_questions_about_felt_temperature_or_sound_fail_and_hot_as_a_name_passes():
    def asking(text):
        extra = Question(level="l2", dimension="logic_consistency", question=text, criteria="1 yes", weight=1.0)
        return V.check_question_visibility(dataclasses.replace(mirror(), questions=mirror().questions + (extra,)))

    assert asking("Is the steam rising from the mug of hot water?") == []
    assert asking("Does the horseshoe glow white-hot?") == []
    assert asking("Is the pan hot?") and asking("Does the weather feel warm?") and asking("Does the bell sound loud?")


# ----------------------------------------------------------------------------- template uniformity

def test_template_uniformity_fails_a_templated_set_and_passes_a_varied_one(packaged):
    assert V.check_template_uniformity(packaged) == []
    templated = []
    for i in range(V.SET_CHECK_MIN):
        s = dataclasses.replace(fall(), id=f"mechanics-clone-{i}")
        s = with_level(s, "l3", prompt=f"In a world where gravity pushes, draw apple number {i}.")
        s = with_level(s, "l2", prompt=s.levels["l3"].prompt + " The apple rises above the child's head.")
        s = with_level(s, "l1", prompt=f"Draw apple number {i}. The apple lies on the grass below the hand.")
        templated.append(s)
    found = V.validate_set(templated)
    assert V.validate_set(templated[:V.SET_CHECK_MIN - 1]) == []  # too few for a share to mean anything
    assert any("l3 prompts (100%) open with 'in a world'" in r for r in found)
    assert any("100% of L2 prompts begin with their L3 prompt" in r for r in found)
    assert any("100% of physics L1 prompts state their outcome" in r for r in found)


# ----------------------------------------------------------------------------- law-level near-duplicates

def test_law_duplicates_across_domains_fail_and_distinct_laws_pass():
    vapour = dataclasses.replace(mirror(), id="thermodynamics-vapour-condenses", law="Water vapour condenses on a cold glass.")
    vapour = with_level(vapour, "l1", prompt="A cold glass of lemonade on a table beaded with water drops.")
    twin = dataclasses.replace(vapour, id="states-of-matter-vapour-condenses", domain="chemistry",
                               law="Water vapour in air condenses into drops on cold glass.")
    twin = with_level(twin, "l1", prompt="A glass of cold lemonade on a garden table, drops of water on it.")
    found = V.check_law_duplicates([vapour, twin, fall()])
    assert len(found) == 1 and found[0].startswith("law-duplicate: thermodynamics-vapour-condenses and states-of-matter")
    assert V.check_law_duplicates([vapour, fall(), dataclasses.replace(mirror(), domain="biology")]) == []
    assert V.law_near_duplicates([vapour, dataclasses.replace(twin, domain="physics")]) == []  # only across domains


def test_seed_loading_runs_the_set_checks(tmp_path, monkeypatch):
    laws_dir, seeds_dir = small_bank(tmp_path)  # mirror and fall: each L2 is its L3 plus a sentence
    laws = lawbank.load_laws(laws_dir)
    assert len(lawbank.load_seed_scenarios(seeds_dir, laws, embed=None)) == 2  # two seeds are not a release
    monkeypatch.setattr(V, "SET_CHECK_MIN", 2)
    with pytest.raises(lawbank.LawBankError, match=r"seeds: template: .* \(and 3 more problem\(s\)\)"):
        lawbank.load_seed_scenarios(seeds_dir, laws, embed=None)


# ----------------------------------------------------------------------------- thresholds on the official release

def test_official_release_figures_are_the_documented_ones(official):
    scenarios, _ = official
    off = V.OFFICIAL_FIGURES
    _, everything = official
    assert len(everything) == off["scenarios"] and len(scenarios) == 1091
    assert dict(Counter(s.domain for s in everything)) == off["per_domain"]
    figures = V.template_figures(scenarios)
    for level in LEVELS:
        row = figures["levels"][level]
        assert row["mean_words"] == off["mean_words"][level]
        assert row["top_opening_share"] == off["top_opening_share"][level]
        assert row["top_first_word_share"] == off["top_first_word_share"][level]
    assert figures["l3_prefix_of_l2_share"] == off["l3_prefix_of_l2_share"]
    premises = [s for s in scenarios if s.counterfactual]
    assert (len(premises), sum(V.premise_outcome_leak(s)[0] > V.PREMISE_LEAK_MAX for s in premises)) == (
        off["premises"], off["premise_leaks"])
    assert len(V.law_near_duplicates(scenarios)) == off["law_duplicate_pairs"]
    # the official set is templated the way the checks are meant to catch (L2 = L3 + a sentence)
    assert any("begin with their L3 prompt" in r for r in V.check_template_uniformity(scenarios))


def test_premise_leak_threshold_separates_named_outcomes_on_the_official_release(official):
    scenarios, _ = official
    by_id = {s.id: s for s in scenarios}
    # read by hand: premises that name the pictured attribute, and premises that change a mechanism
    named = ["biology-0064", "physics-optics-0001", "biology-0029", "chemistry-0115"]
    mechanism = ["biology-0000", "physics-optics-0015", "physics-electromagnetism-0031", "chemistry-0159"]
    assert all(V.check_premise_outcome_leak(by_id[i]) for i in named)
    assert not any(V.check_premise_outcome_leak(by_id[i]) for i in mechanism)
