"""Shared test utilities: degrade images the way the issue's robustness bar asks."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def as_pil(image) -> Image.Image:
    return image if isinstance(image, Image.Image) else Image.fromarray(np.asarray(image))


def resized(image, factor: float) -> Image.Image:
    image = as_pil(image)
    size = (max(1, round(image.width * factor)), max(1, round(image.height * factor)))
    return image.resize(size, Image.Resampling.LANCZOS)


def jpeg(image, quality: int = 85) -> bytes:
    buffer = io.BytesIO()
    as_pil(image).convert("RGB").save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def png_bytes(image) -> bytes:
    buffer = io.BytesIO()
    as_pil(image).save(buffer, format="PNG")
    return buffer.getvalue()


def noise(width: int, height: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8))
