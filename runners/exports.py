"""The TACIT discriminative track in other evaluation frameworks' formats.

- **lmms-eval** (EvolvingLMMs-Lab/lmms-eval): a task folder to drop into ``lmms_eval/tasks/``
  (or pass with ``--include_path``): ``_default_template_tacit_choice_yaml`` (the shared
  settings, ``!function utils.…`` hooks), one YAML per task and difficulty
  (``tacit_choice_<task>_<difficulty>``: ``dataset_name`` = the task's config, ``test_split`` =
  the difficulty, the question's wording in ``lmms_eval_specific_kwargs``), one group per task
  (``tacit_choice_<task>``) and the group ``tacit_choice`` over them, and ``utils.py``
  (``runners/lmms_eval_utils.py``: six images per doc, the puzzle then options A–E; the answer
  letter parsed as ``vrforge run tacit-choice`` does). Each doc scores 1.0 or 0.0 under the
  metric ``tacit_accuracy`` with ``aggregation: mean``, so lmms-eval reports its standard error;
  every group's ``aggregate_metric_list`` pools its subtasks weighted by size, so the group rows
  hold the accuracy per task and overall. The dataset is loaded by lmms-eval with
  ``datasets.load_dataset(dataset_path, dataset_name, split=test_split)``: a hub id or the
  released folder.
- **VLMEvalKit** (open-compass/VLMEvalKit): multiple-choice TSVs (``index``, ``question``,
  ``A``–``E``, ``answer``, ``category`` = task, ``l2-category`` = difficulty, ``id``, ``image`` =
  the six images as a list of base64 PNG strings, the multi-image convention its ``toliststr``
  reads, and ``image_path``: the ``.png`` names VLMEvalKit decodes them to). Options are named by
  their image ("image 2" … "image 6"). One TSV per task by default (``split="level"``: per task
  and difficulty), because VLMEvalKit rewrites a TSV over 1 GiB with every image saved as JPEG
  where no ``image_path`` names them: every file's size is computed before anything is written
  and a file over ``max_bytes`` is refused in one line. ``circular`` adds MMBench-style rotated
  copies: row ``index + k * 10**6`` shows the options rotated by ``k`` (as ``vrforge run
  tacit-choice`` rotates them), and the file name holds ``circular``, which is what switches
  VLMEvalKit to circular scoring.

Both are deterministic: the same release gives the same bytes.
"""

from __future__ import annotations

import base64
import csv
import io
import itertools
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from vrforge.fileio import atomic_target, write_bytes_atomic
from vrforge.runners.scoring import ScoringError, dataset_configs, dataset_info
from vrforge.runners.vlm_choice import LETTERS, Item, Question, load_items, plan_rows, rotation_order
from vrforge.schemas.layout import difficulty_rank
from vrforge.types import OPTION_COUNT

GROUP = "tacit_choice"
METRIC = "tacit_accuracy"
TEMPLATE_FILE = f"_default_template_{GROUP}_yaml"
UTILS_SOURCE = Path(__file__).with_name("lmms_eval_utils.py")
# VLMEvalKit localises a TSV over this size (file_size(path, "GB") > 1, a GiB), saving every image
# as <index>.jpg where the TSV names no image_path.
VLMEVALKIT_MAX_BYTES = 2**30
CIRCULAR_OFFSET = 10**6  # VLMEvalKit's circular copies: index + k * 10**6, grouped by index % 10**6
SPLITS = ("task", "level", "none")
TSV_COLUMNS = ["index", "id", "question", *LETTERS[:OPTION_COUNT], "answer", "category", "l2-category", "image", "image_path"]


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


def _yaml(data: dict[str, Any]) -> bytes:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000).encode("utf-8")


def _group(name: str, tasks: list[str]) -> dict[str, Any]:
    # Pooled over the subtasks weighted by their sizes: the accuracy over every puzzle below, with
    # lmms-eval's pooled standard error.
    return {"group": name, "task": tasks,
            "aggregate_metric_list": [{"metric": METRIC, "aggregation": "mean", "weight_by_size": True}],
            "metadata": {"version": 2}}


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
        f"  - metric: {METRIC}",
        "    aggregation: mean",
        "    higher_is_better: true",
        "metadata:",
        "  version: 2",
        f"  resolution: {resolution}",
        "",
    ])
    written = [out / TEMPLATE_FILE, out / "utils.py", out / f"{GROUP}.yaml"]
    write_bytes_atomic(written[0], template.encode("utf-8"))
    write_bytes_atomic(written[1], UTILS_SOURCE.read_bytes())
    groups = []
    for task in sorted(configs):
        config_name = configs[task].name
        difficulties = sorted({p.name.split("-")[0] for p in configs[task].glob("*.parquet")},
                              key=difficulty_rank)
        pre, post = _question_text(task)
        leaves = []
        for difficulty in difficulties:
            name = f"{GROUP}_{task}_{difficulty}"
            leaves.append(name)
            body = {"task": name, "dataset_name": config_name,
                    "test_split": difficulty,
                    "lmms_eval_specific_kwargs": {"default": {"pre_prompt": pre, "post_prompt": post}}}
            text = f"include: {TEMPLATE_FILE}\n" + yaml.safe_dump(body, sort_keys=True, allow_unicode=True, width=1000)
            path = out / f"{name}.yaml"
            write_bytes_atomic(path, text.encode("utf-8"))
            written.append(path)
        group = f"{GROUP}_{task}"
        groups.append(group)
        write_bytes_atomic(out / f"{group}.yaml", _yaml(_group(group, leaves)))
        written.append(out / f"{group}.yaml")
    write_bytes_atomic(written[2], _yaml(_group(GROUP, groups)))
    return written


# ---------------------------------------------------------------- VLMEvalKit


def _b64_length(data: bytes) -> int:
    return 4 * math.ceil(len(data) / 3)


def _list_cell_length(lengths: Sequence[int]) -> int:
    """len(repr(list of strings)) for strings of these lengths holding no quote or backslash."""
    return 2 + sum(n + 2 for n in lengths) + 2 * (len(lengths) - 1)


def _file_stem(resolution: int, task: str, difficulty: str, split: str, circular: bool) -> str:
    parts = ["TACIT", str(resolution)] + ([task] if split != "none" else []) + ([difficulty] if split == "level" else [])
    return "_".join(parts + (["circular"] if circular else []))


def _rows(item: Item, number: int, stem: str, circular: bool) -> Iterator[tuple[list[Any], list[bytes], list[str]]]:
    """(cells before the image cell, images, image paths) per TSV row of one puzzle: rotation k at index + k * 10**6."""
    pre, post = _question_text(item.task)
    names = [f"{stem}/{item.id}_puzzle.png", *(f"{stem}/{item.id}_option{i}.png" for i in range(OPTION_COUNT))]
    for rotation in range(OPTION_COUNT if circular else 1):
        order = rotation_order(rotation, len(item.options))
        answer = LETTERS[order.index(item.answer_index)]
        images = [item.puzzle, *(item.options[i] for i in order)]
        paths = [names[0], *(names[1 + i] for i in order)]
        yield ([number + rotation * CIRCULAR_OFFSET, item.id, (pre + post).replace("\n", " "),
                *(f"image {k + 2}" for k in range(OPTION_COUNT)), answer, item.task, item.difficulty], images, paths)


def _line(cells: list[Any]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL).writerow(cells)
    return buffer.getvalue()


def export_vlmevalkit(dataset: str | Path, out: str | Path, *, resolution: int | None = None,
                      tasks: Sequence[str] | None = None, difficulties: Sequence[str] | None = None,
                      limit: int | None = None, split: str | None = None, circular: bool = False,
                      max_bytes: int = VLMEVALKIT_MAX_BYTES) -> list[tuple[Path, int]]:
    """Write VLMEvalKit multiple-choice TSVs; returns (path, rows) per file.

    ``out`` is a folder (one ``TACIT_<resolution>_<task>[_<difficulty>][_circular].tsv`` per task,
    or per task and difficulty with ``split="level"``) or, with ``split="none"``, a ``.tsv`` file
    (or a folder for ``TACIT_<resolution>[_circular].tsv``). Every file's size is computed before
    anything is written; one over ``max_bytes`` is refused (ExportError) and nothing is written.
    """
    dataset, out = Path(dataset), Path(out)
    if limit is not None and limit < 1:
        raise ExportError(f"--limit must be at least 1, got {limit}")
    if split is None:
        split = "none" if out.suffix == ".tsv" else "task"
    if split not in SPLITS:
        raise ExportError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if out.suffix == ".tsv" and split != "none":
        raise ExportError(f"--out {out} names one file, but --split {split} writes one file per {split}: give a folder")
    from vrforge.runners.vlm_choice import ChoiceError

    resolution, _ = _configs(dataset, resolution)
    try:
        _, planned = plan_rows(dataset, resolution, tasks, difficulties, limit)
    except ChoiceError as exc:
        raise ExportError(str(exc)) from None
    wanted = {r["id"] for r in planned}

    def files() -> Iterator[tuple[str, Item]]:
        try:
            for item in load_items(dataset, resolution, wanted):
                yield _file_stem(resolution, item.task, item.difficulty, split, circular), item
        except ChoiceError as exc:
            raise ExportError(str(exc)) from None

    header = _line(TSV_COLUMNS)
    # First pass: each file's exact size, from the images' byte lengths (base64 is 4/3 of them).
    sizes: dict[str, int] = {}
    counts: dict[str, int] = {}
    for stem, item in files():
        number = counts.get(stem, 0)
        if circular and number >= CIRCULAR_OFFSET:
            raise ExportError(f"{stem}.tsv would hold over {CIRCULAR_OFFSET} puzzles, too many for circular indices")
        counts[stem] = number + 1
        for cells, images, paths in _rows(item, number, stem, circular):
            line = _line([*cells, "", repr(paths)]).encode("utf-8")
            sizes[stem] = (sizes.get(stem, len(header.encode("utf-8"))) + len(line)
                           + _list_cell_length([_b64_length(i) for i in images]))
    for stem, size in sizes.items():
        if size > max_bytes:
            raise ExportError(f"{stem}.tsv would be {size / 2**30:.2f} GiB, over the {max_bytes / 2**30:.2f} GiB limit "
                              f"(past 1 GiB VLMEvalKit re-encodes a TSV's images); nothing written: "
                              + ("use --split level" if split == "task" else "use --split task or level" if split == "none"
                                 else "export fewer rows (--limit, --difficulties)"))
    if split == "none" and out.suffix == ".tsv":
        paths_by_stem = {stem: out for stem in sizes}
    else:
        paths_by_stem = {stem: out / f"{stem}.tsv" for stem in sizes}
    # Second pass: each file streamed to its hidden temporary name, renamed when complete (the
    # items of one file come together: load_items yields them by task, then difficulty).
    written: list[tuple[Path, int]] = []
    for stem, group in itertools.groupby(files(), key=lambda pair: pair[0]):
        if any(path == paths_by_stem[stem] for path, _ in written):
            raise RuntimeError(f"{stem}: its puzzles did not come together")  # load_items' order is by task, then difficulty
        with atomic_target(paths_by_stem[stem]) as target, open(target, "w", encoding="utf-8", newline="") as handle:
            handle.write(header)
            for number, (_, item) in enumerate(group):
                for cells, images, paths in _rows(item, number, stem, circular):
                    cell = repr([base64.b64encode(i).decode("ascii") for i in images])
                    handle.write(_line([*cells, cell, repr(paths)]))
        written.append((paths_by_stem[stem], counts[stem]))
    return written
