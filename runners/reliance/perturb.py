"""The perturbation ladder: what is done to an image to see whether the answer depends on it.

Names are ``<family>-<strength>`` or a bare family: blur-2/4/8/16 (Gaussian blur radius in
px), noise-5/10/20/40 (Gaussian noise, sigma in 8-bit levels), greyscale, occlusion-25/50/75 (a
mid-grey rectangle covering that share of the relevant region's bounding box, or of the image
when the item has no mask), replace (another item's image), blank (a white image). The
stochastic ones (noise, occlusion, replace) are repeated with seeds derived from (audit seed,
item, perturbation, repeat); the deterministic ones are applied once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageFilter

from vrforge.seeding import derive_seed, item_rng

FAMILIES: dict[str, tuple[int | None, ...]] = {
    "blur": (2, 4, 8, 16), "noise": (5, 10, 20, 40), "greyscale": (None,), "occlusion": (25, 50, 75),
    "replace": (None,), "blank": (None,),
}
STOCHASTIC = {"noise", "occlusion", "replace"}
OCCLUDER = (128, 128, 128)
BLANK = (255, 255, 255)


def ladder(families: Sequence[str] | None = None) -> list[str]:
    """Every perturbation name of the given families (all by default), weakest first within a family."""
    names = []
    for family in families or FAMILIES:
        if family not in FAMILIES:
            raise ValueError(f"unknown perturbation family {family!r} (choose from {', '.join(FAMILIES)})")
        names += [family if s is None else f"{family}-{s}" for s in FAMILIES[family]]
    return names


def split_name(name: str) -> tuple[str, int | None]:
    family, _, strength = name.partition("-")
    known = family in FAMILIES and (int(strength) in FAMILIES[family] if strength.isdigit() else
                                    not strength and FAMILIES[family] == (None,))
    if not known:
        raise ValueError(f"unknown perturbation {name!r}")
    return family, int(strength) if strength else None


def repeats_for(name: str, repeats: int) -> int:
    return repeats if split_name(name)[0] in STOCHASTIC else 1


def perturb_rng(seed: int, item_id: str, name: str, repeat: int) -> np.random.Generator:
    return item_rng(derive_seed(seed, item_id, name, repeat))


def apply(name: str, image: Image.Image, rng: np.random.Generator, mask: np.ndarray | None = None,
          pool: Sequence[Image.Image] = ()) -> Image.Image:
    """The perturbed copy of ``image`` (RGB, same size)."""
    family, strength = split_name(name)
    amount = float(strength) if strength is not None else 0.0  # greyscale and the swaps have no strength
    image = image.convert("RGB")
    if family == "blur":
        return image.filter(ImageFilter.GaussianBlur(radius=amount))
    if family == "noise":
        pixels = rng.standard_normal((image.height, image.width, 3), dtype=np.float32)
        pixels *= amount
        pixels += np.asarray(image, dtype=np.float32)
        np.rint(pixels, out=pixels)
        np.clip(pixels, 0, 255, out=pixels)
        return Image.fromarray(pixels.astype(np.uint8), "RGB")
    if family == "greyscale":
        return image.convert("L").convert("RGB")
    if family == "occlusion":
        x0, y0, x1, y1 = region_box(mask, image.size)
        side = np.sqrt(amount / 100.0)
        w, h = max(1, round((x1 - x0) * side)), max(1, round((y1 - y0) * side))
        left = x0 + int(rng.integers(0, x1 - x0 - w + 1))
        top = y0 + int(rng.integers(0, y1 - y0 - h + 1))
        pixels = np.array(image)
        pixels[top:top + h, left:left + w] = OCCLUDER
        return Image.fromarray(pixels, "RGB")
    if family == "replace":
        if not pool:
            raise ValueError("replace needs at least one other image")
        other = pool[int(rng.integers(0, len(pool)))].convert("RGB")
        return other if other.size == image.size else other.resize(image.size, Image.Resampling.BILINEAR)
    return Image.new("RGB", image.size, BLANK)


def region_box(mask: np.ndarray | None, size: tuple[int, int]) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1), exclusive ends: the mask's bounding box, or the whole image without a usable mask."""
    width, height = size
    if mask is None or mask.shape != (height, width) or not mask.any():
        return 0, 0, width, height
    ys, xs = np.nonzero(mask)
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1
