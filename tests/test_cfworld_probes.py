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
    _description_words,
    _parse_description,
    apply_lexicon,
    banned_words,
    denominalize_with_lexicon,
    denominalize_with_llm,
    load_lexicon,
    parse_lexicon,
    target_terms,
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


def rewrite(prompt: str, outcome: str, lexicon=None) -> tuple[str, Counter]:
    """The lexicon rewrite of a prompt whose premise is its first clause (up to the first comma)."""
    lexicon = lexicon or load_lexicon()
    skipped: Counter = Counter()
    text, _ = apply_lexicon(prompt, lexicon, prompt.split(",")[0], target_terms(outcome, lexicon), banned_words(outcome, lexicon),
                            skipped)
    return text, skipped


def test_lexicon_replaces_nouns_and_attributes_and_keeps_the_premise():
    report = denominalize_with_lexicon([BEAR, NOTHING])
    (probe,) = report.probes
    assert probe.validate() == []
    assert probe.prompt == ("If mammals performed photosynthesis like plants, draw a large heavy four-legged animal with a small head "
                            "and broad paws. The large heavy four-legged animal's dense coat of soft hairs should be vibrant "
                            "leaf-coloured.")
    assert probe.premise == BEAR.counterfactual and probe.law == BEAR.law and probe.counterfactual == BEAR.counterfactual
    assert "plants" in probe.prompt  # a lexicon term inside the premise stays
    assert [r.term for r in probe.replacements] == ["polar bear", "Bear", "fur", "green"]
    assert {r.kind for r in probe.replacements} == {"noun", "attribute"}
    assert probe.source_prompt == BEAR.levels["l2"].prompt and probe.assessment_point == "The polar bear's fur is green"
    # the unchanged prompt is reported, not passed through
    assert report.unchanged == ["biology-0002"] and len(report.probes) == 1
    assert report.to_dict()["unchanged"] == ["biology-0002"]


def test_a_description_never_carries_the_tested_attribute():
    # The outcome is a fur colour: the polar bear's first description ("thick white fur and a black nose") is passed over.
    text, _ = rewrite("If mammals photosynthesised, draw a polar bear on the ice.", "The polar bear's fur is green")
    assert text == "If mammals photosynthesised, draw a large heavy four-legged animal with a small head and broad paws on the ice."
    # A size outcome: the size words are cut out of the description that has them.
    text, _ = rewrite("If bears were tiny, draw two polar bears on the ice.", "The polar bears are tiny")
    assert text == "If bears were tiny, draw two four-legged animals on the ice."
    # No colour for a thing the prompt itself colours ("a red horseshoe magnet"): the colourless description is used.
    text, _ = rewrite("If magnets repelled iron, draw a red horseshoe magnet.", "Nails fly off the magnet")
    assert text == "If magnets repelled iron, draw a red horseshoe piece of metal."


def test_compound_modifiers_stay_and_names_stay():
    text, skipped = rewrite("If salt did not exist, draw coastal salt pans. Show that the pans hold no salt.", "The pans hold no salt")
    assert text == "If salt did not exist, draw coastal salt pans. Show that the pans hold no heap of small white cubic grains."
    assert skipped == {"compound modifier: salt": 1}
    text, skipped = rewrite("If rivers ran dry, draw the Colorado River's course.", "The river is dry")
    assert "Colorado River" in text and skipped == {"part of a name: river": 1}
    text, _ = rewrite("If ropes were rigid, draw a rope-like bundle.", "The rope is rigid")
    assert "rope-like" in text  # part of a hyphenated word


def test_agreement_number_articles_and_adjectives():
    # A plural noun gets a plural head; "an elephant" keeps an article that agrees with the description.
    text, _ = rewrite("If bears were purple, draw an elephant beside two polar bears.", "The polar bears are purple")
    assert text.endswith("beside two large heavy four-legged animals with a small head and broad paws.")
    text, _ = rewrite("If elephants were pink, draw an elephant.", "The elephant is pink")
    assert text == "If elephants were pink, draw a huge animal with a long trunk and large flapping ears."
    text, _ = rewrite("If bears were orange, draw an orange bear.", "The bear is orange")
    assert text.startswith("If bears were orange, draw a tangerine-coloured ")
    # Adjectives already before the noun: the description's own adjectives are dropped, no pile-up.
    text, _ = rewrite("If heat did not melt snow, draw a snowman with crisp, sharp snow.", "The snowman keeps its snow")
    assert text == "If heat did not melt snow, draw a snowman with a crisp, sharp layer of soft white flakes."
    assert "sharp soft" not in text
    # A bare mass noun becomes a countable description with its article.
    text, _ = rewrite("If salt made ice thicker, draw a pavement covered in thicker ice.", "The pavement has thicker ice")
    assert text == "If salt made ice thicker, draw a pavement covered in a thicker layer."
    # A possessive keeps only the description's noun phrase before "'s".
    text, _ = rewrite("If rabbits were fierce, draw a carrot biting a rabbit's nose.", "The carrot bites the rabbit")
    assert text == "If rabbits were fierce, draw a carrot biting a small furry animal's nose."


def test_lexicon_matching_by_lemma_and_case():
    lexicon = parse_lexicon({"nouns": {"bear": "big furry animal", "polar bear": "big pale animal"},
                             "attributes": {"red": "tomato-coloured"}})
    text, replacements = apply_lexicon("Polar bears and a BEAR sit near a bearded man. A red-hot stove warms a red bear.", lexicon)
    # "bears" is a bear by its lemma; "bearded" and "red-hot" are other words
    # "a red bear" already has an adjective: the description joins from its head on ("animal"), no pile-up
    assert text == "Big pale animals and a BIG FURRY ANIMAL sit near a bearded man. A red-hot stove warms a tomato-coloured animal."
    assert [r.term for r in replacements] == ["Polar bears", "BEAR", "red", "bear"]


def test_only_the_outcome_targets_are_replaced():
    prompt = "If leaves were blue, draw a basil plant on a table by the window. Show that the Leaves are blue."
    source = scenario("biology-0005", prompt, "If leaves were blue", outcome="The basil leaf is blue")
    probe = denominalize_with_lexicon([source]).probes[0]
    # "leaf" in the outcome targets "Leaves" in the prompt (plural); the scene words plant, table and window stay
    assert probe.prompt.startswith("If leaves were blue, draw a basil plant on a table by the window. Show that the ")
    assert {r.term for r in probe.replacements} == {"Leaves", "blue"}
    everything = denominalize_with_lexicon([source], outcome_only=False).probes[0]
    assert {r.term for r in everything.replacements} == {"plant", "table", "window", "Leaves", "blue"}


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
    ({"nouns": {"bear": []}}, "non-empty"),
    ({"nouns": {"bear": "x"}, "attributes": {"Bear": "y"}}, "appears twice"),
    ({"verbs": {}}, "unknown section"),
    ({"nouns": {}}, "no terms"),
    ({"nouns": {"bear": "x"}, "kinds": {"colour": "red"}}, "kinds"),
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


def test_packaged_lexicon_descriptions_are_well_formed():
    lexicon = load_lexicon()
    assert {"colour", "size", "temperature"} <= set(lexicon.kinds)
    assert "grandmother" not in lexicon.entries  # a relation, not a look
    for term, entry in lexicon.entries.items():
        for description in entry.descriptions:
            assert not re.search(rf"\b{re.escape(term)}\b", description, re.IGNORECASE), term
            assert "," not in description, term  # a comma inside a sentence breaks it
            if entry.kind == "noun" and not term.endswith("s") and term != "people":
                _, _, tags, head, _ = _parse_description(description)
                assert tags[head] in ("NN", "NNP"), (term, description)  # a singular term gets a singular description


@pytest.mark.skipif(not OFFICIAL.is_dir(), reason=f"the official CF-World release is absent at {OFFICIAL}")
@pytest.mark.parametrize("step", [pytest.param(1, marks=pytest.mark.slow), 8])
def test_lexicon_on_the_official_l2_prompts(step):
    from vrforge.generators.cfworld.importer import import_release

    scenarios = import_release(OFFICIAL).scenarios[::step]
    lexicon = load_lexicon()
    report = denominalize_with_lexicon(scenarios, lexicon)
    assert len(report.probes) + len(report.unchanged) == len(scenarios)
    # Only terms the assessment point names are targets; 676 of the 1,092 official prompts are rewritten.
    assert len(report.probes) >= 0.55 * len(scenarios)
    by_id = {s.id: s for s in scenarios}
    for probe in report.probes:
        assert probe.validate() == [], probe.id
        banned = banned_words(by_id[probe.scenario_id].levels["l2"].assessment_point, lexicon)
        for r in probe.replacements:
            if r.kind == "noun":
                assert not _description_words(r.description) & banned, (probe.id, r)


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
