"""Gallery sheets: per difficulty, the puzzle and its five options (the solution framed green)."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw

from vrforge.render import encode_png

SHEET_WIDTH = 1920
PAD = 16
GAP = 40  # between difficulties
SOLUTION_FRAME = (46, 125, 50)
PUZZLE_FRAME = (97, 97, 97)


def _columns(aspect: float) -> int:
    """Six tiles per line for squarish pictures, fewer for wide ones so they stay readable."""
    return 6 if aspect < 1.6 else 3 if aspect < 3.5 else 2


Block = tuple[int, int, int, list[tuple[Image.Image, tuple[int, int, int] | None]]]  # columns, tile w, h, tiles


def gallery_sheet(examples: Sequence[dict]) -> bytes:
    """``examples``: rows with PNG bytes under puzzle/solution/distractors and answer_index."""
    return compose_sheet([gallery_block(example) for example in examples])


def gallery_block(example: dict) -> Block:
    """One difficulty's tiles (the puzzle and its options, resized) and their frames: the costly
    part of a sheet, made wherever the example's images are (a build worker makes it as the
    level's first item is built)."""
    options = list(example["distractors"])
    options.insert(example["answer_index"], example["solution"])
    images = [Image.open(io.BytesIO(png)).convert("RGB") for png in [example["puzzle"], *options]]
    frames = [PUZZLE_FRAME] + [SOLUTION_FRAME if i == example["answer_index"] else None for i in range(len(options))]
    aspect = images[0].width / images[0].height
    columns = _columns(aspect)
    tile_w = (SHEET_WIDTH - PAD * (columns + 1)) // columns
    tile_h = round(tile_w / aspect)
    resized = [image.resize((tile_w, tile_h), Image.Resampling.LANCZOS) for image in images]
    return columns, tile_w, tile_h, list(zip(resized, frames))


def compose_sheet(blocks: Sequence[Block]) -> bytes:
    """The sheet of ``blocks`` (one per difficulty, top to bottom) as PNG bytes."""
    height = sum(math.ceil(len(t) / c) * (h + PAD) for c, _, h, t in blocks) + GAP * (len(blocks) - 1) + PAD
    sheet = Image.new("RGB", (SHEET_WIDTH, height), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    top = PAD
    for columns, tile_w, tile_h, tiles in blocks:
        for k, (tile, frame) in enumerate(tiles):
            x = PAD + (k % columns) * (tile_w + PAD)
            y = top + (k // columns) * (tile_h + PAD)
            sheet.paste(tile, (x, y))
            if frame:
                draw.rectangle((x - 5, y - 5, x + tile_w + 4, y + tile_h + 4), outline=frame, width=5)
        top += math.ceil(len(tiles) / columns) * (tile_h + PAD) + GAP
    return encode_png(np.asarray(sheet))
