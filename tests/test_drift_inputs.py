"""Drift inputs (folder, JSONL, Hugging Face dataset, GenEval metadata), the scoring config and the OpenAI captioner."""

import json

import numpy as np
import pytest
from fakeopenai import FakeOpenAI, HttpError, Refusal
from PIL import Image
from shared_data import require_external

from vrforge.errors import UserError
from vrforge.runners.drift.inputs import GENEVAL_TAGS, load_geneval, load_pairs
from vrforge.runners.drift.run import ScoringConfig


def _image(path, value=10):
    Image.new("RGB", (20, 20), (value, value, value)).save(path)


def test_folder_with_txt_captions_and_jsonl(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    for k in range(3):
        _image(folder / f"b {k}.png", k)
        (folder / f"b {k}.txt").write_text(f"caption {k}\n")
    samples = load_pairs(str(folder), limit=2)
    assert [(s.id, s.caption) for s in samples] == [("b_0", "caption 0"), ("b_1", "caption 1")]
    lines = [{"image": "f/b 2.png", "caption": "two", "id": "x/2"}, {"image": "f/b 1.png", "text": "one"}]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    samples = load_pairs(str(tmp_path / "pairs.jsonl"))
    assert [(s.id, s.caption, s.image.getpixel((0, 0))) for s in samples] == [("x_2", "two", (2, 2, 2)), ("b_1", "one", (1, 1, 1))]


def test_hugging_face_dataset_with_image_and_text_columns(tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = {"image": [Image.new("RGB", (16, 16), (k * 40, 0, 0)) for k in range(3)],
            "sentences": [["first one", "other"], ["second"], ["third"]]}
    dataset = datasets.Dataset.from_dict(rows, features=datasets.Features(
        {"image": datasets.Image(), "sentences": datasets.List(datasets.Value("string"))}))
    (tmp_path / "hf" / "data").mkdir(parents=True)
    dataset.to_parquet(str(tmp_path / "hf" / "data" / "validation-00000-of-00001.parquet"))
    samples = load_pairs(f"hf:{tmp_path / 'hf'}", split="validation", text_column="sentences")
    assert [(s.id, s.caption) for s in samples] == [("row-00000", "first one"), ("row-00001", "second"), ("row-00002", "third")]
    assert samples[2].image.getpixel((0, 0)) == (80, 0, 0)
    with pytest.raises(UserError, match="no column caption"):
        load_pairs(f"hf:{tmp_path / 'hf'}", split="validation")


@pytest.mark.parametrize(("setup", "needle"), [
    ("missing-caption", "no caption"),
    ("corrupt", "not an image"),
    ("duplicate", "share the id"),
    ("bad-json", "not JSON"),
])
def test_bad_pairs_are_one_line_errors(tmp_path, setup, needle):
    folder = tmp_path / "f"
    folder.mkdir()
    source = folder
    if setup == "missing-caption":
        _image(folder / "a.png")
    elif setup == "corrupt":
        (folder / "a.png").write_bytes(b"not a png")
        (folder / "a.txt").write_text("x")
    elif setup == "duplicate":
        _image(folder / "a.png")
        (tmp_path / "p.jsonl").write_text('{"image": "f/a.png", "caption": "x"}\n{"image": "f/a.png", "caption": "y"}\n')
        source = tmp_path / "p.jsonl"
    else:
        (tmp_path / "p.jsonl").write_text("{oops\n")
        source = tmp_path / "p.jsonl"
    with pytest.raises(UserError, match=needle):
        load_pairs(str(source))


def test_geneval_metadata_loads_every_prompt_with_its_line_as_id():
    path = require_external("geneval", "prompts", "evaluation_metadata.jsonl")
    samples = load_geneval(path)
    assert len(samples) == 553 and samples[0].id == "0" and samples[-1].id == "552"
    assert {s.tag for s in samples} == set(GENEVAL_TAGS)
    counting = load_geneval(path, tags=["counting"], limit=3)
    assert [s.tag for s in counting] == ["counting"] * 3 and int(counting[0].id) > 0


def test_scoring_config_from_toml_with_flag_overrides(tmp_path):
    path = tmp_path / "scoring.toml"
    path.write_text('[scoring]\nclip = "my/clip"\ndetector_threshold = 0.3\ncolour_classifier = "pixels"\n')
    config = ScoringConfig.load(path, {"detector_threshold": 0.2, "text_embedder": None})
    assert (config.clip, config.detector_threshold, config.colour_classifier) == ("my/clip", 0.2, "pixels")
    assert config.text_embedder == "sentence-transformers/all-mpnet-base-v2"
    path.write_text('[scoring]\nclipp = "x"\n')
    with pytest.raises(UserError, match="unknown scoring key clipp"):
        ScoringConfig.load(path, {})


def test_openai_captioner_sends_the_image_and_keeps_going_after_a_refusal(tmp_path):
    from vrforge.runners.drift.backends import OpenAICaptioner

    image = Image.fromarray(np.full((8, 8, 3), 200, dtype=np.uint8))
    with FakeOpenAI(answers=["  A grey\nsquare. ", Refusal("no")]) as fake:
        captioner = OpenAICaptioner(fake.base_url, "fake-model", seed=3, max_retries=0)
        assert captioner.caption(image) == "A grey square."
        assert captioner.caption(Image.new("RGB", (8, 8))) == ""
        content = fake.requests[0]["messages"][0]["content"]
        assert content[0]["type"] == "image_url" and content[0]["image_url"]["url"].startswith("data:image/png;base64,")
        assert content[1]["text"].startswith("Describe") and fake.requests[0]["temperature"] == 0.0
    with FakeOpenAI(answers=[HttpError(500)] * 5) as fake:
        captioner = OpenAICaptioner(fake.base_url, "fake-model", max_retries=0)
        with pytest.raises(UserError, match="did not answer"):
            captioner.caption(image)
