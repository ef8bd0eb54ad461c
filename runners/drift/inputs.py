"""Chain inputs: image-caption pairs for MCD and GenEval prompts with their specs for MGG.

Pairs come from a folder (images beside ``captions.csv`` with ``filename,caption`` columns,
``captions.jsonl``, or one ``<stem>.txt`` per image), a JSONL file (``image`` path relative to
the file, ``caption`` or ``text``, optional ``id``) or a Hugging Face dataset (``hf:NAME`` with an
image and a text column). Every sample gets a file-safe id, unique within the run: the id names
its files in the chain folders.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from vrforge.errors import UserError
from vrforge.imageio import UnusableImage, load_rgb

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
GENEVAL_TAGS = ("single_object", "two_object", "counting", "colors", "position", "color_attr")
GENEVAL_COLORS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white")
RELATIONS = ("left of", "right of", "above", "below")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class PairSample:
    id: str
    caption: str
    image: Image.Image = field(compare=False, repr=False)


@dataclass(frozen=True)
class GenEvalSample:
    id: str  # the prompt's line number in the metadata file: the public scorer reads ``gen-<k>/<line>.png``
    prompt: str
    spec: dict[str, Any]

    @property
    def tag(self) -> str:
        return str(self.spec["tag"])


def safe_id(text: str) -> str:
    cleaned = _UNSAFE.sub("_", text).strip("._")
    return cleaned or "sample"


def _image(source: Any, where: str) -> Image.Image:
    try:
        return Image.fromarray(load_rgb(source))
    except UnusableImage as exc:
        raise UserError(f"{where}: {exc}") from None


def load_pairs(source: str, *, split: str = "train", image_column: str = "image", text_column: str = "caption",
               limit: int | None = None) -> list[PairSample]:
    """The pairs of ``source`` in a stable order (file name or row order); UserError for anything unreadable."""
    if limit is not None and limit < 1:
        raise UserError(f"--limit must be at least 1, got {limit}")
    if source.startswith("hf:"):
        samples = _hf_pairs(source[3:], split, image_column, text_column, limit)
    else:
        path = Path(source)
        if path.is_dir():
            samples = _folder_pairs(path, limit)
        elif path.is_file() and path.suffix == ".jsonl":
            samples = _jsonl_pairs(path, limit)
        elif path.exists():
            raise UserError(f"{source}: pairs must be a folder, a .jsonl file or hf:NAME")
        else:
            raise UserError(f"no such pairs folder or file: {source}")
    if not samples:
        raise UserError(f"{source}: no image-caption pairs found")
    seen: set[str] = set()
    for sample in samples:
        if sample.id in seen:
            raise UserError(f"{source}: two samples share the id {sample.id!r}")
        seen.add(sample.id)
    return samples


def _folder_pairs(folder: Path, limit: int | None) -> list[PairSample]:
    images = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith("."))
    captions: dict[str, str] = {}
    if (folder / "captions.csv").is_file():
        with open(folder / "captions.csv", encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            if not reader.fieldnames or not {"filename", "caption"} <= set(reader.fieldnames):
                raise UserError(f"{folder / 'captions.csv'}: needs the columns filename and caption")
            captions = {row["filename"]: row["caption"] for row in reader}
    elif (folder / "captions.jsonl").is_file():
        for number, row in enumerate(_jsonl_rows(folder / "captions.jsonl"), 1):
            if not isinstance(row.get("filename"), str) or not isinstance(row.get("caption"), str):
                raise UserError(f"{folder / 'captions.jsonl'} line {number}: needs string fields filename and caption")
            captions[row["filename"]] = row["caption"]
    samples = []
    for image_path in images:
        caption = captions.get(image_path.name, captions.get(image_path.stem))
        if caption is None and image_path.with_suffix(".txt").is_file():
            caption = image_path.with_suffix(".txt").read_text(encoding="utf-8").strip()
        if caption is None:
            raise UserError(f"{image_path}: no caption (captions.csv, captions.jsonl or {image_path.stem}.txt)")
        samples.append(PairSample(safe_id(image_path.stem), caption, _image(image_path, str(image_path))))
        if limit is not None and len(samples) >= limit:
            break
    return samples


def _jsonl_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path} line {number}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise UserError(f"{path} line {number}: not a JSON object")
        rows.append(row)
    return rows


def _jsonl_pairs(path: Path, limit: int | None) -> list[PairSample]:
    samples = []
    for number, row in enumerate(_jsonl_rows(path), 1):
        caption = row.get("caption", row.get("text"))
        image = row.get("image")
        if not isinstance(caption, str) or not isinstance(image, str):
            raise UserError(f"{path} line {number}: needs a string image path and a caption (or text)")
        image_path = (path.parent / image) if not Path(image).is_absolute() else Path(image)
        sample_id = safe_id(str(row.get("id", Path(image).stem)))
        samples.append(PairSample(sample_id, caption, _image(image_path, f"{path} line {number}")))
        if limit is not None and len(samples) >= limit:
            break
    return samples


def _hf_pairs(name: str, split: str, image_column: str, text_column: str, limit: int | None) -> list[PairSample]:
    import datasets

    try:
        dataset = datasets.load_dataset(name, split=split)
    except Exception as exc:  # noqa: BLE001 - any loading failure is one line for the user
        first = (str(exc).strip().splitlines() or [""])[0]
        raise UserError(f"cannot load the dataset {name!r} split {split!r} ({exc.__class__.__name__}: {first})") from None
    missing = [c for c in (image_column, text_column) if c not in dataset.column_names]
    if missing:
        raise UserError(f"{name}: no column {', '.join(missing)} (columns: {', '.join(dataset.column_names)})")
    count = len(dataset) if limit is None else min(limit, len(dataset))
    width = max(5, len(str(count)))
    samples = []
    for index in range(count):
        row = dataset[index]
        caption = row[text_column]
        if isinstance(caption, list):  # several reference captions: the first, as the public preparation does
            caption = caption[0] if caption else ""
        if not isinstance(caption, str):
            raise UserError(f"{name} row {index}: {text_column} is not text")
        samples.append(PairSample(f"row-{index:0{width}d}", caption, _image(row[image_column], f"{name} row {index}")))
    return samples


# --------------------------------------------------------------------------- GenEval


def load_geneval(path: Path, *, limit: int | None = None, tags: list[str] | None = None) -> list[GenEvalSample]:
    """GenEval prompts with validated specs; the id is the line number counted from 0 (blank lines excluded)."""
    if not path.is_file():
        raise UserError(f"no such GenEval metadata file: {path}")
    if limit is not None and limit < 1:
        raise UserError(f"--geneval-limit must be at least 1, got {limit}")
    unknown = sorted(set(tags or []) - set(GENEVAL_TAGS))
    if unknown:
        raise UserError(f"unknown GenEval tag {', '.join(unknown)} (known: {', '.join(GENEVAL_TAGS)})")
    samples = []
    for index, row in enumerate(_jsonl_rows(path)):
        validate_spec(row, f"{path} prompt {index}")
        if tags and row["tag"] not in tags:
            continue
        samples.append(GenEvalSample(str(index), row["prompt"], row))
        if limit is not None and len(samples) >= limit:
            break
    if not samples:
        raise UserError(f"{path}: no GenEval prompts selected")
    return samples


def validate_spec(spec: dict[str, Any], where: str) -> None:
    if spec.get("tag") not in GENEVAL_TAGS:
        raise UserError(f"{where}: unknown tag {spec.get('tag')!r}")
    if not isinstance(spec.get("prompt"), str) or not spec["prompt"].strip():
        raise UserError(f"{where}: no prompt")
    include = spec.get("include")
    if not isinstance(include, list) or not include:
        raise UserError(f"{where}: include must be a non-empty list")
    for position, req in enumerate(include):
        _check_requirement(req, f"{where} include {position}")
        if "color" in req and req["color"] not in GENEVAL_COLORS:
            raise UserError(f"{where}: unknown colour {req['color']!r} (known: {', '.join(GENEVAL_COLORS)})")
        if "position" in req:
            relation = req["position"]
            if (not isinstance(relation, list) or len(relation) != 2 or relation[0] not in RELATIONS
                    or not isinstance(relation[1], int) or not 0 <= relation[1] < position):
                raise UserError(f"{where}: position must be [relation, earlier include index], got {relation!r}")
    for position, req in enumerate(spec.get("exclude", [])):
        _check_requirement(req, f"{where} exclude {position}")


def _check_requirement(req: Any, where: str) -> None:
    if not isinstance(req, dict) or not isinstance(req.get("class"), str) or not req["class"].strip():
        raise UserError(f"{where}: needs a class name")
    count = req.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise UserError(f"{where}: count must be a positive integer, got {count!r}")
