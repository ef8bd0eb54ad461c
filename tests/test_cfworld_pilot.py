"""The cfeval-rate pilot of CF-World v0.3: a fixed seeded selection of 50 scenarios across the domains, every
question one a rater answers yes or no, and `vrforge study create cfeval-rate --pilot` / `--ids`."""

import json
from collections import Counter

import pytest
from PIL import Image

from vrforge.cli import main
from vrforge.generators.cfworld import lawbank
from vrforge.generators.cfworld.pilot import PILOT_SIZE, domain_shares, pilot_ids
from vrforge.generators.cfworld.rubric import check_yes_no
from vrforge.runners.study import items as make
from vrforge.runners.study.store import StudyError


@pytest.fixture(scope="module")
def seeds():
    return [scenario for _, scenario, _ in lawbank.read_compact()]


def test_domain_shares_are_proportional_with_one_each_at_least():
    assert domain_shares({"physics": 155, "biology": 94, "chemistry": 70, "geography": 45, "sociology": 40}, 50) == {
        "physics": 19, "biology": 12, "chemistry": 9, "geography": 5, "sociology": 5}
    assert domain_shares({"a": 98, "b": 1, "c": 1}, 10) == {"a": 8, "b": 1, "c": 1}
    assert domain_shares({"a": 3, "b": 2}, 50) == {"a": 3, "b": 2}


def test_the_pilot_is_fifty_seeded_scenarios_across_every_domain(seeds):
    ids = pilot_ids(seeds)
    assert len(ids) == PILOT_SIZE == len(set(ids)) and ids == pilot_ids(list(reversed(seeds)))
    by_id = {s.id: s for s in seeds}
    per_domain = Counter(by_id[i].domain for i in ids)
    assert per_domain == domain_shares(Counter(s.domain for s in seeds), PILOT_SIZE)
    assert pilot_ids(seeds, seed=1) != ids


def test_every_pilot_question_is_yes_no(seeds):
    chosen = set(pilot_ids(seeds))
    assert [p for s in seeds if s.id in chosen for p in check_yes_no(s.questions)] == []


def _release(tmp_path, seeds):
    scenarios = tmp_path / "scenarios.jsonl"
    scenarios.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in seeds), encoding="utf-8")
    images = tmp_path / "images"
    for s in seeds:
        (images / s.id).mkdir(parents=True)
        Image.new("RGB", (64, 64), (200, 30, 30)).save(images / s.id / "l3.png")
    return scenarios, images


def test_a_pilot_study_holds_the_pilot_scenarios_only(tmp_path, seeds, capsys):
    scenarios, images = _release(tmp_path, seeds)
    _, items = make.cfeval_study(scenarios, images, ["l3"], None, 0, pilot=True)
    assert sorted(i.private["scenario_id"] for i in items) == pilot_ids(seeds)
    (tmp_path / "ids.txt").write_text(f"{seeds[0].id}\n\n{seeds[1].id}\n", encoding="utf-8")
    assert main(["study", "create", "cfeval-rate", "--scenarios", str(scenarios), "--images", str(images), "--levels", "l3",
                 "--ids", str(tmp_path / "ids.txt"), "--out", str(tmp_path / "two.sqlite")]) == 0
    assert "2 items" in capsys.readouterr().out


def test_an_unknown_id_and_a_non_yes_no_pilot_question_are_refused(tmp_path, seeds):
    scenarios, images = _release(tmp_path, seeds)
    with pytest.raises(StudyError, match="1 scenario id.*no-such-scenario"):
        make.cfeval_study(scenarios, images, ["l3"], None, 0, ids=["no-such-scenario"])
    chosen = pilot_ids(seeds)[0]
    bad = [s if s.id != chosen else type(s)(**{**s.__dict__, "questions": tuple(
        type(q)(**{**q.__dict__, "question": "Which way does it lean?"}) if i == 0 else q for i, q in enumerate(s.questions))})
        for s in seeds]
    scenarios.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in bad), encoding="utf-8")
    with pytest.raises(StudyError, match="cannot answer yes or no"):
        make.cfeval_study(scenarios, images, ["l3"], None, 0, pilot=True)
