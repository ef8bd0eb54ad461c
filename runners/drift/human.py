"""The single-step human cross-check: blinded export of step-1 outputs, import of the ratings.

**Export.** For every pair sample present in all the given runs: its I2T output (the caption of
the original image, image-first step 1) and its T2I output (the image drawn from the original
caption, text-first step 1). Outputs of one input form a group; groups and the candidates inside
them are shuffled with the seed and named by opaque tokens, so a rater sees neither the model
nor the order of the runs. ``ratings.csv`` (one row per candidate: group, kind, source, output,
empty ``rating`` and ``rank``) and ``images/`` go to the raters; the key that maps tokens back to
runs is written apart (``<export>.key.json`` by default) and must not be handed out.

**Import.** ``rating`` is Good / Medium / Poor (1, 0.5, 0), ``rank`` 1 = best within its group
(optional). Per run: the mean rating per kind, the mean rank, and the cross-modal asymmetry rates
over samples with both kinds rated: "understands Good, generates Poor" (I2T Good and T2I Poor)
and the reverse. Across runs (three or more): Pearson's r of MCDavg and of MGG with the mean
human rating and with the negated mean rank. Across items (any number of runs): Pearson's r of
the step-1 similarity to the original (image-text for I2T, text-image for T2I) with the rating.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vrforge.errors import UserError
from vrforge.fileio import write_bytes_atomic
from vrforge.runners.drift.chain import (
    IMAGE_FIRST,
    TEXT_FIRST,
    image_folder,
    read_captions,
    text_file,
    write_json,
)

RATINGS = {"good": 1.0, "medium": 0.5, "poor": 0.0}
COLUMNS = ["group", "candidate", "kind", "source", "output", "rating", "rank"]


def _token(seed: int, *parts: str) -> str:
    return hashlib.sha256(json.dumps([seed, *parts]).encode()).hexdigest()[:12]


def export(runs: Sequence[tuple[str, Path]], to: Path, *, seed: int = 0, limit: int | None = None,
           key_path: Path | None = None) -> dict[str, Any]:
    if not runs:
        raise UserError("give at least one run folder")
    if len({name for name, _ in runs}) != len(runs):
        raise UserError("two runs share a name; name them apart (NAME=FOLDER)")
    if to.exists() and any(to.iterdir()):
        raise UserError(f"{to} is not empty; export into a new folder")
    common: set[str] | None = None
    for name, folder in runs:
        root = folder / "pairs"
        for path in (text_file(root, TEXT_FIRST, 0), text_file(root, IMAGE_FIRST, 1), image_folder(root, TEXT_FIRST, 1)):
            if not path.exists():
                raise UserError(f"run {name}: {path} is missing (a pairs run with at least one step is needed)")
        in_run = set(read_captions(text_file(root, IMAGE_FIRST, 1))) & set(read_captions(text_file(root, TEXT_FIRST, 0)))
        in_run &= {p.stem for p in image_folder(root, TEXT_FIRST, 1).glob("*.png")}
        common = in_run if common is None else common & in_run
    ids = sorted(common or [])
    if not ids:
        raise UserError("the runs share no sample with both step-1 outputs")
    rng = np.random.Generator(np.random.PCG64(seed))
    if limit is not None:
        ids = sorted(rng.permutation(ids)[:limit].tolist())
    first_root = runs[0][1] / "pairs"
    originals = read_captions(text_file(first_root, TEXT_FIRST, 0))
    captions = {name: read_captions(text_file(folder / "pairs", IMAGE_FIRST, 1)) for name, folder in runs}
    (to / "images").mkdir(parents=True, exist_ok=True)
    rows, key = [], {}
    groups = [(sample_id, kind) for sample_id in ids for kind in ("I2T", "T2I")]
    for index in rng.permutation(len(groups)):
        sample_id, kind = groups[int(index)]
        group = _token(seed, "group", sample_id, kind)
        if kind == "I2T":
            source_name = f"{group}-source.png"
            shutil.copyfile(_image_path(image_folder(first_root, IMAGE_FIRST, 0), sample_id), to / "images" / source_name)
            source = f"images/{source_name}"
        else:
            source = originals[sample_id]
        for position in rng.permutation(len(runs)):
            name, folder = runs[int(position)]
            candidate = _token(seed, "candidate", name, sample_id, kind)
            if kind == "I2T":
                output = captions[name][sample_id]
            else:
                shutil.copyfile(_image_path(image_folder(folder / "pairs", TEXT_FIRST, 1), sample_id),
                                to / "images" / f"{candidate}.png")
                output = f"images/{candidate}.png"
            rows.append([group, candidate, kind, source, output, "", ""])
            key[candidate] = {"run": name, "sample": sample_id, "kind": kind, "group": group}
    buffer = _csv_text([COLUMNS, *rows])
    write_bytes_atomic(to / "ratings.csv", buffer.encode("utf-8"))
    write_bytes_atomic(to / "README.txt", (
        b"Rate every candidate: rating = Good, Medium or Poor (how well the output keeps the meaning of the source);\n"
        b"rank = 1 for the best candidate of its group, 2 for the next, ...\n"
        b"I2T rows: the source is an image (images/...), the output a description.\n"
        b"T2I rows: the source is a description, the output an image (images/...).\n"))
    key_path = key_path or to.with_name(to.name + ".key.json")
    write_json(key_path, {"seed": seed, "runs": {name: str(folder) for name, folder in runs}, "candidates": key})
    return {"groups": len(groups), "candidates": len(rows), "ratings": str(to / "ratings.csv"), "key": str(key_path)}


def _image_path(folder: Path, sample_id: str) -> Path:
    for suffix in (".png", ".jpg", ".jpeg", ".webp"):
        if (folder / f"{sample_id}{suffix}").is_file():
            return folder / f"{sample_id}{suffix}"
    raise UserError(f"{folder}: no image for {sample_id}")


def _csv_text(rows: Sequence[Sequence[Any]]) -> str:
    import io

    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; None for fewer than three points or a constant side."""
    a, b = np.asarray(x, float), np.asarray(y, float)
    if len(a) < 3 or np.std(a) == 0 or np.std(b) == 0:
        return None
    return round(float(np.corrcoef(a, b)[0, 1]), 6)


def read_ratings(path: Path, key: dict[str, Any]) -> list[dict[str, Any]]:
    if not path.is_file():
        raise UserError(f"no such ratings file: {path}")
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames or not {"candidate", "rating"} <= set(reader.fieldnames):
            raise UserError(f"{path}: needs the columns candidate and rating (and rank)")
        rows = []
        for number, row in enumerate(reader, 2):
            candidate = (row.get("candidate") or "").strip()
            if candidate not in key["candidates"]:
                raise UserError(f"{path} line {number}: unknown candidate {candidate!r} (ratings and key of different exports?)")
            text = (row.get("rating") or "").strip().lower()
            if not text:
                continue  # not rated
            if text not in RATINGS:
                raise UserError(f"{path} line {number}: rating must be Good, Medium or Poor, got {row['rating']!r}")
            rank_text = (row.get("rank") or "").strip()
            try:
                rank = int(rank_text) if rank_text else None
            except ValueError:
                raise UserError(f"{path} line {number}: rank must be a whole number, got {rank_text!r}") from None
            if rank is not None and rank < 1:
                raise UserError(f"{path} line {number}: rank must be at least 1, got {rank}")
            rows.append({**key["candidates"][candidate], "candidate": candidate, "rating": RATINGS[text],
                         "label": text, "rank": rank})
    if not rows:
        raise UserError(f"{path}: no rated candidate")
    return rows


def import_ratings(key_path: Path, ratings_path: Path, results: dict[str, dict[str, Any]] | None = None,
                   samples: dict[str, dict[str, dict[str, Any]]] | None = None) -> dict[str, Any]:
    """The human summary; ``results`` / ``samples`` (by run name) add the correlations with MCD / MGG."""
    if not key_path.is_file():
        raise UserError(f"no such key file: {key_path}")
    key = json.loads(key_path.read_text(encoding="utf-8"))
    rows = read_ratings(ratings_path, key)
    per_run: dict[str, Any] = {}
    for name in sorted({r["run"] for r in rows}):
        mine = [r for r in rows if r["run"] == name]
        by_sample: dict[str, dict[str, str]] = {}
        for r in mine:
            by_sample.setdefault(r["sample"], {})[r["kind"]] = r["label"]
        both = [v for v in by_sample.values() if "I2T" in v and "T2I" in v]
        ranks = [r["rank"] for r in mine if r["rank"] is not None]
        per_run[name] = {
            "rated": len(mine),
            "rating": round(float(np.mean([r["rating"] for r in mine])), 6),
            "rating_i2t": _mean([r["rating"] for r in mine if r["kind"] == "I2T"]),
            "rating_t2i": _mean([r["rating"] for r in mine if r["kind"] == "T2I"]),
            "mean_rank": _mean(ranks),
            "samples_with_both": len(both),
            "understands_good_generates_poor": _mean([v["I2T"] == "good" and v["T2I"] == "poor" for v in both]),
            "generates_good_understands_poor": _mean([v["T2I"] == "good" and v["I2T"] == "poor" for v in both]),
        }
    summary: dict[str, Any] = {"runs": per_run, "correlation_across_runs": {}, "correlation_across_items": {}}
    if results:
        names = [n for n in per_run if n in results]
        getters = {"mcd_avg": lambda r: (r.get("mcd") or {}).get("mcd_avg"), "mgg": lambda r: (r.get("mgg") or {}).get("mgg")}
        for metric, get in getters.items():
            known = {n: value for n in names if (value := get(results[n])) is not None}
            ranked = [n for n in known if per_run[n]["mean_rank"] is not None]
            summary["correlation_across_runs"][metric] = {
                "runs": len(known),
                "pearson_with_rating": pearson(list(known.values()), [per_run[n]["rating"] for n in known]),
                "pearson_with_rank": pearson([known[n] for n in ranked], [-per_run[n]["mean_rank"] for n in ranked]),
            }
    if samples:
        for kind, relation in (("I2T", "image-text"), ("T2I", "text-image")):
            pairs = []
            for r in rows:
                record = (samples.get(r["run"]) or {}).get(r["sample"])
                value = ((record or {}).get("similarity", {}).get(relation) or {}).get("1")
                if r["kind"] == kind and value is not None:
                    pairs.append((value, r["rating"]))
            summary["correlation_across_items"][relation] = {
                "items": len(pairs), "pearson_with_rating": pearson([p[0] for p in pairs], [p[1] for p in pairs])}
    return summary


def _mean(values: Sequence[float | bool]) -> float | None:
    return round(float(np.mean([float(v) for v in values])), 6) if values else None
