"""Drift metrics on scripted chains: GenEval checks on drawn scenes, MCD / MGG that can fail, survival, resume."""

import os

os.environ["OMP_NUM_THREADS"] = "1"

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("scipy")

from _drift_scripted import (  # noqa: E402
    SCENES,
    SPECS,
    DroppingModel,
    IdentityModel,
    LookupEmbedder,
    RandomModel,
    ShapeDetector,
    draw_scene,
)
from PIL import Image  # noqa: E402

from vrforge.errors import UserError  # noqa: E402
from vrforge.runners.drift import chain, metrics  # noqa: E402
from vrforge.runners.drift.geneval import PixelColourClassifier, check_spec, relative_position  # noqa: E402
from vrforge.runners.drift.inputs import GenEvalSample, PairSample, validate_spec  # noqa: E402
from vrforge.runners.drift.run import run_drift, score_run  # noqa: E402

VOCABULARY = ["cat", "dog", "clock", "car", "banana", "suitcase"]


def _check(spec, objects, size=256):
    image = draw_scene(objects, size)
    queries = list(dict.fromkeys([r["class"] for r in spec["include"]] + VOCABULARY))
    detections = ShapeDetector().detect([image], [queries])[0]
    return check_spec(spec, image, detections, PixelColourClassifier(), threshold=0.1)


def _spec(tag):
    return next(s for s in SPECS if s["tag"] == tag)


# --------------------------------------------------------------------------- GenEval checks on drawn scenes


@pytest.mark.parametrize("size", [64, 256, 1024])
def test_every_drawn_scene_passes_its_spec_at_any_size(size):
    for spec in SPECS:
        validate_spec(spec, "test")
        result = _check(spec, SCENES[spec["prompt"]], size)
        assert result.passed, (spec["prompt"], result.reasons)
        assert result.hallucinated == []


@pytest.mark.parametrize(("tag", "objects", "kind"), [
    ("single_object", [], "missing"),
    ("single_object", [("dog", "red", 100, 100)], "misidentified"),
    ("counting", [("clock", "white", 40, 100)], "count"),
    ("counting", [("clock", "white", 20, 100), ("clock", "white", 100, 100), ("clock", "white", 180, 100)], "count"),
    ("colors", [("car", "red", 90, 120)], "colour"),
    ("position", [("cat", "green", 180, 120), ("dog", "yellow", 30, 120)], "position"),
    ("position", [("cat", "green", 120, 30), ("dog", "yellow", 120, 180)], "position"),
    ("color_attr", [("cat", "blue", 40, 60), ("dog", "red", 150, 160)], "colour"),
    ("two_object", [("banana", "yellow", 30, 40)], "missing"),
])
def test_a_broken_scene_fails_with_its_kind(tag, objects, kind):
    result = _check(_spec(tag), objects)
    assert not result.passed
    assert result.kinds[0] == kind, result.reasons
    assert result.reasons


def test_an_extra_object_is_hallucinated_but_passes():
    result = _check(_spec("single_object"), [("cat", "red", 100, 100), ("suitcase", "black", 10, 200)])
    assert result.passed and result.hallucinated == ["suitcase"]


def test_position_is_a_direction_at_any_scale():
    # 1 px apart horizontally, far apart vertically: "above", never "left of" (the unnormalised cut says both)
    for scale in (1, 16):
        a = [0, 0, 10 * scale, 10 * scale]
        b = [1 * scale, 100 * scale, 11 * scale, 110 * scale]
        assert relative_position(a, b) == {"above"}
    assert relative_position([0, 0, 10, 10], [0, 0, 10, 10]) == set()
    assert relative_position([0, 0, 10, 10], [100, 0, 110, 10]) == {"left of"}


def test_a_spec_with_a_bad_position_is_refused():
    with pytest.raises(UserError, match="position"):
        validate_spec({"tag": "position", "prompt": "x", "include": [{"class": "cat", "position": ["left of", 0]}]}, "p")
    with pytest.raises(UserError, match="colour"):
        validate_spec({"tag": "colors", "prompt": "x", "include": [{"class": "cat", "color": "teal"}]}, "p")


# --------------------------------------------------------------------------- chains


def _pairs(n=4):
    rng = np.random.Generator(np.random.PCG64(7))
    samples = []
    for k in range(n):
        image = Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))
        samples.append(PairSample(f"s{k}", f"caption number {k} of a scene", image))
    return samples


def _geneval():
    return [GenEvalSample(str(k), spec["prompt"], spec) for k, spec in enumerate(SPECS)]


def _scorers(embedder=None):
    embedder = embedder or LookupEmbedder()
    return metrics.Scorers(text=embedder, image=embedder, clip=embedder, detector=ShapeDetector(),
                           colours=PixelColourClassifier(), vocabulary=VOCABULARY)


def _run(out, model, steps=8, pairs=None, geneval=None, seed=0, batch_size=4):
    return run_drift(out, model, pairs=pairs, geneval=geneval, steps=steps, seed=seed, batch_size=batch_size, progress=False,
                     model_settings=model.describe(), inputs={"test": True})


def _identity_setup():
    pairs, geneval = _pairs(), _geneval()
    model = IdentityModel({s.caption: s.image for s in pairs})
    for prompt, objects in SCENES.items():
        model.add(prompt, draw_scene(objects))
    embedder = LookupEmbedder()
    for s in pairs:
        embedder.register(s.id, s.caption, s.image)
    return pairs, geneval, model, embedder


def test_identity_chain_scores_mcd_1_and_mgg_equal_to_single_step(tmp_path, monkeypatch):
    monkeypatch.setattr(metrics, "CHUNK", 3)  # outputs are read in chunks: 4 pairs and 6 prompts cross their edges
    pairs, geneval, model, embedder = _identity_setup()
    _run(tmp_path, model, steps=8, pairs=pairs, geneval=geneval)
    results = score_run(tmp_path, _scorers(embedder), plots=False)
    mcd = results["mcd"]
    assert set(mcd["relations"]) == set(metrics.RELATIONS)
    assert mcd["relations"]["text-text"]["curve"].keys() == {"2", "4", "6", "8"}
    assert mcd["relations"]["text-image"]["curve"].keys() == {"1", "3", "5", "7"}
    assert mcd["mcd_avg"] == pytest.approx(1.0, abs=1e-6)
    mgg = results["mgg"]
    assert mgg["single_step"] == 100.0 and mgg["mgg"] == mgg["single_step"]
    assert set(mgg["per_step"].values()) == {100.0}
    assert set(mgg["survival"].values()) == {1.0}


def test_random_chain_scores_low(tmp_path):
    pairs, geneval, _, embedder = _identity_setup()
    _run(tmp_path, RandomModel(), steps=6, pairs=pairs, geneval=geneval)
    results = score_run(tmp_path, _scorers(embedder), plots=False)
    assert abs(results["mcd"]["mcd_avg"]) < 0.15
    for relation in results["mcd"]["relations"].values():
        assert abs(relation["mcd"]) < 0.3
    assert results["mgg"]["mgg"] == 0.0
    assert results["mgg"]["survival"]["1"] == 0.0


def test_an_object_dropped_at_step_5_shows_in_the_survival_curve(tmp_path):
    geneval = _geneval()
    _run(tmp_path, DroppingModel(), steps=8, geneval=geneval)
    results = score_run(tmp_path, _scorers(), plots=True)
    mgg = results["mgg"]
    assert mgg["survival"] == {"1": 1.0, "3": 1.0, "5": 0.5, "7": 0.5}
    assert mgg["per_step"]["1"] == 100.0 and mgg["per_step"]["5"] == 50.0
    assert mgg["single_step"] > mgg["mgg"]
    lost = {json.loads(line)["tag"]: json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()}
    for tag in ("position", "color_attr", "two_object"):
        assert lost[tag]["lost_at"] == 5 and lost[tag]["lost_kind"] == "missing"
    for tag in ("single_object", "counting", "colors"):
        assert lost[tag]["lost_at"] is None
    assert mgg["failure_kinds_per_step"]["5"]["missing"] == 3
    for name in ("survival.png", "mgg_curves.png", "report.md", "results.json"):
        assert (tmp_path / name).is_file()


def test_layout_is_the_public_scorers(tmp_path):
    pairs, geneval, model, _ = _identity_setup()
    _run(tmp_path, model, steps=4, pairs=pairs, geneval=geneval)
    root = tmp_path / "pairs"
    assert (root / "text-first" / "gen-0.csv").read_text().splitlines()[0] == "filename,caption"
    for step in (1, 3):
        assert sorted(p.name for p in (root / "text-first" / f"gen-{step}").iterdir()) == [f"s{k}.png" for k in range(4)]
        assert (root / "image-first" / f"gen-{step}.csv").is_file()
    for step in (2, 4):
        assert (root / "text-first" / f"gen-{step}.csv").is_file()
        assert (root / "image-first" / f"gen-{step}").is_dir()
    # GenEval: gen-<k>/<metadata line>.png, as the public MGG script reads them
    assert sorted(p.name for p in (tmp_path / "geneval" / "text-first" / "gen-1").iterdir()) == [f"{k}.png" for k in range(6)]
    assert not list(tmp_path.rglob(".*.tmp")) and not list(tmp_path.rglob(".gen-*"))


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != chain.MANIFEST_FILE}


def test_interrupted_chain_resumes_at_its_step_with_identical_files(tmp_path):
    pairs = _pairs(5)
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    _run(whole, RandomModel(), steps=6, pairs=pairs, batch_size=2)
    with pytest.raises(KeyboardInterrupt):
        _run(broken, RandomModel(fail_after=13), steps=6, pairs=pairs, batch_size=3)
    manifest = json.loads((broken / chain.MANIFEST_FILE).read_text())
    assert manifest["tracks"]["pairs/text-first"]["steps_complete"] == 2  # images of step 3 were cut short
    assert len(list((broken / "pairs" / "text-first" / "gen-3").iterdir())) == 3  # one batch of step 3 was written
    model = RandomModel()
    _run(broken, model, steps=6, pairs=pairs, batch_size=1)
    assert model.generated == 17  # the 2 images left of step 3, then steps 4, 5 and 6: nothing made twice
    assert _tree(broken) == _tree(whole)
    # the same seed gives the same files whatever the batch size; another seed other images
    other = tmp_path / "other"
    _run(other, RandomModel(), steps=2, pairs=pairs, seed=1)
    assert _tree(other)["pairs/text-first/gen-1/s0.png"] != _tree(whole)["pairs/text-first/gen-1/s0.png"]


def test_a_chain_killed_while_captioning_resumes_from_its_journal(tmp_path):
    pairs = _pairs(5)
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    _run(whole, RandomModel(), steps=4, pairs=pairs)
    with pytest.raises(KeyboardInterrupt):  # image-first step 1: 3 of 5 captions written
        _run(broken, RandomModel(fail_after_captions=3), steps=4, pairs=pairs, batch_size=1)
    journal = chain.journal_file(broken / "pairs", "image-first", 1)
    assert len(journal.read_text().splitlines()) == 3 and not (broken / "pairs" / "image-first" / "gen-1.csv").exists()
    with open(journal, "a") as handle:
        handle.write('{"id": "s3", "capt')  # a line torn by the kill
    model = RandomModel()
    _run(broken, model, steps=4, pairs=pairs, batch_size=2)
    assert model.captioned == 2 + 5 + 5 + 5  # the two missing captions of step 1, then steps 2 (text-first), 3 and 4
    assert _tree(broken) == _tree(whole) and not journal.exists()


def test_a_folder_made_with_other_settings_is_refused(tmp_path):
    pairs = _pairs(2)
    _run(tmp_path, RandomModel(), steps=2, pairs=pairs)
    with pytest.raises(UserError, match="other settings"):
        _run(tmp_path, RandomModel(), steps=2, pairs=pairs, seed=5)
    _run(tmp_path, RandomModel(), steps=4, pairs=pairs)  # more steps are added to the same run
    assert metrics.chain_length(tmp_path / "pairs", "text-first") == 4


def test_scoring_twice_gives_identical_report_files(tmp_path):
    pairs, geneval, model, embedder = _identity_setup()
    _run(tmp_path, DroppingModel(), steps=6, geneval=geneval)
    _run(tmp_path / "p", RandomModel(), steps=4, pairs=pairs)
    for folder in (tmp_path, tmp_path / "p"):
        score_run(folder, _scorers(embedder), plots=True)
        first = {n: (folder / n).read_bytes() for n in ("results.json", "samples.jsonl", "report.md") + (
            ("survival.png",) if folder == tmp_path else ("mcd_curves.png",))}
        score_run(folder, _scorers(embedder), plots=True)
        assert first == {n: (folder / n).read_bytes() for n in first}


def test_missing_outputs_count_as_zero_not_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(metrics, "CHUNK", 3)
    pairs, geneval, model, embedder = _identity_setup()
    _run(tmp_path, model, steps=2, pairs=pairs, geneval=geneval)
    (tmp_path / "pairs" / "text-first" / "gen-1" / "s0.png").unlink()
    (tmp_path / "geneval" / "text-first" / "gen-1" / "0.png").unlink()
    results = score_run(tmp_path, _scorers(embedder), plots=False)
    assert results["mcd"]["relations"]["text-image"]["missing"] == 1
    assert results["mcd"]["relations"]["text-image"]["mcd"] == pytest.approx(0.75, abs=1e-6)
    assert results["mgg"]["per_task"]["single_object"]["1"] == 0.0


class _StyleClip:
    """Style prompts are axes 0-4; a bright image reads as the first style (a photograph), a dark one as the second."""

    def embed_texts(self, texts):
        return np.stack([np.eye(8)[metrics.STYLES.index(t) if t in metrics.STYLES else 7] for t in texts]).astype(np.float32)

    def embed_images(self, images):
        return np.stack([np.eye(8)[0 if np.asarray(im).mean() > 100 else 1] for im in images]).astype(np.float32)


class _DarkeningModel:
    """Each round trip darkens the picture (the brightness carries the number of captions so far)."""

    def caption(self, image):
        return " ".join(["again"] * (round((200 - np.asarray(image).mean()) / 60) + 1))

    def generate(self, text, seed):
        return Image.new("RGB", (16, 16), (200 - 60 * len(text.split()),) * 3)

    def describe(self):
        return {"kind": "scripted-darkening"}


def test_a_style_change_is_counted_at_its_step(tmp_path):
    pairs = [PairSample(f"s{k}", "again", Image.new("RGB", (16, 16), (200, 200, 200))) for k in range(2)]
    _run(tmp_path, _DarkeningModel(), steps=6, pairs=pairs)
    embedder = LookupEmbedder()
    results = score_run(tmp_path, metrics.Scorers(text=embedder, image=embedder, clip=_StyleClip()), plots=False)
    assert results["mcd"]["style_changes_per_step"] == {"4": 2, "6": 2}
    record = json.loads((tmp_path / "samples.jsonl").read_text().splitlines()[0])
    assert record["style_changed"] == {"4": "a photograph -> a cartoon", "6": "a photograph -> a cartoon"}


def test_a_folder_laid_out_by_another_tool_is_scored_with_the_metadata_file(tmp_path):
    pairs, geneval, model, embedder = _identity_setup()
    _run(tmp_path, DroppingModel(), steps=6, geneval=geneval)
    (tmp_path / chain.MANIFEST_FILE).unlink()
    (tmp_path / "geneval" / chain.SPECS_FILE).unlink()
    with pytest.raises(UserError, match="--geneval-metadata"):
        metrics.read_specs(tmp_path / "geneval")
    metadata = tmp_path / "meta.jsonl"
    metadata.write_text("".join(json.dumps(spec) + "\n" for spec in SPECS))
    specs = metrics.read_specs(tmp_path / "geneval", metadata)
    results = score_run(tmp_path, _scorers(embedder), specs=specs, plots=False)
    assert results["model"] is None and results["mgg"]["survival"] == {"1": 1.0, "3": 1.0, "5": 0.5}


def test_the_public_scorers_readers_line_up_our_files(tmp_path):
    pd = pytest.importorskip("pandas")
    pairs, geneval, model, _ = _identity_setup()
    _run(tmp_path, model, steps=4, pairs=pairs, geneval=geneval)
    root = tmp_path / "pairs"
    # its open_annotation_file: read (latin1), sort by filename; captions of every step align with gen-0's
    frames = {k: pd.read_csv(root / "text-first" / f"gen-{k}.csv", encoding="latin1").sort_values(by="filename")
              for k in (0, 2, 4)}
    assert all(list(f["filename"]) == list(frames[0]["filename"]) for f in frames.values())
    for name in frames[0]["filename"]:  # its open_image: the file name without .png, then .png
        assert (root / "text-first" / "gen-3" / (name.replace(".png", "") + ".png")).is_file()
    first = pd.read_csv(root / "image-first" / "gen-1.csv", encoding="latin1").sort_values(by="filename")
    for name in first["filename"]:
        assert (root / "image-first" / "gen-0" / name).is_file() and (root / "image-first" / "gen-2" / name).is_file()
    # its MGG: imagedir + f"gen-{gen}", then f"{idx}.png" with idx the metadata line
    imagedir = str(tmp_path / "geneval" / "text-first") + "/"
    assert all(Path(imagedir + "gen-1", f"{idx}.png").is_file() for idx in range(len(SPECS)))
