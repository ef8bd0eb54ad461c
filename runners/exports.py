"""The TACIT discriminative track in other evaluation frameworks' formats.

- **lmms-eval** (EvolvingLMMs-Lab/lmms-eval): a task folder to drop into ``lmms_eval/tasks/``
  (or pass with ``--include_path``): ``_default_template_tacit_choice_yaml`` (the shared
  settings, ``!function utils.…`` hooks), one YAML per task and difficulty
  (``tacit_choice_<task>_<difficulty>``: ``dataset_name`` = the task's config, ``test_split`` =
  the difficulty, the question's wording in ``lmms_eval_specific_kwargs``), the group
  ``tacit_choice.yaml`` and ``utils.py`` (``runners/lmms_eval_utils.py``: six images per doc,
  the puzzle then options A–E; the answer letter parsed as ``vrforge run tacit-choice`` does;
  accuracy per task). The dataset is loaded by lmms-eval with ``datasets.load_dataset(
  dataset_path, dataset_name, split=test_split)``: a hub id or the released folder.
- **VLMEvalKit** (open-compass/VLMEvalKit): one multiple-choice TSV (``index``, ``question``,
  ``A``–``E``, ``answer``, ``category`` = task, ``l2-category`` = difficulty, ``id``,
  ``image`` = the six images as a list of base64 PNG strings, the multi-image convention its
  ``toliststr`` reads). Options are named by their image ("image 2" … "image 6").

Both are single pass in the original option order (no circular rotation) and deterministic:
the same release gives the same bytes.
"""

from __future__ import annotations

import base64
import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from vrforge.fileio import write_bytes_atomic
from vrforge.runners.scoring import ScoringError, dataset_configs, dataset_info
from vrforge.runners.vlm_choice import LETTERS, Question, plan_rows
from vrforge.schemas.layout import difficulty_rank
from vrforge.types import OPTION_COUNT

GROUP = "tacit_choice"
TEMPLATE_FILE = f"_default_template_{GROUP}_yaml"
UTILS_SOURCE = Path(__file__).with_name("lmms_eval_utils.py")


class ExportError(ValueError):
    """A dataset folder or option the exporters cannot use: one line for the user."""


def _configs(dataset: Path, resolution: int | None) -> tuple[int, dict[str, Path]]:
    try:
        configs = dataset_configs(dataset) if dataset.is_dir() else {}
    except ScoringError as exc:
        raise ExportError(str(exc)) from None
    if not configs:
        raise ExportError(f"{dataset} is not a built TACIT dataset folder (no data/<config>/*.parquet)")
    if resolution is None:
        resolution = 1024 if 1024 in configs else min(configs)
    if resolution not in configs:
        raise ExportError(f"{dataset} has no {resolution} px configs (found: {', '.join(map(str, sorted(configs)))})")
    return resolution, configs[resolution]


def _question_text(task: str) -> tuple[str, str]:
    question = Question(task, b"", (b"",) * OPTION_COUNT)
    return question.intro + "\n", question.ask


def export_lmms_eval(dataset: str | Path, out: str | Path, *, dataset_path: str | None = None,
                     resolution: int | None = None) -> list[Path]:
    """Write the lmms-eval task folder for every task and difficulty of ``dataset``; returns the files written."""
    dataset, out = Path(dataset), Path(out)
    resolution, configs = _configs(dataset, resolution)
    source = dataset_path or str(dataset.resolve())
    info = dataset_info(dataset)
    template = "\n".join([
        f"# TACIT discriminative track (five-way choice, single pass); exported by vrforge from {info or 'a TACIT folder'}",
        f"dataset_path: {json.dumps(source)}",
        "output_type: generate_until",
        "doc_to_visual: !function utils.tacit_doc_to_visual",
        "doc_to_text: !function utils.tacit_doc_to_text",
        "doc_to_target: !function utils.tacit_doc_to_target",
        "generation_kwargs:",
        "  max_new_tokens: 32",
        "  temperature: 0",
        "  do_sample: false",
        "process_results: !function utils.tacit_process_results",
        "metric_list:",
        "  - metric: tacit_accuracy",
        "    aggregation: !function utils.tacit_aggregate_accuracy",
        "    higher_is_better: true",
        "metadata:",
        "  version: 1",
        f"  resolution: {resolution}",
        "",
    ])
    written = [out / TEMPLATE_FILE, out / "utils.py", out / f"{GROUP}.yaml"]
    write_bytes_atomic(written[0], template.encode("utf-8"))
    write_bytes_atomic(written[1], UTILS_SOURCE.read_bytes())
    tasks = []
    for task in sorted(configs):
        config_name = configs[task].name
        difficulties = sorted({p.name.split("-")[0] for p in configs[task].glob("*.parquet")},
                              key=difficulty_rank)
        pre, post = _question_text(task)
        for difficulty in difficulties:
            name = f"{GROUP}_{task}_{difficulty}"
            tasks.append(name)
            body = {"task": name, "dataset_name": config_name,
                    "test_split": difficulty,
                    "lmms_eval_specific_kwargs": {"default": {"pre_prompt": pre, "post_prompt": post}}}
            text = f"include: {TEMPLATE_FILE}\n" + yaml.safe_dump(body, sort_keys=True, allow_unicode=True, width=1000)
            path = out / f"{name}.yaml"
            write_bytes_atomic(path, text.encode("utf-8"))
            written.append(path)
    group = yaml.safe_dump({"group": GROUP, "task": tasks}, sort_keys=False)
    write_bytes_atomic(written[2], group.encode("utf-8"))
    return written


def _b64(cell: Any) -> str:
    data = cell.get("bytes") if isinstance(cell, dict) else None
    if not data:
        raise ExportError("a row has no embedded image bytes")
    return base64.b64encode(bytes(data)).decode("ascii")


def export_vlmevalkit(dataset: str | Path, out: str | Path, *, resolution: int | None = None,
                      tasks: Sequence[str] | None = None, difficulties: Sequence[str] | None = None,
                      limit: int | None = None) -> tuple[Path, int]:
    """Write one VLMEvalKit-style multiple-choice TSV; returns (path, rows)."""
    import pyarrow.parquet as pq

    from vrforge.runners.vlm_choice import ChoiceError

    dataset, out = Path(dataset), Path(out)
    if limit is not None and limit < 1:
        raise ExportError(f"--limit must be at least 1, got {limit}")
    resolution, configs = _configs(dataset, resolution)
    try:
        _, rows = plan_rows(dataset, resolution, tasks, difficulties, limit)
    except ChoiceError as exc:
        raise ExportError(str(exc)) from None
    wanted = {r["id"] for r in rows}
    by_id: dict[str, dict[str, Any]] = {}
    columns = ["id", "task", "difficulty", "index", "answer_index", "puzzle", "solution", "distractors"]
    for task in sorted({r["task"] for r in rows}):
        for shard in sorted(configs[task].glob("*.parquet")):
            for batch in pq.ParquetFile(shard).iter_batches(batch_size=16, columns=columns):
                for row in batch.to_pylist():
                    if row["id"] in wanted:
                        by_id[row["id"]] = row
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(["index", "id", "question", *LETTERS[:OPTION_COUNT], "answer", "category", "l2-category", "image"])
    for number, planned in enumerate(rows):
        row = by_id[planned["id"]]
        options = list(row["distractors"])
        options.insert(row["answer_index"], row["solution"])
        images = [_b64(row["puzzle"]), *(_b64(o) for o in options)]
        pre, post = _question_text(row["task"])
        writer.writerow([number, row["id"], (pre + post).replace("\n", " "), *(f"image {k + 2}" for k in range(OPTION_COUNT)),
                         LETTERS[row["answer_index"]], row["task"], row["difficulty"], repr(images)])
    path = out if out.suffix == ".tsv" else out / f"TACIT_{resolution}.tsv"
    write_bytes_atomic(path, buffer.getvalue().encode("utf-8"))
    return path, len(rows)
