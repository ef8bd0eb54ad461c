"""SVG -> PNG: parse each SVG once, rasterise it at every requested width, encode.

cairosvg (cairo) is the rasteriser: it renders everything the generators draw, text
included, and cairo's software rasteriser gives the same pixels on every run and machine.
Encoding dominates at large sizes, so images go through ``encode_png`` whose settings were
chosen by bench/render_settings.py (see README, "Rendering").
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterable
from functools import lru_cache

import cairosvg.parser
import cairosvg.surface
import numpy as np
from PIL import Image

RESOLUTIONS = (512, 1024, 2048)

# Images with at most this many distinct colours are stored as exact palette PNGs: lossless,
# 2-3x smaller and several times faster to encode than RGB (bench/render_settings.py).
PALETTE_LIMIT = 256
PALETTE_COMPRESS_LEVEL = 6  # 2048 px maze: ~9 ms; level 9 halves the size but takes ~48 ms
MIN_SEPARATION = 16
# Anti-aliased images (> 256 colours) are written by ``_rgb_png``: rows unfiltered, zlib
# level 3. Pillow tries every PNG filter on every row, which is most of its time: at 2048 px
# it takes ~110 ms for a file of the same size that this writes in ~35 ms.
RGB_ZLIB_LEVEL = 3
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def rasterise(svg: str | bytes, widths: Iterable[int]) -> dict[int, np.ndarray]:
    """Render ``svg``, parsed once, at each width; returns RGB uint8 arrays (H, W, 3) on white."""
    return {width: np.asarray(image) for width, image in rasterise_images(svg, widths).items()}


def rasterise_images(svg: str | bytes, widths: Iterable[int]) -> dict[int, Image.Image]:
    """Render ``svg``, parsed once, at each width; returns RGB Pillow images on white."""
    data = svg.encode("utf-8") if isinstance(svg, str) else svg
    tree = cairosvg.parser.Tree(bytestring=data)
    out: dict[int, Image.Image] = {}
    for width in widths:
        surface = cairosvg.surface.PNGSurface(tree, None, 96, output_width=width, background_color="white")
        raster = surface.cairo
        raster.flush()
        # cairo holds premultiplied BGRA words; on the opaque white background that is plain
        # BGRX, which Pillow unpacks into a new RGB image in one pass (far cheaper than a
        # numpy channel swap); the image owns its pixels, so the surface can go.
        out[width] = Image.frombuffer("RGB", (raster.get_width(), raster.get_height()), raster.get_data(),
                                      "raw", "BGRX", raster.get_stride(), 1)
        surface.finish()
    return out


@lru_cache(maxsize=32)
def rasterise_cached(svg: str, width: int) -> Image.Image:
    """One SVG at one width, remembered: a verifier compares several answers (the five options,
    at each resolution) with one reference picture. The image is shared: do not modify it."""
    return rasterise_images(svg, (width,))[width]


def encode_png(image: Image.Image | np.ndarray) -> bytes:
    """Lossless, deterministic PNG bytes for an RGB image."""
    if isinstance(image, np.ndarray):
        image = Image.fromarray(image, "RGB")
    colours = image.getcolors(PALETTE_LIMIT)
    if colours is None:
        return _rgb_png(np.asarray(image))
    # Each colour present gets its own entry (sorted, so the palette does not depend on pixel
    # order). Pillow maps pixels through a reduced-precision cache: exact for well-separated
    # palettes (crisp drawings); close anti-aliasing shades go through an exact lookup table.
    entries = np.array(sorted(colour for _, colour in colours), dtype=np.uint8)
    if _well_separated(entries):
        palette = Image.new("P", (1, 1))
        palette.putpalette(entries.ravel().tolist())
        indexed = image.quantize(palette=palette, dither=Image.Dither.NONE)
    else:
        indexed = Image.frombuffer("P", image.size, _exact_indices(image, entries), "raw", "P", 0, 1)
        indexed.putpalette(entries.ravel().tolist())
    buffer = io.BytesIO()
    indexed.save(buffer, format="PNG", compress_level=PALETTE_COMPRESS_LEVEL)
    return buffer.getvalue()


_LOOKUP = np.zeros(1 << 24, dtype=np.uint8)  # packed RGB -> palette index, reset after each use


def _exact_indices(image: Image.Image, entries: np.ndarray) -> bytes:
    """Palette index of every pixel, exactly (``entries`` holds every colour of the image)."""
    keys = entries.astype(np.uint32) @ np.array([1, 1 << 8, 1 << 16], dtype=np.uint32)
    packed = np.frombuffer(image.tobytes("raw", "RGBX"), dtype="<u4") & 0xFFFFFF
    _LOOKUP[keys] = np.arange(len(entries), dtype=np.uint8)
    try:
        return _LOOKUP[packed].tobytes()
    finally:
        _LOOKUP[keys] = 0


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _rgb_png(rgb: np.ndarray) -> bytes:
    """A standard 8-bit RGB PNG: filter type 0 on every row, one zlib stream."""
    height, width = rgb.shape[:2]
    rows = np.empty((height, width * 3 + 1), dtype=np.uint8)
    rows[:, 0] = 0  # filter type None
    rows[:, 1:] = rgb.reshape(height, width * 3)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows.tobytes(), RGB_ZLIB_LEVEL))
            + _chunk(b"IEND", b""))


def _well_separated(entries: np.ndarray) -> bool:
    """True when every two colours are >= MIN_SEPARATION apart. Pillow's palette cache holds,
    per cell of 4 levels in each channel, the entry nearest the cell's corner; a colour lies
    within 3 * sqrt(3) < 5.2 of its corner, so entries more than 10.4 apart always map to
    themselves. (Measured: of 1,500 dense random palettes 11 apart none was inexact; 8 apart,
    half were.)"""
    values = entries.astype(np.int32)
    distances = ((values[:, None, :] - values[None, :, :]) ** 2).sum(axis=2)
    np.fill_diagonal(distances, 1 << 30)
    return bool(distances.min() >= MIN_SEPARATION**2)


def render_pngs(svg: str | bytes, widths: Iterable[int]) -> dict[int, bytes]:
    return {width: encode_png(image) for width, image in rasterise_images(svg, widths).items()}
