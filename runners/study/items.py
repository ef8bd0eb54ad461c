"""What a study holds: items and instructions pages for each of the four kinds.

- **tacit-choice / tacit-draw**: puzzles from a built TACIT folder (``data/<config>/*.parquet``
  at one resolution) or generated with the registry exactly as a build with that recipe seed
  makes them (same ids, same pictures). ``items`` puzzles per task and difficulty are drawn
  with the seed. Each task gets an instructions page: its description, the rules it relies on
  (``TaskSpec.conventions`` and the notes of ``tools.INSTRUCTION_NOTES``), how to answer, and
  one worked example (a puzzle outside the study and its solution).
- **cfeval-rate**: images of a ``vrforge run t2i`` output (``<images>/<scenario_id>/<level>.png``)
  with their scenario's judge questions and criteria, the same text a VLM judge is given.
- **drift-rate**: the groups of a ``vrforge drift human-export`` folder (its ratings.csv and
  images/), still blinded: the key stays with the researcher.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from vrforge.errors import UserError
from vrforge.runners.study.store import NewBlock, NewItem, StudyError
from vrforge.schemas.layout import difficulty_rank

PNG = "image/png"
EXAMPLE_INDEX = 9000  # generated worked examples take indices from here: far from any study's items
TITLES = {
    "ca_forward": "Cellular automaton: the grid after some steps",
    "ca_inverse": "Cellular automaton: the missing rules",
    "graph_coloring": "Graph colouring",
    "graph_isomorphism": "Graph isomorphism",
    "iso_reconstruction": "Solid from three views",
    "logic_grid": "Logic grid",
    "maze": "Maze",
    "ortho_projection": "Three views of a solid",
    "raven": "Matrix completion",
    "unknot": "Unknot",
}
CHOICE_HOW = ("The puzzle is shown with five possible answers, A to E. Press 1 to 5 (or A to E) or click an answer to "
              "choose it, then press Enter or click Submit. Exactly one answer is right.")
UPLOAD_HOW = ("This task has no drawing tools: draw your answer on the puzzle picture in any image editor and upload it "
              "as a PNG, JPEG or WebP file of the whole picture.")


def title(task: str) -> str:
    return TITLES.get(task, task.replace("_", " ").capitalize())


@dataclass(frozen=True)
class Puzzle:
    """One TACIT puzzle as a study uses it (images at the study's resolution)."""

    id: str
    task: str
    difficulty: str
    index: int
    meta: dict[str, Any]
    answer_index: int
    violations: list[str]
    puzzle: bytes
    options: tuple[bytes, ...]  # the original order: distractors with the solution inserted at answer_index

    @property
    def solution(self) -> bytes:
        return self.options[self.answer_index]


# ---------------------------------------------------------------- TACIT sources


@lru_cache(maxsize=256)
def generated_puzzle(task: str, difficulty: str, index: int, seed: int, resolution: int) -> Puzzle:
    """The puzzle a build with recipe seed ``seed`` makes for (task, difficulty, index), at ``resolution``."""
    from vrforge.builds.item import ItemFailed, build_item
    from vrforge.builds.plan import PlanItem

    try:
        built = build_item(PlanItem(task, difficulty, index, seed), (resolution,), config_hash="study")
    except ItemFailed as exc:
        raise StudyError(str(exc)) from None
    images = built.images[resolution]
    options = list(images["distractors"])
    options.insert(built.fields["answer_index"], images["solution"])
    return Puzzle(built.fields["id"], task, difficulty, index, json.loads(built.fields["meta"]), built.fields["answer_index"],
                  list(built.fields["distractor_violations"]), images["puzzle"], tuple(options))


def generated_puzzles(tasks: Sequence[str], difficulties: Sequence[str], count: int, seed: int, resolution: int) -> list[Puzzle]:
    from vrforge.registry import UnknownTask, get_task

    for task in tasks:
        try:
            spec = get_task(task)
        except UnknownTask as exc:
            raise StudyError(exc.args[0]) from None
        missing = [d for d in difficulties if d not in spec.difficulties]
        if missing:
            raise StudyError(f"task {task!r} has no difficulty {missing[0]!r} (it has {', '.join(spec.difficulties)})")
    return [generated_puzzle(task, difficulty, index, seed, resolution)
            for task in tasks for difficulty in difficulties for index in range(count)]


def dataset_puzzles(folder: str | Path, resolution: int | None, tasks: Sequence[str] | None,
                    difficulties: Sequence[str] | None, count: int, seed: int) -> tuple[list[Puzzle], list[Puzzle], int]:
    """``count`` puzzles per task and difficulty of a built folder (seeded choice), one spare
    puzzle per task for its worked example (None where every puzzle is in the study), and the
    resolution read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vrforge.runners.scoring import ScoringError, chosen_configs, dataset_configs
    from vrforge.schemas.layout import MAIN_RESOLUTION

    root = Path(folder)
    try:
        configs = dataset_configs(root) if root.is_dir() else {}
        if resolution is None and configs:
            resolution = MAIN_RESOLUTION if MAIN_RESOLUTION in configs else min(configs)
        chosen = chosen_configs(root, resolution, tasks)
    except ScoringError as exc:
        raise StudyError(str(exc)) from None
    assert resolution is not None
    index_rows: list[dict[str, Any]] = []
    for task in sorted(chosen):
        for shard in sorted(chosen[task].glob("*.parquet")):
            try:
                table = pq.read_table(shard, columns=["id", "task", "difficulty", "index"])
            except (pa.ArrowException, OSError) as exc:
                raise StudyError(f"cannot read {shard} ({exc.__class__.__name__})") from None
            index_rows += [{**row, "shard": str(shard), "row": i} for i, row in enumerate(table.to_pylist())]
    if difficulties:
        index_rows = [r for r in index_rows if r["difficulty"] in difficulties]
    cells: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in sorted(index_rows, key=lambda r: (r["task"], difficulty_rank(r["difficulty"]), r["difficulty"], r["index"])):
        cells[r["task"], r["difficulty"]].append(r)
    if not cells:
        raise StudyError(f"{root}: no puzzles match the chosen tasks and difficulties")
    rng = np.random.default_rng(seed)
    picked, spare = [], {}
    for key in sorted(cells, key=lambda k: (k[0], difficulty_rank(k[1]), k[1])):
        rows = cells[key]
        order = rng.permutation(len(rows)).tolist()
        picked += [rows[i] for i in sorted(order[:count])]
        if len(rows) > count and key[0] not in spare:  # the easiest level's first unused puzzle
            spare[key[0]] = rows[order[count]]
    chosen_rows = picked + list(spare.values())
    loaded = _load_rows(chosen_rows)
    study = [loaded[r["shard"], r["row"]] for r in picked]
    examples = [loaded[r["shard"], r["row"]] for r in spare.values()]
    return study, examples, resolution


def _load_rows(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], Puzzle]:
    import pyarrow.parquet as pq

    wanted: dict[str, list[int]] = defaultdict(list)
    for r in rows:
        wanted[r["shard"]].append(r["row"])
    out = {}
    columns = ["id", "task", "difficulty", "index", "meta", "answer_index", "distractor_violations", "puzzle", "solution",
               "distractors"]
    for shard, numbers in wanted.items():
        table = pq.read_table(shard, columns=columns).take(sorted(set(numbers))).to_pylist()
        for number, row in zip(sorted(set(numbers)), table):
            options = [d["bytes"] for d in row["distractors"]]
            options.insert(row["answer_index"], row["solution"]["bytes"])
            out[shard, number] = Puzzle(row["id"], row["task"], row["difficulty"], row["index"], json.loads(row["meta"]),
                                        row["answer_index"], list(row["distractor_violations"]), row["puzzle"]["bytes"],
                                        tuple(options))
    return out


@dataclass(frozen=True)
class Example:
    """A worked example for an instructions page: a puzzle and its solution, as PNGs."""

    id: str
    puzzle: bytes
    solution: bytes


def example_of(puzzle: Puzzle) -> Example:
    return Example(puzzle.id, puzzle.puzzle, puzzle.solution)


@lru_cache(maxsize=64)
def example_puzzle(task: str, difficulty: str, seed: int, resolution: int, taken: frozenset[str]) -> Example | None:
    """A generated puzzle of ``task`` outside the study, drawn with its solution (None: the task
    is not installed here). Only the two pictures are needed, so no distractor is rendered."""
    from vrforge.registry import UnknownTask, accepted_puzzle, get_task
    from vrforge.render import render_pngs
    from vrforge.schemas.layout import item_id

    try:
        spec = get_task(task)
    except UnknownTask:
        return None
    index = EXAMPLE_INDEX
    while item_id(task, difficulty, index) in taken:
        index += 1
    try:
        found = accepted_puzzle(spec, difficulty, index, seed)
    except RuntimeError as exc:
        raise StudyError(str(exc)) from None
    pictures = [render_pngs(spec.draw(found.meta, answer), [resolution])[resolution] for answer in (None, found.solution)]
    return Example(item_id(task, difficulty, index), pictures[0], pictures[1])


def examples_for(puzzles: Sequence[Puzzle], spares: Sequence[Puzzle], seed: int, resolution: int) -> dict[str, Example | None]:
    """Each task's worked example: a spare puzzle of the dataset, else one generated at the task's easiest level."""
    examples: dict[str, Example | None] = {p.task: example_of(p) for p in spares}
    taken = frozenset(p.id for p in puzzles)
    for task in sorted({p.task for p in puzzles} - set(examples)):
        easiest = min((p.difficulty for p in puzzles if p.task == task), key=difficulty_rank)
        examples[task] = example_puzzle(task, easiest, seed, resolution, taken)
    return examples


# ---------------------------------------------------------------- TACIT items and pages


def tacit_study(kind: str, puzzles: Sequence[Puzzle],
                examples: Mapping[str, Example | None]) -> tuple[list[NewBlock], list[NewItem]]:
    """The instructions pages (one per task) and the items of a tacit-choice or tacit-draw study."""
    from vrforge.registry import UnknownTask, get_task
    from vrforge.runners.study.tools import tools_for

    items, blocks = [], []
    for task in sorted({p.task for p in puzzles}):
        try:
            spec: Any = get_task(task)
        except UnknownTask:
            spec = None
        if kind == "tacit-draw" and spec is None:
            raise StudyError(f"task {task!r} is not installed here: a drawing study scores answers with its verifier")
        tools = tools_for(spec) if spec is not None else None
        blocks.append(NewBlock(task, _task_page(kind, task, spec, tools, examples.get(task)), _example_images(examples.get(task))))
    for p in puzzles:
        private = {"row_id": p.id, "meta": p.meta, "index": p.index}
        if kind == "tacit-choice":
            private |= {"answer_index": p.answer_index, "violations": p.violations}
            images = {"puzzle": (p.puzzle, PNG), **{f"option-{k}": (png, PNG) for k, png in enumerate(p.options)}}
            public: dict[str, Any] = {}
        else:
            tools = tools_for(get_task(p.task))
            images = {"puzzle": (p.puzzle, PNG)}
            public = {"tools": {"kind": "upload"} if tools is None else {"kind": tools.kind, **tools.spec(p.meta)}}
        items.append(NewItem(p.task, p.task, p.difficulty, p.id, private, public, images))
    return blocks, items


def _example_images(example: Example | None) -> dict[str, tuple[bytes, str]]:
    if example is None:
        return {}
    return {"example-puzzle": (example.puzzle, PNG), "example-solution": (example.solution, PNG)}


def _task_page(kind: str, task: str, spec: Any, tools: Any, example: Example | None) -> dict[str, Any]:
    from vrforge.runners.study.tools import INSTRUCTION_NOTES

    if spec is None:
        description, instruction, hint, conventions = "", "", "the puzzle completed correctly", {}
    else:
        description, instruction, hint, conventions = spec.description, spec.instruction, spec.answer_hint, spec.conventions
    if kind == "tacit-choice":
        what = f"Choose the answer that shows {hint}."
        how = CHOICE_HOW
    else:
        what = instruction or description
        how = UPLOAD_HOW if tools is None else tools.help
    return {
        "kind": "task", "task": task, "title": title(task), "description": description, "what": what, "how": how,
        "rules": [{"rule": rule, "shown_by": where} for rule, where in conventions.items()],
        "notes": list(INSTRUCTION_NOTES.get(task, [])),
        "example": None if example is None else {"caption": "A worked example (not one of your puzzles): the puzzle, "
                                                            "then its solution."},
    }


# ---------------------------------------------------------------- CF-Eval ratings

CFEVAL_PAGE: dict[str, Any] = {
    "kind": "cfeval", "title": "Rating generated images",
    "description": ("Each picture was made by an image generator from a written description. Below it are questions "
                    "about the picture, each with the criteria it must meet."),
    "what": "Score every question from what you can see in the picture.",
    "how": ("For each question choose 1 when the picture fully meets the criteria, 0.5 when it meets them only in part "
            "or with a clear flaw, and 0 when it fails them. Choose 'Cannot tell' only when the picture does not let you "
            "decide. The scores are the ones the automatic judge gives, so yours can be compared with its."),
    "rules": [], "notes": [], "example": None,
}


def cfeval_study(scenarios_path: str | Path, images_dir: str | Path, levels: Sequence[str], limit: int | None,
                 seed: int, ids: Sequence[str] | None = None,
                 pilot: bool = False) -> tuple[list[NewBlock], list[NewItem]]:
    """``ids``: keep only these scenarios (each must exist); ``pilot``: keep the seeded 50-scenario pilot
    selection (``generators/cfworld/pilot.py``), whose every question must be one a rater answers yes or no."""
    from vrforge.runners.cfeval_judge import CFEvalError, image_path, level_questions, load_scenarios

    images = Path(images_dir)
    if not images.is_dir():
        raise StudyError(f"no such images folder: {images}")
    try:
        scenarios = load_scenarios(scenarios_path)
    except CFEvalError as exc:
        raise StudyError(str(exc)) from None
    if pilot:
        from vrforge.generators.cfworld.pilot import pilot_ids
        from vrforge.generators.cfworld.rubric import check_yes_no

        ids = pilot_ids(scenarios)
        not_yes_no = [f"{s.id}: {p}" for s in scenarios if s.id in set(ids) for p in check_yes_no(s.questions)]
        if not_yes_no:
            raise StudyError(f"{len(not_yes_no)} pilot question(s) a rater cannot answer yes or no, first: {not_yes_no[0]}")
    if ids is not None:
        wanted = set(ids)
        missing = sorted(wanted - {s.id for s in scenarios})
        if missing:
            raise StudyError(f"{len(missing)} scenario id(s) not in {scenarios_path}, first: {missing[0]}")
        scenarios = [s for s in scenarios if s.id in wanted]
    found = []
    for scenario in scenarios:
        for level in levels:
            questions = level_questions(scenario, level)
            path = image_path(images, scenario.id, level)
            if questions and path.is_file():
                found.append((scenario, level, questions, path))
    if not found:
        raise StudyError(f"{images} holds no <scenario_id>/<level>.png for the scenarios' {', '.join(levels)} questions")
    if limit is not None and limit < len(found):
        keep = sorted(np.random.default_rng(seed).permutation(len(found))[:limit].tolist())
        found = [found[i] for i in keep]
    items = []
    for scenario, level, questions, path in found:
        data = _image_bytes(path)
        private = {"scenario_id": scenario.id, "level": level, "domain": scenario.domain,
                   "questions": [{"dimension": q.dimension, "weight": float(q.weight)} for q in questions]}
        public = {"questions": [{"question": q.question, "criteria": q.criteria} for q in questions]}
        items.append(NewItem("cfeval", "cfeval", level, f"{scenario.id}/{level}", private, public, {"image": data}))
    return [NewBlock("cfeval", CFEVAL_PAGE, {})], items


def _image_bytes(path: Path) -> tuple[bytes, str]:
    """The file's bytes and type, refused unless it decodes as an image (PNG, JPEG, WebP)."""
    from PIL import Image

    from vrforge.imageio import UnusableImage, load_rgb

    data = path.read_bytes()
    try:
        load_rgb(data)
        with Image.open(io.BytesIO(data)) as image:
            mime = Image.MIME.get(image.format or "", PNG)
    except (UnusableImage, OSError, ValueError) as exc:
        raise StudyError(f"{path} is not a usable image ({exc})") from None
    return data, mime


# ---------------------------------------------------------------- drift ratings

DRIFT_PAGE: dict[str, Any] = {
    "kind": "drift", "title": "Rating descriptions and pictures",
    "description": ("Each page shows a source (a picture or a description) and several outputs made from it by different "
                    "systems, in a random order."),
    "what": "Rate how well each output keeps the meaning of the source, then rank the outputs.",
    "how": ("Give each output Good, Medium or Poor, then rank the outputs: 1 for the best of the page, 2 for the next, and "
            "so on (each rank once). Picture sources: the outputs are descriptions of the picture. Description sources: "
            "the outputs are pictures drawn from the description."),
    "rules": [], "notes": [], "example": None,
}


def drift_study(export_dir: str | Path, limit: int | None, seed: int) -> tuple[list[NewBlock], list[NewItem]]:
    from vrforge.runners.drift.human import COLUMNS

    root = Path(export_dir)
    ratings = root / "ratings.csv"
    if not ratings.is_file():
        raise StudyError(f"{root} has no ratings.csv (not a `vrforge drift human-export` folder)")
    with open(ratings, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None or not set(COLUMNS) <= set(reader.fieldnames):
            raise StudyError(f"{ratings} needs the columns {', '.join(COLUMNS)}")
        rows = list(reader)
    groups: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        groups.setdefault(row["group"], []).append(row)
    names = list(groups)
    if not names:
        raise StudyError(f"{ratings} lists no candidates")
    if limit is not None and limit < len(names):
        names = [names[i] for i in sorted(np.random.default_rng(seed).permutation(len(names))[:limit].tolist())]
    items = []
    for group in names:
        members = groups[group]
        kind = members[0]["kind"]
        if kind not in ("I2T", "T2I") or any(m["kind"] != kind for m in members):
            raise StudyError(f"{ratings}: group {group} mixes kinds or has an unknown kind {kind!r}")
        images: dict[str, tuple[bytes, str]] = {}
        public: dict[str, Any] = {"kind": kind, "candidates": []}
        if kind == "I2T":
            images["source"] = _export_image(root, members[0]["source"])
            public["source_text"] = None
        else:
            public["source_text"] = members[0]["source"]
        for k, member in enumerate(members):
            if kind == "T2I":
                images[f"candidate-{k}"] = _export_image(root, member["output"])
                public["candidates"].append({"text": None})
            else:
                public["candidates"].append({"text": member["output"]})
        private = {"group": group, "kind": kind, "candidates": [m["candidate"] for m in members]}
        items.append(NewItem("drift", "drift", kind, group, private, public, images))
    return [NewBlock("drift", DRIFT_PAGE, {})], items


def _export_image(root: Path, relative: str) -> tuple[bytes, str]:
    """An image named in ratings.csv: only inside the export folder's images/."""
    path = (root / relative).resolve()
    if path.parent != (root / "images").resolve() or not path.is_file():
        raise StudyError(f"{root}: {relative!r} is not an image of the export's images/ folder")
    return _image_bytes(path)


def parse_list(text: str | None, what: str) -> list[str]:
    if text is None:
        return []
    values = [v.strip() for v in text.split(",") if v.strip()]
    if not values:
        raise UserError(f"{what} lists nothing")
    return values
