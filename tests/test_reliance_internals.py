"""Internals probes on tiny random-weight LLaVA- and Qwen2-VL-style models: hook identities, mediation, alignment."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from PIL import Image  # noqa: E402

from vrforge.cli import main  # noqa: E402
from vrforge.generators.reliance.scenes import generate_item  # noqa: E402
from vrforge.runners.reliance.backends import Request, TransformersScorer, golden_prompt  # noqa: E402
from vrforge.runners.reliance.internals import InternalsError, Probe  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ["A B C D E What colour is the square circle triangle diamond ? red blue green yellow purple orange pink brown "
          "Answer with the option's letter only ( , ) USER ASSISTANT user assistant"]


def amplify(model) -> None:
    """Random weights barely pass the image through; a louder projector makes the answer depend on it."""
    import torch

    from vrforge.runners.reliance.internals import locate

    with torch.no_grad():
        for parameter in locate(model).projector.parameters():
            parameter.mul_(40.0)


@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from _tiny_vlm import build_tiny_llava

    folder = build_tiny_llava(tmp_path_factory.mktemp("llava") / "m", CORPUS)
    scorer = TransformersScorer(str(folder), local_files_only=True, device="cpu")
    scorer.load()
    amplify(scorer.model)
    return scorer


@pytest.fixture(scope="module")
def qwen():
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from _tiny_qwen2vl import build_tiny_qwen2vl

    processor, model = build_tiny_qwen2vl(CORPUS)
    amplify(model)
    return TransformersScorer("tiny-qwen2vl", loaded=(processor, model))


@pytest.fixture(params=["llava", "qwen"])
def scorer(request):
    return request.getfixturevalue(request.param)


def pair():
    item = generate_item("colour", 1)
    text = golden_prompt(item.question, item.options)
    images = [Image.open(__import__("io").BytesIO(data)).convert("RGB") for data in (item.image, item.counterfactual)]
    return item, Request(images[0], text, 4), Request(images[1], text, 4)


def test_batched_equals_single(scorer):
    _, original, cf = pair()
    batched = TransformersScorer.distributions(scorer, [original, cf, original])
    single = [scorer.distributions([r])[0] for r in (original, cf)]
    assert np.allclose(batched[0], single[0], atol=1e-5) and np.allclose(batched[1], single[1], atol=1e-5)
    assert np.allclose(batched[0], batched[2])
    assert abs(sum(single[0]) - 1) < 1e-6


def test_zero_noise_changes_nothing_and_noise_does(scorer):
    _, original, _ = pair()
    probe = Probe(scorer)
    silent = probe.site_effects(original, noise_scale=0.0, seed=1)
    assert silent["encoder_noise"] == 0 and silent["projector_noise"] == 0
    assert probe.layer_sweep(original, noise_scale=0.0, seed=1) == [0.0] * probe.n_hidden
    loud = probe.site_effects(original, noise_scale=3.0, seed=1)
    assert loud["projector_zero"] > 1e-8 and loud["projector_noise"] > 1e-8  # exactly 0 above: the hooks act
    assert len(probe.layer_sweep(original, noise_scale=3.0, seed=1)) == probe.n_hidden


def test_patching_own_activations_changes_nothing(scorer):
    _, original, _ = pair()
    result = Probe(scorer).mediation(original, original, 0)
    assert np.allclose(result["patched_all"], result["original"], atol=1e-6)
    assert max(abs(e) for e in result["indirect_effect"]) < 1e-6 and abs(result["total_effect"]) < 1e-6


def test_patching_the_counterfactual_everywhere_reproduces_it(scorer):
    item, original, cf = pair()
    result = Probe(scorer).mediation(original, cf, item.counterfactual_answer_index)
    gap = np.abs(np.array(result["original"]) - np.array(result["counterfactual"])).max()
    assert gap > 1e-5  # the two images give different answers...
    assert np.abs(np.array(result["patched_all"]) - np.array(result["counterfactual"])).max() < gap / 100
    assert result["indirect_effect"][0] == pytest.approx(result["total_effect"], abs=gap / 100)  # ...and the LM input carries it


def test_misaligned_visual_tokens_are_refused(qwen):
    _, original, _ = pair()
    small = Request(original.image.resize((56, 56)), original.text, 4)
    with pytest.raises(InternalsError, match="token alignment"):
        Probe(qwen).mediation(original, small, 0)


def test_cli_end_to_end_on_tiny_llava(llava, tmp_path, capsys):
    from dataclasses import replace

    from vrforge.builds.reliance_build import build_reliance, load_reliance_recipe

    golden = build_reliance(replace(load_reliance_recipe(ROOT / "builds/recipes/reliance-v0.1.0.toml"), count=2), tmp_path / "ds")
    out = tmp_path / "audit"
    code = main(["reliance", "audit", str(golden), "--model", llava.model_id, "--local-files-only", "--device", "cpu",
                 "--out", str(out), "--repeats", "2", "--internals", "--internals-items", "1", "--min-confidence", "0",
                 "--batch-size", "16", "--quiet"])
    assert code == 1  # a random model does not pass the gate
    assert "gate FAILED" in capsys.readouterr().err
    report = json.loads((out / "report.json").read_text())
    assert report["distribution_source"] == "logits" and report["model"]["model_class"] == "LlavaForConditionalGeneration"
    assert report["model"]["preprocessing"]["crop_size"] == {"height": 32, "width": 32}
    assert report["versions"]["torch"]
    assert json.loads((out / "timing.json").read_text())["items_x_perturbations_per_s"] > 0
    internals = report["internals"]["colour"]
    assert len(internals["layer_sweep"]) == 2 and len(internals["mediation"]["indirect_effect"]) == 2
    for name in ("ladder.png", "layers.png", "tables.md", "samples.jsonl"):
        assert (out / name).stat().st_size > 0


def test_audit_end_to_end_on_tiny_qwen2vl(qwen, tmp_path):
    from dataclasses import replace

    from vrforge.builds.reliance_build import build_reliance, load_reliance_recipe
    from vrforge.runners.reliance.audit import Settings, run_audit

    recipe = replace(load_reliance_recipe(ROOT / "builds/recipes/reliance-v0.1.0.toml"), count=1, question_types=("count", "relation"))
    golden = build_reliance(recipe, tmp_path / "ds")
    settings = Settings(perturbations=("blur-8", "noise-20", "blank"), repeats=2, min_confidence=0.0, internals=True,
                        internals_items=1)
    result = run_audit(golden, qwen, tmp_path / "audit", settings)
    report = result.report
    assert report["model"]["model_type"] == "qwen2_vl" and report["model"]["preprocessing"]["size"]["longest_edge"] == 112 * 112
    assert set(report["internals"]) == {"count", "relation"}
    assert len(report["internals"]["count"]["layer_sweep"]) == 3  # LM input + 2 decoder layers
    assert report["per_type"]["count"]["vss"]["blank"] > 0  # the amplified projector makes the answer depend on the image
    assert (tmp_path / "audit" / "layers.png").exists()
