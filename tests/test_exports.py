"""The lmms-eval task and the VLMEvalKit TSVs of the TACIT discriminative track, read the way those frameworks read them.

Both frameworks need torchvision, which does not install beside the project's pinned CPU torch,
so their readers are reproduced here (``make check-frameworks`` runs the real ones in a venv of
their own): ``lmms_eval.utils.load_yaml_config`` parses a task YAML with ``yaml.full_load`` after
registering ``!function`` to import ``<module>.<name>`` from the ``<module>.py`` beside the YAML,
and resolves ``include:`` from the same folder; the task then loads
``datasets.load_dataset(dataset_path, dataset_name, split=test_split)``; a group's
``aggregate_metric_list`` pools its subtasks' ``mean`` metrics by size. VLMEvalKit reads its
TSVs with ``pandas.read_csv(sep="\\t")``, a multi-image cell with ``toliststr``
(``ast.literal_eval`` of a list of base64 strings), decodes each image (palette and RGBA to RGB)
and saves it under its ``image_path``, and scores a file circularly when its name holds
"circular", grouping rows by ``index % 10**6``.
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
    pooled = [{"metric": "tacit_accuracy", "aggregation": "mean", "weight_by_size": True}]
    group = yaml.safe_load((out / "tacit_choice.yaml").read_text())
    assert group == {"group": "tacit_choice", "task": ["tacit_choice_maze"], "aggregate_metric_list": pooled,
                     "metadata": {"version": 2}}
    per_task = yaml.safe_load((out / "tacit_choice_maze.yaml").read_text())
    assert per_task["task"] == [f"tacit_choice_maze_{d}" for d in ("easy", "medium", "hard")]
    assert per_task["aggregate_metric_list"] == pooled

    config = load_lmms_task(out / "tacit_choice_maze_hard.yaml")
    assert all(key in config for key in REQUIRED)
    assert (config["dataset_name"], config["test_split"], config["output_type"]) == ("maze", "hard", "generate_until")
    docs = load_dataset(config["dataset_path"], config["dataset_name"], split=config["test_split"])
    kwargs = config["lmms_eval_specific_kwargs"]["default"]
    scores = []
    for doc in docs:
        visuals = config["doc_to_visual"](doc)
        assert len(visuals) == 6 and all(isinstance(v, Image.Image) for v in visuals)
        assert visuals[0].tobytes() == doc["puzzle"].convert("RGB").tobytes()
        assert visuals[1 + doc["answer_index"]].tobytes() == doc["solution"].convert("RGB").tobytes()
        text = config["doc_to_text"](doc, kwargs)
        assert "labelled A to E" in text and text.endswith("only.")
        target = config["doc_to_target"](doc)
        scores.append(config["process_results"](doc, [f"The answer is {target}."])["tacit_accuracy"])
        wrong = "ABCDE"[(doc["answer_index"] + 1) % 5]
        scores.append(config["process_results"](doc, [wrong])["tacit_accuracy"])
    # A float per doc, averaged by lmms-eval's registered "mean", which also gives the stderr.
    (metric,) = config["metric_list"]
    assert metric == {"metric": "tacit_accuracy", "aggregation": "mean", "higher_is_better": True}
    assert all(type(x) is float for x in scores) and sum(scores) / len(scores) == 0.5
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


def vlmevalkit_images(line) -> list[bytes]:
    """VLMEvalKit's dump_image: each base64 cell decoded, palette/RGBA made RGB, saved under its image_path (PNG here)."""
    images, paths = ast.literal_eval(line["image"]), ast.literal_eval(line["image_path"])  # toliststr
    assert len(images) == len(paths) == 6 and all(p.endswith(".png") for p in paths)
    return [base64.b64decode(b) for b in images]


def pixels(png: bytes) -> bytes:
    image = Image.open(io.BytesIO(png))
    return (image.convert("RGB") if image.mode in ("RGBA", "P", "LA") else image).tobytes()


def test_vlmevalkit_tsv_reads_with_pandas(built, tmp_path, capsys):
    import pandas as pd

    from vrforge.runners.vlm_choice import load_items

    out = tmp_path / "TACIT.tsv"
    assert main(["export", "vlmevalkit", str(built), "--out", str(out), "--resolution", "512", "--limit", "2"]) == 0
    assert "wrote 6 questions" in capsys.readouterr().out
    data = pd.read_csv(out, sep="\t")
    assert list(data.columns) == ["index", "id", "question", "A", "B", "C", "D", "E", "answer", "category", "l2-category",
                                  "image", "image_path"]
    assert len(data) == 6 and list(data["index"]) == list(range(6)) and set(data["category"]) == {"maze"}
    assert list(data["l2-category"]) == ["easy", "easy", "medium", "medium", "hard", "hard"]
    items = {item.id: item for item in load_items(built, 512, set(data["id"]))}
    for _, line in data.iterrows():
        decoded = vlmevalkit_images(line)
        item = items[line["id"]]
        # PNG-exact: the very bytes of the release, so VLMEvalKit's PNG save keeps every pixel.
        assert decoded[0] == item.puzzle and tuple(decoded[1:]) == item.options
        saved = io.BytesIO()
        Image.open(io.BytesIO(decoded[1])).convert("RGB").save(saved, format="PNG")
        assert pixels(saved.getvalue()) == pixels(item.options[0])
        assert line["answer"] == "ABCDE"[item.answer_index]
        assert max(Image.open(io.BytesIO(decoded[0])).size) == 512
    first = out.read_bytes()
    export_vlmevalkit(built, out, resolution=512, limit=2)
    assert out.read_bytes() == first


def test_vlmevalkit_one_tsv_per_task_or_level(built, tmp_path, capsys):
    import pandas as pd

    assert main(["export", "vlmevalkit", str(built), "--out", str(tmp_path / "tasks"), "--resolution", "512"]) == 0
    assert sorted(p.name for p in (tmp_path / "tasks").iterdir()) == ["TACIT_512_maze.tsv"]
    assert len(pd.read_csv(tmp_path / "tasks" / "TACIT_512_maze.tsv", sep="\t")) == 9
    files = export_vlmevalkit(built, tmp_path / "levels", resolution=512, split="level")
    assert [(p.name, n) for p, n in files] == [(f"TACIT_512_maze_{d}.tsv", 3) for d in ("easy", "medium", "hard")]
    for path, _ in files:
        assert list(pd.read_csv(path, sep="\t")["index"]) == [0, 1, 2]
    assert main(["export", "vlmevalkit", str(built), "--out", str(tmp_path / "x.tsv"), "--split", "task"]) == 2
    assert "names one file" in capsys.readouterr().err


def test_vlmevalkit_circular_copies(built, tmp_path):
    import pandas as pd

    from vrforge.runners.vlm_choice import load_items

    ((path, puzzles),) = export_vlmevalkit(built, tmp_path, resolution=512, limit=1, circular=True)
    assert path.name == "TACIT_512_maze_circular.tsv" and "circular" in path.stem.lower() and puzzles == 3
    data = pd.read_csv(path, sep="\t")
    assert sorted(data["index"]) == sorted(i + k * 10**6 for i in range(3) for k in range(5))
    items = {item.id: item for item in load_items(built, 512, set(data["id"]))}
    for _, rows in data.groupby(data["index"] % 10**6):  # VLMEvalKit's g_index
        assert rows["id"].nunique() == 1 and len(rows) == 5
        item = items[rows["id"].iloc[0]]
        for _, line in rows.iterrows():
            k = line["index"] // 10**6
            decoded = vlmevalkit_images(line)
            assert decoded[0] == item.puzzle
            assert decoded[1:] == [item.options[(p + k) % 5] for p in range(5)]  # rotation k, as tacit-choice rotates
            assert decoded[1 + "ABCDE".index(line["answer"])] == item.options[item.answer_index]
            assert ast.literal_eval(line["image_path"])[1 + "ABCDE".index(line["answer"])].endswith(
                f"{item.id}_option{item.answer_index}.png")  # copies share one file per image


def test_vlmevalkit_size_limit_is_checked_before_writing(built, tmp_path, capsys):
    files = export_vlmevalkit(built, tmp_path / "ok", resolution=512, split="level")
    sizes = [p.stat().st_size for p, _ in files]
    # The planned size is the written size to the byte: a limit of exactly the largest file passes ...
    again = export_vlmevalkit(built, tmp_path / "exact", resolution=512, split="level", max_bytes=max(sizes))
    assert [p.stat().st_size for p, _ in again] == sizes
    # ... one byte less is refused in one line, before any file is written.
    out = tmp_path / "refused"
    argv = ["export", "vlmevalkit", str(built), "--out", str(out), "--resolution", "512", "--split", "level",
            "--max-bytes", str(max(sizes) - 1)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "over the" in err and "nothing written" in err
    assert not out.exists()


def test_export_errors_are_one_line(tmp_path, capsys):
    assert main(["export", "vlmevalkit", str(tmp_path), "--out", str(tmp_path / "x.tsv")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not a built TACIT dataset folder" in err and not (tmp_path / "x.tsv").exists()
