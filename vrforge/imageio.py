"""Safe image loading for verifiers: anything in, an RGB array or a reason out, never a crash."""

from __future__ import annotations

import io
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

MAX_PIXELS = 64_000_000  # 8000 x 8000; a 20,000^2 "image" is refused before decoding
MIN_SIDE = 16
ALLOWED_FORMATS = ("PNG", "JPEG", "WEBP")


class UnusableImage(ValueError):
    """The input cannot be read as an answer image; the message says why."""


def load_rgb(source: Any, max_pixels: int = MAX_PIXELS) -> np.ndarray:
    """Decode ``source`` (path, bytes, PIL image or array) to an RGB uint8 array (H, W, 3).

    Raises ``UnusableImage`` with a one-line reason for anything that is not a readable,
    reasonably sized PNG/JPEG/WebP image.
    """
    if isinstance(source, np.ndarray):
        return _from_array(source)
    if isinstance(source, Image.Image):
        return _from_pil(source, max_pixels)
    if isinstance(source, (bytes, bytearray, memoryview)):
        stream: Any = io.BytesIO(bytes(source))
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise UnusableImage(f"no such file: {path}")
        stream = path
    else:
        raise UnusableImage(f"unsupported image source of type {type(source).__name__}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(stream) as image:
                if image.format not in ALLOWED_FORMATS:
                    raise UnusableImage(f"unsupported format {image.format} (use PNG, JPEG or WebP)")
                return _from_pil(image, max_pixels)
    except UnusableImage:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise UnusableImage(f"image too large ({exc})") from None
    except UnidentifiedImageError:
        raise UnusableImage("not an image") from None
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise UnusableImage(f"corrupt or truncated image ({exc})") from None


def _from_pil(image: Image.Image, max_pixels: int) -> np.ndarray:
    width, height = image.size
    if width * height > max_pixels:
        raise UnusableImage(f"image too large: {width}x{height} exceeds {max_pixels} pixels")
    if min(width, height) < MIN_SIDE:
        raise UnusableImage(f"image too small: {width}x{height}")
    image.load()  # decode now so truncation surfaces here, not later
    if image.mode == "RGB":
        return np.asarray(image, dtype=np.uint8)
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        # Composite transparency over white, the background every puzzle is drawn on.
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        image = Image.alpha_composite(background, rgba)
    return np.asarray(image.convert("RGB"), dtype=np.uint8)


def _from_array(array: np.ndarray) -> np.ndarray:
    if array.ndim == 2:
        array = np.repeat(array[:, :, None], 3, axis=2)
    if array.ndim != 3 or array.shape[2] not in (3, 4):
        raise UnusableImage(f"array of shape {array.shape} is not an image")
    if min(array.shape[:2]) < MIN_SIDE:
        raise UnusableImage(f"image too small: {array.shape[1]}x{array.shape[0]}")
    if array.dtype != np.uint8:
        raise UnusableImage(f"array dtype {array.dtype} is not uint8")
    return np.ascontiguousarray(array[:, :, :3])
