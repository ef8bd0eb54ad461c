"""MCD, MGG, survival and failure kinds, computed from a chain folder on disk.

**MCD** (mean cumulative drift; a similarity, higher is better). Four relations against the
ORIGINAL, each at the steps where it applies (as the public scorer):

==============  ===========  ================  =====================================
relation        chain        steps             similarity
==============  ===========  ================  =====================================
text-text       text-first   2, 4, ..., G      sentence embedder (MPNet) cosine
text-image      text-first   1, 3, ..., G-1    CLIP text(T0) . CLIP image(I_k)
image-image     image-first  2, 4, ..., G      DINO CLS cosine
image-text      image-first  1, 3, ..., G-1    CLIP image(I0) . CLIP text(T_k)
==============  ===========  ================  =====================================

A relation's curve is the mean over samples at each step; its MCD the mean of the curve; MCDavg
the mean of the four. A missing output (a step not written for a sample) scores 0 and is
counted in ``missing``, so an incomplete folder cannot look better than a complete one.

**MGG** (multi-generation GenEval): at every image step of the GenEval text-first chain, the
checks of ``geneval.check_spec`` on the ORIGINAL prompt's spec; accuracy per task per step, the
mean over the tasks present per step, MGG = the mean over image steps (in percent, as the paper).
The single-step GenEval score is the value at step 1.

**Survival**: a GenEval sample is lost at the first image step whose check fails; S(k) is the
share not lost at step <= k. The kind of the first failure is recorded.

**Style** (a failure kind without a detector): CLIP zero-shot over ``STYLES``; an image whose
style differs from the chain's first image (text-first) or from the original (image-first).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vrforge.errors import UserError
from vrforge.runners.drift.chain import (
    IMAGE_FIRST,
    SPECS_FILE,
    TEXT_FIRST,
    image_folder,
    modality,
    read_captions,
    read_image,
    text_file,
)
from vrforge.runners.drift.geneval import FAILURE_KINDS, check_spec, spec_classes

CHUNK = 64  # outputs decoded at once while scoring: memory stays bounded at any run size
RELATIONS = ("text-text", "text-image", "image-image", "image-text")
RELATION_CHAIN = {"text-text": TEXT_FIRST, "text-image": TEXT_FIRST, "image-image": IMAGE_FIRST, "image-text": IMAGE_FIRST}
STYLES = ("a photograph", "a cartoon", "a painting", "a pencil sketch", "a 3D render")


@dataclass
class Scorers:
    """What the scoring uses; any may be None (that part is then not scored)."""

    text: Any = None  # embed_texts
    image: Any = None  # embed_images
    clip: Any = None  # embed_texts + embed_images
    detector: Any = None  # geneval.Detector
    colours: Any = None  # geneval.ColourClassifier
    vocabulary: list[str] = field(default_factory=list)
    threshold: float = 0.1
    progress: bool = False
    timings: dict[str, float] = field(default_factory=lambda: {"load_seconds": 0.0, "embed_seconds": 0.0, "embedded": 0,
                                                                "detect_seconds": 0.0, "detected": 0})

    def preload(self, names: Sequence[str]) -> None:
        """Load the named models now, so model loading is timed apart from embedding and detection."""
        t0 = time.perf_counter()
        for name in names:
            model = getattr(self, name)
            if callable(getattr(model, "load", None)):
                model.load()
        self.timings["load_seconds"] += time.perf_counter() - t0


def chain_length(root: Path, direction: str) -> int:
    """The number of steps written (the last k with gen-k present, all earlier ones present too)."""
    step = 0
    while True:
        nxt = step + 1
        path = text_file(root, direction, nxt) if modality(direction, nxt) == "text" else image_folder(root, direction, nxt)
        if not path.exists():
            return step
        step = nxt


def origin_ids(root: Path, direction: str) -> list[str]:
    if modality(direction, 0) == "text":
        path = text_file(root, direction, 0)
        if not path.is_file():
            raise UserError(f"{path} is missing (the originals of the {direction} chain)")
        return sorted(read_captions(path))
    folder = image_folder(root, direction, 0)
    if not folder.is_dir():
        raise UserError(f"{folder} is missing (the originals of the {direction} chain)")
    return sorted(p.stem for p in folder.iterdir() if p.suffix.lower() in (".png", ".jpg", ".jpeg", ".webp")
                  and not p.name.startswith("."))


def _load(root: Path, direction: str, step: int, ids: Sequence[str]) -> list[Any]:
    """Texts or images of ``step`` by id; None where missing."""
    if modality(direction, step) == "text":
        path = text_file(root, direction, step)
        texts = read_captions(path) if path.is_file() else {}
        return [texts.get(i) for i in ids]
    folder = image_folder(root, direction, step)
    return [read_image(folder, i) for i in ids]


def _embed(scorers: Scorers, which: str, kind: str, values: Sequence[Any]) -> np.ndarray:
    model = {"text": scorers.text, "image": scorers.image, "clip": scorers.clip}[which]
    t0 = time.perf_counter()
    vectors = model.embed_texts(list(values)) if kind == "text" else model.embed_images(list(values))
    scorers.timings["embed_seconds"] += time.perf_counter() - t0
    scorers.timings["embedded"] += len(values)
    return np.asarray(vectors, dtype=np.float32)


def _relation_models(relation: str) -> tuple[str, str, str]:
    """(model, kind of the original, kind at the step)."""
    return {"text-text": ("text", "text", "text"), "text-image": ("clip", "text", "image"),
            "image-image": ("image", "image", "image"), "image-text": ("clip", "image", "text")}[relation]


def _style_labels(scorers: Scorers, images: Sequence[Image.Image]) -> list[str]:
    prompts = _embed(scorers, "clip", "text", list(STYLES))
    vectors = _embed(scorers, "clip", "image", images)
    return [STYLES[int(i)] for i in np.argmax(vectors @ prompts.T, axis=1)]


def _embed_step(scorers: Scorers, which: str, kind: str, root: Path, direction: str, step: int,
                ids: Sequence[str]) -> tuple[np.ndarray | None, np.ndarray]:
    """Embeddings of one step's outputs (zeros where missing) and the mask of those present, read in chunks."""
    vectors: np.ndarray | None = None
    present = np.zeros(len(ids), dtype=bool)
    for start in range(0, len(ids), CHUNK):
        values = _load(root, direction, step, ids[start:start + CHUNK])
        keep = [start + k for k, v in enumerate(values) if v is not None]
        if keep:
            part = _embed(scorers, which, kind, [values[k - start] for k in keep])
            if vectors is None:
                vectors = np.zeros((len(ids), part.shape[1]), dtype=np.float32)
            vectors[keep] = part
            present[keep] = True
    return vectors, present


def score_pairs(root: Path, scorers: Scorers, steps: int | None = None) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """MCD of a pairs folder: (summary, per-sample records)."""
    available = {d: chain_length(root, d) for d in (TEXT_FIRST, IMAGE_FIRST) if (root / d).is_dir()}
    if not available:
        raise UserError(f"{root}: no text-first or image-first chain")
    samples: dict[str, dict[str, Any]] = {}
    relations: dict[str, Any] = {}
    for relation in RELATIONS:
        direction = RELATION_CHAIN[relation]
        which, origin_kind, step_kind = _relation_models(relation)
        model = {"text": scorers.text, "image": scorers.image, "clip": scorers.clip}[which]
        if direction not in available or model is None:
            continue
        length = available[direction] if steps is None else min(steps, available[direction])
        ids = origin_ids(root, direction)
        base, found = _embed_step(scorers, which, origin_kind, root, direction, 0, ids)
        if base is None or not found.all():
            raise UserError(f"{root / direction}: an original is missing")
        curve: dict[str, float] = {}
        missing = 0
        scored_steps = [k for k in range(1, length + 1) if modality(direction, k) == step_kind]
        bar = _bar(scorers, len(scored_steps) * len(ids), f"MCD {relation}")
        for step in scored_steps:
            vectors, present = _embed_step(scorers, which, step_kind, root, direction, step, ids)
            sims = np.zeros(len(ids), dtype=np.float64)
            if vectors is not None:
                sims = np.sum(base.astype(np.float64) * vectors.astype(np.float64), axis=1) * present
            missing += int(len(ids) - present.sum())
            curve[str(step)] = float(np.mean(sims))
            for k, sample_id in enumerate(ids):
                record = samples.setdefault(sample_id, {"track": "pairs", "id": sample_id, "similarity": {}})
                record["similarity"].setdefault(relation, {})[str(step)] = round(float(sims[k]), 6)
            bar.update(len(ids))
        bar.close()
        if curve:
            relations[relation] = {"curve": _rounded(curve), "mcd": round(float(np.mean(list(curve.values()))), 6),
                                   "steps": len(curve), "missing": missing}
    summary: dict[str, Any] = {"relations": relations,
                               "mcd_avg": round(float(np.mean([r["mcd"] for r in relations.values()])), 6) if relations else None,
                               "complete": len(relations) == len(RELATIONS), "samples": len(samples)}
    if scorers.clip is not None and IMAGE_FIRST in available:
        _pair_styles(root, scorers, available[IMAGE_FIRST] if steps is None else min(steps, available[IMAGE_FIRST]), samples)
        changed: dict[str, int] = {}
        for record in samples.values():
            for step in record.get("style_changed", {}):
                changed[step] = changed.get(step, 0) + 1
        summary["style_changes_per_step"] = dict(sorted(changed.items(), key=lambda kv: int(kv[0])))
    return summary, samples


def _pair_styles(root: Path, scorers: Scorers, length: int, samples: dict[str, dict[str, Any]]) -> None:
    ids = origin_ids(root, IMAGE_FIRST)
    prompts = _embed(scorers, "clip", "text", list(STYLES))

    def labels(step: int) -> list[str | None]:
        vectors, present = _embed_step(scorers, "clip", "image", root, IMAGE_FIRST, step, ids)
        if vectors is None:
            return [None] * len(ids)
        best = np.argmax(vectors @ prompts.T, axis=1)
        return [STYLES[int(b)] if p else None for b, p in zip(best, present)]

    reference = labels(0)
    for step in range(2, length + 1, 2):
        for k, label in enumerate(labels(step)):
            if label is not None and label != reference[k]:
                record = samples.setdefault(ids[k], {"track": "pairs", "id": ids[k], "similarity": {}})
                record.setdefault("style_changed", {})[str(step)] = f"{reference[k]} -> {label}"


def read_specs(root: Path, metadata: Path | None = None) -> dict[str, dict[str, Any]]:
    """GenEval specs by sample id: ``specs.jsonl`` in a vrforge run, else the metadata file (id = line number)."""
    from vrforge.runners.drift.inputs import load_geneval

    if (root / SPECS_FILE).is_file() and metadata is None:
        specs = {}
        for line in (root / SPECS_FILE).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                specs[str(row["id"])] = row["spec"]
        return specs
    if metadata is None:
        raise UserError(f"{root}: no {SPECS_FILE}; give the GenEval metadata file (--geneval-metadata)")
    return {s.id: s.spec for s in load_geneval(metadata)}


def score_geneval(root: Path, specs: dict[str, dict[str, Any]], scorers: Scorers,
                  steps: int | None = None) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """MGG, survival and failure kinds of a GenEval text-first folder: (summary, per-sample records)."""
    if scorers.detector is None:
        raise UserError("MGG needs a detector")
    length = chain_length(root, TEXT_FIRST) if steps is None else min(steps, chain_length(root, TEXT_FIRST))
    ids = sorted(specs, key=lambda i: (len(i), i))
    tags = sorted({specs[i]["tag"] for i in ids})
    per_task: dict[str, dict[str, float]] = {t: {} for t in tags}
    per_step: dict[str, float] = {}
    kinds_per_step: dict[str, dict[str, int]] = {}
    samples = {i: {"track": "geneval", "id": i, "tag": specs[i]["tag"], "prompt": specs[i].get("prompt"), "checks": {},
                   "lost_at": None, "lost_kind": None} for i in ids}
    first_style: dict[str, str] = {}
    image_steps = [k for k in range(1, length + 1) if modality(TEXT_FIRST, k) == "image"]
    bar = _bar(scorers, len(image_steps) * len(ids), "MGG")
    for step in image_steps:
        folder = image_folder(root, TEXT_FIRST, step)
        results: dict[int, Any] = {}
        styles: dict[int, str] = {}
        for start in range(0, len(ids), CHUNK):
            loaded = {k: read_image(folder, ids[k]) for k in range(start, min(start + CHUNK, len(ids)))}
            images = {k: im for k, im in loaded.items() if im is not None}
            present = sorted(images)
            if scorers.clip is not None and present:
                styles.update(zip(present, _style_labels(scorers, [images[k] for k in present])))
            queries = [list(dict.fromkeys(spec_classes(specs[ids[k]]) + scorers.vocabulary)) for k in present]
            t0 = time.perf_counter()
            found = scorers.detector.detect([images[k] for k in present], queries) if present else []
            for k, detections in zip(present, found):
                results[k] = check_spec(specs[ids[k]], images[k], detections, scorers.colours, threshold=scorers.threshold)
            scorers.timings["detect_seconds"] += time.perf_counter() - t0
            scorers.timings["detected"] += len(present)
            bar.update(min(CHUNK, len(ids) - start))
        counts = dict.fromkeys(FAILURE_KINDS, 0)
        passed_by_tag: dict[str, list[bool]] = {t: [] for t in tags}
        for k, sample_id in enumerate(ids):
            result = results.get(k) or check_spec(specs[sample_id], None, [], None)
            entry = result.as_dict()
            if k in styles:
                style = styles[k]
                first_style.setdefault(sample_id, style)
                entry["style"] = style
                if style != first_style[sample_id]:
                    entry["kinds"] = [*entry["kinds"], "style"]
            for kind in dict.fromkeys(entry["kinds"] + (["hallucinated"] if entry["hallucinated"] else [])):
                counts[kind] += 1
            samples[sample_id]["checks"][str(step)] = entry
            passed_by_tag[specs[sample_id]["tag"]].append(result.passed)
            if not result.passed and samples[sample_id]["lost_at"] is None:
                samples[sample_id]["lost_at"] = step
                samples[sample_id]["lost_kind"] = result.kinds[0] if result.kinds else None
        for tag in tags:
            per_task[tag][str(step)] = float(np.mean(passed_by_tag[tag]))
        per_step[str(step)] = float(np.mean([per_task[t][str(step)] for t in tags]))
        kinds_per_step[str(step)] = counts
    bar.close()
    survival = {str(k): round(float(np.mean([s["lost_at"] is None or s["lost_at"] > k for s in samples.values()])), 6)
                for k in image_steps}
    summary = {
        "mgg": round(100 * float(np.mean(list(per_step.values()))), 4) if per_step else None,
        "single_step": round(100 * per_step[str(image_steps[0])], 4) if image_steps else None,
        "per_step": {k: round(100 * v, 4) for k, v in per_step.items()},
        "per_task": {t: {k: round(100 * v, 4) for k, v in c.items()} for t, c in per_task.items()},
        "per_task_mean": {t: round(100 * float(np.mean(list(c.values()))), 4) for t, c in per_task.items() if c},
        "survival": survival,
        "failure_kinds_per_step": kinds_per_step,
        "lost_kind_counts": _count([s["lost_kind"] for s in samples.values() if s["lost_kind"]]),
        "samples": len(ids), "image_steps": image_steps,
    }
    return summary, samples


def _bar(scorers: Scorers, total: int, desc: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="item", disable=not scorers.progress, dynamic_ncols=True)


def _count(values: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return dict(sorted(out.items()))


def _rounded(curve: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 6) for k, v in curve.items()}
