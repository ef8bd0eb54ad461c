"""The build: dataset folder, determinism across workers, resume after a kill, load_dataset."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import datasets
from conftest import RECIPE
from PIL import Image

from vrforge.builds.build import build
from vrforge.builds.recipe import parse_recipe
from vrforge.fileio import sha256_file
from vrforge.pickers import PICKERS, PROBE
from vrforge.registry import get_task


def folder_hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in sorted(root.rglob("*")) if p.is_file()}


def test_folder_layout_and_manifest(built):
    names = {p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file()}
    for config in ("maze", "maze-512", "maze-2048"):
        for split in ("easy", "medium", "hard"):
            assert {f"data/{config}/{split}-00000-of-00002.parquet", f"data/{config}/{split}-00001-of-00002.parquet"} <= names
    assert {"README.md", "manifest.json", "gallery/maze.png"} <= names
    assert not any(n.startswith(".build") or "/." in n or n.startswith(".") for n in names)
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["rows"]["maze"] == {"easy": 3, "medium": 3, "hard": 3}
    assert manifest["config_hash"] == parse_recipe(RECIPE).config_hash()
    assert set(manifest["files"]) == names - {"manifest.json"}
    for name, entry in manifest["files"].items():
        assert sha256_file(built / name) == entry["sha256"]
    stats = manifest["difficulty_stats"]["maze"]
    assert stats["easy"]["route_length"] < stats["medium"]["route_length"] < stats["hard"]["route_length"]


def test_card_declares_configs_and_licence(built):
    card = (built / "README.md").read_text()
    assert card.startswith("---\nlicense: cc-by-4.0\n")
    assert "- config_name: maze\n" in card and "  default: true" in card
    assert "path: data/maze-2048/hard-*.parquet" in card
    assert "![gallery/maze.png](gallery/maze.png)" in card
    gallery = Image.open(built / "gallery" / "maze.png")
    assert gallery.width > 1000 and gallery.height > 300


def test_load_dataset_round_trip_with_typed_images(built):
    ds = datasets.load_dataset(str(built), "maze", split="hard")
    assert len(ds) == 3
    row = ds[0]
    assert row["id"] == "maze-hard-0000"
    assert isinstance(row["puzzle"], Image.Image) and row["puzzle"].width == 1024
    assert len(row["distractors"]) == 4 and all(isinstance(d, Image.Image) for d in row["distractors"])
    meta = json.loads(row["meta"])
    spec = get_task("maze")
    assert spec.verify(meta, row["solution"]).passed
    for image, name in zip(row["distractors"], row["distractor_violations"]):
        assert spec.verify(meta, image).failed == [name]
    small = datasets.load_dataset(str(built), "maze-512", split="easy")
    assert small[0]["solution"].width == 512 and small[0]["id"] == "maze-easy-0000"
    streamed = next(iter(datasets.load_dataset(str(built), "maze-2048", split="medium", streaming=True)))
    assert streamed["puzzle"].width == 2048


def test_worker_count_does_not_change_a_single_byte(built, tmp_path):
    out = tmp_path / "two"
    build(parse_recipe(RECIPE), out, workers=2, progress=False)
    assert folder_hashes(out) == folder_hashes(built)


def test_workers_replaced_after_every_item_change_no_byte(built, tmp_path, monkeypatch):
    """The pool replaces each worker after ITEMS_PER_WORKER items (their memory stays that of the
    tasks they built last); a worker replaced after every item builds the same bytes."""
    from vrforge.builds import executors

    monkeypatch.setattr(executors, "ITEMS_PER_WORKER", 1)
    out = tmp_path / "fresh"
    build(parse_recipe(RECIPE), out, workers=2, progress=False)
    assert folder_hashes(out) == folder_hashes(built)


def test_rebuilding_a_finished_folder_is_a_no_op(built):
    before = folder_hashes(built)
    result = build(parse_recipe(RECIPE), built, workers=1, progress=False)
    assert result.already_complete and folder_hashes(built) == before


def test_resume_after_kill_gives_the_uninterrupted_result(built, tmp_path):
    recipe = tmp_path / "mini.toml"
    recipe.write_text(
        'name = "mini"\nversion = "0.0.1"\nseed = 7\nresolutions = [512, 1024, 2048]\nrows_per_shard = 2\n'
        '[tasks.maze]\ncount = 3\ndifficulties = ["easy", "medium", "hard"]\n')
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "vrforge.cli", "build", str(recipe), "--out", str(out), "--quiet"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shards = out / ".build" / "shards"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(shards.glob("*.json"))) < 2:
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not (out / "manifest.json").exists()
    done = len(list(shards.glob("*.json")))
    assert 2 <= done < 6  # killed part-way: some shards committed, some not
    visible = [p for p in out.rglob("*.parquet")]
    assert all(not p.name.startswith(".") for p in visible)
    finished = subprocess.run(command, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    assert folder_hashes(out) == folder_hashes(built)


def test_a_different_recipe_never_overwrites_a_build(built, capsys):
    from vrforge.cli import main

    path = built.parent / "other.toml"
    path.write_text(
        'name = "mini"\nversion = "0.0.1"\nseed = 8\nrows_per_shard = 2\n[tasks.maze]\ncount = 3\n')
    before = folder_hashes(built)
    assert main(["build", str(path), "--out", str(built), "--quiet"]) == 2
    assert "holds a different build" in capsys.readouterr().err
    assert folder_hashes(built) == before


def test_audit_passes_a_fresh_build_and_records_every_figure(built, tmp_path):
    import shutil

    from vrforge.builds.audit import audit

    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    report = audit(copy, progress=False)
    assert report["passed"], report["problems"] + report["row_failure_examples"]
    assert report["rows_checked"] == 27  # 3 puzzles x 3 difficulties x 3 resolutions
    assert set(report["pickers"]["maze"]) == {*PICKERS, PROBE}
    assert all(0.0 <= value <= 1.0 for value in report["pickers"]["maze"].values())
    assert sum(report["answer_positions"]["counts"]) == 9
    # every puzzle's aspects in play, counted per level from the rows
    aspects = report["aspects_in_play"]["maze"]
    assert list(aspects) == ["easy", "medium", "hard"]
    assert all(sum(level["counts"].values()) == 3 and level["least"] >= 1 for level in aspects.values())
    rows = datasets.load_dataset(str(copy), "maze", split="hard")
    assert sorted(rows["aspects_in_play"]) == sorted(int(k) for k, v in aspects["hard"]["counts"].items() for _ in range(v))
    assert json.loads((copy / "audit.json").read_text())["manifest_sha256"] == sha256_file(copy / "manifest.json")


def test_the_audit_fails_a_task_whose_options_give_the_answer_away(built, tmp_path, monkeypatch):
    import shutil

    from vrforge.builds import audit as audit_module

    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    seen = []

    def leaky(features, answers):  # the real figures, with the probe finding half the answers
        seen.append(features.shape)
        return {**dict.fromkeys(PICKERS, 0.2), PROBE: 0.5}

    monkeypatch.setattr(audit_module, "gate_figures", leaky)
    monkeypatch.setattr(audit_module, "PICKER_MIN_PUZZLES", 9)
    report = audit_module.audit(copy, progress=False)
    # every puzzle of the task once (smallest resolution), then each level's three
    assert seen == [(9, 5, 6), (3, 5, 6), (3, 5, 6), (3, 5, 6)]
    assert not report["passed"]
    assert "maze: the learned context-blind probe scores 0.500 > 0.3" in report["problems"]


def test_a_passed_audit_writes_its_figures_into_the_card(built, tmp_path):
    import shutil

    from vrforge.builds.audit import audit
    from vrforge.builds.publish import plan_upload
    from vrforge.cards.card import AUDIT_PENDING

    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    assert AUDIT_PENDING in (copy / "README.md").read_text()
    report = audit(copy, progress=False)
    assert report["passed"]
    card = (copy / "README.md").read_text()
    assert AUDIT_PENDING not in card
    accuracy = report["pickers"]["maze"]
    assert f"| `maze` | {accuracy['medoid']:.3f} | {accuracy['closest_to_mean']:.3f} | {accuracy['odd_one_out']:.3f} |" in card
    assert f"{report['rows_checked']:,} rows, 0 failures" in card and "| `maze` | route_length |" in card
    hard = report["aspects_in_play"]["maze"]["hard"]
    assert "Aspects in play" in card and f"| `maze` | hard | {hard['counts'].get('1', 0)} |" in card
    manifest = json.loads((copy / "manifest.json").read_text())
    assert manifest["files"]["README.md"]["sha256"] == sha256_file(copy / "README.md")
    assert plan_upload(copy, "org/tacit").tag == "v0.0.1"  # audited and unmodified: publishable
    assert len(datasets.load_dataset(str(copy), "maze", split="easy")) == 3  # the card's YAML is untouched

    before = folder_hashes(copy)
    assert audit(copy, progress=False)["passed"]
    assert folder_hashes(copy) == before  # a second audit changes nothing


def test_an_audit_stopped_between_card_and_manifest_is_finished_by_the_next(built, tmp_path):
    import shutil

    from vrforge.builds.audit import audit

    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    manifest = (copy / "manifest.json").read_bytes()
    audit(copy, progress=False)
    (copy / "manifest.json").write_bytes(manifest)  # the card has its figures, the manifest does not know
    (copy / "audit.json").unlink()
    report = audit(copy, progress=False)
    assert report["passed"], report["problems"]
    assert json.loads((copy / "manifest.json").read_text())["files"]["README.md"]["sha256"] == sha256_file(copy / "README.md")

    card = (copy / "README.md").read_text()
    (copy / "README.md").write_text(card.replace("## Licence", "## Licence (edited)"))
    assert "sha256 mismatch: README.md" in audit(copy, progress=False)["problems"]


def test_audit_catches_tampering(built, tmp_path):
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from vrforge.builds.audit import audit

    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    (copy / "gallery" / "maze.png").write_bytes(b"changed")
    shard = copy / "data" / "maze-512" / "easy-00000-of-00002.parquet"
    table = pq.read_table(shard)
    rows = table.to_pylist()
    rows[0]["distractors"][0] = rows[0]["solution"]  # a "distractor" identical to the solution
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), shard)
    report = audit(copy, progress=False)
    assert not report["passed"]
    assert "sha256 mismatch: gallery/maze.png" in report["problems"]
    assert any(p.startswith("sha256 mismatch: data/maze-512/easy-00000") for p in report["problems"])
    failures = report["row_failure_examples"]
    assert any("maze-easy-0000" in f and "fails nothing" in f for f in failures)
    assert any("maze-easy-0000: two options are identical pixels" in f for f in failures)


def test_chi_square_uniform_closed_form():
    from vrforge.builds.audit import chi_square_uniform

    assert chi_square_uniform([20, 20, 20, 20, 20]) == (0.0, 1.0)
    statistic, p = chi_square_uniform([100, 0, 0, 0, 0])
    assert statistic == 400.0 and p < 1e-80
    assert abs(chi_square_uniform([25, 15, 20, 22, 18])[1] - 0.574697) < 1e-6  # scipy.stats.chisquare


def test_card_declares_features_and_split_sizes_that_the_audit_checks(built, tmp_path):
    import shutil

    import yaml

    from vrforge.builds.audit import audit, card_metadata

    card = (built / "README.md").read_text()
    info = {i["config_name"]: i for i in card_metadata(card)["dataset_info"]}
    assert {s["name"]: s["num_examples"] for s in info["maze-2048"]["splits"]} == {"easy": 3, "medium": 3, "hard": 3}
    assert {"name": "distractors", "list": "image"} in info["maze"]["features"]
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    front, body = card.split("\n---\n", 1)
    metadata = yaml.safe_load(front.removeprefix("---\n"))
    metadata["dataset_info"][0]["splits"][0]["num_examples"] = 4
    metadata["dataset_info"][1]["features"][0]["dtype"] = "int64"
    (copy / "README.md").write_text("---\n" + yaml.safe_dump(metadata, sort_keys=False) + "---\n" + body)
    problems = audit(copy, progress=False)["problems"]
    assert "maze/easy: card declares 4 rows, files hold 3" in problems
    assert any(p.startswith("maze-512/") and "card features differ from the parquet schema" in p for p in problems)


def test_the_audit_puts_a_human_baseline_into_the_card(built, tmp_path):
    import shutil

    import pytest

    from vrforge.builds.audit import AuditError, audit

    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    human = tmp_path / "report.json"  # the shape `vrforge study report` writes
    human.write_text(json.dumps({"studies": [{"kind": "tacit-choice", "participants": 3, "answers": 3, "accuracy": {
        "per_task_difficulty": [{"task": "maze", "difficulty": "easy", "people": 3, "answers": 3, "accuracy": 2 / 3,
                                 "ci95": {"low": 0.0, "high": 1.0}, "median_seconds": 12.5}]}}]}))
    report = audit(copy, progress=False, human=human)
    assert report["passed"]
    card = (copy / "README.md").read_text()
    assert "### Human performance" in card and "| maze | easy | 3 | 3 | 0.667 |" in card
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(AuditError, match="is not a `vrforge study report` report.json"):
        audit(copy, progress=False, human=tmp_path / "bad.json")
