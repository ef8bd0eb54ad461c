"""SVG -> PNG: parse each SVG once, rasterise it at every requested width, encode.

cairosvg (cairo) is the rasteriser: it renders everything the generators draw, text
included, and cairo's software rasteriser gives the same pixels on every run and machine.
Encoding dominates at large sizes, so images go through ``encode_png`` whose settings were
chosen by bench/render_settings.py (see README, "Rendering").
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from functools import lru_cache

import cairosvg.parser
import cairosvg.surface
import numpy as np
from PIL import Image, ImageChops

RESOLUTIONS = (512, 1024, 2048)

# Images with at most this many distinct colours are stored as exact palette PNGs: lossless,
# 2-3x smaller and several times faster to encode than RGB (bench/render_settings.py).
PALETTE_LIMIT = 256
PALETTE_COMPRESS_LEVEL = 6  # 2048 px maze: ~9 ms; level 9 halves the size but takes ~48 ms
MIN_SEPARATION = 32
RGB_COMPRESS_LEVEL = 1  # anti-aliased images: level 1 is ~1.5x faster than 6 at 2048 px


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
    buffer = io.BytesIO()
    if colours is not None:
        # Each colour present gets its own entry (sorted, so the palette does not depend on
        # pixel order). Pillow maps pixels through a reduced-precision cache, which can merge
        # near-identical anti-aliasing shades: well-separated palettes (crisp drawings) are
        # exact by construction, others are kept only if the round trip is exact.
        entries = np.array(sorted(colour for _, colour in colours), dtype=np.uint8)
        palette = Image.new("P", (1, 1))
        palette.putpalette(entries.ravel().tolist())
        indexed = image.quantize(palette=palette, dither=Image.Dither.NONE)
        if _well_separated(entries) or ImageChops.difference(indexed.convert("RGB"), image).getbbox() is None:
            indexed.save(buffer, format="PNG", compress_level=PALETTE_COMPRESS_LEVEL)
            return buffer.getvalue()
    image.save(buffer, format="PNG", compress_level=RGB_COMPRESS_LEVEL)
    return buffer.getvalue()


def _well_separated(entries: np.ndarray) -> bool:
    """True when every two colours are >= 32 apart: Pillow's palette cache (cells at most
    8 levels wide per channel, < 14 across) then always finds the exact entry."""
    values = entries.astype(np.int32)
    distances = ((values[:, None, :] - values[None, :, :]) ** 2).sum(axis=2)
    np.fill_diagonal(distances, 1 << 30)
    return bool(distances.min() >= MIN_SEPARATION**2)


def render_pngs(svg: str | bytes, widths: Iterable[int]) -> dict[int, bytes]:
    return {width: encode_png(image) for width, image in rasterise_images(svg, widths).items()}
