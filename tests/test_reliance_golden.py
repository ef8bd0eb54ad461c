"""Golden reliance scenes: every counterfactual changes exactly the queried fact, the checks can fail, the release builds."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from vrforge.builds.reliance_build import audit_reliance, build_reliance, load_reliance_recipe
from vrforge.cli import main
from vrforge.generators.reliance.scenes import (
    QUESTION_TYPES,
    decode,
    footprint,
    generate_item,
    png,
    read_answer,
    render,
    verify_item,
)

ROOT = Path(__file__).resolve().parents[1]
PER_TYPE = 12


@pytest.fixture(scope="module")
def items():
    return {q: [generate_item(q, i) for i in range(PER_TYPE)] for q in QUESTION_TYPES}


def changed_objects(item):
    scene, cf = item.meta["scene"]["objects"], item.meta["counterfactual_scene"]["objects"]
    return [o for o in scene if o not in cf], [o for o in cf if o not in scene]


@pytest.mark.parametrize("qtype", QUESTION_TYPES)
def test_counterfactual_changes_exactly_the_queried_fact(items, qtype):
    for item in items[qtype]:
        assert verify_item(item) == [], item.id
        image, cf = decode(item.image), decode(item.counterfactual)
        assert read_answer(item.meta, image) == item.answer
        assert read_answer(item.meta, cf) == item.counterfactual_answer != item.answer
        gone, added = changed_objects(item)
        if qtype in ("colour", "position", "relation"):
            # one object, and only the attribute asked about
            assert len(gone) == len(added) == 1
            keys = {k for k in gone[0] if gone[0][k] != added[0][k]}
            assert keys == ({"colour"} if qtype == "colour" else {"x", "y"}) or keys <= {"x", "y"}
        else:
            assert (len(gone) == 0) != (len(added) == 0)  # objects only added or only removed
            target = item.meta["target"]
            assert all(o["shape"] == target["shape"] and o["colour"] == target["colour"] for o in gone + added)
        differs = (image != cf).any(axis=2)
        assert differs.any()
        assert not (differs & ~footprint(gone + added)).any()


def test_answers_are_balanced_and_items_deterministic(items):
    for qtype in QUESTION_TYPES:
        answers = {item.answer for item in items[qtype]}
        assert len(answers) >= (2 if qtype == "existence" else 3), qtype
        positions = {item.answer_index for item in items[qtype]}
        assert len(positions) >= 2
    again = generate_item("count", 3)
    assert again.image == items["count"][3].image and again.meta == items["count"][3].meta


def test_verifier_catches_a_counterfactual_that_changes_something_else(items):
    item = items["colour"][0]
    meta = json.loads(json.dumps(item.meta))
    other = meta["counterfactual_scene"]["objects"][1]
    other["x"] = other["x"] + 3  # a distractor moved as well
    bad = replace(item, meta=meta, counterfactual=png(render(meta["counterfactual_scene"])))
    assert any(p.startswith("fact:") for p in verify_item(bad))
    same = replace(item, counterfactual=item.image, counterfactual_answer_index=item.answer_index)
    problems = verify_item(same)
    assert any("equals" in p for p in problems) and any(p.startswith("pixels:") for p in problems)
    wrong = replace(item, answer_index=(item.answer_index + 1) % len(item.options))
    if wrong.answer_index != item.counterfactual_answer_index:
        assert any(p.startswith("answer:") for p in verify_item(wrong))


def test_reader_cannot_read_a_blank_or_noise_picture(items):
    blank = np.full((256, 256, 3), 255, np.uint8)
    noise = np.random.default_rng(0).integers(0, 256, (256, 256, 3), dtype=np.uint8)
    for qtype in ("colour", "position", "relation"):
        item = items[qtype][0]
        assert read_answer(item.meta, blank) is None
        assert read_answer(item.meta, noise) != item.answer or qtype == "colour"


def test_release_builds_audits_and_loads(tmp_path):
    import datasets

    recipe = replace(load_reliance_recipe(ROOT / "builds/recipes/reliance-v0.1.0.toml"), count=3)
    one = build_reliance(recipe, tmp_path / "one", workers=1)
    two = build_reliance(recipe, tmp_path / "two", workers=2)
    manifest = json.loads((one / "manifest.json").read_text())
    assert manifest["files"] == json.loads((two / "manifest.json").read_text())["files"]
    assert manifest["rows"] == {q: {"test": 3} for q in QUESTION_TYPES}
    assert audit_reliance(one)["passed"]
    row = datasets.load_dataset(str(one), "relation", split="test")[0]
    assert row["image"].size == (256, 256) and row["counterfactual_answer"] != row["answer"]
    # a changed file fails the audit
    path = one / "data/count/test-00000-of-00001.parquet"
    path.write_bytes(path.read_bytes() + b"x")
    assert not audit_reliance(one)["passed"]


def test_cli_build_and_audit(tmp_path, capsys):
    out = tmp_path / "ds"
    assert main(["build", str(ROOT / "builds/recipes/reliance-v0.1.0.toml"), "--limit", "2", "--out", str(out), "--quiet"]) == 0
    assert main(["audit", str(out)]) == 0
    assert "10 items verified" in capsys.readouterr().out
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "reliance"\nname = "r"\nversion = "1"\ncount = 0\n')
    assert main(["build", str(bad), "--out", str(tmp_path / "x")]) == 2
    assert "'count' must be a positive integer" in capsys.readouterr().err
    # an interrupted build (files, no manifest) is built again; a folder with other files is refused
    (out / "manifest.json").unlink()
    assert main(["build", str(ROOT / "builds/recipes/reliance-v0.1.0.toml"), "--limit", "2", "--out", str(out), "--quiet"]) == 0
    (out / "notes.txt").write_text("mine")
    (out / "manifest.json").unlink()
    assert main(["build", str(ROOT / "builds/recipes/reliance-v0.1.0.toml"), "--limit", "2", "--out", str(out), "--quiet"]) == 2


@pytest.mark.slow
def test_full_release_counts_verify():
    for qtype in QUESTION_TYPES:
        for index in range(120):
            assert verify_item(generate_item(qtype, index)) == []
