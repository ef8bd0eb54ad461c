"""The chain runner: G single-direction steps per sample, only the current output fed forward.

Layout (readable by the public drift scorer; ``<track>`` is ``pairs`` or ``geneval``)::

    <out>/<track>/text-first/gen-0.csv          filename,caption  (the originals)
    <out>/<track>/text-first/gen-1/<id>.png     step 1: text -> image
    <out>/<track>/text-first/gen-2.csv          step 2: image -> text
    <out>/pairs/image-first/gen-0/<id>.png      the original images
    <out>/pairs/image-first/gen-1.csv           step 1: image -> text ...
    <out>/geneval/specs.jsonl                   the GenEval spec of every prompt id
    <out>/drift_manifest.json

- **Seeds.** The seed of (track, direction, sample, step) is sha256 of sorted JSON with the run
  seed (``vrforge.runners.diffusion.item_seed``): independent of batching and of what ran before.
- **Resume.** Steps run in order for every chain; an image is written under a hidden name and
  renamed, captions of an unfinished step go to a hidden journal (one JSON line each, flushed) and
  become ``gen-<k>.csv`` (atomically) when the step is complete. Every step reads its input from
  the previous step's files, so a run killed at step 13 resumes at step 13 and gives the same
  files as one that was never interrupted.
- **Manifest.** Settings (model, seed, inputs digest) are compared with an existing manifest: a
  folder made with other settings is refused, not mixed; more steps may be added later.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from vrforge.errors import UserError
from vrforge.fileio import write_bytes_atomic, write_json_atomic
from vrforge.runners.drift import backends
from vrforge.runners.drift.inputs import GenEvalSample, PairSample
from vrforge.runners.outputs import check_settings

TEXT_FIRST, IMAGE_FIRST = "text-first", "image-first"
MANIFEST_FILE = "drift_manifest.json"
SPECS_FILE = "specs.jsonl"
FORMAT_VERSION = 1
PNG_COMPRESS_LEVEL = 1


def modality(direction: str, step: int) -> str:
    """What step ``step`` of a ``direction`` chain holds: "text" or "image" (step 0 is the original)."""
    first = "text" if direction == TEXT_FIRST else "image"
    other = "image" if first == "text" else "text"
    return first if step % 2 == 0 else other


def text_file(root: Path, direction: str, step: int) -> Path:
    return root / direction / f"gen-{step}.csv"


def image_folder(root: Path, direction: str, step: int) -> Path:
    return root / direction / f"gen-{step}"


def journal_file(root: Path, direction: str, step: int) -> Path:
    return root / direction / f".gen-{step}.partial.jsonl"


def write_png(path: Path, image: Image.Image) -> None:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    write_bytes_atomic(path, buffer.getvalue())


def write_json(path: Path, data: Any) -> None:
    write_json_atomic(path, data, ensure_ascii=False)


def write_captions(path: Path, rows: Sequence[tuple[str, str]]) -> None:
    """``filename,caption`` (the public scorer's two columns), UTF-8."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["filename", "caption"])
    writer.writerows(rows)
    write_bytes_atomic(path, buffer.getvalue().encode("utf-8"))


def read_captions(path: Path) -> dict[str, str]:
    """Captions by sample id (the filename's stem)."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            if not reader.fieldnames or not {"filename", "caption"} <= set(reader.fieldnames):
                raise UserError(f"{path}: needs the columns filename and caption")
            return {Path(row["filename"]).stem: row["caption"] or "" for row in reader}
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None


def read_image(folder: Path, sample_id: str) -> Image.Image | None:
    for suffix in (".png", ".jpg", ".jpeg", ".webp"):
        path = folder / f"{sample_id}{suffix}"
        if path.is_file():
            with Image.open(path) as image:
                return image.convert("RGB")
    return None


def _read_journal(path: Path) -> dict[str, str]:
    done: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                done[str(row["id"])] = str(row["caption"])
            except (json.JSONDecodeError, KeyError, TypeError):
                continue  # a line torn by a kill: that caption is made again
    return done


def _torn(path: Path) -> bool:
    """Does the journal end inside a line (the process was killed while writing it)?"""
    if not path.is_file() or path.stat().st_size == 0:
        return False
    with open(path, "rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) != b"\n"


# --------------------------------------------------------------------------- tracks


@dataclass
class Track:
    """One folder of chains: ``root`` / ``direction``, its sample ids and their originals."""

    name: str
    root: Path
    direction: str
    ids: list[str]
    texts: dict[str, str] = field(default_factory=dict)
    images: dict[str, Image.Image] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.name}/{self.direction}"


def plan_tracks(out: Path, pairs: Sequence[PairSample] | None, geneval: Sequence[GenEvalSample] | None) -> list[Track]:
    tracks = []
    if pairs:
        ids = [s.id for s in pairs]
        tracks.append(Track("pairs", out / "pairs", TEXT_FIRST, ids, texts={s.id: s.caption for s in pairs}))
        tracks.append(Track("pairs", out / "pairs", IMAGE_FIRST, ids, images={s.id: s.image for s in pairs}))
    if geneval:
        tracks.append(Track("geneval", out / "geneval", TEXT_FIRST, [s.id for s in geneval],
                            texts={s.id: s.prompt for s in geneval}))
    return tracks


def inputs_digest(pairs: Sequence[PairSample] | None, geneval: Sequence[GenEvalSample] | None) -> str:
    from vrforge.runners.drift.embed import image_digest

    digest = hashlib.sha256()
    for sample in pairs or []:
        digest.update(json.dumps(["pair", sample.id, sample.caption, image_digest(sample.image)]).encode())
    for prompt in geneval or []:
        digest.update(json.dumps(["geneval", prompt.id, prompt.spec], sort_keys=True).encode())
    return digest.hexdigest()


def write_origins(tracks: Sequence[Track], geneval: Sequence[GenEvalSample] | None) -> None:
    """Step 0 of every track (skipped where already written) and the GenEval specs."""
    for track in tracks:
        if modality(track.direction, 0) == "text":
            path = text_file(track.root, track.direction, 0)
            if not path.is_file():
                write_captions(path, [(f"{i}.png", track.texts[i]) for i in track.ids])
        else:
            folder = image_folder(track.root, track.direction, 0)
            for sample_id in track.ids:
                if not (folder / f"{sample_id}.png").is_file():
                    write_png(folder / f"{sample_id}.png", track.images[sample_id])
    if geneval:
        path = geneval_root(tracks) / SPECS_FILE
        if not path.is_file():
            lines = "".join(json.dumps({"id": s.id, "spec": s.spec}, sort_keys=True) + "\n" for s in geneval)
            write_bytes_atomic(path, lines.encode("utf-8"))


def geneval_root(tracks: Sequence[Track]) -> Path:
    return next(t.root for t in tracks if t.name == "geneval")


def step_done(track: Track, step: int) -> set[str]:
    """The sample ids whose output at ``step`` is written."""
    if modality(track.direction, step) == "text":
        if text_file(track.root, track.direction, step).is_file():
            return set(track.ids)
        return set(_read_journal(journal_file(track.root, track.direction, step))) & set(track.ids)
    folder = image_folder(track.root, track.direction, step)
    if not folder.is_dir():
        return set()
    present = {p.stem for p in folder.iterdir() if p.suffix == ".png" and not p.name.startswith(".")}
    return present & set(track.ids)


def load_step(track: Track, step: int, ids: Sequence[str]) -> list[Any]:
    """The outputs of ``step`` for ``ids`` read back from disk (texts or images)."""
    if modality(track.direction, step) == "text":
        path = text_file(track.root, track.direction, step)
        texts = read_captions(path) if path.is_file() else _read_journal(journal_file(track.root, track.direction, step))
        return [texts[i] for i in ids]
    folder = image_folder(track.root, track.direction, step)
    images = [read_image(folder, i) for i in ids]
    if any(im is None for im in images):
        raise UserError(f"{folder}: an image of the previous step is missing; the folder was changed by hand")
    return images


def chain_seed(seed: int, track: Track, sample_id: str, step: int) -> int:
    from vrforge.runners.diffusion import item_seed

    return item_seed(seed, f"{track.key}/{sample_id}/{step}")


# --------------------------------------------------------------------------- the run


@dataclass
class ChainTimings:
    load_seconds: float = 0.0
    caption_seconds: float = 0.0
    captions: int = 0
    generate_seconds: float = 0.0
    images: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"load_seconds": round(self.load_seconds, 4), "caption_seconds": round(self.caption_seconds, 4),
                "captions": self.captions,
                "generate_seconds": round(self.generate_seconds, 4), "images": self.images}


def _chunks(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start:start + size])


def run_chains(tracks: Sequence[Track], model: Any, *, steps: int, seed: int, batch_size: int = 4,
               progress: bool = True, timings: ChainTimings | None = None) -> ChainTimings:
    """Run every track to ``steps`` steps (resuming what is on disk); ``timings`` collects the time per kind."""
    from tqdm import tqdm

    if steps < 1:
        raise UserError(f"--steps must be at least 1, got {steps}")
    if batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {batch_size}")
    timings = timings if timings is not None else ChainTimings()
    total = sum(len(t.ids) for t in tracks) * steps
    already = sum(len(step_done(t, k)) for t in tracks for k in range(1, steps + 1))
    if already < total and callable(getattr(model, "load", None)):
        t0 = time.perf_counter()
        model.load()  # apart from the per-kind times: those are the steps' own cost
        timings.load_seconds += time.perf_counter() - t0
    bar = tqdm(total=total, initial=already, desc="drift chains", unit="step", disable=not progress, dynamic_ncols=True)
    try:
        for step in range(1, steps + 1):
            for track in tracks:
                done = step_done(track, step)
                todo = [i for i in track.ids if i not in done]
                if todo:
                    bar.set_postfix_str(f"{track.key} step {step}")
                for batch in _chunks(todo, batch_size):
                    inputs = load_step(track, step - 1, batch)
                    if modality(track.direction, step) == "image":
                        seeds = [chain_seed(seed, track, i, step) for i in batch]
                        t0 = time.perf_counter()
                        images = backends.sequence_of_images(backends.generate_batch(model, inputs, seeds), len(batch), "generate")
                        timings.generate_seconds += time.perf_counter() - t0
                        timings.images += len(batch)
                        for sample_id, image in zip(batch, images):
                            write_png(image_folder(track.root, track.direction, step) / f"{sample_id}.png", image)
                    else:
                        t0 = time.perf_counter()
                        captions = backends.caption_batch(model, inputs)
                        timings.caption_seconds += time.perf_counter() - t0
                        timings.captions += len(batch)
                        if len(captions) != len(batch) or not all(isinstance(c, str) for c in captions):
                            raise UserError(f"the model's caption gave {len(captions)} outputs for {len(batch)} images, or not text")
                        journal = journal_file(track.root, track.direction, step)
                        journal.parent.mkdir(parents=True, exist_ok=True)
                        torn = _torn(journal)
                        with open(journal, "a", encoding="utf-8") as handle:
                            if torn:  # a line cut by a kill: end it, so the next line stays whole
                                handle.write("\n")
                            for sample_id, caption in zip(batch, captions):
                                handle.write(json.dumps({"id": sample_id, "caption": caption}, ensure_ascii=False) + "\n")
                            handle.flush()
                            os.fsync(handle.fileno())
                    bar.update(len(batch))
                if modality(track.direction, step) == "text":
                    if not text_file(track.root, track.direction, step).is_file():
                        captions_by_id = _read_journal(journal_file(track.root, track.direction, step))
                        write_captions(text_file(track.root, track.direction, step),
                                       [(f"{i}.png", captions_by_id[i]) for i in track.ids])
                    # also a journal left by a kill between writing the CSV and removing it
                    journal_file(track.root, track.direction, step).unlink(missing_ok=True)
    finally:
        bar.close()
    return timings


def check_manifest(out: Path, settings: dict[str, Any]) -> dict[str, Any] | None:
    """The existing manifest, or None; UserError when it was made with other settings."""
    path = out / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        raise UserError(f"{path} is not valid JSON; remove it or use another --out") from None
    check_settings(out, previous.get("settings", {}), settings)  # SettingsMismatch: a UserError naming each change
    return previous


def write_manifest(out: Path, settings: dict[str, Any], previous: dict[str, Any] | None, *, steps: int,
                   model_info: dict[str, Any], timings: ChainTimings, tracks: Sequence[Track], wall: float,
                   inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    from vrforge.runners.diffusion import package_versions

    # What the model reported about itself once loaded (resolved commit, pipeline class); a run with nothing
    # left to do loads nothing, so each run keeps its own.
    run = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "steps": steps, "wall_seconds": round(wall, 3),
           **timings.as_dict(), "model": model_info, "inputs": inputs or {}}
    manifest = {
        "format_version": FORMAT_VERSION,
        "settings": settings,
        "steps": max(steps, (previous or {}).get("steps", 0)),
        "seed_derivation": "sha256 of sorted JSON {item: '<track>/<direction>/<sample>/<step>', seed: run seed}, first 8 bytes >> 1",
        "versions": package_versions(),
        "tracks": {t.key: {"samples": len(t.ids), "steps_complete": _complete_steps(t, steps)} for t in tracks},
        "runs": [*(previous or {}).get("runs", []), run],
    }
    write_json(out / MANIFEST_FILE, manifest)
    return manifest


def _complete_steps(track: Track, steps: int) -> int:
    for step in range(1, steps + 1):
        if len(step_done(track, step)) < len(track.ids):
            return step - 1
    return steps
