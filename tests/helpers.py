"""Shared test utilities: degrade and distort images the way model answers arrive."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw


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


def distorted(name: str, image, seed: int = 0) -> bytes:
    """PNG bytes of ``image`` put through the robustness benchmark's distortion ``name``."""
    from vrforge.bench.verifier_robustness import DISTORTIONS, encoded

    return encoded(DISTORTIONS[name](as_pil(image), np.random.default_rng(seed)))


def overlay_box(image, box: tuple[float, float, float, float], opacity: float, grey: int = 96) -> Image.Image:
    """A semi-transparent grey block (a logo plate) over ``box`` (fractions x0, y0, x1, y1 of the size)."""
    base = as_pil(image).convert("RGBA")
    layer = Image.new("RGBA", base.size, (0, 0, 0, 0))
    w, h = base.size
    x0, y0, x1, y1 = box
    ImageDraw.Draw(layer).rectangle((round(x0 * w), round(y0 * h), round(x1 * w), round(y1 * h)),
                                    fill=(grey, grey, grey, round(255 * opacity)))
    return Image.alpha_composite(base, layer).convert("RGB")
