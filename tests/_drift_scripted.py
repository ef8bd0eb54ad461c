"""Scripted stand-ins for the drift tests: drawn scenes, a detector that reads them, lookup embedders, and chain
models (identity, random, one that drops an object) behind the unified ``caption`` / ``generate`` interface."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw

from vrforge.runners.drift.embed import image_digest
from vrforge.runners.drift.geneval import Detection

CLASSES = ("cat", "dog", "clock", "car", "banana", "suitcase")
COLOURS = {"red": (220, 30, 30), "blue": (30, 70, 220), "green": (40, 160, 50), "yellow": (240, 220, 30),
           "white": (250, 250, 250), "black": (15, 15, 15)}
HEIGHT = 20
BACKGROUND = (128, 128, 128)  # grey: white and black objects stay visible


def width_of(name: str) -> int:
    return 12 + 8 * CLASSES.index(name)


def draw_scene(objects: Sequence[tuple[str, str, int, int]], size: int = 256) -> Image.Image:
    """Objects as (class, colour, x, y): a filled rectangle whose width encodes the class."""
    image = Image.new("RGB", (size, size), BACKGROUND)
    draw = ImageDraw.Draw(image)
    scale = size / 256
    for name, colour, x, y in objects:
        x0, y0 = round(x * scale), round(y * scale)
        draw.rectangle([x0, y0, x0 + round(width_of(name) * scale) - 1, y0 + round(HEIGHT * scale) - 1], fill=COLOURS[colour])
    return image


class ShapeDetector:
    """Finds the rectangles of ``draw_scene`` (connected non-background regions) and names them by width."""

    def __init__(self) -> None:
        self.calls = 0

    def detect(self, images: Sequence[Image.Image], queries: Sequence[Sequence[str]]) -> list[list[Detection]]:
        from scipy import ndimage

        self.calls += 1
        out = []
        for image, wanted in zip(images, queries):
            pixels = np.asarray(image.convert("RGB")).astype(int)
            mask = np.any(np.abs(pixels - np.array(BACKGROUND)) > 40, axis=-1)
            labels, count = ndimage.label(mask)
            found = []
            scale = image.size[0] / 256
            for region in ndimage.find_objects(labels):
                ys, xs = region
                width = (xs.stop - xs.start) / scale
                index = round((width - 12) / 8)
                if 0 <= index < len(CLASSES) and CLASSES[index] in wanted:
                    found.append(Detection(CLASSES[index], 0.9, (float(xs.start), float(ys.start), float(xs.stop), float(ys.stop))))
            out.append(found)
        return out


def _vector(key: str, dim: int = 64) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
    vector = np.random.Generator(np.random.PCG64(seed)).standard_normal(dim)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


class LookupEmbedder:
    """Text and image of one registered sample share a vector (so an identity chain scores exactly 1, also across
    modalities); anything unregistered gets its own random vector."""

    def __init__(self) -> None:
        self.keys: dict[str, str] = {}

    def register(self, key: str, text: str | None = None, image: Image.Image | None = None) -> None:
        if text is not None:
            self.keys["t:" + text] = key
        if image is not None:
            self.keys["i:" + image_digest(image)] = key

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([_vector(self.keys.get("t:" + t, "text:" + t)) for t in texts])

    def embed_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        return np.stack([_vector(self.keys.get("i:" + image_digest(im), "image:" + image_digest(im))) for im in images])


SCENES = {
    "a photo of a cat": [("cat", "red", 100, 100)],
    "a photo of two clocks": [("clock", "white", 40, 100), ("clock", "white", 160, 100)],
    "a photo of a blue car": [("car", "blue", 90, 120)],
    "a photo of a dog right of a cat": [("cat", "green", 30, 120), ("dog", "yellow", 180, 120)],
    "a photo of a red cat and a blue dog": [("cat", "red", 40, 60), ("dog", "blue", 150, 160)],
    "a photo of a banana and a suitcase": [("banana", "yellow", 30, 40), ("suitcase", "black", 150, 180)],
}
SPECS = [
    {"tag": "single_object", "include": [{"class": "cat", "count": 1}], "prompt": "a photo of a cat"},
    {"tag": "counting", "include": [{"class": "clock", "count": 2}], "exclude": [{"class": "clock", "count": 3}],
     "prompt": "a photo of two clocks"},
    {"tag": "colors", "include": [{"class": "car", "count": 1, "color": "blue"}], "prompt": "a photo of a blue car"},
    {"tag": "position", "include": [{"class": "cat", "count": 1}, {"class": "dog", "count": 1, "position": ["right of", 0]}],
     "prompt": "a photo of a dog right of a cat"},
    {"tag": "color_attr", "include": [{"class": "cat", "count": 1, "color": "red"}, {"class": "dog", "count": 1, "color": "blue"}],
     "prompt": "a photo of a red cat and a blue dog"},
    {"tag": "two_object", "include": [{"class": "banana", "count": 1}, {"class": "suitcase", "count": 1}],
     "prompt": "a photo of a banana and a suitcase"},
]


class IdentityModel:
    """Returns its input's original content: the original image for a known text, the original text for a known image."""

    def __init__(self, originals: dict[str, Image.Image] | None = None) -> None:
        self.images = dict(originals or {})  # text -> image
        self.texts = {image_digest(im): text for text, im in self.images.items()}

    def add(self, text: str, image: Image.Image) -> None:
        self.images[text] = image
        self.texts[image_digest(image)] = text

    def caption(self, image: Image.Image) -> str:
        return self.texts[image_digest(image)]

    def generate(self, text: str, seed: int) -> Image.Image:
        return self.images[text]

    def describe(self) -> dict:
        return {"kind": "scripted-identity"}


class RandomModel:
    """Noise images from the seed and words picked by the image's digest: deterministic and unrelated to the input."""

    words = ("stone", "river", "lamp", "cloud", "violin", "tower", "garden", "engine", "mirror", "forest")

    def __init__(self, size: int = 32, fail_after: int | None = None, fail_after_captions: int | None = None) -> None:
        self.size, self.fail_after, self.generated = size, fail_after, 0
        self.fail_after_captions, self.captioned = fail_after_captions, 0

    def caption(self, image: Image.Image) -> str:
        if self.fail_after_captions is not None and self.captioned >= self.fail_after_captions:
            raise KeyboardInterrupt
        self.captioned += 1
        seed = int(image_digest(image)[:12], 16)
        rng = np.random.Generator(np.random.PCG64(seed))
        return " ".join(self.words[int(i)] for i in rng.integers(0, len(self.words), 6))

    def generate_batch(self, texts: list[str], seeds: list[int]) -> list[Image.Image]:
        if self.fail_after is not None and self.generated + len(texts) > self.fail_after:
            raise KeyboardInterrupt
        self.generated += len(texts)
        return [Image.fromarray(np.random.Generator(np.random.PCG64(s)).integers(0, 256, (self.size, self.size, 3), dtype=np.uint8))
                for s in seeds]

    def generate(self, text: str, seed: int) -> Image.Image:
        return self.generate_batch([text], [seed])[0]

    def describe(self) -> dict:
        return {"kind": "scripted-random", "size": self.size}


class DroppingModel(IdentityModel):
    """An identity chain for scenes, except that its second description of a two-object scene forgets the second
    object: the image drawn from it (step 5 of a text-first chain) lacks that object."""

    def __init__(self) -> None:
        super().__init__({prompt: draw_scene(objects) for prompt, objects in SCENES.items()})
        self.captions: dict[str, int] = {}
        for prompt, objects in SCENES.items():
            if len({o[0] for o in objects}) == 2:
                reduced = f"{prompt} without the {objects[1][0]}"
                self.images[reduced] = draw_scene(objects[:1])
                self.texts[image_digest(self.images[reduced])] = reduced

    def caption(self, image: Image.Image) -> str:
        text = self.texts[image_digest(image)]
        self.captions[text] = self.captions.get(text, 0) + 1
        reduced = f"{text} without the {SCENES.get(text, [('', '', 0, 0)] * 2)[-1][0]}"
        if self.captions[text] >= 2 and reduced in self.images:
            return reduced
        return text
