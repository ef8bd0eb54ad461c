"""Core pieces: seeds, registry, rendering, safe image loading."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from helpers import jpeg, png_bytes
from PIL import Image

from vrforge.buffers import reuse_large_buffers
from vrforge.imageio import UnusableImage, load_rgb
from vrforge.registry import TaskSpec, all_tasks, get_task, register_task
from vrforge.render import CRISP_FROM, encode_png, rasterise, rasterise_images, raw_rasters, render_pngs
from vrforge.seeding import derive_seed, item_rng

SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20" viewBox="0 0 40 20">'
       '<rect width="40" height="20" fill="#fff"/><circle cx="10" cy="10" r="6" fill="#1976d2"/>'
       '<path d="M20 2L38 18" stroke="#c62828" stroke-width="2"/></svg>')


def test_seed_is_a_stable_function_of_the_item():
    assert derive_seed(1, "maze", "hard", 3) == derive_seed(1, "maze", "hard", 3)
    # A fixed value: a change to the derivation would silently change every release.
    assert derive_seed(0, "maze", "easy", 0) == 7887917458759939785
    seeds = {derive_seed(1, "maze", d, i, a) for d in ("easy", "hard") for i in range(50) for a in range(3)}
    assert len(seeds) == 300
    assert item_rng(5).integers(1 << 30) == item_rng(5).integers(1 << 30)


def test_registry_rejects_a_duplicate_name():
    spec = get_task("maze")
    with pytest.raises(ValueError, match="already registered"):
        register_task(TaskSpec(name="maze", domain="spatial", version="0", checks=(), difficulties={},
                               generate=spec.generate, draw=spec.draw, verify=spec.verify))
    assert "maze" in [t.name for t in all_tasks()]


def test_unknown_task_and_difficulty_are_named_errors():
    with pytest.raises(KeyError, match="unknown task 'mazee'"):
        get_task("mazee")
    with pytest.raises(KeyError, match="no difficulty 'extreme'"):
        get_task("maze").config("extreme")


def test_rasterise_sizes_and_determinism():
    first = rasterise(SVG, (512, 1024))
    second = rasterise(SVG.encode(), (512, 1024))
    assert first[512].shape == (256, 512, 3) and first[1024].shape == (512, 1024, 3)
    assert first[512].tobytes() == second[512].tobytes()
    assert tuple(first[512][128, 128]) == (0x19, 0x76, 0xD2)  # the circle's centre
    images = rasterise_images(SVG, (512,))
    assert np.array_equal(np.asarray(images[512].convert("RGB")), first[512])
    # A width's pixels do not depend on the other widths asked for (verifiers' reference renders).
    assert np.array_equal(rasterise(SVG, (1024,))[1024], first[1024])


def test_published_pixels_are_the_rasters_and_crisp_drawings_become_palette_images():
    crisp = SVG.replace("<svg ", '<svg shape-rendering="crispEdges" ', 1).encode()
    for svg, mode in ((crisp, "P"), (SVG.encode(), "RGB")):
        raw = raw_rasters(svg, (512, 1024))
        for width, image in rasterise_images(svg, (512, 1024)).items():
            assert image.mode == mode
            assert np.array_equal(np.asarray(image.convert("RGB")), np.asarray(raw[width]))


def test_large_images_are_rendered_crisp_and_stored_exactly_even_with_close_colours():
    # Two greys 3 apart: Pillow's palette mapping alone would merge them.
    close = SVG.replace('fill="#1976d2"', 'fill="#808080"').replace('stroke="#c62828"', 'stroke="#838383"').encode()
    for svg in (SVG.encode(), close):
        image = rasterise_images(svg, (CRISP_FROM,))[CRISP_FROM]
        assert image.mode == "P"
        raw = raw_rasters(svg.replace(b"<svg ", b'<svg shape-rendering="crispEdges" ', 1), (CRISP_FROM,))[CRISP_FROM]
        assert np.array_equal(np.asarray(image.convert("RGB")), np.asarray(raw))
        assert len(raw.getcolors(256)) == 3  # white and the two drawing colours, no anti-aliasing shades
        decoded = Image.open(io.BytesIO(encode_png(image))).convert("RGB")
        assert np.array_equal(np.asarray(decoded), np.asarray(raw))


@pytest.mark.parametrize("fill, stroke", [
    ("#1976d2", "#c62828"),  # a channel tells every colour apart: one channel indexes the palette
    ("#00ff00", "#ff0000"),  # no such channel, colours far apart: Pillow's palette mapping
    ("#838080", "#808380"),  # no such channel, colours 3 apart: channels spread before the mapping
])
def test_crisp_rasters_become_exact_palette_images_whatever_their_colours(fill, stroke):
    svg = SVG.replace("#1976d2", fill).replace("#c62828", stroke)
    svg = svg.replace('fill="#fff"/>', 'fill="#fff"/><rect x="2" y="2" width="4" height="4" fill="#808080"/>').encode()
    image = rasterise_images(svg, (CRISP_FROM,))[CRISP_FROM]
    raw = raw_rasters(svg.replace(b"<svg ", b'<svg shape-rendering="crispEdges" ', 1), (CRISP_FROM,))[CRISP_FROM]
    assert image.mode == "P" and len(raw.getcolors(256)) == 4
    assert np.array_equal(np.asarray(image.convert("RGB")), np.asarray(raw))


@pytest.mark.parametrize("width", [512, 777, 1024, 2048])
def test_a_picture_drawn_to_its_edges_keeps_its_colours_in_the_last_row_and_column(width):
    # The recording is replayed unbounded: a bounded one blended its last row and column with
    # the white ground, shades that a crisp picture must not have.
    svg = SVG.replace('fill="#fff"', 'fill="#808080"').replace('<svg ', '<svg shape-rendering="crispEdges" ', 1)
    pixels = np.asarray(rasterise_images(svg, (width,))[width].convert("RGB"))
    assert (pixels[-1] == 128).all() and (pixels[:, -1] == 128).all()  # nothing but the ground is drawn there
    assert np.array_equal(pixels, np.asarray(raw_rasters(svg.encode(), (width,))[width]))


def test_png_bytes_do_not_depend_on_what_the_process_did_before():
    import hashlib
    import subprocess
    import sys

    code = ("import hashlib, sys; from vrforge.render import render_pngs; "
            "print(hashlib.sha256(b''.join(render_pngs(sys.stdin.read(), (512, 1024, 2048)).values())).hexdigest())")
    svg = SVG.replace("#1976d2", "#2e7d32")
    fresh = subprocess.run([sys.executable, "-c", code], input=svg, capture_output=True, text=True, check=True).stdout.strip()
    rng = np.random.default_rng(1)
    for _ in range(20):  # other pictures and noise first: different heap contents, different encoder history
        encode_png(rng.integers(0, 256, size=(300, 300, 3), dtype=np.uint8))
        render_pngs(SVG, (1024,))
    reuse_large_buffers()
    assert hashlib.sha256(b"".join(render_pngs(svg, (512, 1024, 2048)).values())).hexdigest() == fresh


def test_threads_rendering_at_once_get_their_own_pixels():
    from concurrent.futures import ThreadPoolExecutor

    svgs = [SVG.replace("#1976d2", f"#{i:02x}76d2") for i in range(0, 240, 16)]
    alone = [render_pngs(svg, (1024,)) for svg in svgs]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda svg: render_pngs(svg, (1024,)), svgs * 4)) == alone * 4


def test_encode_png_is_lossless_and_deterministic():
    for image in rasterise_images(SVG, (512,)).values():
        data = encode_png(image)
        assert data == encode_png(image)
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")), np.asarray(image.convert("RGB")))
    rng = np.random.default_rng(0)
    many_colours = rng.integers(0, 256, size=(64, 64, 3), dtype=np.uint8)  # > 256 colours: RGB path
    decoded = Image.open(io.BytesIO(encode_png(many_colours)))
    assert decoded.mode == "RGB" and np.array_equal(np.asarray(decoded), many_colours)


@pytest.mark.parametrize("entries", [1, 2, 3, 4, 5, 16, 17, 256])
@pytest.mark.parametrize("width", [16, 17, 19, 23])
def test_palette_pngs_pack_indices_to_the_fewest_bits_and_decode_exactly(entries, width):
    rng = np.random.default_rng(entries * 100 + width)
    colours = rng.integers(0, 256, size=(entries, 3), dtype=np.uint8)
    indices = rng.integers(0, entries, size=(18, width), dtype=np.uint8)
    image = Image.fromarray(indices, "P")
    image.putpalette(colours.tobytes())
    data = encode_png(image)
    assert data[24] == next(b for b in (1, 2, 4, 8) if entries <= 1 << b)  # IHDR bit depth
    decoded = Image.open(io.BytesIO(data))
    assert decoded.mode == "P" and np.array_equal(np.asarray(decoded.convert("RGB")), colours[indices])


def test_rendering_is_unchanged_by_buffer_reuse():
    before = render_pngs(SVG, (512, 2048))
    reuse_large_buffers()
    assert render_pngs(SVG, (512, 2048)) == before == render_pngs(SVG, (512, 2048))


def _bomb_png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00" * 100)) + chunk(b"IEND", b""))


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (b"not an image at all", "not an image"),
        (b"", "not an image"),
        (_bomb_png(20_000, 20_000), "too large"),
        (png_bytes(Image.new("RGB", (1, 1))), "too small"),
        ("/no/such/file.png", "no such file"),
        (12345, "unsupported image source"),
    ],
)
def test_unusable_inputs_raise_one_named_reason(source, reason):
    with pytest.raises(UnusableImage, match=reason):
        load_rgb(source)


def test_truncated_png_is_unusable():
    data = png_bytes(Image.new("RGB", (300, 300), (10, 200, 30)).effect_spread(3))
    with pytest.raises(UnusableImage, match="corrupt or truncated"):
        load_rgb(data[: len(data) // 2])


def test_gif_is_refused_but_png_jpeg_webp_load():
    image = Image.new("RGB", (40, 30), (200, 10, 10))
    buffer = io.BytesIO()
    image.save(buffer, format="GIF")
    with pytest.raises(UnusableImage, match="unsupported format GIF"):
        load_rgb(buffer.getvalue())
    webp = io.BytesIO()
    image.save(webp, format="WEBP", lossless=True)
    for data in (png_bytes(image), jpeg(image), webp.getvalue()):
        assert load_rgb(data).shape == (30, 40, 3)


@pytest.mark.parametrize("mode", ["L", "LA", "RGBA", "P", "I;16", "1", "CMYK"])
def test_every_mode_becomes_rgb(mode):
    image = Image.new("RGB", (32, 32), (255, 255, 255)).convert(mode)
    rgb = load_rgb(png_bytes(image) if mode != "CMYK" else jpeg(image.convert("RGB")))
    assert rgb.shape == (32, 32, 3) and rgb.dtype == np.uint8


def test_transparent_pixels_become_white():
    image = Image.new("RGBA", (20, 20), (0, 0, 0, 0))
    assert load_rgb(png_bytes(image))[5, 5].tolist() == [255, 255, 255]


def test_verifiers_never_import_generator_code():
    # DESIGN: verification needs only the row and an image, so a verifier keeps working on
    # data built by an older generator.
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "verifiers"
    offenders = [p.name for p in root.glob("*.py") if "vrforge.generators" in p.read_text(encoding="utf-8")]
    assert offenders == []
