"""Golden scenes for the visual-reliance audit.

Each item is a minimal synthetic scene (flat-coloured shapes on white, drawn without
anti-aliasing so every pixel belongs to one palette colour), a question whose answer can only
come from the picture, and a **counterfactual** scene: the same scene with exactly the queried
fact changed, so its correct answer differs. Five question types:

- ``colour``: "What colour is the square?" (the only square; the counterfactual repaints it);
- ``position``: "Where in the image is the red circle?" left / right / top / bottom (the
  counterfactual moves it to another side);
- ``count``: "How many blue triangles are in the image?" 1-4 (the counterfactual adds or
  removes some; every other object stays where it was);
- ``existence``: "Is there a green diamond in the image?" yes / no (the counterfactual adds
  or removes it);
- ``relation``: "Where is the red circle relative to the blue square?" left of / right of /
  above / below (the counterfactual moves the first object to another side of the second).

The region mask marks the answer-relevant objects (in the original, plus those the
counterfactual adds), for targeted occlusion. Every item is checked by code before it is
kept (``verify_item``): both pictures re-render from their scene descriptions; a pixel reader
(``read_answer``) that knows only the question's target reads the recorded answers from the
pictures; the two answers differ; the two scene descriptions differ only in the queried fact;
and the two pictures differ only inside the footprint of the changed objects.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from vrforge.seeding import derive_seed, item_rng

GENERATOR_VERSION = "1"
SIZE = 256
BACKGROUND = (255, 255, 255)
# Far apart in RGB (nearest pair: orange-yellow, distance 73), so a pixel reads as one colour.
PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (215, 40, 40), "green": (30, 150, 60), "blue": (40, 80, 215), "yellow": (235, 195, 20),
    "purple": (135, 55, 175), "orange": (240, 125, 25), "pink": (240, 110, 185), "brown": (120, 75, 35),
}
COLOURS = tuple(PALETTE)
SHAPES = ("circle", "square", "triangle", "diamond")
QUESTION_TYPES = ("colour", "position", "count", "existence", "relation")
POSITIONS = ("left", "right", "top", "bottom")
RELATIONS = ("left of", "right of", "above", "below")
COUNTS = ("1", "2", "3", "4")
YES_NO = ("yes", "no")
COLOUR_TOLERANCE = 50.0  # RGB distance within which a pixel reads as a palette colour
MIN_VISIBLE = 0.3  # share of an object's area that must read as its colour for the reader to see it
GAP = 6
MAX_ATTEMPTS = 50

Obj = dict[str, Any]


class GenerationFailed(RuntimeError):
    """No valid item within MAX_ATTEMPTS (does not happen with the shipped parameters)."""


@dataclass
class GoldenItem:
    id: str
    qtype: str
    index: int
    seed: int
    question: str
    options: list[str]
    answer_index: int
    counterfactual_answer_index: int
    image: bytes
    counterfactual: bytes
    mask: bytes
    meta: dict[str, Any]
    rejections: dict[str, int] = field(default_factory=dict)

    @property
    def answer(self) -> str:
        return self.options[self.answer_index]

    @property
    def counterfactual_answer(self) -> str:
        return self.options[self.counterfactual_answer_index]


# ----------------------------------------------------------------------------- drawing


def bound(obj: Obj) -> int:
    """Radius of a circle holding the shape (squares and triangles reach r * sqrt(2))."""
    return int(np.ceil(obj["r"] * 1.42)) + 1


def _draw(draw: ImageDraw.ImageDraw, obj: Obj, fill: Any) -> None:
    x, y, r = obj["x"], obj["y"], obj["r"]
    shape = obj["shape"]
    if shape == "circle":
        draw.ellipse([x - r, y - r, x + r, y + r], fill=fill)
    elif shape == "square":
        draw.rectangle([x - r, y - r, x + r, y + r], fill=fill)
    elif shape == "triangle":
        draw.polygon([(x, y - r), (x + r, y + r), (x - r, y + r)], fill=fill)
    elif shape == "diamond":
        draw.polygon([(x, y - r), (x + r, y), (x, y + r), (x - r, y)], fill=fill)
    else:
        raise ValueError(f"unknown shape {shape!r}")


def render(scene: dict[str, Any]) -> Image.Image:
    """The scene as an RGB picture (no anti-aliasing: every pixel is the background or one palette colour)."""
    image = Image.new("RGB", (scene["size"], scene["size"]), BACKGROUND)
    draw = ImageDraw.Draw(image)
    for obj in scene["objects"]:
        _draw(draw, obj, PALETTE[obj["colour"]])
    return image


def footprint(objects: list[Obj], size: int = SIZE) -> np.ndarray:
    """Boolean array of the pixels the objects cover."""
    image = Image.new("L", (size, size), 0)
    draw = ImageDraw.Draw(image)
    for obj in objects:
        _draw(draw, obj, 255)
    return np.asarray(image) > 0


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue()


def decode(data: bytes, mode: str = "RGB") -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert(mode))


# ----------------------------------------------------------------------------- placement


def _fits(obj: Obj, placed: list[Obj], size: int) -> bool:
    b = bound(obj)
    if obj["x"] - b < 4 or obj["y"] - b < 4 or obj["x"] + b > size - 4 or obj["y"] + b > size - 4:
        return False
    return all((obj["x"] - o["x"]) ** 2 + (obj["y"] - o["y"]) ** 2 >= (b + bound(o) + GAP) ** 2 for o in placed)


def _place(rng: np.random.Generator, shape: str, colour: str, r: int, placed: list[Obj],
           region: tuple[int, int, int, int] | None = None, tries: int = 200) -> Obj | None:
    x0, x1, y0, y1 = region or (0, SIZE, 0, SIZE)
    for _ in range(tries):
        obj = {"shape": shape, "colour": colour, "x": int(rng.integers(x0, x1 + 1)), "y": int(rng.integers(y0, y1 + 1)), "r": r}
        if _fits(obj, placed, SIZE):
            return obj
    return None


def _distractors(rng: np.random.Generator, count: int, colours: list[str], shapes: tuple[str, ...], avoid: list[Obj],
                 r_range: tuple[int, int] = (14, 24)) -> list[Obj] | None:
    objects: list[Obj] = []
    for _ in range(count):
        obj = _place(rng, str(rng.choice(shapes)), str(rng.choice(colours)), int(rng.integers(*r_range)), avoid + objects)
        if obj is None:
            return None
        objects.append(obj)
    return objects


def _scene(objects: list[Obj]) -> dict[str, Any]:
    return {"size": SIZE, "objects": objects}


# ----------------------------------------------------------------------------- question types
# Each returns the scene, its counterfactual, the question, options, both answers, the target
# descriptor (what the reader needs) and which objects are answer-relevant in each scene; None
# when placement failed (the caller retries with the next attempt's seed).

Draft = dict[str, Any]


def _colour(rng: np.random.Generator) -> Draft | None:
    shape = str(rng.choice(SHAPES))
    colours = [str(c) for c in rng.permutation(COLOURS)]
    colour, cf_colour, others = colours[0], colours[1], colours[2:]
    target = _place(rng, shape, colour, int(rng.integers(18, 28)), [])
    if target is None:
        return None
    n = int(rng.integers(1, 4))
    distractors = _distractors(rng, n, others[:n + 1], tuple(s for s in SHAPES if s != shape), [target])
    if distractors is None:
        return None
    options = [colour, cf_colour, *[str(c) for c in rng.choice(others, size=2, replace=False)]]
    options = [options[k] for k in rng.permutation(4)]
    cf_target = {**target, "colour": cf_colour}
    return {"scene": [target, *distractors], "cf_scene": [cf_target, *distractors], "question": f"What colour is the {shape}?",
            "options": options, "answer": colour, "cf_answer": cf_colour, "target": {"shape": shape},
            "relevant": [0], "cf_relevant": [0]}


ZONES = {"left": (36, 76, 100, 156), "right": (180, 220, 100, 156), "top": (100, 156, 36, 76), "bottom": (100, 156, 180, 220)}


def _position(rng: np.random.Generator) -> Draft | None:
    shape, colour = str(rng.choice(SHAPES)), str(rng.choice(COLOURS))
    zone, cf_zone = (str(z) for z in rng.choice(POSITIONS, size=2, replace=False))
    r = int(rng.integers(14, 22))
    target = _place(rng, shape, colour, r, [], ZONES[zone])
    cf_target = _place(rng, shape, colour, r, [], ZONES[cf_zone])
    if target is None or cf_target is None:
        return None
    others = [c for c in COLOURS if c != colour]
    distractors = _distractors(rng, int(rng.integers(1, 4)), others, SHAPES, [target, cf_target])
    if distractors is None:
        return None
    return {"scene": [target, *distractors], "cf_scene": [cf_target, *distractors],
            "question": f"Where in the image is the {colour} {shape}?", "options": list(POSITIONS), "answer": zone,
            "cf_answer": cf_zone, "target": {"shape": shape, "colour": colour}, "relevant": [0], "cf_relevant": [0]}


def _count(rng: np.random.Generator) -> Draft | None:
    shape, colour = str(rng.choice(SHAPES)), str(rng.choice(COLOURS))
    n, cf_n = (int(c) for c in rng.choice([1, 2, 3, 4], size=2, replace=False))
    r = int(rng.integers(13, 19))
    targets: list[Obj] = []
    for _ in range(max(n, cf_n)):
        obj = _place(rng, shape, colour, r, targets)
        if obj is None:
            return None
        targets.append(obj)
    others = [c for c in COLOURS if c != colour]
    distractors = _distractors(rng, int(rng.integers(1, 4)), others, SHAPES, targets, (12, 19))
    if distractors is None:
        return None
    # The counterfactual keeps the first min(n, cf_n) targets where they are and adds or drops the rest.
    return {"scene": [*targets[:n], *distractors], "cf_scene": [*targets[:cf_n], *distractors],
            "question": f"How many {colour} {shape}s are in the image?", "options": list(COUNTS), "answer": str(n),
            "cf_answer": str(cf_n), "target": {"shape": shape, "colour": colour, "r": r},
            "relevant": list(range(n)), "cf_relevant": list(range(cf_n))}


def _existence(rng: np.random.Generator) -> Draft | None:
    shape, colour = str(rng.choice(SHAPES)), str(rng.choice(COLOURS))
    present = bool(rng.integers(0, 2))
    target = _place(rng, shape, colour, int(rng.integers(16, 26)), [])
    if target is None:
        return None
    others = [c for c in COLOURS if c != colour]
    distractors = _distractors(rng, int(rng.integers(2, 5)), others, SHAPES, [target])
    if distractors is None:
        return None
    with_target, without = [target, *distractors], list(distractors)
    scene, cf_scene = (with_target, without) if present else (without, with_target)
    return {"scene": scene, "cf_scene": cf_scene, "question": f"Is there a {colour} {shape} in the image?",
            "options": list(YES_NO), "answer": "yes" if present else "no", "cf_answer": "no" if present else "yes",
            "target": {"shape": shape, "colour": colour}, "relevant": [0] if present else [], "cf_relevant": [] if present else [0]}


_OFFSETS = {"left of": (-1, 0), "right of": (1, 0), "above": (0, -1), "below": (0, 1)}


def _relation(rng: np.random.Generator) -> Draft | None:
    colour_a, colour_b = (str(c) for c in rng.choice(COLOURS, size=2, replace=False))
    shape_a, shape_b = str(rng.choice(SHAPES)), str(rng.choice(SHAPES))
    relation, cf_relation = (str(x) for x in rng.choice(RELATIONS, size=2, replace=False))
    r_a, r_b = int(rng.integers(12, 18)), int(rng.integers(12, 18))
    b = _place(rng, shape_b, colour_b, r_b, [], (108, 148, 108, 148))
    if b is None:
        return None

    def beside(rel: str) -> Obj | None:
        dx, dy = _OFFSETS[rel]
        for _ in range(100):
            along, across = int(rng.integers(64, 81)), int(rng.integers(-12, 13))
            obj = {"shape": shape_a, "colour": colour_a, "x": b["x"] + dx * along + dy * across,
                   "y": b["y"] + dy * along + dx * across, "r": r_a}
            if _fits(obj, [b], SIZE):
                return obj
        return None

    a, cf_a = beside(relation), beside(cf_relation)
    if a is None or cf_a is None:
        return None
    others = [c for c in COLOURS if c not in (colour_a, colour_b)]
    distractors = _distractors(rng, int(rng.integers(0, 3)), others, SHAPES, [a, cf_a, b], (10, 16))
    if distractors is None:
        return None
    return {"scene": [a, b, *distractors], "cf_scene": [cf_a, b, *distractors],
            "question": f"Where is the {colour_a} {shape_a} relative to the {colour_b} {shape_b}?",
            "options": list(RELATIONS), "answer": relation, "cf_answer": cf_relation,
            "target": {"shape": shape_a, "colour": colour_a, "reference_shape": shape_b, "reference_colour": colour_b},
            "relevant": [0, 1], "cf_relevant": [0, 1]}


DRAFTERS = {"colour": _colour, "position": _position, "count": _count, "existence": _existence, "relation": _relation}


# ----------------------------------------------------------------------------- items


def generate_item(qtype: str, index: int, recipe_seed: int = 0) -> GoldenItem:
    """One verified item; each attempt has its own derived seed, and rejected attempts are counted by reason."""
    if qtype not in DRAFTERS:
        raise ValueError(f"unknown question type {qtype!r} (choose from {', '.join(QUESTION_TYPES)})")
    rejections: dict[str, int] = {}
    for attempt in range(MAX_ATTEMPTS):
        seed = derive_seed(recipe_seed, f"reliance-{qtype}", "test", index, attempt)
        draft = DRAFTERS[qtype](item_rng(seed))
        if draft is None:
            rejections["placement"] = rejections.get("placement", 0) + 1
            continue
        item = _item(qtype, index, seed, draft)
        problems = verify_item(item)
        if problems:
            key = problems[0].split(":")[0]
            rejections[key] = rejections.get(key, 0) + 1
            continue
        item.rejections = rejections
        return item
    raise GenerationFailed(f"{qtype} {index}: no valid item in {MAX_ATTEMPTS} attempts ({rejections})")


def _item(qtype: str, index: int, seed: int, draft: Draft) -> GoldenItem:
    scene, cf_scene = _scene(draft["scene"]), _scene(draft["cf_scene"])
    meta = {"qtype": qtype, "scene": scene, "counterfactual_scene": cf_scene, "target": draft["target"],
            "relevant": draft["relevant"], "counterfactual_relevant": draft["cf_relevant"]}
    options = draft["options"]
    return GoldenItem(id=f"{qtype}-{index:04d}", qtype=qtype, index=index, seed=seed, question=draft["question"],
                      options=options, answer_index=options.index(draft["answer"]),
                      counterfactual_answer_index=options.index(draft["cf_answer"]),
                      image=png(render(scene)), counterfactual=png(render(cf_scene)),
                      mask=png(Image.fromarray(relevant_mask(meta).astype(np.uint8) * 255, "L")), meta=meta)


def relevant_mask(meta: dict[str, Any]) -> np.ndarray:
    """The answer-relevant objects of the original; for count and existence also those only the counterfactual
    adds (where an absent object would be is where to look)."""
    scene, cf_scene = meta["scene"]["objects"], meta["counterfactual_scene"]["objects"]
    objects = [scene[k] for k in meta["relevant"]]
    if meta["qtype"] in ("count", "existence"):
        objects += [cf_scene[k] for k in meta["counterfactual_relevant"] if cf_scene[k] not in scene]
    return footprint(objects, meta["scene"]["size"])


# ----------------------------------------------------------------------------- the pixel reader


def colour_labels(pixels: np.ndarray) -> np.ndarray:
    """Index into COLOURS of each pixel's nearest palette colour within COLOUR_TOLERANCE, else -1.
    Computed once per distinct colour (a clean scene has a handful)."""
    rgb = np.asarray(pixels, dtype=np.int32)
    keys = (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
    unique, inverse = np.unique(keys.ravel(), return_inverse=True)
    colours = np.stack([unique >> 16, (unique >> 8) & 255, unique & 255], axis=1)
    palette = np.array([PALETTE[c] for c in COLOURS], dtype=np.int32)
    distance = ((colours[:, None, :] - palette[None, :, :]) ** 2).sum(axis=2)
    nearest = distance.argmin(axis=1)
    labels = np.where(distance[np.arange(len(unique)), nearest] <= COLOUR_TOLERANCE ** 2, nearest, -1)
    return labels[inverse].reshape(keys.shape)


def _area(obj: Obj, size: int) -> int:
    return int(footprint([obj], size).sum())


def read_answer(meta: dict[str, Any], image: Any) -> str | None:
    """The answer a picture shows, read from its pixels with only the question's target known
    (never the scene's layout, except the colour question's object outline); None when unreadable."""
    pixels = np.asarray(image.convert("RGB")) if isinstance(image, Image.Image) else np.asarray(image)
    if pixels.shape[:2] != (meta["scene"]["size"],) * 2:
        return None
    labels = colour_labels(pixels)
    qtype, target = meta["qtype"], meta["target"]
    size = meta["scene"]["size"]
    if qtype == "colour":
        region = footprint([meta["scene"]["objects"][meta["relevant"][0]]], size)
        counts = np.bincount(labels[region][labels[region] >= 0], minlength=len(COLOURS))
        best = int(counts.argmax())
        return COLOURS[best] if counts[best] >= MIN_VISIBLE * region.sum() else None
    if qtype == "count":
        single = _area({"shape": target["shape"], "x": size // 2, "y": size // 2, "r": target["r"]}, size)
        n = int(round(float((labels == COLOURS.index(target["colour"])).sum()) / single))
        return str(n) if 1 <= n <= len(COUNTS) else None
    if qtype == "existence":
        single = _area({"shape": target["shape"], "x": size // 2, "y": size // 2, "r": 16}, size)
        return "yes" if (labels == COLOURS.index(target["colour"])).sum() >= MIN_VISIBLE * single else "no"
    minimum = 50  # pixels: smaller than any target's visible part, larger than stray noise
    ys, xs = np.nonzero(labels == COLOURS.index(target["colour"]))
    if len(xs) < minimum:
        return None
    cx, cy = xs.mean(), ys.mean()
    if qtype == "position":
        dx, dy = cx - size / 2, cy - size / 2
    elif qtype == "relation":
        ry, rx = np.nonzero(labels == COLOURS.index(target["reference_colour"]))
        if len(rx) < minimum:
            return None
        dx, dy = cx - rx.mean(), cy - ry.mean()
    else:
        raise ValueError(f"unknown question type {qtype!r}")
    side = (0 if dx < 0 else 1) if abs(dx) > abs(dy) else (2 if dy < 0 else 3)
    return (POSITIONS if qtype == "position" else RELATIONS)[side]


# ----------------------------------------------------------------------------- verification


def _fact_problems(meta: dict[str, Any]) -> list[str]:
    """The two scene descriptions differ in exactly the queried fact."""
    qtype = meta["qtype"]
    scene, cf = meta["scene"]["objects"], meta["counterfactual_scene"]["objects"]
    relevant, cf_relevant = meta["relevant"], meta["counterfactual_relevant"]
    if qtype in ("colour", "position", "relation"):
        if len(scene) != len(cf):
            return ["fact: the counterfactual adds or removes objects"]
        changed = [k for k in range(len(scene)) if scene[k] != cf[k]]
        if changed != [0]:
            return [f"fact: objects {changed} changed, expected only the queried object"]
        allowed = {"colour": {"colour"}, "position": {"x", "y"}, "relation": {"x", "y"}}[qtype]
        keys = {key for key in scene[0] if scene[0][key] != cf[0][key]}
        if not keys or not keys <= allowed:
            return [f"fact: the queried object changed in {sorted(keys)}, expected only {sorted(allowed)}"]
        return []
    # count / existence: the answer-relevant objects come and go; every other object stays, in order.
    rest = [o for k, o in enumerate(scene) if k not in relevant]
    cf_rest = [o for k, o in enumerate(cf) if k not in cf_relevant]
    if rest != cf_rest:
        return ["fact: an object other than the queried ones changed"]
    kept, cf_kept = [scene[k] for k in relevant], [cf[k] for k in cf_relevant]
    shorter, longer = sorted((kept, cf_kept), key=len)
    if longer[:len(shorter)] != shorter or len(shorter) == len(longer):
        return ["fact: the queried objects are not a strict subset one of the other"]
    target = meta["target"]
    if any(o["colour"] != target["colour"] or o["shape"] != target["shape"] for o in longer):
        return ["fact: a queried object does not match the question's target"]
    if any(o["colour"] == target["colour"] and o["shape"] == target["shape"] for o in rest):
        return ["fact: an object outside the queried ones matches the target"]
    return []


def verify_item(item: GoldenItem) -> list[str]:
    """Everything the golden item promises, checked from its pictures and scene descriptions; [] when it holds."""
    meta = item.meta
    problems: list[str] = []
    try:
        image, cf, mask = decode(item.image), decode(item.counterfactual), decode(item.mask, "L")
    except Exception as exc:  # noqa: BLE001 - any undecodable picture is a problem to report
        return [f"decode: {exc.__class__.__name__}"]
    if image.shape != cf.shape or mask.shape != image.shape[:2]:
        return ["size: the image, counterfactual and mask differ in size"]
    if not np.array_equal(image, np.asarray(render(meta["scene"]))):
        problems.append("render: the image does not re-render from its scene")
    if not np.array_equal(cf, np.asarray(render(meta["counterfactual_scene"]))):
        problems.append("render: the counterfactual does not re-render from its scene")
    read, cf_read = read_answer(meta, image), read_answer(meta, cf)
    if read != item.answer:
        problems.append(f"answer: the image reads {read!r}, recorded {item.answer!r}")
    if cf_read != item.counterfactual_answer:
        problems.append(f"answer: the counterfactual reads {cf_read!r}, recorded {item.counterfactual_answer!r}")
    if item.answer == item.counterfactual_answer:
        problems.append("answer: the counterfactual's answer equals the original's")
    if len(set(item.options)) != len(item.options):
        problems.append("options: repeated option")
    problems += _fact_problems(meta)
    scene, cf_scene = meta["scene"]["objects"], meta["counterfactual_scene"]["objects"]
    changed = [o for o in scene if o not in cf_scene] + [o for o in cf_scene if o not in scene]
    differs = (image != cf).any(axis=2)
    if not differs.any():
        problems.append("pixels: the counterfactual is the same picture")
    elif (differs & ~footprint(changed, meta["scene"]["size"])).any():
        problems.append("pixels: the pictures differ outside the changed objects")
    expected_mask = relevant_mask(meta)
    if not expected_mask.any() or not np.array_equal(mask > 127, expected_mask):
        problems.append("mask: not the answer-relevant objects")
    return problems


def item_row(item: GoldenItem) -> dict[str, Any]:
    """The item as a dataset row (images as PNG bytes)."""
    return {"id": item.id, "qtype": item.qtype, "index": item.index, "seed": item.seed, "question": item.question,
            "options": list(item.options), "answer_index": item.answer_index, "answer": item.answer,
            "image": {"bytes": item.image, "path": None}, "counterfactual": {"bytes": item.counterfactual, "path": None},
            "counterfactual_answer_index": item.counterfactual_answer_index,
            "counterfactual_answer": item.counterfactual_answer, "mask": {"bytes": item.mask, "path": None},
            "meta": json.dumps(item.meta, sort_keys=True, separators=(",", ":")), "generator_version": GENERATOR_VERSION}


def item_from_row(row: dict[str, Any]) -> GoldenItem:
    """A dataset row back as an item (for the audit and the reliance runner)."""
    def data(value: Any) -> bytes:
        return bytes(value["bytes"]) if isinstance(value, dict) else bytes(value)

    return GoldenItem(id=row["id"], qtype=row["qtype"], index=row["index"], seed=row["seed"], question=row["question"],
                      options=list(row["options"]), answer_index=row["answer_index"],
                      counterfactual_answer_index=row["counterfactual_answer_index"], image=data(row["image"]),
                      counterfactual=data(row["counterfactual"]), mask=data(row["mask"]), meta=json.loads(row["meta"]))
