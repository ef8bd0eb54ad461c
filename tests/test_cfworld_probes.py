"""The three CF-World probes: rule decoupling, attribute decoupling, de-nominalisation."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from fakeopenai import FakeOpenAI
from shared_data import external

from vrforge.generators.cfworld.probes.attribute_decoupling import generate_attribute_probes
from vrforge.generators.cfworld.probes.denominalize import (
    LexiconError,
    apply_lexicon,
    denominalize_with_lexicon,
    denominalize_with_llm,
    load_lexicon,
    parse_lexicon,
    term_variants,
)
from vrforge.generators.cfworld.probes.entity_cooccurrence import generate_entity_probes
from vrforge.generators.cfworld.probes.entity_pairs import ENTITY_PAIRS
from vrforge.generators.cfworld.probes.rule_decoupling import (
    DIRECTIONS,
    PERTURBATIONS,
    POINTING,
    generate_rule_probes,
    named_directions,
    perturbed_direction,
    possible,
    rotate,
)
from vrforge.generators.cfworld.probes.rules import RULES
from vrforge.openai_client import ChatClient, ChatConfig
from vrforge.schemas.cfworld import Level, Provenance, Question, Scenario

OFFICIAL = external("cf-world")


# ----------------------------------------------------------------------------- rule decoupling

def test_rule_probes_mirror_the_official_structure():
    probes = generate_rule_probes()
    assert len(RULES) == 33 and len(probes) == 198
    assert len({p.id for p in probes}) == 198
    per_rule = Counter(p.rule_id for p in probes)
    assert set(per_rule.values()) == {6} and len(per_rule) == 33
    # Like the official file: rules with a fixed outcome give 1 factual + 5 counterfactual prompts,
    # positional rules 2 + 4; 60 factual and 138 counterfactual in all.
    assert Counter(p.variant for p in probes) == {"factual": 60, "counterfactual": 138}
    for rule in RULES:
        factual = [p for p in probes if p.rule_id == rule.key and p.variant == "factual"]
        assert len(factual) == (2 if rule.layouts else 1)


def test_every_rule_prompt_has_an_assessment_point_and_validates():
    for probe in generate_rule_probes():
        assert probe.validate() == [], probe.id
        assert probe.assessment_point.endswith(POINTING[probe.expected_direction])
        assert probe.prompt.startswith("On a plain white background, draw ")
        assert "{" not in probe.prompt and "}" not in probe.prompt  # every placeholder filled
        if probe.variant == "counterfactual":
            assert probe.counterfactual.startswith("Set a counterfactual rule:") and probe.counterfactual in probe.prompt
        else:
            assert "counterfactual" not in probe.prompt


def test_directions_within_a_rule_are_pairwise_distinct_and_perturbations_unique():
    probes = generate_rule_probes()
    for rule in RULES:
        mine = [p for p in probes if p.rule_id == rule.key]
        assert len({p.expected_direction for p in mine}) == 6, rule.key
        assert len({p.assessment_point for p in mine}) == 6, rule.key
        cf = [(p.layout, p.perturbation) for p in mine if p.variant == "counterfactual"]
        assert len(set(cf)) == len(cf), rule.key
    kinds = Counter(p.perturbation for p in probes)
    for name in PERTURBATIONS:
        assert kinds[name] >= 8, (name, kinds)


def test_no_counterfactual_rule_names_a_screen_direction():
    cf = [p for p in generate_rule_probes() if p.variant == "counterfactual"]
    assert len(cf) == 138
    assert [p.id for p in cf if named_directions(p.counterfactual)] == []
    # The answer is not in the statement: it follows from the scene and the changed law.
    assert all(p.expected_direction not in named_directions(p.counterfactual) for p in cf)


def test_named_directions_finds_what_the_old_gravity_rules_said():
    assert named_directions("a gravity that pulls towards the top-left corner") == {"up-left"}
    assert named_directions("a gravity that pulls to the right") == {"right"}
    assert named_directions("it moves upwards and then to the lower left") == {"up", "down-left"}
    assert named_directions("heat flows from a cold body to a hot one") == set()


def test_direction_calculus():
    assert rotate("up", -2) == "right"  # clockwise on the canvas
    assert rotate("up", 2) == "left"
    assert perturbed_direction("reverse", "up-left") == "down-right"
    assert perturbed_direction("rotate_cw_45", "up") == "up-right"
    assert perturbed_direction("rotate_ccw_135", "right") == "up-left"
    for direction in DIRECTIONS:
        assert perturbed_direction("rotate_cw_90", perturbed_direction("rotate_ccw_90", direction)) == direction


def test_answers_respect_what_the_scene_allows():
    rules = {rule.key: rule for rule in RULES}
    probes = generate_rule_probes()
    # A ball on a ramp rising towards the top-left never moves into the ramp (down-left, down, left).
    assert not possible(rules["slope-roll"], "up-left", "left") and possible(rules["slope-roll"], "up-left", "up-right")
    for p in probes:
        assert possible(rules[p.rule_id], p.layout or None, p.expected_direction), p.id
    river = [p for p in probes if p.rule_id == "river-flow" and p.variant == "counterfactual"]
    assert {p.perturbation for p in river} == {"reverse"} and len({p.layout for p in river}) == 4


def test_rule_prompts_read_as_english():
    probes = generate_rule_probes()
    spring = [p.prompt for p in probes if p.rule_id == "spring-push"]
    assert all("from on the" not in p and "from in the" not in p and "from at the" not in p for p in spring)
    assert "pressed against it from the left." in spring[0]
    for p in probes:
        assert "  " not in p.prompt and ".." not in p.prompt and " ," not in p.prompt, p.id
        assert re.fullmatch(r"On a plain white background, draw [^.]+\.( Set a counterfactual rule: [^.]+\.)? Draw [^.]+\.",
                            p.prompt), p.id


def test_factual_answers_follow_the_law():
    probes = {p.id: p for p in generate_rule_probes()}
    shadow = [p for p in probes.values() if p.rule_id == "shadow" and p.variant == "factual"]
    assert [(p.layout, p.expected_direction) for p in shadow] == [("up-left", "down-right"), ("right", "left")]
    assert "glowing yellow dot in the top-left corner" in shadow[0].prompt
    magnet = [p for p in probes.values() if p.rule_id == "magnet-attraction" and p.variant == "factual"]
    assert [(p.layout, p.expected_direction) for p in magnet] == [("left", "left"), ("up-right", "up-right")]
    fall = next(p for p in probes.values() if p.rule_id == "falling-ball" and p.variant == "factual")
    assert fall.expected_direction == "down" and fall.layout == ""
    heat = next(p for p in probes.values() if p.rule_id == "heat-conduction" and p.perturbation == "reverse")
    assert "heat flows from a cold body to a hot one" in heat.prompt
    assert heat.expected_direction == heat.layout  # towards the hot body, which the scene places


def test_rule_probes_are_deterministic():
    first = [p.to_dict() for p in generate_rule_probes()]
    assert first == [p.to_dict() for p in generate_rule_probes()]


def test_repeated_rule_key_is_refused():
    with pytest.raises(ValueError, match="unique"):
        generate_rule_probes(RULES + RULES[:1])


# ----------------------------------------------------------------------------- entity co-occurrence

def test_entity_probe_matches_the_official_size_and_pairs_minimally():
    probes = generate_entity_probes()
    assert len(ENTITY_PAIRS) == 113 and len(probes) == 226
    assert Counter(p.variant for p in probes) == {"unusual": 113, "factual": 113}
    assert len({p.id for p in probes}) == 226 and len({p.prompt for p in probes}) == 226
    for unusual, factual in zip(probes[::2], probes[1::2], strict=True):
        assert unusual.pair_id == factual.pair_id and (unusual.variant, factual.variant) == ("unusual", "factual")
        assert unusual.validate() == [] and factual.validate() == []
        # Only the context differs between the two members.
        assert unusual.prompt.replace(unusual.context, factual.context) == factual.prompt
        assert unusual.counterpart == factual.context and factual.counterpart == unusual.context
        assert re.fullmatch(r"An? [^.]+\.", unusual.prompt) and unusual.assessment_point.startswith(f"The {unusual.entity} is ")
    camel = probes[0]
    assert (camel.prompt, camel.assessment_point) == ("A camel walking across a snowy glacier.",
                                                       "The camel is walking across a snowy glacier")
    assert next(p for p in probes if p.entity == "elephant").prompt.startswith("An elephant ")


def test_official_release_entity_probe_has_the_same_shape():
    path = external("cf-world", "prompt_ablation", "attribute_decouple.json")
    if not path.is_file():
        pytest.skip(f"official probe file not found at {path}")
    import json

    official = Counter(r["category"] for r in json.loads(path.read_text(encoding="utf-8")))
    ours = Counter({"unusual": "unusual", "factual": "factual"}[p.variant] for p in generate_entity_probes())
    assert official == ours == {"unusual": 113, "factual": 113}


def test_repeated_entity_or_same_context_is_refused():
    with pytest.raises(ValueError, match="repeated"):
        generate_entity_probes(ENTITY_PAIRS + ENTITY_PAIRS[:1])
    with pytest.raises(ValueError, match="same"):
        generate_entity_probes((("cat", "sleeping", "on a sofa", "on a sofa"),))


# ----------------------------------------------------------------------------- attribute decoupling

def test_attribute_pairs_are_unique_minimal_pairs_with_assessment_points():
    probes = generate_attribute_probes()
    pairs = Counter(p.pair_id for p in probes)
    assert len(pairs) >= 100 and set(pairs.values()) == {2}
    assert len({p.id for p in probes}) == len(probes)
    assert len({p.prompt for p in probes}) == len(probes)
    for probe in probes:
        assert probe.validate() == [], probe.id
        assert probe.attribute in probe.prompt and probe.object in probe.prompt
        assert probe.attribute in probe.assessment_point and probe.object in probe.assessment_point
    by_pair: dict[str, dict[str, object]] = {}
    for probe in probes:
        by_pair.setdefault(probe.pair_id, {})[probe.variant] = probe
    for members in by_pair.values():
        rare, common = members["rare"], members["common"]
        assert rare.object == common.object and rare.attribute == common.counterpart
        # only the attribute (and its article) differs
        strip = lambda p: re.sub(r"\b(a|an)\b ", "", p.prompt.replace(p.attribute, "<A>"))  # noqa: E731
        assert strip(rare) == strip(common)
    assert Counter(p.attribute_kind for p in probes[::2]).keys() >= {"colour", "shape", "material", "texture", "size", "pattern"}


def test_attribute_prompt_grammar():
    probes = {p.id: p for p in generate_attribute_probes()}
    assert probes["attribute-000-rare"].prompt == "A photo of a purple banana on a kitchen table."
    assert probes["attribute-000-rare"].assessment_point == "The banana is purple"
    material = next(p for p in probes.values() if p.attribute_kind == "material" and p.variant == "rare")
    assert " made of " in material.prompt and material.assessment_point.endswith(f"made of {material.attribute}")
    assert all(" a o" not in p.prompt and " a a" not in p.prompt for p in probes.values())


def test_repeated_attribute_pair_is_refused():
    with pytest.raises(ValueError, match="repeated"):
        generate_attribute_probes((("banana", "colour", "purple", "yellow", "here"),) * 2)


# ----------------------------------------------------------------------------- de-nominalisation

def scenario(sid: str, l2: str, counterfactual: str, law: str = "A law of nature.",
             outcome: str = "The polar bear's fur is green") -> Scenario:
    levels = {"l1": Level("Draw a bear.", "A bear"), "l2": Level(l2, outcome),
              "l3": Level("Draw a bear in the sun.", "Green fur")}
    questions = tuple(Question(lvl, "assessment_point", "Is it right?", "", 1.0) for lvl in ("l1", "l2", "l3"))
    return Scenario(sid, "biology", "Metabolism", law, counterfactual, levels, questions, Provenance(kind="manual"))


BEAR = scenario("biology-0001",
                "If mammals performed photosynthesis like plants, draw a polar bear. The Bear's fur should be vibrant green.",
                "If mammals performed photosynthesis like plants", law="Mammals eat food; plants photosynthesise.")
NOTHING = scenario("biology-0002", "If time ran backwards, draw an hourglass on a shelf.", "If time ran backwards")


def test_lexicon_replaces_nouns_and_attributes_and_keeps_the_premise():
    report = denominalize_with_lexicon([BEAR, NOTHING])
    (probe,) = report.probes
    assert probe.validate() == []
    assert probe.prompt.startswith("If mammals performed photosynthesis like plants, draw ")  # the law is untouched
    assert probe.premise == BEAR.counterfactual and probe.law == BEAR.law and probe.counterfactual == BEAR.counterfactual
    outcome = probe.prompt[len(probe.premise):]
    for term in ("polar bear", "bear", "green"):  # "fur" may come back inside a description
        assert not re.search(rf"\b{term}\b", outcome, re.IGNORECASE), term
    assert "plants" in probe.prompt  # a lexicon term inside the premise stays
    assert {r.term for r in probe.replacements} == {"polar bear", "Bear", "fur", "green"}
    assert {r.kind for r in probe.replacements} == {"noun", "attribute"}
    assert probe.source_prompt == BEAR.levels["l2"].prompt and probe.assessment_point == "The polar bear's fur is green"
    # the unchanged prompt is reported, not passed through
    assert report.unchanged == ["biology-0002"] and len(report.probes) == 1
    assert report.to_dict()["unchanged"] == ["biology-0002"]


def test_lexicon_matching_is_whole_word_longest_first_and_case_preserving():
    lexicon = parse_lexicon({"nouns": {"bear": "big furry animal", "polar bear": "big white animal"},
                             "attributes": {"red": "tomato-coloured"}})
    text, replacements = apply_lexicon("Polar bears and a BEAR near a bearded man; red-hot, Red bear.", lexicon)
    # "bears" is not a term of this lexicon (no partial match); "bearded" and "red-hot" are other words
    assert text == "Polar bears and a BIG FURRY ANIMAL near a bearded man; red-hot, Tomato-coloured big furry animal."
    text, _ = apply_lexicon("A polar bear.", lexicon)
    assert text == "A big white animal."
    lexicon = parse_lexicon({"nouns": {"elephant": "huge grey animal", "owl": "night bird"}})
    text, _ = apply_lexicon("An elephant, an owl and AN ELEPHANT; a banana and an elephant's trunk.", lexicon)
    assert text == "A huge grey animal, a night bird and A HUGE GREY ANIMAL; a banana and a huge grey animal's trunk."
    assert [r.term for r in replacements] == ["BEAR", "Red", "bear"]


def test_only_the_outcome_targets_are_replaced():
    prompt = "If leaves were blue, draw a basil plant on a table by the window. Show that the Leaves are blue."
    source = scenario("biology-0005", prompt, "If leaves were blue", outcome="The basil leaf is blue")
    probe = denominalize_with_lexicon([source]).probes[0]
    # "leaf" in the outcome targets "Leaves" in the prompt (plural); the scene words plant, table and window stay
    assert probe.prompt.startswith("If leaves were blue, draw a basil plant on a table by the window. Show that the ")
    assert {r.term for r in probe.replacements} == {"Leaves", "blue"}
    everything = denominalize_with_lexicon([source], outcome_only=False).probes[0]
    assert {r.term for r in everything.replacements} == {"plant", "table", "window", "Leaves", "blue"}


def test_term_variants():
    assert term_variants("polar bear") >= {"polar bear", "polar bears", "bear"}
    assert term_variants("leaf") >= {"leaf", "leaves"} and "leaf" in term_variants("leaves")
    assert "butterfly" in term_variants("butterflies") and "tomato" in term_variants("tomatoes")


def test_premise_found_without_the_scenario_counterfactual():
    source = scenario("biology-0003", "Imagine a world without friction, draw a car on a road.", "", outcome="The car slides")
    probe = denominalize_with_lexicon([source]).probes[0]
    assert probe.premise == "Imagine a world without friction"
    assert probe.prompt.startswith("Imagine a world without friction, draw ") and " car " not in probe.prompt


def test_prompt_without_premise_is_reported():
    report = denominalize_with_lexicon([scenario("biology-0004", "A car drives up a wall.", "", outcome="The car is upside down")])
    assert report.no_premise == ["biology-0004"] and len(report.probes) == 1


@pytest.mark.parametrize("data, message", [
    ([], "expected a mapping"),
    ({"nouns": {"bear": ""}}, "non-empty"),
    ({"nouns": {"bear": "x"}, "attributes": {"Bear": "y"}}, "appears twice"),
    ({"verbs": {}}, "unknown section"),
    ({"nouns": {}}, "no terms"),
])
def test_malformed_lexicon_is_one_line(data, message):
    with pytest.raises(LexiconError, match=message) as info:
        parse_lexicon(data)
    assert "\n" not in str(info.value)


def test_lexicon_file_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("nouns: [unclosed\n", encoding="utf-8")
    with pytest.raises(LexiconError, match="invalid YAML"):
        load_lexicon(bad)
    with pytest.raises(LexiconError, match="cannot read"):
        load_lexicon(tmp_path / "missing.yaml")
    assert len(load_lexicon().entries) > 200


def test_no_description_names_its_own_term():
    for term, entry in load_lexicon().entries.items():
        assert not re.search(rf"\b{re.escape(term)}\b", entry.description, re.IGNORECASE), term


@pytest.mark.skipif(not OFFICIAL.is_dir(), reason=f"the official CF-World release is absent at {OFFICIAL}")
def test_lexicon_covers_most_official_l2_prompts_and_keeps_every_premise():
    from vrforge.generators.cfworld.importer import import_release

    scenarios = import_release(OFFICIAL).scenarios
    report = denominalize_with_lexicon(scenarios)
    assert len(report.probes) + len(report.unchanged) == len(scenarios)
    # Only terms the assessment point names are targets; 749 of 1,092 official prompts have one in the lexicon.
    assert len(report.probes) >= 0.6 * len(scenarios)
    assert all(p.validate() == [] for p in report.probes)


def make_client(fake: FakeOpenAI, tmp_path: Path) -> ChatClient:
    config = ChatConfig(base_url=fake.base_url, model="fake-llm", timeout_s=5.0, max_retries=1, backoff_s=0.0,
                        api_key_env="VRFORGE_TEST_KEY")
    return ChatClient(config, tmp_path / "cache", sleep=lambda _: None)


def test_llm_mode_accepts_a_valid_rewrite(tmp_path, monkeypatch):
    monkeypatch.setenv("VRFORGE_TEST_KEY", "test")
    rewritten = "If mammals performed photosynthesis like plants, draw a large white-furred animal. Its coat should be leaf-coloured."
    good = {"prompt": rewritten,
            "replacements": [{"term": "polar bear", "description": "large white-furred animal", "kind": "noun"},
                             {"term": "green", "description": "leaf-coloured", "kind": "attribute"}]}
    with FakeOpenAI(answers=[good]) as fake:
        report = denominalize_with_llm([BEAR], make_client(fake, tmp_path))
    (probe,) = report.probes
    assert probe.mode == "llm" and probe.model == "fake-llm" and probe.validate() == []
    assert probe.prompt == good["prompt"] and [r.term for r in probe.replacements] == ["polar bear", "green"]
    request = fake.requests[0]
    assert request["response_format"]["type"] == "json_schema"
    assert BEAR.levels["l2"].prompt in request["messages"][-1]["content"]


def test_llm_mode_rejects_a_changed_premise_or_leaked_term_then_reports_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("VRFORGE_TEST_KEY", "test")
    changed_premise = {"prompt": "If mammals could photosynthesise, draw a large white-furred animal.",
                       "replacements": [{"term": "polar bear", "description": "large white-furred animal", "kind": "noun"}]}
    leaked = {"prompt": "If mammals performed photosynthesis like plants, draw a white polar bear.",
              "replacements": [{"term": "polar bear", "description": "white animal", "kind": "noun"}]}
    with FakeOpenAI(answers=[changed_premise, leaked]) as fake:
        report = denominalize_with_llm([BEAR], make_client(fake, tmp_path))
    assert report.probes == [] and list(report.failed) == ["biology-0001"]
    assert "still present: polar bear" in report.failed["biology-0001"]
    assert len(fake.requests) == 2
