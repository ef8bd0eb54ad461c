"""The reliance audit against a loopback OpenAI-compatible endpoint: logprobs where served, else n samples."""

from __future__ import annotations

import base64
import hashlib
import io
import json
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fakeopenai import Completion, FakeOpenAI, HttpError, Raw
from PIL import Image

from vrforge.builds.reliance_build import build_reliance, load_reliance_recipe
from vrforge.cli import main
from vrforge.generators.reliance.scenes import read_answer
from vrforge.runners.reliance.backends import golden_prompt

ROOT = Path(__file__).resolve().parents[1]
PERTURBATIONS = ["blur-16", "greyscale", "blank"]


@pytest.fixture(scope="module")
def golden(tmp_path_factory) -> Path:
    recipe = replace(load_reliance_recipe(ROOT / "builds/recipes/reliance-v0.1.0.toml"), count=2,
                     question_types=("colour", "existence"))
    return build_reliance(recipe, tmp_path_factory.mktemp("golden") / "ds")


def looking_endpoint(golden: Path, logprobs: bool):
    """A responder that reads the picture like the looking baseline: by the prompt it knows the item's scene."""
    metas = {}
    for path in sorted((golden / "data").rglob("*.parquet")):
        for row in pq.read_table(path).to_pylist():
            metas[golden_prompt(row["question"], row["options"])] = (json.loads(row["meta"]), row["options"])

    def respond(request: dict):
        content = request["messages"][0]["content"]
        url = next(part["image_url"]["url"] for part in content if part["type"] == "image_url")
        image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")
        text = next(part["text"] for part in content if part["type"] == "text")
        meta, options = metas[text]
        seen = read_answer(meta, image)
        letter = "ABCD"[options.index(seen)] if seen in options else None
        if not logprobs:
            digest = hashlib.sha256(image.tobytes()).digest()[0]
            return Completion(letter or "ABCD"[digest % len(options)])
        top = [{"token": x, "logprob": (-0.05 if x == letter else -3.0 if letter else -1.4), "bytes": None}
               for x in "ABCD"[:len(options)]]
        return Raw({"id": "x", "object": "chat.completion", "created": 0, "model": request["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": letter or "A"}, "finish_reason": "stop",
                                 "logprobs": {"content": [{"token": letter or "A", "logprob": -0.05, "bytes": None,
                                                           "top_logprobs": top}]}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    return respond


def audit(golden: Path, server: FakeOpenAI, out: Path, *extra: str) -> int:
    return main(["reliance", "audit", str(golden), "--backend", "openai", "--base-url", server.base_url, "--model", "fake-model",
                 "--out", str(out), "--repeats", "1", "--perturbations", *PERTURBATIONS, "--quiet", "--no-plots", *extra])


def test_logprobs_endpoint(golden, tmp_path):
    with FakeOpenAI(responder=looking_endpoint(golden, logprobs=True)) as server:
        assert audit(golden, server, tmp_path / "a") == 0
    request = server.requests[0]
    assert request["logprobs"] is True and request["top_logprobs"] == 20 and request["max_tokens"] == 1
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert report["distribution_source"] == "logprobs" and report["model"]["backend"] == "openai"
    for summary in report["per_type"].values():
        assert summary["avr"] == 1 and summary["cfc"] == 1 and summary["accuracy"] == 1


def test_sampling_endpoint(golden, tmp_path):
    with FakeOpenAI(responder=looking_endpoint(golden, logprobs=False)) as server:
        assert audit(golden, server, tmp_path / "b", "--samples", "3") == 0
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    assert report["distribution_source"] == "samples (n=3)"
    # the fake server answers one choice per request, so each distribution took 1 logprobs try + 3 sampled requests
    assert len(server.requests) == 4 * 4 * (2 + len(PERTURBATIONS))
    assert report["per_type"]["colour"]["cfc"] == 1


def test_unreachable_endpoint_is_one_line(golden, tmp_path, capsys):
    with FakeOpenAI(answers=[HttpError(500)] * 8) as server:
        assert audit(golden, server, tmp_path / "c", "--max-retries", "0") == 2
    assert "answered HTTP 500" in capsys.readouterr().err
