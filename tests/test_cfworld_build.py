"""The CF-World release build: configs that load, a card that lists them, a manifest that matches, byte-identical rebuilds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
import pytest
import yaml

from vrforge.builds.audit import card_configs, card_metadata
from vrforge.builds.cfworld_build import (
    CONFIGS,
    CfworldBuildError,
    audit_cfworld,
    build_cfworld,
    load_cfworld_recipe,
    read_seed_scenarios,
    recipe_kind,
)
from vrforge.cli import main
from vrforge.fileio import sha256_file

ROOT = Path(__file__).resolve().parents[1]


def seed(sid: str, domain: str, l2: str, counterfactual: str, outcome: str) -> dict:
    levels = {"l1": {"prompt": "Draw a polar bear on the ice.", "assessment_point": "A white bear"},
              "l2": {"prompt": l2, "assessment_point": outcome},
              "l3": {"prompt": "Draw a polar bear basking in the sun.", "assessment_point": outcome}}
    questions = [{"level": lvl, "dimension": dim, "question": f"{dim} at {lvl}?", "criteria": "yes or no", "weight": w,
                  "source_id": "", "generator_model": ""}
                 for lvl in ("l1", "l2", "l3") for dim, w in (("visual_integrity", 3.0), ("assessment_point", 8.0))]
    return {"id": sid, "domain": domain, "subdomain": "metabolism", "law": "Animals eat; plants photosynthesise.",
            "counterfactual": counterfactual, "levels": levels, "questions": questions,
            "provenance": {"kind": "manual", "model": "", "prompt_hash": "", "review_status": "approved", "source": "",
                           "flags": []}}


SEEDS = {
    "biology.yaml": [
        seed("biology-metabolism-0001", "biology", "If mammals performed photosynthesis, draw a polar bear. Its fur should be green.",
             "If mammals performed photosynthesis", "The polar bear's fur is green"),
        seed("biology-metabolism-0002", "biology", "If time ran backwards, draw an hourglass.", "If time ran backwards",
             "The sand rises"),
    ],
    "physics.yaml": [
        seed("physics-optics-0001", "physics", "If shadows were bright, draw a tree casting its shadow on a lawn.",
             "If shadows were bright", "The tree's shadow on the lawn is bright"),
    ],
}
RECIPE = """kind = "cfworld"
name = "cfworld"
version = "0.0.1"
license = "cc-by-4.0"
seeds = "seeds"
"""


def write_fixture(root: Path, recipe: str = RECIPE) -> Path:
    (root / "seeds").mkdir(parents=True, exist_ok=True)
    for name, scenarios in SEEDS.items():
        (root / "seeds" / name).write_text(yaml.safe_dump({"scenarios": scenarios}, sort_keys=False), encoding="utf-8")
    path = root / "cfworld.toml"
    path.write_text(recipe, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cfworld")
    return build_cfworld(write_fixture(root), root / "ds")


def test_folder_layout(built):
    files = sorted(p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file())
    assert files == ["README.md", *(f"data/{c}/test-00000-of-00001.parquet" for c in sorted(CONFIGS)), "manifest.json"]


@pytest.mark.parametrize("config, rows", [("scenarios", 3), ("rule_decoupling", 198), ("attribute_decoupling", 218),
                                          ("entity_cooccurrence", 226), ("denominalized", 2)])
def test_every_config_loads_with_load_dataset(built, tmp_path, config, rows):
    ds = datasets.load_dataset(str(built), config, split="test", cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == rows
    row = ds[0]
    if config == "scenarios":
        assert row["id"] == "biology-metabolism-0001" and set(row["levels"]) == {"l1", "l2", "l3"}
        assert row["questions"][0]["weight"] == 3.0 and row["provenance"]["review_status"] == "approved"
    elif config == "rule_decoupling":
        assert row["assessment_point"] and row["expected_direction"] == "down"
    elif config == "attribute_decoupling":
        assert row["variant"] == "rare" and row["prompt"] == "A photo of a purple banana on a kitchen table."
    elif config == "entity_cooccurrence":
        assert row["variant"] == "unusual" and row["prompt"] == "A camel walking across a snowy glacier."
    else:
        assert row["scenario_id"] == "biology-metabolism-0001" and row["mode"] == "lexicon"
        assert row["prompt"].startswith("If mammals performed photosynthesis, draw ") and "polar bear" not in row["prompt"]
        assert {r["term"] for r in row["replacements"]} >= {"polar bear", "fur", "green"}
    whole = datasets.load_dataset(str(built), config, cache_dir=str(tmp_path / "cache2"))
    assert list(whole) == ["test"]


def test_card_lists_configs_features_and_split_sizes(built):
    card = (built / "README.md").read_text(encoding="utf-8")
    meta = card_metadata(card)
    assert meta["license"] == "cc-by-4.0" and meta["task_categories"] == ["text-to-image"]
    assert meta["pretty_name"] == "CF-World 0.0.1" and meta["size_categories"] == ["n<1K"]
    assert card_configs(card) == {c: {"test": f"data/{c}/test-*.parquet"} for c in CONFIGS}
    assert [c.get("default", False) for c in meta["configs"]] == [True, False, False, False, False]
    manifest = json.loads((built / "manifest.json").read_text(encoding="utf-8"))
    for info in meta["dataset_info"]:
        (split,) = info["splits"]
        assert split["num_examples"] == manifest["rows"][info["config_name"]]["test"]
        assert split["num_bytes"] == manifest["files"][f"data/{info['config_name']}/test-00000-of-00001.parquet"]["bytes"]
        assert info["features"]
    for words in ("PRR", "RRR", "L1", "L2", "L3", "load_dataset", "rule_decoupling", "denominalized"):
        assert words in card


def test_manifest_hashes_every_file_and_reports_unchanged_prompts(built):
    manifest = json.loads((built / "manifest.json").read_text(encoding="utf-8"))
    files = {p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file()} - {"manifest.json"}
    assert set(manifest["files"]) == files
    for name, entry in manifest["files"].items():
        assert entry["sha256"] == sha256_file(built / name) and entry["bytes"] == (built / name).stat().st_size
    assert manifest["kind"] == "cfworld" and manifest["version"] == "0.0.1" and len(manifest["config_hash"]) == 64
    assert manifest["rows"] == {"scenarios": {"test": 3}, "rule_decoupling": {"test": 198},
                                "attribute_decoupling": {"test": 218}, "entity_cooccurrence": {"test": 226},
                                "denominalized": {"test": 2}}
    assert manifest["denominalization"]["unchanged"] == ["biology-metabolism-0002"]
    assert manifest["scenarios_per_domain"] == {"biology": 2, "physics": 1}


def test_rebuild_is_byte_identical(built, tmp_path):
    again = build_cfworld(write_fixture(tmp_path), tmp_path / "ds")
    names = sorted(p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(again).as_posix() for p in again.rglob("*") if p.is_file())
    for name in names:
        assert (built / name).read_bytes() == (again / name).read_bytes(), name
    before = (again / "manifest.json").read_bytes()
    build_cfworld(tmp_path / "cfworld.toml", again)  # the same build into the same folder: same bytes
    assert (again / "manifest.json").read_bytes() == before


def test_changed_input_refuses_to_overwrite_a_build(built, tmp_path):
    copy = tmp_path / "ds"
    shutil.copytree(built, copy)
    recipe = write_fixture(tmp_path)
    (tmp_path / "seeds" / "physics.yaml").unlink()
    with pytest.raises(CfworldBuildError, match="different build"):
        build_cfworld(recipe, copy)


def test_audit_passes_and_publish_plan_accepts_the_folder(built, tmp_path):
    from vrforge.builds.publish import plan_upload

    copy = tmp_path / "ds"
    shutil.copytree(built, copy)
    report = audit_cfworld(copy)
    assert report["passed"], report["problems"]
    assert report["rows_checked"] == 3 + 198 + 218 + 226 + 2
    plan = plan_upload(copy, "org/cfworld")
    assert plan.tag == "v0.0.1" and ("data/scenarios/test-00000-of-00001.parquet" in dict(plan.files))
    (copy / "data" / "rule_decoupling" / "test-00000-of-00001.parquet").write_bytes(b"tampered")
    assert main(["audit", str(copy)]) == 1


def test_limit_keeps_the_first_scenarios(tmp_path):
    out = build_cfworld(write_fixture(tmp_path), tmp_path / "ds", limit=1)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["rows"]["scenarios"] == {"test": 1} and manifest["rows"]["rule_decoupling"] == {"test": 198}


def test_cli_builds_and_reports(tmp_path, capsys):
    recipe = write_fixture(tmp_path, RECIPE + 'configs = ["rule_decoupling", "denominalized"]\n')
    assert main(["build", str(recipe), "--out", str(tmp_path / "ds")]) == 0
    out = capsys.readouterr().out
    assert "rule_decoupling 198" in out and "1 L2 prompts left unchanged" in out
    assert card_configs((tmp_path / "ds" / "README.md").read_text(encoding="utf-8")).keys() == {"rule_decoupling", "denominalized"}


@pytest.mark.parametrize("text, message", [
    ("kind = \"cfworld\"\nname = [\n", "invalid TOML"),
    ('kind = "cfworld"\nversion = "1"\n', "missing required field 'name'"),
    ('kind = "cfworld"\nname = "x"\nversion = "1"\ncolour = 3\n', "unknown key(s) colour"),
    ('kind = "cfworld"\nname = "x"\nversion = "1"\nconfigs = ["scenes"]\n', "unknown config 'scenes'"),
    ('kind = "cfworld"\nname = "x"\nversion = "1"\nconfigs = []\n', "non-empty list"),
    ('kind = "cfworld"\nname = "x"\nversion = "1"\nseeds = "nowhere"\n', "no seed folder"),
    ('kind = "tacit"\nname = "x"\nversion = "1"\n', "unknown key(s) kind"),  # read as a TACIT recipe
])
def test_malformed_recipe_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, text, message):
    recipe = tmp_path / "bad.toml"
    recipe.write_text(text, encoding="utf-8")
    assert main(["build", str(recipe), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("mutate, message", [
    (lambda s: s["biology.yaml"].append(dict(s["physics.yaml"][0])), "duplicate scenario id"),
    (lambda s: s["physics.yaml"][0].update(domain="astrology"), "domain"),
    (lambda s: s["physics.yaml"][0]["levels"].pop("l3"), "l3"),
])
def test_bad_seed_files_are_one_line(tmp_path, mutate, message):
    scenarios = json.loads(json.dumps(SEEDS))
    mutate(scenarios)
    for name, items in scenarios.items():
        (tmp_path / name).write_text(yaml.safe_dump({"scenarios": items}), encoding="utf-8")
    with pytest.raises(CfworldBuildError, match=message) as info:
        read_seed_scenarios(tmp_path)
    assert "\n" not in str(info.value)
    (tmp_path / "broken.yaml").write_text("scenarios: [\n", encoding="utf-8")
    with pytest.raises(CfworldBuildError):
        read_seed_scenarios(tmp_path)


def test_seed_reader_sorts_by_id(tmp_path):
    write_fixture(tmp_path)
    assert [s.id for s in read_seed_scenarios(tmp_path / "seeds")] == [
        "biology-metabolism-0001", "biology-metabolism-0002", "physics-optics-0001"]


def test_recipe_kind_dispatch(tmp_path):
    assert recipe_kind(ROOT / "builds" / "recipes" / "cfworld-v0.3.0.toml") == "cfworld"
    assert recipe_kind(ROOT / "builds" / "recipes" / "tacit.toml") == "tacit"
    assert recipe_kind(tmp_path / "missing.toml") == "tacit"
    release = load_cfworld_recipe(ROOT / "builds" / "recipes" / "cfworld-v0.3.0.toml")
    assert release.configs == CONFIGS and release.seeds is None and release.lexicon is None
    assert release.name == "cfworld" and release.version == "0.3.0"


def test_a_recipe_of_another_kind_is_refused_by_the_cfworld_loader(tmp_path):
    recipe = tmp_path / "tacit.toml"
    recipe.write_text('kind = "tacit"\nname = "x"\nversion = "1"\n', encoding="utf-8")
    with pytest.raises(CfworldBuildError, match="'kind' must be"):
        load_cfworld_recipe(recipe)
