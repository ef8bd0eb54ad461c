"""The lmms-eval task and the VLMEvalKit TSV of the TACIT discriminative track, read the way those frameworks read them.

lmms-eval itself cannot be installed beside the pinned torch (it requires torchvision), so its
reader is reproduced here: ``lmms_eval.utils.load_yaml_config`` parses a task YAML with
``yaml.full_load`` after registering ``!function`` to import ``<module>.<name>`` from the
``<module>.py`` beside the YAML, and resolves ``include:`` from the same folder; the task then
loads ``datasets.load_dataset(dataset_path, dataset_name, split=test_split)``. VLMEvalKit reads
its TSVs with ``pandas.read_csv(sep="\\t")`` and a multi-image cell with ``toliststr``
(``ast.literal_eval`` of a list of base64 strings).
"""

from __future__ import annotations

import ast
import base64
import importlib.util
import io
import os
from pathlib import Path

import pytest
import yaml
from PIL import Image

from vrforge.cli import main
from vrforge.runners.exports import export_lmms_eval, export_vlmevalkit
from vrforge.runners.vlm_choice import parse_choice

REQUIRED = ("task", "dataset_path", "dataset_name", "test_split", "output_type", "doc_to_visual", "doc_to_text",
            "doc_to_target", "process_results", "metric_list")


def load_lmms_task(path: Path) -> dict:
    """lmms-eval's load_yaml_config(mode="full"): !function hooks imported from the YAML's folder, include merged."""

    class Loader(yaml.FullLoader):
        pass

    def import_function(loader, node):
        *module, name = loader.construct_scalar(node).split(".")
        module_path = os.path.join(os.path.dirname(loader.name), ".".join(module) + ".py")
        spec = importlib.util.spec_from_file_location(".".join(module), module_path)
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
        return getattr(loaded, name)

    Loader.add_constructor("!function", import_function)
    with open(path, "rb") as handle:
        config = yaml.load(handle, Loader=Loader)  # as the reader being reproduced
    if "include" in config:
        base = load_lmms_task(path.parent / config.pop("include"))
        config = {**base, **config}
    return config


def test_lmms_eval_task_loads_and_scores(built, tmp_path, capsys):
    from datasets import load_dataset

    out = tmp_path / "tasks" / "tacit_choice"
    assert main(["export", "lmms-eval", str(built), "--out", str(out)]) == 0
    assert "3 lmms-eval tasks" in capsys.readouterr().out
    group = yaml.safe_load((out / "tacit_choice.yaml").read_text())
    assert group == {"group": "tacit_choice", "task": [f"tacit_choice_maze_{d}" for d in ("easy", "medium", "hard")]}

    config = load_lmms_task(out / "tacit_choice_maze_hard.yaml")
    assert all(key in config for key in REQUIRED)
    assert (config["dataset_name"], config["test_split"], config["output_type"]) == ("maze", "hard", "generate_until")
    docs = load_dataset(config["dataset_path"], config["dataset_name"], split=config["test_split"])
    kwargs = config["lmms_eval_specific_kwargs"]["default"]
    results = []
    for doc in docs:
        visuals = config["doc_to_visual"](doc)
        assert len(visuals) == 6 and all(isinstance(v, Image.Image) for v in visuals)
        assert visuals[0].tobytes() == doc["puzzle"].convert("RGB").tobytes()
        assert visuals[1 + doc["answer_index"]].tobytes() == doc["solution"].convert("RGB").tobytes()
        text = config["doc_to_text"](doc, kwargs)
        assert "labelled A to E" in text and text.endswith("only.")
        target = config["doc_to_target"](doc)
        results.append(config["process_results"](doc, [f"The answer is {target}."])["tacit_accuracy"])
        wrong = "ABCDE"[(doc["answer_index"] + 1) % 5]
        results.append(config["process_results"](doc, [wrong])["tacit_accuracy"])
    (metric,) = config["metric_list"]
    assert metric["metric"] == "tacit_accuracy" and config["metric_list"][0]["aggregation"](results) == 0.5
    # Byte-identical on a second export.
    again = tmp_path / "again"
    export_lmms_eval(built, again)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {p.name: p.read_bytes() for p in again.iterdir()}


@pytest.mark.parametrize("text", ["The answer is C", "c)", "(b)", "**D**", "\\boxed{A}", "Final answer: e", "garbage ###",
                                  "Between B and C, maybe C", "A careful look shows D"])
def test_the_exported_parser_agrees_with_the_runner(text, tmp_path):
    spec = importlib.util.spec_from_file_location("tacit_utils", Path(__file__).parents[1] / "runners" / "lmms_eval_utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    assert utils.parse_choice(text) == parse_choice(text)


def test_vlmevalkit_tsv_reads_with_pandas(built, tmp_path, capsys):
    import pandas as pd

    out = tmp_path / "TACIT.tsv"
    assert main(["export", "vlmevalkit", str(built), "--out", str(out), "--resolution", "512", "--limit", "2"]) == 0
    assert "wrote 6 questions" in capsys.readouterr().out
    data = pd.read_csv(out, sep="\t")
    assert list(data.columns) == ["index", "id", "question", "A", "B", "C", "D", "E", "answer", "category", "l2-category", "image"]
    assert len(data) == 6 and list(data["index"]) == list(range(6)) and set(data["category"]) == {"maze"}
    assert list(data["l2-category"]) == ["easy", "easy", "medium", "medium", "hard", "hard"]
    from vrforge.runners.vlm_choice import load_items

    items = {item.id: item for item in load_items(built, 512, set(data["id"]))}
    for _, line in data.iterrows():
        images = ast.literal_eval(line["image"])  # VLMEvalKit's toliststr
        assert len(images) == 6
        decoded = [base64.b64decode(b) for b in images]
        item = items[line["id"]]
        assert decoded[0] == item.puzzle and tuple(decoded[1:]) == item.options
        assert line["answer"] == "ABCDE"[item.answer_index]
        assert max(Image.open(io.BytesIO(decoded[0])).size) == 512
    first = out.read_bytes()
    export_vlmevalkit(built, out, resolution=512, limit=2)
    assert out.read_bytes() == first


def test_export_errors_are_one_line(tmp_path, capsys):
    assert main(["export", "vlmevalkit", str(tmp_path), "--out", str(tmp_path / "x.tsv")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not a built TACIT dataset folder" in err and not (tmp_path / "x.tsv").exists()
