"""``vrforge drift`` end to end on tiny random-weight models (LLaVA captioner, Stable Diffusion, CLIP, DINOv2, OWLv2,
a sentence-transformers BERT), G = 4 on the CPU; the human cross-check; one-line errors."""

import os

os.environ["OMP_NUM_THREADS"] = "1"

import csv
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("diffusers")
pytest.importorskip("sentence_transformers")
torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from _tiny_vlm import build_tiny_llava  # noqa: E402
from PIL import Image  # noqa: E402
from shared_data import external  # noqa: E402

from vrforge.bench.drift_tiny import build_clip, build_dino, build_owlv2, build_sentence  # noqa: E402
from vrforge.cli import main  # noqa: E402
from vrforge.runners.drift import human  # noqa: E402

GENEVAL_LINES = [
    {"tag": "single_object", "include": [{"class": "cat", "count": 1}], "prompt": "a photo of a cat"},
    {"tag": "position", "include": [{"class": "cat", "count": 1}, {"class": "dog", "count": 1, "position": ["right of", 0]}],
     "prompt": "a photo of a dog right of a cat"},
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    from vrforge.bench.gpu_t2i import build_pipeline

    work = tmp_path_factory.mktemp("tiny-drift")
    build_pipeline("sd15", work / "sd-build", tiny=True).save_pretrained(work / "sd")
    corpus = ["a photo of a red cat on the left", "a dog and a blue car", "USER: ASSISTANT: Describe this image in one sentence."]
    build_tiny_llava(work / "llava", corpus)
    return {"sd": work / "sd", "llava": work / "llava", "clip": build_clip(work / "clip"), "dino": build_dino(work / "dino"),
            "owl": build_owlv2(work / "owl"), "sentence": build_sentence(work / "sentence")}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pairs")
    rng = np.random.Generator(np.random.PCG64(3))
    rows = []
    for k, caption in enumerate(["a red cat on the left", "a dog and a blue car", "a photo of a clock"]):
        Image.fromarray(rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)).save(folder / f"img{k}.png")
        rows.append({"filename": f"img{k}.png", "caption": caption})
    with open(folder / "captions.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["filename", "caption"])
        writer.writeheader()
        writer.writerows(rows)
    meta = tmp_path_factory.mktemp("geneval") / "meta.jsonl"
    meta.write_text("".join(json.dumps(row) + "\n" for row in GENEVAL_LINES), encoding="utf-8")
    return {"pairs": folder, "geneval": meta}


def _model_args(tiny):
    return ["--captioner", tiny["llava"], "--max-new-tokens", "6", "--generator", tiny["sd"], "--gen-steps", "2", "--size", "64",
            "--text-embedder", tiny["sentence"], "--image-embedder", tiny["dino"], "--clip", tiny["clip"],
            "--detector", tiny["owl"], "--local-files-only", "--quiet"]


def drift(*argv) -> int:
    return main(["drift", *[str(a) for a in argv]])


@pytest.fixture(scope="module")
def tiny_run(tiny, inputs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "tiny-pair"
    assert drift("run", "--out", out, "--pairs", inputs["pairs"], "--geneval", inputs["geneval"], "--steps", "4",
                 "--batch-size", "2", *_model_args(tiny)) == 0
    return out


def test_tiny_pair_end_to_end_g4(tiny_run, capsys):
    results = json.loads((tiny_run / "results.json").read_text())
    assert results["steps"] == 4
    relations = results["mcd"]["relations"]
    assert set(relations) == {"text-text", "text-image", "image-image", "image-text"}
    assert all(set(r["curve"]) in ({"1", "3"}, {"2", "4"}) for r in relations.values())
    assert -1 <= results["mcd"]["mcd_avg"] <= 1
    assert results["mgg"]["image_steps"] == [1, 3] and 0 <= results["mgg"]["mgg"] <= 100
    assert len((tiny_run / "samples.jsonl").read_text().splitlines()) == 3 + 2
    for step in (1, 3):
        images = sorted((tiny_run / "pairs" / "text-first" / f"gen-{step}").iterdir())
        assert [p.name for p in images] == ["img0.png", "img1.png", "img2.png"]
        assert Image.open(images[0]).size == (64, 64)
    manifest = json.loads((tiny_run / "drift_manifest.json").read_text())
    assert manifest["settings"]["model"]["kind"] == "pair"
    assert manifest["runs"][-1]["images"] == 3 * 2 + 3 * 2 + 2 * 2 and manifest["runs"][-1]["captions"] == 3 * 2 + 3 * 2 + 2 * 2
    assert (tiny_run / "embeddings.sqlite").is_file()
    assert json.loads((tiny_run / "timings.json").read_text())["embed_seconds"] > 0


def test_rerun_resumes_with_nothing_to_do_and_scores_the_same(tiny_run, tiny, inputs):
    before = (tiny_run / "results.json").read_bytes()
    assert drift("run", "--out", tiny_run, "--pairs", inputs["pairs"], "--geneval", inputs["geneval"], "--steps", "4",
                 "--batch-size", "3", *_model_args(tiny)) == 0
    manifest = json.loads((tiny_run / "drift_manifest.json").read_text())
    assert manifest["runs"][-1]["images"] == 0 and manifest["runs"][-1]["captions"] == 0
    assert (tiny_run / "results.json").read_bytes() == before


def test_score_and_table_commands(tiny_run, tiny, tmp_path, capsys):
    assert drift("score", tiny_run, "--steps", "2", "--text-embedder", tiny["sentence"], "--image-embedder", tiny["dino"],
                 "--clip", tiny["clip"], "--detector", tiny["owl"], "--local-files-only", "--name", "tiny", "--no-plots",
                 "--quiet") == 0
    results = json.loads((tiny_run / "results.json").read_text())
    assert results["steps"] == 2 and results["name"] == "tiny" and results["mgg"]["image_steps"] == [1]
    capsys.readouterr()
    paper = external("telephone-game-paper", "table1.csv")
    table_args = ["--paper-table", paper] if paper.is_file() else []
    assert drift("table", tiny_run, *table_args, "--out", tmp_path / "table.md") == 0
    text = capsys.readouterr().out
    assert text.startswith("| model | MCDavg | MGG |") and "| tiny |" in text
    if paper.is_file():
        assert "| BAGEL (paper) | 0.4414 | 78.2 |" in text


def test_a_crashing_model_is_one_line_and_exit_1_with_the_finished_steps_kept(tmp_path, inputs, capsys):
    plugin = tmp_path / "crash.py"
    plugin.write_text(
        "from PIL import Image\n"
        "class Crash:\n"
        "    def caption(self, image):\n"
        "        raise RuntimeError('CUDA out of memory\\nmore detail')\n"
        "    def generate(self, text, seed):\n"
        "        return Image.new('RGB', (8, 8))\n"
        "def make():\n"
        "    return Crash()\n", encoding="utf-8")
    out = tmp_path / "crash"
    assert drift("run", "--out", out, "--pairs", inputs["pairs"], "--steps", "2", "--unified", f"{plugin}:make",
                 "--no-score", "--quiet") == 1
    err = capsys.readouterr().err.strip()
    assert "RuntimeError: CUDA out of memory" in err and len(err.splitlines()) == 1
    assert len(list((out / "pairs" / "text-first" / "gen-1").glob("*.png"))) == 3  # step 1 of the text-first chain
    assert json.loads((out / "drift_manifest.json").read_text())["runs"][-1]["images"] == 3


def test_unified_model_from_a_file(tmp_path, inputs):
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "from PIL import Image\n"
        "class Echo:\n"
        "    def caption(self, image):\n"
        "        return 'a grey square'\n"
        "    def generate(self, text, seed):\n"
        "        return Image.new('RGB', (16, 16), (seed % 256, 0, 0))\n"
        "def make(**kwargs):\n"
        "    return Echo()\n", encoding="utf-8")
    out = tmp_path / "unified"
    assert drift("run", "--out", out, "--pairs", inputs["pairs"], "--steps", "3", "--unified", f"{plugin}:make",
                 "--no-score", "--quiet") == 0
    assert (out / "pairs" / "image-first" / "gen-3.csv").read_text().splitlines()[1] == "img0.png,a grey square"
    assert len(list((out / "pairs" / "text-first" / "gen-3").glob("*.png"))) == 3


@pytest.mark.parametrize(("argv", "needle"), [
    (["run", "--pairs", "{missing}", "--steps", "2", "--unified", "x:y"], "no such pairs folder"),
    (["run", "--pairs", "{pairs}", "--steps", "0", "--unified", "x:y"], "--steps must be at least 1"),
    (["run", "--pairs", "{pairs}", "--steps", "2", "--unified", "nosuchmodule_xyz:make", "--no-score"], "cannot import"),
    (["run", "--pairs", "{pairs}", "--steps", "2", "--generator", "{missing}", "--captioner", "x", "--no-score"],
     "no such model folder"),
    (["run", "--pairs", "{pairs}", "--steps", "2", "--unified", "x:y", "--colour-classifier", "clip", "--detector-threshold", "2"],
     "detector_threshold"),
    (["run", "--geneval", "{bad_meta}", "--steps", "2", "--unified", "x:y", "--no-score"], "unknown tag"),
    (["score", "{missing}"], "no such run folder"),
    (["human-import", "--key", "{missing}", "--ratings", "{missing}"], "no such key file"),
])
def test_bad_input_is_one_line_and_exit_2(argv, needle, inputs, tmp_path, capsys):
    bad_meta = tmp_path / "bad.jsonl"
    bad_meta.write_text(json.dumps({"tag": "weird", "include": [{"class": "cat"}], "prompt": "x"}) + "\n")
    values = {"missing": tmp_path / "nope", "pairs": inputs["pairs"], "bad_meta": bad_meta}
    argv = [a.format(**{k: str(v) for k, v in values.items()}) for a in argv]
    assert drift(*argv, "--out", tmp_path / "out", "--quiet") == 2 if argv[0] == "run" else drift(*argv) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "out" / "results.json").exists()


# --------------------------------------------------------------------------- human cross-check


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _scripted_run(folder: Path, inputs, kind: str) -> None:
    """A pairs run whose step-1 outputs are the originals (identity) or noise (random), scored with lookup vectors."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from _drift_scripted import IdentityModel, LookupEmbedder, RandomModel, ShapeDetector

    from vrforge.runners.drift import metrics
    from vrforge.runners.drift.inputs import load_pairs
    from vrforge.runners.drift.run import run_drift, score_run

    pairs = load_pairs(str(inputs["pairs"]))
    model = IdentityModel({s.caption: s.image for s in pairs}) if kind == "identity" else RandomModel()
    run_drift(folder, model, pairs=pairs, geneval=None, steps=2, seed=0, batch_size=2, progress=False,
              model_settings={"kind": kind}, inputs={})
    embedder = LookupEmbedder()
    for s in pairs:
        embedder.register(s.id, s.caption, s.image)
    score_run(folder, metrics.Scorers(text=embedder, image=embedder, clip=embedder, detector=ShapeDetector()), plots=False)


def test_human_export_is_blinded_and_import_reports_correlation_and_asymmetry(tmp_path, inputs, capsys):
    runs = {}
    for name in ("good", "bad", "worse"):
        runs[name] = tmp_path / name
        _scripted_run(runs[name], inputs, "identity" if name == "good" else "random")
    export_dir = tmp_path / "export"
    assert drift("human-export", *[f"{n}={p}" for n, p in runs.items()], "--to", export_dir, "--seed", "3") == 0
    text = (export_dir / "ratings.csv").read_text()
    assert not any(name in text for name in ("good", "bad", "worse", "img0", "identity"))
    rows = _rows(export_dir / "ratings.csv")
    assert len(rows) == 3 * 2 * 3 and {r["kind"] for r in rows} == {"I2T", "T2I"}
    key_path = tmp_path / "export.key.json"
    key = json.loads(key_path.read_text())
    # the candidates' order is shuffled: the first group does not list the runs in the order given
    orders = {tuple(key["candidates"][r["candidate"]]["run"] for r in rows[i:i + 3]) for i in range(0, len(rows), 3)}
    assert len(orders) > 1
    # raters: "good" understands and generates well; "bad" understands (Good) but generates Poor; "worse" is Poor
    for row in rows:
        run, kind = key["candidates"][row["candidate"]]["run"], row["kind"]
        row["rating"] = {"good": "Good", "bad": "Good" if kind == "I2T" else "Poor", "worse": "Poor"}[run]
        row["rank"] = {"good": "1", "bad": "2", "worse": "3"}[run]
    with open(tmp_path / "filled.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=human.COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    capsys.readouterr()
    assert drift("human-import", "--key", key_path, "--ratings", tmp_path / "filled.csv", "--out", tmp_path / "human.json") == 0
    summary = json.loads((tmp_path / "human.json").read_text())
    assert summary["runs"]["bad"]["understands_good_generates_poor"] == 1.0
    assert summary["runs"]["good"]["understands_good_generates_poor"] == 0.0
    assert summary["runs"]["worse"]["generates_good_understands_poor"] == 0.0
    assert summary["runs"]["good"]["rating"] == 1.0 and summary["runs"]["bad"]["rating"] == 0.5
    across = summary["correlation_across_runs"]["mcd_avg"]
    assert across["runs"] == 3 and across["pearson_with_rating"] > 0.8 and across["pearson_with_rank"] > 0.5
    items = summary["correlation_across_items"]["text-image"]
    assert items["items"] == 9 and items["pearson_with_rating"] > 0.9


def test_ratings_with_a_bad_label_are_refused(tmp_path, inputs, capsys):
    run = tmp_path / "one"
    _scripted_run(run, inputs, "identity")
    assert drift("human-export", run, "--to", tmp_path / "export") == 0
    rows = _rows(tmp_path / "export" / "ratings.csv")
    rows[0]["rating"] = "Excellent"
    with open(tmp_path / "filled.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=human.COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    capsys.readouterr()
    assert drift("human-import", "--key", tmp_path / "export.key.json", "--ratings", tmp_path / "filled.csv") == 2
    assert "Good, Medium or Poor" in capsys.readouterr().err


def test_openai_compatible_captioner_with_a_diffusers_generator(tiny, inputs, tmp_path):
    from fakeopenai import FakeOpenAI

    out = tmp_path / "endpoint"
    with FakeOpenAI(responder=lambda request: "a small red cat") as fake:
        assert drift("run", "--out", out, "--pairs", inputs["pairs"], "--steps", "2", "--captioner-endpoint", fake.base_url,
                     "--captioner-model", "fake-model", "--generator", tiny["sd"], "--gen-steps", "2", "--size", "64",
                     "--local-files-only", "--no-score", "--quiet") == 0
        assert len(fake.requests) == 3 + 3  # image-first step 1 and text-first step 2
    assert (out / "pairs" / "text-first" / "gen-2.csv").read_text().splitlines()[1:] == [
        f"img{k}.png,a small red cat" for k in range(3)]
    manifest = json.loads((out / "drift_manifest.json").read_text())
    assert manifest["settings"]["model"]["captioner"]["captioner"] == "openai"


@pytest.mark.slow
def test_tiny_pair_g20_end_to_end(tiny, inputs, tmp_path):
    out = tmp_path / "g20"
    assert drift("run", "--out", out, "--pairs", inputs["pairs"], "--geneval", inputs["geneval"], "--steps", "20",
                 *_model_args(tiny)) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["steps"] == 20
    assert all(len(r["curve"]) == 10 for r in results["mcd"]["relations"].values())
    assert results["mgg"]["image_steps"] == list(range(1, 20, 2))
    assert (out / "pairs" / "text-first" / "gen-20.csv").is_file() and (out / "pairs" / "image-first" / "gen-20").is_dir()
