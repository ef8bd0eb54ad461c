"""SVG -> PNG: parse each SVG once, rasterise it at every requested width, encode.

cairosvg interprets the SVG and cairo rasterises it: cairo's software rasteriser gives the
same pixels on every run and machine. Images with at most 256 well-separated colours are
written as exact palette PNGs, others as RGB; bench/build_throughput.py measures this path against the naive
one (cairosvg per size, Pillow's default PNG writer).
"""

from __future__ import annotations

import functools
import re
import struct
import threading
import zlib
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import cast

import cairocffi
import cairosvg.parser
import cairosvg.surface
import numpy as np
from PIL import Image
from zlib_ng import zlib_ng

RECORDING_WIDTH = 4096  # release widths are replayed from one recording at this width
CRISP_FROM = 2048  # images at least this wide are rendered without anti-aliasing (see rasterise_images)

# Exact palette PNGs are 2-4x smaller and several times faster to write and read than RGB.
PALETTE_LIMIT = 256
MIN_SEPARATION = 16
# Every PNG is written by ``_png``: rows unfiltered, palette indices packed to the fewest bits
# that hold the palette, one deflate stream from zlib-ng at this level. Measured over pictures
# of every task: 3-4x faster than zlib level 3, files 7-9% smaller, and the packed palette
# streams decode 2x faster in Pillow than zlib's run-length ones (whose distance-1 matches are
# copied byte by byte). ISA-L was as fast but not reproducible: the same rows came out as
# different (valid) streams in different runs.
PNG_DEFLATE_LEVEL = 2
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def rasterise(svg: str | bytes, widths: Iterable[int]) -> dict[int, np.ndarray]:
    """Render ``svg``, parsed once, at each width; returns RGB uint8 arrays (H, W, 3) on white."""
    return {width: np.asarray(image.convert("RGB")) for width, image in rasterise_images(svg, widths).items()}


def rasterise_images(svg: str | bytes, widths: Iterable[int]) -> dict[int, Image.Image]:
    """Render ``svg`` at each width; returns Pillow images on white: palette ("P") images for
    crisp drawings, RGB otherwise (``convert("RGB")`` for pixels; ``encode_png`` writes either).

    The SVG is parsed once and drawn at each width where cairosvg's own ``output_width``
    render puts every stroke (see ``_drawn``). A width's pixels never depend on which other widths were
    asked for, so a verifier's reference render matches the build's image exactly.

    From ``CRISP_FROM`` px up every drawing is rendered without anti-aliasing: a one-pixel
    step is then 1/2048 of the picture, and the image holds only the colours the SVG names,
    so it is written as a small palette PNG instead of ~12 MB of RGB through zlib (the
    largest cost of a release).
    """
    data = svg.encode("utf-8") if isinstance(svg, str) else svg
    widths = list(widths)
    out: dict[int, Image.Image] = {}
    crisp = _crisp(data)
    # A drawing that sets its own rendering is walked once for every width.
    passes = [(data, widths)] if crisp is data else [(data, [w for w in widths if w < CRISP_FROM]),
                                                     (crisp, [w for w in widths if w >= CRISP_FROM])]
    for source, chosen in passes:
        if chosen:
            colours = _drawing_colours(source) if _is_crisp(source) and b"opacity" not in source else None
            out |= _drawn(source, chosen, functools.partial(_published, colours=colours))
    return {width: out[width] for width in widths}


def _crisp(svg: bytes) -> bytes:
    """``svg`` with anti-aliasing turned off at the root (unchanged when it sets it anywhere)."""
    if b"shape-rendering" in svg:
        return svg
    return _SVG_ROOT.sub(rb'\g<0> shape-rendering="crispEdges"', svg, count=1)


def raw_rasters(svg: bytes, widths: Iterable[int]) -> dict[int, Image.Image]:
    """cairo's RGB rasters of ``svg`` at each width, before the palette step."""
    return _drawn(svg, widths, _rgb)


def _drawn(svg: bytes, widths: Iterable[int],
          take: Callable[[cairocffi.ImageSurface, tuple[int, int]], Image.Image]) -> dict[int, Image.Image]:
    """Parse ``svg`` once and rasterise it on white at each width, then ``take`` the pixels (an
    image that owns them: the surface is drawn over by the next picture).

    A width that divides RECORDING_WIDTH by a power of two (512, 1024, 2048: every release
    width) is replayed from one cairo recording of the drawing at RECORDING_WIDTH, so cairosvg
    walks the SVG once for all of them; any other width is drawn by cairosvg directly. cairo
    rounds a replay's scale to 1/1024, which is exact only for these ratios: replaying at other
    scales moved strokes by up to 1.7 px at 1024 px. Either way a width's pixels depend only
    on the width."""
    tree = cairosvg.parser.Tree(bytestring=svg)
    recording: _RecordingSurface | None = None
    out: dict[int, Image.Image] = {}
    for width in widths:
        ratio = RECORDING_WIDTH // width if RECORDING_WIDTH % width == 0 else 0
        if ratio and ratio & (ratio - 1) == 0:
            if recording is None:
                recording = _RecordingSurface(tree, None, 96, output_width=RECORDING_WIDTH)
            natural_width, natural_height = recording.natural_size
            height = int(round(natural_height * width / natural_width))  # as cairosvg sizes an output_width render
            surface = _white_surface(width, height)
            context = cairocffi.Context(surface)
            context.scale(1 / ratio, 1 / ratio)
            context.set_source_surface(recording.cairo)
            context.paint()
            size = (width, height)
        else:
            drawn = _DirectSurface(tree, None, 96, output_width=width)
            surface, size = drawn.cairo, (drawn.width, drawn.height)
        surface.flush()
        out[width] = take(surface, size)
    if recording is not None:
        recording.finish()
    return out


# One surface per width and thread, painted over for every picture: a fresh 19 MB surface
# costs more in page faults than the drawing that fills it.
_KEPT = threading.local()
MAX_KEPT_SURFACE_PIXELS = 8_000_000


def _white_surface(width: int, height: int) -> cairocffi.ImageSurface:
    """This thread's kept surface of the size, painted white."""
    surface = _surface(width, height)
    context = cairocffi.Context(surface)
    context.set_source_rgb(1, 1, 1)
    context.paint()
    return surface


def _surface(width: int, height: int) -> cairocffi.ImageSurface:
    kept: dict[int, cairocffi.ImageSurface] = _KEPT.__dict__.setdefault("surfaces", {})
    surface = kept.get(width)
    if surface is None or surface.get_height() != height:
        surface = cairocffi.ImageSurface(cairocffi.FORMAT_RGB24, width, height)
        if width * height <= MAX_KEPT_SURFACE_PIXELS:
            kept[width] = surface
    return surface


def _rgb(surface: cairocffi.ImageSurface, size: tuple[int, int]) -> Image.Image:
    """The surface's pixels as a new RGB image: Pillow unpacks cairo's BGRX words in one pass
    (far cheaper than a numpy channel swap)."""
    return Image.frombuffer("RGB", size, surface.get_data(), "raw", "BGRX", surface.get_stride(), 1)


class _RecordingSurface(cairosvg.surface.PNGSurface):
    """cairosvg drawing into a cairo recording surface (vector commands) instead of pixels."""

    natural_size: tuple[float, float]

    def _create_surface(self, width: float, height: float) -> tuple[cairocffi.RecordingSurface, float, float]:
        self.natural_size = (width, height)
        return cairocffi.RecordingSurface(cairocffi.CONTENT_COLOR_ALPHA, None), width, height


class _DirectSurface(cairosvg.surface.PNGSurface):
    """cairosvg drawing straight onto this thread's kept surface of the size, on white."""

    def _create_surface(self, width: float, height: float) -> tuple[cairocffi.ImageSurface, int, int]:
        width, height = int(round(width)), int(round(height))
        return _white_surface(width, height), width, height


@lru_cache(maxsize=32)
def rasterise_cached(svg: str, width: int) -> Image.Image:
    """One SVG at one width as RGB, remembered: a verifier compares several answers (the five
    options, at each resolution) with one reference picture. The image is shared: do not modify it."""
    return rasterise_images(svg, (width,))[width].convert("RGB")


def encode_png(image: Image.Image | np.ndarray) -> bytes:
    """Lossless, deterministic PNG bytes of an opaque picture: a palette image as it is, an RGB
    image as an exact palette PNG when it can be (<= 256 well-separated colours), else as RGB."""
    if isinstance(image, np.ndarray):
        image = Image.fromarray(image, "RGB")
    indexed = image if image.mode == "P" else _exact_palette_image(image)
    if indexed is None:  # not a rendered picture (e.g. a gallery sheet)
        return _png(image if image.mode == "RGB" else image.convert("RGB"))
    return _png(indexed)


def _published(surface: cairocffi.ImageSurface, size: tuple[int, int],
               colours: tuple[tuple[int, int, int], ...] | None) -> Image.Image:
    """The image published for the raster on ``surface``, pixel for pixel.

    A crisp drawing (anti-aliasing off for the whole SVG, no transparency) holds exactly the
    ``colours`` it names, so it becomes a palette image without a pass to count its colours. An
    anti-aliased one (``colours`` None) stays RGB: mapping its edge shades onto a palette shifted
    the pixel distances between options enough to move the context-blind pickers
    (graph_isomorphism medoid 0.20 -> 0.33).
    """
    if colours is not None:
        indexed = _indexed(surface, size, colours)
        if indexed is not None:
            return indexed
    return _rgb(surface, size)


def _indexed(surface: cairocffi.ImageSurface, size: tuple[int, int],
             colours: tuple[tuple[int, int, int], ...]) -> Image.Image | None:
    """The raster on ``surface``, which holds only ``colours``, as a palette image with exactly
    those colours.

    Pillow reads cairo's BGRX words in place as RGBX, red and blue swapped (no copy, no
    unpacking). When one channel takes a different value in every colour (nearly every palette
    here), that channel alone indexes the palette through a lookup table: two cheap passes.
    Otherwise Pillow maps pixels onto the palette (colours looked up swapped) through a
    reduced-precision cache, exact only for colours >= MIN_SEPARATION apart. Closer colours get
    each channel's values spread evenly over 0..255 (a per-channel lookup keeps distinct colours
    distinct and puts them >= 17 apart), mapped there, and the palette then names the original
    colours. None when a channel has more than 16 values.
    """
    view = Image.frombuffer("RGBX", size, surface.get_data(), "raw", "RGBX", surface.get_stride(), 1)
    for channel, band in ((0, 2), (1, 1), (2, 0)):  # red is the view's band 2, blue its band 0
        values = [colour[channel] for colour in colours]
        if len(set(values)) == len(values):
            table = [0] * 256
            for index, value in enumerate(values):
                table[value] = index
            indexed = view.getchannel(band).point(table)
            indexed.putpalette([value for colour in colours for value in colour])  # L -> P
            return indexed
    swapped = [(b, g, r) for r, g, b in colours]
    if not _well_separated(np.array(colours, dtype=np.uint8)):
        tables = []
        for channel in range(3):
            values = sorted({colour[channel] for colour in swapped})
            if len(values) > 16:
                return None
            table = list(range(256))
            for rank, value in enumerate(values):
                table[value] = rank * 255 // max(1, len(values) - 1)
            tables.append(table)
        view = view.point([v for table in (*tables, list(range(256))) for v in table])
        swapped = [(tables[0][colour[0]], tables[1][colour[1]], tables[2][colour[2]]) for colour in swapped]
    # Image.quantize takes only RGB images; its palette mapping is this one core call, which
    # reads the RGBX layout as it is.
    palette = _palette_image(swapped)
    palette.load()
    indexed = view._new(view.im.convert("P", Image.Dither.NONE, palette.im))
    indexed.putpalette([value for colour in colours for value in colour])
    return indexed


def _is_crisp(svg: bytes) -> bool:
    """True when the root element turns anti-aliasing off and nothing turns it back on."""
    return svg.count(b"shape-rendering") == 1 and _CRISP_ROOT.search(svg) is not None


def _exact_palette_image(image: Image.Image) -> Image.Image | None:
    """The palette image of ``image`` pixel for pixel, or None when it has more than 256
    colours or colours too close for Pillow's palette mapping to keep exact."""
    colours = image.getcolors(PALETTE_LIMIT)
    if colours is None:
        return None
    # Each colour present gets its own entry, sorted, so the palette does not depend on pixel order.
    entries = np.array(sorted(colour for _, colour in colours), dtype=np.uint8)
    if not _well_separated(entries):
        return None
    return image.quantize(palette=_palette_image([tuple(c) for c in entries.tolist()]), dither=Image.Dither.NONE)


def _palette_image(colours: Iterable[tuple[int, int, int]]) -> Image.Image:
    palette = Image.new("P", (1, 1))
    palette.putpalette([value for colour in colours for value in colour])
    return palette


_HEX_COLOUR = re.compile(rb"#([0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b")
_CRISP_ROOT = re.compile(rb"<svg\b[^>]*shape-rendering=\"crispEdges\"")
_SVG_ROOT = re.compile(rb"<svg\b")
WHITE = (255, 255, 255)


def _drawing_colours(svg: bytes) -> tuple[tuple[int, int, int], ...]:
    """The solid colours an SVG names as ``#rrggbb`` or ``#rgb``, plus the white ground."""
    found = {tuple(int(h[i:i + 2], 16) for i in (0, 2, 4)) if len(h) == 6 else tuple(int(c, 16) * 17 for c in h.decode())
             for h in _HEX_COLOUR.findall(svg)}
    return tuple(sorted(cast(set[tuple[int, int, int]], found) | {WHITE}))


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png(image: Image.Image) -> bytes:
    """A standard PNG of an RGB image, or of a palette image with its indices packed to 1, 2, 4 or
    8 bits (the fewest that hold its palette): filter type 0 on every row, one deflate stream."""
    width, height = image.size
    if image.mode == "RGB":
        bits, colour_type, palette, raw = 8, 2, b"", image.tobytes()
    else:
        palette = bytes(image.getpalette() or [0, 0, 0])
        bits = next(b for b in (1, 2, 4, 8) if len(palette) // 3 <= 1 << b)
        colour_type, raw = 3, image.tobytes("raw", "P" if bits == 8 else f"P;{bits}")  # Pillow's C bit packer
    rows = np.empty((height, len(raw) // height + 1), dtype=np.uint8)
    rows[:, 0] = 0  # filter type None
    rows[:, 1:] = np.frombuffer(raw, dtype=np.uint8).reshape(height, -1)
    header = struct.pack(">IIBBBBB", width, height, bits, colour_type, 0, 0, 0)
    chunks = [_chunk(b"IHDR", header)]
    if colour_type == 3:
        chunks.append(_chunk(b"PLTE", palette))
    chunks += [_chunk(b"IDAT", zlib_ng.compress(rows, PNG_DEFLATE_LEVEL)), _chunk(b"IEND", b"")]
    return PNG_SIGNATURE + b"".join(chunks)


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
