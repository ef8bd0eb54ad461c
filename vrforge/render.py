"""SVG -> PNG: parse each SVG once, rasterise it at every requested width, encode.

cairosvg (cairo) is the rasteriser: it renders everything the generators draw, text
included, and cairo's software rasteriser gives the same pixels on every run and machine.
Encoding dominates at large sizes, so images go through ``encode_png`` whose settings were
chosen by bench/render_settings.py (see README, "Rendering").
"""

from __future__ import annotations

import io
from collections.abc import Iterable

import cairosvg.parser
import cairosvg.surface
import numpy as np
from PIL import Image

RESOLUTIONS = (512, 1024, 2048)

# Images with at most this many distinct colours are stored as exact palette PNGs: lossless,
# 2-3x smaller and several times faster to encode than RGB (bench/render_settings.py).
PALETTE_LIMIT = 256
PALETTE_COMPRESS_LEVEL = 6  # 2048 px maze: ~9 ms; level 9 halves the size but takes ~48 ms
RGB_COMPRESS_LEVEL = 1  # anti-aliased images: level 1 is ~1.5x faster than 6 at 2048 px


def rasterise(svg: str | bytes, widths: Iterable[int]) -> dict[int, np.ndarray]:
    """Render ``svg`` once parsed at each width; returns RGB uint8 arrays (H, W, 3) on white."""
    data = svg.encode("utf-8") if isinstance(svg, str) else svg
    tree = cairosvg.parser.Tree(bytestring=data)
    out: dict[int, np.ndarray] = {}
    for width in widths:
        surface = cairosvg.surface.PNGSurface(tree, None, 96, output_width=width, background_color="white")
        image = surface.cairo
        image.flush()
        height, stride = image.get_height(), image.get_stride()
        bgra = np.frombuffer(image.get_data(), dtype=np.uint8).reshape(height, stride // 4, 4)
        # cairo stores premultiplied BGRA; the white background makes every pixel opaque.
        out[width] = np.ascontiguousarray(bgra[:, :width, 2::-1])
        surface.finish()
    return out


def encode_png(rgb: np.ndarray) -> bytes:
    """Lossless, deterministic PNG bytes for an RGB array."""
    image = Image.fromarray(rgb, "RGB")
    colours = image.getcolors(PALETTE_LIMIT)
    buffer = io.BytesIO()
    if colours is None:
        image.save(buffer, format="PNG", compress_level=RGB_COMPRESS_LEVEL)
        return buffer.getvalue()
    # Exact conversion: each colour present gets its own entry (sorted, so the palette does
    # not depend on pixel order); mapping to the nearest entry is then the identity.
    entries = sorted(colour for _, colour in colours)
    palette = Image.new("P", (1, 1))
    palette.putpalette([channel for colour in entries for channel in colour])
    image.quantize(palette=palette, dither=Image.Dither.NONE).save(buffer, format="PNG", compress_level=PALETTE_COMPRESS_LEVEL)
    return buffer.getvalue()


def render_pngs(svg: str | bytes, widths: Iterable[int]) -> dict[int, bytes]:
    return {width: encode_png(rgb) for width, rgb in rasterise(svg, widths).items()}
