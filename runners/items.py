"""What the image runners generate: one ``GenerationItem`` per output image.

Two sources:

- **CF-World** (text-to-image): scenarios in the schema of ``schemas/cfworld.py`` from a
  ``.jsonl`` file (one scenario per line), a ``.json`` file (a list, or ``{"scenarios": [...]}``),
  a folder holding ``scenarios.jsonl`` (what ``vrforge cfworld import`` writes), a dataset
  folder with ``data/<config>/*.parquet`` scenario rows, or the official release folder
  (``prompt/``, read through the importer). One item per (scenario, level): the prompt is
  ``levels[level].prompt``, the output ``<scenario_id>/<level>.png``. With several images per
  prompt (GenEval-style), image k is ``<scenario_id>/<level>_<k>.png``; image 0 keeps the id
  ``<scenario_id>/<level>`` (so the same seed as a one-image run) and image k > 0 has the id
  ``<scenario_id>/<level>/<k>``.
- **TACIT generative track** (image-conditioned): a built dataset folder. One item per
  puzzle: the puzzle image, an instruction for its task, and the output under the reference
  naming ``model_output/<task>/<difficulty>/<task>_<difficulty>_<NNNN>.png`` that
  ``runners/scoring.py`` reads.

Item ids (``physics-optics-0042/l2``, ``maze-hard-0042``) are what per-item seeds derive
from, so an item's image does not depend on which other items are in the run.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from vrforge.errors import UserError
from vrforge.schemas.cfworld import LEVELS, Scenario
from vrforge.schemas.layout import OUTPUTS_FOLDER, difficulty_rank, output_name

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # becomes a folder name: no separators, no "..", no hidden names

GENERIC_INSTRUCTION = "Solve the puzzle and draw the answer on it."


class ItemsError(UserError, ValueError):
    """Input that yields no usable items (missing file, malformed scenario, empty set): one line for the user."""


@dataclass(frozen=True)
class ImageRef:
    """A puzzle image inside a parquet shard, read only when its batch is generated."""

    shard: str
    row: int

    def load(self):  # -> PIL.Image.Image
        from PIL import Image

        data = _shard_images(self.shard)[self.row]
        with Image.open(io.BytesIO(data)) as image:
            return image.convert("RGB")


@dataclass(frozen=True)
class GenerationItem:
    id: str
    prompt: str
    output: str  # relative to the run's output folder, "/"-separated
    image: ImageRef | None = None
    info: dict[str, Any] = field(default_factory=dict, compare=False)  # copied into the run manifest


# --------------------------------------------------------------------------- CF-World


def cfworld_items(source: str | Path, levels: Sequence[str] = LEVELS, limit: int | None = None,
                  images_per_prompt: int = 1) -> list[GenerationItem]:
    """``images_per_prompt`` items per (scenario, level), in the order of the source; ``limit`` caps the scenarios."""
    unknown = [lv for lv in levels if lv not in LEVELS]
    if unknown or not levels:
        raise ItemsError(f"levels must be among {', '.join(LEVELS)}, got {', '.join(levels) or 'none'}")
    if images_per_prompt < 1:
        raise ItemsError(f"--images-per-prompt must be at least 1, got {images_per_prompt}")
    scenarios = read_scenarios(Path(source))
    if limit is not None:
        scenarios = scenarios[:limit]
    items: list[GenerationItem] = []
    seen: set[str] = set()
    for scenario in scenarios:
        if not _SAFE_ID.match(scenario.id):
            raise ItemsError(f"{source}: scenario id {scenario.id!r} cannot be a folder name (letters, digits, . _ - only)")
        if scenario.id in seen:
            raise ItemsError(f"{source}: scenario id {scenario.id!r} appears twice")
        seen.add(scenario.id)
        for level in levels:
            entry = scenario.levels.get(level)
            if entry is None or not entry.prompt.strip():
                raise ItemsError(f"{source}: scenario {scenario.id} has no {level} prompt")
            if images_per_prompt == 1:
                items.append(GenerationItem(
                    id=f"{scenario.id}/{level}", prompt=entry.prompt.strip(), output=f"{scenario.id}/{level}.png",
                    info={"scenario": scenario.id, "level": level, "domain": scenario.domain},
                ))
                continue
            for k in range(images_per_prompt):
                items.append(GenerationItem(
                    id=f"{scenario.id}/{level}" + (f"/{k}" if k else ""), prompt=entry.prompt.strip(),
                    output=f"{scenario.id}/{level}_{k}.png",
                    info={"scenario": scenario.id, "level": level, "domain": scenario.domain, "sample": k},
                ))
    if not items:
        raise ItemsError(f"{source} holds no scenarios")
    return items


def read_scenarios(source: Path) -> list[Scenario]:
    if source.is_dir():
        return _scenarios_from_folder(source)
    if not source.is_file():
        raise ItemsError(f"no such scenario file or folder: {source}")
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ItemsError(f"cannot read {source} ({exc.__class__.__name__})") from None
    if source.suffix == ".jsonl":
        records = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                records.append((f"{source}:{number}", _json(line, f"{source}:{number}")))
    else:
        data = _json(text, str(source))
        if isinstance(data, dict) and isinstance(data.get("scenarios"), list):
            data = data["scenarios"]
        if not isinstance(data, list):
            raise ItemsError(f'{source}: expected a list of scenarios or {{"scenarios": [...]}}')
        records = [(f"{source}[{i}]", record) for i, record in enumerate(data)]
    return [_scenario(record, where) for where, record in records]


def _scenarios_from_folder(folder: Path) -> list[Scenario]:
    if (folder / "scenarios.jsonl").is_file():
        return read_scenarios(folder / "scenarios.jsonl")
    if (folder / "prompt").is_dir():
        from vrforge.generators.cfworld.importer import ReleaseError, import_release

        try:
            return list(import_release(folder).scenarios)
        except ReleaseError as exc:
            raise ItemsError(str(exc)) from None
    shards = sorted((folder / "data").glob("*/*.parquet"))
    if shards:
        import pyarrow.parquet as pq

        scenarios: list[Scenario] = []
        for shard in shards:
            if "levels" not in pq.read_schema(shard).names:
                continue  # another config of the same dataset (probes)
            scenarios.extend(_scenario(row, str(shard)) for row in pq.read_table(shard).to_pylist())
        if scenarios:
            return scenarios
    raise ItemsError(f"{folder} holds no scenarios.jsonl, data/<config>/*.parquet scenario rows or prompt/ release folder")


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ItemsError(f"{where}: not valid JSON ({exc.msg})") from None


def _scenario(record: Any, where: str) -> Scenario:
    if not isinstance(record, dict):
        raise ItemsError(f"{where}: a scenario must be a JSON object")
    try:
        return Scenario.from_dict(record)
    except KeyError as exc:
        raise ItemsError(f"{where}: scenario lacks the field {exc.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise ItemsError(f"{where}: not a scenario ({exc})") from None


# --------------------------------------------------------------------------- TACIT


def tacit_instruction(task: str) -> str:
    """The edit instruction for a task (its ``TaskSpec.instruction``); a task this installation
    does not know gets a generic one."""
    from vrforge.registry import UnknownTask, get_task

    try:
        return get_task(task).instruction
    except UnknownTask:
        return GENERIC_INSTRUCTION


def tacit_items(dataset: str | Path, resolution: int | None = None, tasks: Sequence[str] | None = None,
                difficulties: Sequence[str] | None = None, limit: int | None = None) -> list[GenerationItem]:
    """One item per puzzle of a built TACIT folder, ordered by task, difficulty and index.

    ``resolution`` picks which configs' puzzle images are the input (default 1024 px when the
    folder has it, else its smallest); ``limit`` caps the puzzles per task and difficulty.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vrforge.runners.scoring import ScoringError, chosen_configs

    folder = Path(dataset)
    try:
        resolution = resolved_resolution(folder, resolution)
        chosen = chosen_configs(folder, resolution, tasks)
    except ScoringError as exc:
        raise ItemsError(str(exc)) from None

    rows: list[dict[str, Any]] = []
    for task in sorted(chosen):
        for shard in sorted(chosen[task].glob("*.parquet")):
            try:
                table = pq.read_table(shard, columns=["id", "task", "difficulty", "index"])
            except (pa.ArrowException, OSError) as exc:
                raise ItemsError(f"cannot read {shard} ({exc.__class__.__name__})") from None
            rows.extend({**row, "shard": str(shard), "row": i} for i, row in enumerate(table.to_pylist()))
    if difficulties:
        rows = [r for r in rows if r["difficulty"] in difficulties]
    rows.sort(key=lambda r: (r["task"], difficulty_rank(r["difficulty"]), r["difficulty"], r["index"]))
    if limit is not None:
        taken: Counter = Counter()
        kept = []
        for r in rows:  # sorted, so these are the first ``limit`` puzzles of each task and difficulty
            if taken[r["task"], r["difficulty"]] < limit:
                taken[r["task"], r["difficulty"]] += 1
                kept.append(r)
        rows = kept
    if not rows:
        raise ItemsError(f"{folder}: no puzzles match the chosen tasks and difficulties")
    return [
        GenerationItem(
            id=r["id"], prompt=tacit_instruction(r["task"]),
            output=f"{OUTPUTS_FOLDER}/" + output_name(r["task"], r["difficulty"], r["index"]),
            image=ImageRef(r["shard"], r["row"]),
            info={"task": r["task"], "difficulty": r["difficulty"], "index": r["index"], "input_resolution": resolution},
        )
        for r in rows
    ]


def resolved_resolution(folder: Path, resolution: int | None) -> int | None:
    """The input resolution a run uses: the one asked for, else 1024 px when present, else the smallest."""
    from vrforge.runners.scoring import MAIN_RESOLUTION, dataset_configs

    if resolution is not None or not folder.is_dir():
        return resolution
    configs = dataset_configs(folder)
    if not configs:
        return None
    return MAIN_RESOLUTION if MAIN_RESOLUTION in configs else min(configs)


def tacit_dataset_tasks(dataset: str | Path, resolution: int | None) -> list[str]:
    """Every task of a built TACIT folder at ``resolution`` (for the instruction hash of a run's settings)."""
    from vrforge.runners.scoring import ScoringError, chosen_configs

    try:
        return sorted(chosen_configs(Path(dataset), resolved_resolution(Path(dataset), resolution), None))
    except ScoringError as exc:
        raise ItemsError(str(exc)) from None


@lru_cache(maxsize=4)
def _shard_images(shard: str) -> list[bytes]:
    """The puzzle PNG bytes of one shard; items are generated in shard order, so a small cache suffices."""
    import pyarrow.parquet as pq

    column = pq.read_table(shard, columns=["puzzle"]).column("puzzle").to_pylist()
    return [cell["bytes"] for cell in column]
