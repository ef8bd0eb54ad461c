"""The reliance audit end to end with scripted models: a blind one fails every metric, a looking one passes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vrforge.builds.reliance_build import build_reliance, load_reliance_recipe
from vrforge.cli import main
from vrforge.runners.reliance import perturb
from vrforge.runners.reliance.audit import DEFAULT_THRESHOLDS, AuditError, parse_thresholds
from vrforge.runners.reliance.metrics import js_divergence

ROOT = Path(__file__).resolve().parents[1]
FAST = ["blur-16", "noise-40", "greyscale", "occlusion-75", "replace", "blank"]


@pytest.fixture(scope="module")
def golden(tmp_path_factory) -> Path:
    from dataclasses import replace

    recipe = replace(load_reliance_recipe(ROOT / "builds/recipes/reliance-v0.1.0.toml"), count=4)
    return build_reliance(recipe, tmp_path_factory.mktemp("golden") / "ds")


def audit(golden: Path, out: Path, model: str, *extra: str) -> int:
    return main(["reliance", "audit", str(golden), "--backend", "baseline", "--model", model, "--out", str(out),
                 "--repeats", "1", "--perturbations", *FAST, "--quiet", "--no-plots", *extra])


def test_js_divergence():
    assert js_divergence([0.5, 0.5], [0.5, 0.5]) == 0
    assert js_divergence([1, 0], [0, 1]) == pytest.approx(1.0)
    assert 0 < js_divergence([0.7, 0.3], [0.4, 0.6]) < 1
    with pytest.raises(ValueError):
        js_divergence([0, 0], [1, 0])


def test_perturbations_are_seeded_and_do_what_they_say():
    image = Image.new("RGB", (64, 64), (200, 30, 30))
    mask = np.zeros((64, 64), bool)
    mask[16:48, 8:40] = True
    assert perturb.ladder()[:4] == ["blur-2", "blur-4", "blur-8", "blur-16"] and len(perturb.ladder()) == 14
    a = perturb.apply("noise-20", image, perturb.perturb_rng(0, "x", "noise-20", 0))
    b = perturb.apply("noise-20", image, perturb.perturb_rng(0, "x", "noise-20", 0))
    c = perturb.apply("noise-20", image, perturb.perturb_rng(0, "x", "noise-20", 1))
    assert a.tobytes() == b.tobytes() != c.tobytes()
    grey = np.asarray(perturb.apply("greyscale", image, None))
    assert (grey[..., 0] == grey[..., 1]).all()
    assert (np.asarray(perturb.apply("blank", image, None)) == 255).all()
    for share in (25, 50, 75):
        occluded = np.asarray(perturb.apply(f"occlusion-{share}", image, perturb.perturb_rng(0, "x", "o", 0), mask))
        covered = (occluded == perturb.OCCLUDER).all(axis=2)
        assert not (covered & ~mask).any()  # inside the relevant region's box
        assert covered.sum() / mask.sum() == pytest.approx(share / 100, abs=0.05)
    other = Image.new("RGB", (32, 32), (0, 0, 255))
    assert perturb.apply("replace", image, perturb.perturb_rng(0, "x", "r", 0), pool=[other]).size == (64, 64)
    with pytest.raises(ValueError):
        perturb.split_name("blur-3")


def test_blind_model_fails_every_metric_and_the_gate(golden, tmp_path, capsys):
    assert audit(golden, tmp_path / "blind", "blind", "--min-confidence", "0") == 1
    err = capsys.readouterr().err
    for name in ("AVR 0.000 < 0.40 on colour", "CFC 0.000 < 0.70 on relation", "VSS[blank] 0.000 < 0.05 on count"):
        assert name in err
    report = json.loads((tmp_path / "blind" / "report.json").read_text())
    for summary in report["per_type"].values():
        assert summary["avr"] == 0 and summary["cfc"] == 0
        assert max(summary["vss"].values()) == 0
    assert not report["gate"]["passed"]


def test_looking_model_passes(golden, tmp_path, capsys):
    assert audit(golden, tmp_path / "looking", "looking") == 0
    assert "gate passed" in capsys.readouterr().out
    report = json.loads((tmp_path / "looking" / "report.json").read_text())
    assert report["model"]["model"] == "looking" and report["distribution_source"] == "scripted"
    assert set(report["versions"]) >= {"python", "vrforge", "numpy"} and report["seeds"]["audit"] == 0
    for summary in report["per_type"].values():
        assert summary["accuracy"] == 1 and summary["avr"] == 1 and summary["cfc"] == 1
        assert summary["vss"]["blank"] > DEFAULT_THRESHOLDS["vss"]
    item = report["items"][0]
    assert item["inputs"]["image_sha256"] and len(item["perturbed"]["blank"]) == 1
    tables = (tmp_path / "looking" / "tables.md").read_text()
    assert "## colour" in tables and "| blank |" in tables
    # a stricter per-type threshold names its metric and type
    assert audit(golden, tmp_path / "looking", "looking", "--threshold", "existence.vss=0.99") == 1
    assert "VSS[blank]" in capsys.readouterr().err


def test_resume_and_conflicting_settings(golden, tmp_path, capsys):
    out = tmp_path / "run"
    assert audit(golden, out, "looking", "--limit", "1", "--types", "colour") == 0
    first = (out / "samples.jsonl").read_bytes()
    assert audit(golden, out, "looking", "--limit", "1", "--types", "colour") == 0
    assert "audited 0 items (1 already done)" in capsys.readouterr().out
    assert (out / "samples.jsonl").read_bytes() == first
    assert audit(golden, out, "blind", "--limit", "1", "--types", "colour") == 2
    assert "other settings" in capsys.readouterr().err


def test_user_mistakes_are_one_line(golden, tmp_path, capsys):
    assert audit(golden, tmp_path / "x", "looking", "--threshold", "avr=lots") == 2
    assert audit(golden, tmp_path / "y", "blind", "--internals") == 2
    assert "--internals needs a transformers backend" in capsys.readouterr().err
    assert main(["reliance", "audit", str(tmp_path / "none"), "--backend", "baseline", "--model", "blind"]) == 2
    with pytest.raises(AuditError):
        parse_thresholds(["speed=1"])
    assert parse_thresholds(["count.cfc=0.5"])["per_type"] == {"count": {"cfc": 0.5}}


def test_tacit_release_gets_the_ladder_only(built, tmp_path, capsys):
    out = tmp_path / "tacit"
    code = main(["reliance", "audit", str(built), "--backend", "baseline", "--model", "blind", "--out", str(out),
                 "--repeats", "1", "--perturbations", "blur-2", "replace", "blank", "--limit", "1", "--quiet", "--no-plots"])
    assert code == 1
    err = capsys.readouterr().err
    assert "VSS[blank] 0.000 < 0.05 on maze" in err and "AVR" not in err  # no counterfactuals: AVR/CFC are not gated
    report = json.loads((out / "report.json").read_text())
    assert report["dataset"]["kind"] == "tacit" and report["dataset"]["resolution"] == 1024
    assert report["per_type"]["maze"]["items"] == 3 and report["per_type"]["maze"]["avr"] is None
    first = report["items"][0]
    assert first["counterfactual"] is None and len(first["original"]) == 5


def test_same_run_writes_the_same_bytes(golden, tmp_path):
    from vrforge.runners.reliance.audit import Settings, run_audit
    from vrforge.runners.reliance.backends import LookingBaseline

    settings = Settings(perturbations=("noise-40", "occlusion-50", "replace", "blank"), repeats=2, limit=2)
    for name in ("a", "b"):
        run_audit(golden, LookingBaseline(), tmp_path / name, settings)
    for file in ("samples.jsonl", "report.json", "tables.md", "ladder.png"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes(), file
    other = run_audit(golden, LookingBaseline(), tmp_path / "c", Settings(**{**settings.__dict__, "seed": 1}))
    first = json.loads((tmp_path / "a" / "report.json").read_text())
    assert other.report["items"] != first["items"]  # another seed, other noise and occluders
