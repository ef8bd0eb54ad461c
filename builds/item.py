"""One item through generate -> draw -> render -> check -> encode, with the acceptance loop.

An attempt is kept only if its meta validates, the solution passes its verifier at every
resolution, each distractor fails exactly the check it claims (at the smallest resolution)
and the five options are pairwise different as pixels. A rejected attempt is redrawn with
the next derived seed, and the reason is counted. The result depends only on the item's
coordinates, never on the process or on what was built before.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from vrforge.builds.plan import PlanItem
from vrforge.registry import MAX_ATTEMPTS, get_task
from vrforge.render import encode_png, rasterise_images
from vrforge.seeding import derive_seed, item_rng
from vrforge.types import RejectedPuzzle

STAGES = ("generate", "draw", "render", "check", "encode")


class ItemFailed(RuntimeError):
    """No attempt of an item was accepted: a generator bug, not bad luck."""


@dataclass
class BuiltItem:
    item: PlanItem
    fields: dict[str, Any]  # every row field except the images
    images: dict[int, dict[str, Any]]  # resolution -> {"puzzle", "solution": png, "distractors": [png]*4}
    stats: dict[str, float]
    rejections: Counter = field(default_factory=Counter)
    seconds: dict[str, float] = field(default_factory=dict)


def build_item(item: PlanItem, resolutions: tuple[int, ...], config_hash: str) -> BuiltItem:
    spec = get_task(item.task)
    config = spec.config(item.difficulty) if item.config is None else item.config
    seconds = dict.fromkeys(STAGES, 0.0)
    rejections: Counter = Counter()
    for attempt in range(MAX_ATTEMPTS):
        seed = derive_seed(item.recipe_seed, item.task, item.difficulty, item.index, attempt)
        clock = time.perf_counter()
        try:
            puzzle = spec.generate(config, item_rng(seed))
        except RejectedPuzzle as exc:
            rejections[f"generate: {exc}"] += 1
            continue
        finally:
            seconds["generate"] += time.perf_counter() - clock

        clock = time.perf_counter()
        svg_puzzle = spec.draw(puzzle.meta, None)
        svg_solution = spec.draw(puzzle.meta, puzzle.solution)
        svg_distractors = [spec.draw(puzzle.meta, answer) for answer in puzzle.distractors]
        seconds["draw"] += time.perf_counter() - clock

        # One option's pictures at a time: the solution is kept for its checks and each distractor
        # only at the smallest size, where it is judged, so a worker never holds all seven options
        # at 2048 px. The puzzle is drawn only once the attempt is accepted.
        clock = time.perf_counter()
        solution = rasterise_images(svg_solution, resolutions)
        seconds["render"] += time.perf_counter() - clock
        smallest = resolutions[0]
        distractors: list[dict[int, Image.Image]] = []
        distractor_pngs: list[dict[int, bytes]] = []
        for svg in svg_distractors:
            clock = time.perf_counter()
            rasters = rasterise_images(svg, resolutions)
            seconds["render"] += time.perf_counter() - clock
            clock = time.perf_counter()
            distractor_pngs.append({res: encode_png(rasters[res]) for res in resolutions})
            distractors.append({smallest: rasters[smallest]})
            seconds["encode"] += time.perf_counter() - clock
            del rasters

        clock = time.perf_counter()
        problem = _check(spec, puzzle, solution, distractors, resolutions)
        seconds["check"] += time.perf_counter() - clock
        if problem:
            rejections[f"check: {problem}"] += 1
            continue

        clock = time.perf_counter()
        puzzle_rasters = rasterise_images(svg_puzzle, resolutions)
        seconds["render"] += time.perf_counter() - clock
        clock = time.perf_counter()
        images = {
            res: {
                "puzzle": encode_png(puzzle_rasters[res]),
                "solution": encode_png(solution[res]),
                "distractors": [pngs[res] for pngs in distractor_pngs],
            }
            for res in resolutions
        }
        seconds["encode"] += time.perf_counter() - clock
        fields = {
            "id": item.id,
            "task": item.task,
            "domain": spec.domain,
            "difficulty": item.difficulty,
            "index": item.index,
            "seed": seed,
            "distractor_violations": list(puzzle.violations),
            "answer_index": puzzle.answer_index,
            "meta": json.dumps(puzzle.meta, sort_keys=True, separators=(",", ":")),
            "svg_puzzle": svg_puzzle,
            "svg_solution": svg_solution,
            "config_hash": config_hash,
            "generator_version": spec.version,
            "aspects_in_play": int(puzzle.stats.get("aspects_in_play", 0)),
        }
        return BuiltItem(item, fields, images, dict(puzzle.stats), rejections, seconds)
    raise ItemFailed(f"{item.id}: no acceptable puzzle in {MAX_ATTEMPTS} attempts ({dict(rejections)})")


def _check(spec: Any, puzzle: Any, solution: dict[int, Image.Image], distractors: list[dict[int, Image.Image]],
           resolutions: tuple[int, ...]) -> str | None:
    """The reason an attempt must be rejected, or None when it is acceptable."""
    errors = spec.meta_errors(puzzle.meta)
    if errors:
        return f"meta does not match its schema ({errors[0]})"
    for res in resolutions:
        verdict = spec.verify(puzzle.meta, solution[res])
        if not verdict.passed:
            return f"solution fails at {res} px ({verdict.reason})"
    # Distractors are judged where reading is hardest, the smallest size; the release audit
    # re-verifies every option at every resolution.
    smallest = resolutions[0]
    for name, raster in zip(puzzle.violations, distractors):
        failed = spec.verify(puzzle.meta, raster[smallest]).failed
        if failed != [name]:
            return f"distractor '{name}' fails {failed or 'nothing'} at {smallest} px"
    digests = [hashlib.sha256(r[smallest].convert("RGB").tobytes()).digest() for r in [solution, *distractors]]
    if len(set(digests)) != len(digests):
        return "two options are identical pixels"
    return None
