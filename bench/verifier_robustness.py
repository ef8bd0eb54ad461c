"""Verifiers on answers as image-editing models return them: acceptance and rejection per distortion.

For every task, puzzles of every difficulty are drawn at 1024 px and each option (the
solution and the four distractors) is put through a grid of distortions: translation,
uniform rescale, rotation, cropping, letterbox padding, stretching to another aspect ratio,
a tinted or off-white background, JPEG, blur and noise, each at two strengths, the
geometric ones combined with JPEG 50 + blur 1.5 + noise 8, and what image editors and
cameras add: tone curves (gamma 0.7 and 1.4, a contrast S-curve), a semi-transparent
watermark over the bottom-right corner (raven's answer panel) and a keystone (perspective)
change. The verifier must still accept
the solution and must reject every distractor. The reference each answer is registered to
is rendered from meta (the verifier's default); ``--with-puzzle`` passes the bare puzzle
image instead, as the scorer does.

    python -m vrforge.bench.verifier_robustness --puzzles 2 --workers 2

writes bench/results/verifier_robustness.json (per task x distortion: solution acceptance,
distractor rejection, unusable counts, mean seconds per verify) and prints the table.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import multiprocessing
import sys
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from vrforge.registry import accepted_puzzle, all_tasks, get_task
from vrforge.render import rasterise
from vrforge.schemas.layout import DIFFICULTIES, LEVELS
from vrforge.threads import one_thread_per_process

SEED = 5151
WIDTH = 1024
WHITE = (255, 255, 255)

Distortion = Callable[[Image.Image, np.random.Generator], Image.Image]


def _canvas(image: Image.Image, size: tuple[int, int], fill: tuple[int, int, int]) -> Image.Image:
    return Image.new("RGB", size, fill)


def shift(fraction: float) -> Distortion:
    """Move the picture right and up by ``fraction`` of its width (and half that), white fill."""
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        dx, dy = round(fraction * image.width), -round(fraction * image.width / 2)
        out = _canvas(image, image.size, WHITE)
        out.paste(image, (dx, dy))
        return out
    return apply


def rescale(factor: float) -> Distortion:
    """The whole picture resized by ``factor``."""
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        return image.resize((round(image.width * factor), round(image.height * factor)), Image.Resampling.BICUBIC)
    return apply


def zoom(factor: float) -> Distortion:
    """The content scaled by ``factor`` about the centre on a canvas of the same size (white fill)."""
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        scaled = image.resize((round(image.width * factor), round(image.height * factor)), Image.Resampling.BICUBIC)
        out = _canvas(image, image.size, WHITE)
        out.paste(scaled, ((image.width - scaled.width) // 2, (image.height - scaled.height) // 2))
        return out
    return apply


def rotate(degrees: float) -> Distortion:
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        return image.rotate(degrees, resample=Image.Resampling.BICUBIC, fillcolor=WHITE)
    return apply


def crop(fraction: float, sides: str) -> Distortion:
    """Cut ``fraction`` of the size off the named sides (l, t, r, b), then resize back."""
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        w, h = image.size
        box = (round(fraction * w) if "l" in sides else 0, round(fraction * h) if "t" in sides else 0,
               w - (round(fraction * w) if "r" in sides else 0), h - (round(fraction * h) if "b" in sides else 0))
        return image.crop(box).resize((w, h), Image.Resampling.BICUBIC)
    return apply


def letterbox(aspect: float, fill: tuple[int, int, int]) -> Distortion:
    """Padded (centred) to a canvas of ``aspect`` (width / height) in ``fill``."""
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        w, h = image.size
        size = (max(w, round(h * aspect)), max(h, round(w / aspect)))
        out = _canvas(image, size, fill)
        out.paste(image, ((size[0] - w) // 2, (size[1] - h) // 2))
        return out
    return apply


def stretch(aspect: float) -> Distortion:
    """Resized to ``aspect`` (width / height), keeping the area: independent x and y scales."""
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        area = image.width * image.height
        return image.resize((round((area * aspect) ** 0.5), round((area / aspect) ** 0.5)), Image.Resampling.BICUBIC)
    return apply


def tint(offset: tuple[int, int, int]) -> Distortion:
    """The white background (and every colour, in proportion) moved by ``offset``."""
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        rgb = np.asarray(image, dtype=np.float32)
        gain = (255.0 + np.asarray(offset, dtype=np.float32)) / 255.0
        return Image.fromarray(np.clip(rgb * gain, 0, 255).astype(np.uint8))
    return apply


def jpeg(quality: int) -> Distortion:
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=quality)
        return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")
    return apply


def blur(sigma: float) -> Distortion:
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        return image.filter(ImageFilter.GaussianBlur(sigma))
    return apply


def noise(sigma: float) -> Distortion:
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        rgb = np.asarray(image, dtype=np.float32)
        return Image.fromarray(np.clip(rgb + rng.normal(0.0, sigma, rgb.shape), 0, 255).astype(np.uint8))
    return apply


def tone(curve: Callable[[np.ndarray], np.ndarray]) -> Distortion:
    """Every channel mapped through ``curve`` (0..1 -> 0..1), as an editor's curves tool does."""
    lut = np.clip(np.round(255 * curve(np.arange(256) / 255.0)), 0, 255).astype(np.uint8)

    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        return Image.fromarray(lut[np.asarray(image.convert("RGB"))])
    return apply


def gamma(exponent: float) -> Distortion:
    """Tone curve ``v ** exponent``: under 1 lightens the mid-greys, over 1 darkens them (black and white stay)."""
    return tone(lambda v: v**exponent)


def s_curve(strength: float) -> Distortion:
    """Contrast S-curve: a logistic through (0, 0), (0.5, 0.5) and (1, 1); darks darker, lights lighter."""
    def curve(v: np.ndarray) -> np.ndarray:
        low, high = 1 / (1 + math.exp(strength / 2)), 1 / (1 + math.exp(-strength / 2))
        return (1 / (1 + np.exp(-strength * (v - 0.5))) - low) / (high - low)
    return tone(curve)


def watermark(text: str, opacity: float, height: float) -> Distortion:
    """``text`` in mid grey at ``opacity``, ``height`` of the picture's height tall, right-aligned
    in the bottom-right corner 1.5 % from the edges (over raven's answer panel's corner)."""
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        base = image.convert("RGBA")
        font = ImageFont.load_default(size=max(6, round(height * image.height)))
        layer = Image.new("RGBA", base.size, (0, 0, 0, 0))
        pen = ImageDraw.Draw(layer)
        left, top, right, bottom = pen.textbbox((0, 0), text, font=font)
        x = round(0.985 * image.width) - right
        y = round(0.985 * image.height) - bottom
        pen.text((x, y), text, font=font, fill=(96, 96, 96, round(255 * opacity)))
        return Image.alpha_composite(base, layer).convert("RGB")
    return apply


def keystone(fraction: float) -> Distortion:
    """Perspective as from a camera below the picture's centre: the top corners move inward by
    ``fraction`` of the width each, the bottom ones stay (white fill)."""
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        w, h = image.size
        source = np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float32)
        target = np.array([[fraction * w, 0], [w - fraction * w, 0], [w, h], [0, h]], dtype=np.float32)
        inverse = cv2.getPerspectiveTransform(target, source)  # output pixel -> input pixel, as PIL wants
        coeffs = (inverse / inverse[2, 2]).ravel()[:8]
        return image.convert("RGB").transform((w, h), Image.Transform.PERSPECTIVE, tuple(float(c) for c in coeffs),
                                              Image.Resampling.BICUBIC, fillcolor=WHITE)
    return apply


def chain(*steps: Distortion) -> Distortion:
    def apply(image: Image.Image, rng: np.random.Generator) -> Image.Image:
        for step in steps:
            image = step(image, rng)
        return image
    return apply


DEGRADE = chain(blur(1.5), noise(8), jpeg(50))  # what the combinations add to a geometric change

DISTORTIONS: dict[str, Distortion] = {
    "none": chain(),
    "shift 2%": shift(0.02),
    "shift 5%": shift(0.05),
    "rescale 0.5": rescale(0.5),
    "rescale 1.5": rescale(1.5),
    "zoom 0.8": zoom(0.8),
    "rotate 1°": rotate(1.0),
    "rotate 3°": rotate(3.0),
    "crop 3% top-left": crop(0.03, "lt"),
    "crop 5% left": crop(0.05, "l"),
    "crop 5% top": crop(0.05, "t"),
    "crop 5% right": crop(0.05, "r"),
    "crop 5% bottom": crop(0.05, "b"),
    "crop 5% top-left": crop(0.05, "lt"),
    "letterbox 1:1 white": letterbox(1.0, WHITE),
    "letterbox 16:9 black": letterbox(16 / 9, (0, 0, 0)),
    "stretch 1:1": stretch(1.0),
    "stretch 4:3": stretch(4 / 3),
    "off-white -20": tint((-20, -20, -20)),
    "tint ±20": tint((20, -20, 10)),
    "jpeg 50": jpeg(50),
    "blur 1.5": blur(1.5),
    "noise 8": noise(8),
    "shift 5% + degrade": chain(shift(0.05), DEGRADE),
    "zoom 0.8 + rotate 3° + degrade": chain(zoom(0.8), rotate(3.0), DEGRADE),
    "crop 5% top-left + degrade": chain(crop(0.05, "lt"), DEGRADE),
    "crop 5% every side + degrade": chain(crop(0.05, "ltrb"), DEGRADE),
    "letterbox 1:1 + tint + degrade": chain(letterbox(1.0, WHITE), tint((20, -20, 10)), DEGRADE),
    "stretch 1:1 + shift 2% + degrade": chain(stretch(1.0), shift(0.02), DEGRADE),
    "gamma 0.7": gamma(0.7),
    "gamma 1.4": gamma(1.4),
    "contrast S-curve": s_curve(5.0),
    "watermark 35%": watermark("AI GENERATED", 0.35, 0.04),
    "keystone 1.5%": keystone(0.015),
    "keystone 3%": keystone(0.03),
    "keystone 1.5% + gamma 0.7 + degrade": chain(keystone(0.015), gamma(0.7), DEGRADE),
}
# What image editors and cameras add (tone, overlays, perspective): the rows issue 23 asked for.
EDITOR_GRID = ("gamma 0.7", "gamma 1.4", "contrast S-curve", "watermark 35%", "keystone 1.5%", "keystone 3%",
               "keystone 1.5% + gamma 0.7 + degrade")
# The smaller grid the registry-wide test runs for every task.
SMALL_GRID = ("shift 5%", "rotate 3°", "crop 3% top-left", "letterbox 1:1 + tint + degrade", "stretch 1:1 + shift 2% + degrade")


def encoded(image: Image.Image) -> bytes:
    """PNG bytes, as an answer arrives (a JPEG-degraded answer is already JPEG-compressed pixels)."""
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=1)
    return buffer.getvalue()


def measure(job: tuple[str, str, int, tuple[str, ...], bool]) -> list[dict]:
    """Verify every option of one puzzle under every named distortion."""
    task, difficulty, index, names, with_puzzle = job
    spec = get_task(task)
    puzzle = accepted_puzzle(task, difficulty, index, SEED)
    options = [("solution", puzzle.solution)] + list(zip(puzzle.violations, puzzle.distractors))
    rendered = [(role, Image.fromarray(rasterise(spec.draw(puzzle.meta, answer), (WIDTH,))[WIDTH])) for role, answer in options]
    bare = encoded(Image.fromarray(rasterise(spec.draw(puzzle.meta, None), (WIDTH,))[WIDTH])) if with_puzzle else None
    rows = []
    for k, name in enumerate(names):
        for j, (role, image) in enumerate(rendered):
            rng = np.random.default_rng([SEED, index, k, j])
            data = encoded(DISTORTIONS[name](image, rng))
            started = time.perf_counter()
            verdict = spec.check(puzzle.meta, data, puzzle=bare)
            seconds = time.perf_counter() - started
            rows.append({"task": task, "difficulty": difficulty, "index": index, "distortion": name, "role": role,
                         "passed": verdict.passed, "usable": verdict.usable, "reason": verdict.reason,
                         "method": verdict.details.get("registration", {}).get("method"), "seconds": seconds})
    return rows


def summarise(rows: list[dict], tasks: list[str], names: list[str]) -> dict:
    table: dict = {}
    for task in tasks:
        table[task] = {}
        for name in names:
            mine = [r for r in rows if r["task"] == task and r["distortion"] == name]
            solutions = [r for r in mine if r["role"] == "solution"]
            distractors = [r for r in mine if r["role"] != "solution"]
            table[task][name] = {
                "solutions": len(solutions),
                "accepted": round(sum(r["passed"] for r in solutions) / max(1, len(solutions)), 4),
                "solutions_unusable": sum(not r["usable"] for r in solutions),
                "distractors": len(distractors),
                "rejected": round(sum(not r["passed"] for r in distractors) / max(1, len(distractors)), 4),
                "distractors_unusable": sum(not r["usable"] for r in distractors),
                "mean_ms": round(1000 * sum(r["seconds"] for r in mine) / max(1, len(mine)), 2),
                "failures": sorted({f"{r['role']}: {r['reason']}" for r in solutions if not r["passed"]})[:3],
            }
    return table


def markdown(table: dict, names: list[str]) -> str:
    """Solution acceptance / distractor rejection in percent, one row per distortion."""
    tasks = list(table)
    lines = ["| distortion | " + " | ".join(tasks) + " |", "|---|" + "---|" * len(tasks)]
    for name in names:
        cells = []
        for task in tasks:
            entry = table[task][name]
            cells.append(f"{100 * entry['accepted']:.0f} / {100 * entry['rejected']:.0f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--puzzles", type=int, default=2, help="puzzles per task and difficulty")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", nargs="*", help="default: every registered task")
    parser.add_argument("--difficulties", nargs="*", choices=LEVELS, help="default: easy, medium, hard")
    parser.add_argument("--distortions", nargs="*", choices=list(DISTORTIONS), help="default: all")
    parser.add_argument("--with-puzzle", action="store_true", help="pass the bare puzzle image as the reference")
    parser.add_argument("--out", default="bench/results/verifier_robustness.json")
    args = parser.parse_args(argv)
    tasks = args.tasks or [spec.name for spec in all_tasks()]
    names = args.distortions or list(DISTORTIONS)
    jobs = [(t, d, i, tuple(names), args.with_puzzle) for t in tasks for d in (args.difficulties or DIFFICULTIES)
            for i in range(args.puzzles)]
    started = time.perf_counter()
    if args.workers <= 1:
        results = [measure(job) for job in jobs]
    else:
        with multiprocessing.get_context("forkserver").Pool(args.workers, initializer=one_thread_per_process) as pool:
            results = pool.map(measure, jobs, chunksize=1)
    rows = [row for chunk in results for row in chunk]
    table = summarise(rows, tasks, names)
    worst_accept = min(e["accepted"] for t in table.values() for e in t.values())
    worst_reject = min(e["rejected"] for t in table.values() for e in t.values())
    report = {
        "width": WIDTH, "puzzles_per_difficulty": args.puzzles, "reference": "puzzle image" if args.with_puzzle else "meta",
        "seconds": round(time.perf_counter() - started, 1), "verifies": len(rows),
        "worst_solution_acceptance": worst_accept, "worst_distractor_rejection": worst_reject,
        "passed": worst_accept >= 0.95 and worst_reject == 1.0, "table": table,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(markdown(table, names))
    print(f"worst solution acceptance {worst_accept:.3f}, worst distractor rejection {worst_reject:.3f}, "
          f"{len(rows)} verifies in {report['seconds']} s")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
