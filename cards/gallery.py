"""Gallery sheets: per difficulty, the puzzle and its five options (the solution framed green)."""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw

from vrforge.render import encode_png

TILE = 320  # longest side of each picture on the sheet
PAD = 12
SOLUTION_FRAME = (46, 125, 50)
PUZZLE_FRAME = (97, 97, 97)


def _fit(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png)).convert("RGB")
    image.thumbnail((TILE, TILE), Image.Resampling.LANCZOS)
    return image


def gallery_sheet(examples: Sequence[dict]) -> bytes:
    """``examples``: rows with PNG bytes under puzzle/solution/distractors and answer_index."""
    rows = []
    for example in examples:
        options = list(example["distractors"])
        options.insert(example["answer_index"], example["solution"])
        rows.append([(_fit(example["puzzle"]), PUZZLE_FRAME)]
                    + [(_fit(png), SOLUTION_FRAME if i == example["answer_index"] else None) for i, png in enumerate(options)])
    tile_w = max(image.width for row in rows for image, _ in row)
    tile_h = max(image.height for row in rows for image, _ in row)
    sheet = Image.new("RGB", (PAD + 6 * (tile_w + PAD) + PAD, PAD + len(rows) * (tile_h + PAD)), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    for r, row in enumerate(rows):
        for c, (image, frame) in enumerate(row):
            x = PAD + c * (tile_w + PAD) + (PAD if c else 0)
            y = PAD + r * (tile_h + PAD)
            sheet.paste(image, (x, y))
            if frame:
                draw.rectangle((x - 4, y - 4, x + image.width + 3, y + image.height + 3), outline=frame, width=4)
    return encode_png(np.asarray(sheet))
