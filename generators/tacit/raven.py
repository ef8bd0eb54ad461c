"""Raven's progressive matrices (domain: pattern), RAVEN / I-RAVEN style.

A 3x3 matrix of panels; the last one is missing. Every panel holds objects in the slots of
one layout (easy: a single centred object, medium: a 2x2 grid, hard: a 3x3 grid). All
objects of a panel share shape type, size, grey and rotation; which slots are filled is the
panel's position set (its size is the count). Each attribute follows one row-wise rule:
constant, progression (+-1, +-2; cyclic shifts for positions and rotation), arithmetic
(size and grey: third = first +- second; positions: union / difference) or
distribute-three (three values, cycled through the rows). Rotation is only varied when the
whole matrix uses one shape that looks different after each quarter turn (triangle or
pentagon). Difficulty grows with the layout and the number of non-constant attributes.

The rules run along the rows, left to right (the third panel from the first two): a small
arrowhead in the gap between neighbouring panels of a row shows the reading direction, and
there is none between rows.

Uniqueness: for every attribute, every rule of the rule space (all kinds and parameters) is
tried on the first two rows; an instance is kept only when exactly one rule fits, so the
rows determine the rule and the rule determines the answer.

Distractors: all four of a puzzle differ from the answer along one axis, each failing exactly
the check it names: the whole panel in another colour (wrong_colour) or another shape type
(wrong_type), or objects moved to empty slots (wrong_position). The aspects a solver checks are
the objects' attributes slot by slot (``_stand_in``); ``aspects_in_play`` counts how many of them
rule out all four. Only moves compose into distractors that still fail one check: two
whole-panel edits of different attributes fail two checks, and a single object recoloured or
reshaped would leave the answer the only panel whose objects agree. Moves are used wherever a
set over the slots needs two checked slots: on a 3x3 lattice always, as a code of three composed
moves (``_option_set.choose_set``, never falling back to a star, whose one moved slot rules out
every distractor) or, where three moves do not compose, five of the six fillings of a block of
four slots (``_block_set``); a 3x3 answer with fewer than two objects or empty slots is turned
down. On a 2x2 lattice an answer of two objects is always edited along the slots (any four of
its five other fillings need two checks). Two slots from every member's side is the most a set
of five can ask over binary aspects without marking the solution (see ``_option_set._codes``).
Otherwise (a single slot, or a 2x2 answer of one or three objects, whose three other fillings are
too few) the shared star chooser builds the set around a centre that is the answer only one time
in five, otherwise a distractor with the answer one edit back; every edit's reverse is an edit
of the same kind (another colour, another type), so the answer looks like any other option
around the centre, and one attribute rules the set out. Along colour and type every value
appears in every set, so the axis is chosen to make each answer value equally likely there; a
puzzle with no axis left is turned down. Checks that no axis yields, and why:
wrong_size and wrong_rotation (a whole panel has only three other sizes or turns, too few for
four distractors, and resizing or turning single objects would leave the answer the only panel
whose objects agree, a tell without solving the matrix); wrong_count (the panels that fail only
the count hold every object of the answer or only objects of it, so the answer would be the one
option all the others are built on).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from itertools import combinations
from typing import Any

import numpy as np

from vrforge.generators.tacit import _option_set
from vrforge.imagemetrics import luminance, ssim
from vrforge.params import ParamError, check_params, param
from vrforge.registry import StrictMode, TaskSpec, register_task
from vrforge.render import rasterise_cached
from vrforge.svgdraw import fmt, new_drawing, to_string
from vrforge.types import Puzzle, RejectedPuzzle
from vrforge.verifiers import raven as rv

# 1.3.0: arrowheads between the panels of each row show that the rules run along the rows.
# 1.5.0: sets over the slots wherever they need two slots checked (every 3x3 set; 2x2 answers of two objects).
# 1.7.0: a 2x2 puzzle whose answer does not hold two objects is drawn again, so every 2x2 set runs over the slots.
VERSION = "1.7.0"
WIDTH = 400
MARGIN = 10
GAP = 10
PANEL = 120
PAD = 6
ARROW_W, ARROW_H = 5.0, 8.0  # the row arrowheads in the gaps between panels
PALETTE_BASE = {"background": "#ffffff", "frame": "#555555", "missing": "#aaaaaa"}
NON_CONSTANT = ("progression", "arithmetic", "distribute_three")
ROTATING_TYPES = (0, 2)  # triangle, pentagon: four distinct quarter turns
ROW_TRIES = 60
# verify --strict: SSIM of the answer panel against the reference drawing (the paper's threshold)
STRICT_SSIM = 0.997


@dataclass(frozen=True)
class RavenConfig:
    grid: int = param(doc="slots per side of each panel: 1 one centred object, 2 a 2x2 grid, 3 a 3x3 grid", choices=(1, 2, 3))
    min_rules: int = param(doc="fewest attributes that change along the rows (the others are constant)", low=1, high=4)
    max_rules: int = param(doc="most attributes that change along the rows", low=1, high=4)

    def validate(self) -> None:
        check_params(self)
        # Type and rotation never change together, and a single slot leaves the positions fixed.
        attributes = 4 if self.grid == 1 else 5
        if self.max_rules > attributes - 1:
            raise ParamError(f"max_rules must be at most {attributes - 1} for grid {self.grid}, got {self.max_rules}")
        if self.min_rules > self.max_rules:
            raise ParamError(f"min_rules ({self.min_rules}) must not exceed max_rules ({self.max_rules})")


DIFFICULTIES = {
    "easy": RavenConfig(grid=1, min_rules=1, max_rules=2),
    "medium": RavenConfig(grid=2, min_rules=2, max_rules=3),
    "hard": RavenConfig(grid=3, min_rules=3, max_rules=4),
    # Beyond the reference's hard (3 rules) and at its expert (4): every attribute that can change does.
    "expert": RavenConfig(grid=3, min_rules=4, max_rules=4),
}


def legibility(config: RavenConfig) -> dict[str, float]:
    """The smallest features a solver must tell apart, as shares of the picture's width."""
    layout = _layout(config.grid)
    half = layout["slot_half"]
    steps = np.diff(rv.SIZES)
    return {
        "slot": 2 * half / WIDTH,
        "smallest_object": 2 * rv.SIZES[0] * half / WIDTH,  # the smallest size's circumscribed circle
        "size_step": 2 * float(steps.min()) * half / WIDTH,  # two neighbouring sizes' diameters differ by this
        "row_arrow": ARROW_H / WIDTH,
    }


LEGIBILITY_FLOORS = {
    "slot": 12.0,  # under 12 px a slot cannot hold an object whose shape reads
    "smallest_object": 8.0,  # under 8 px across a triangle, a pentagon and a hexagon are one blob
    "size_step": 3.0,  # sizes closer than 3 px in diameter look alike once anti-aliased
    "row_arrow": 5.0,  # an arrowhead under 5 px tall is a dot: the reading direction is lost
}

CONVENTIONS = {
    "every attribute follows one rule along each row, read left to right (the third panel from the first two)":
        "an arrowhead in the gap between neighbouring panels of each row, none between rows",
    "the answer is the missing bottom-right panel": "its dashed, empty frame",
    "all objects of a panel share shape type, size, grey and rotation": "every panel shown",
    "objects sit in the slots of one square lattice (1x1, 2x2 or 3x3), the filled slots being the panel's positions":
        "the eight panels shown, whose objects sit on that lattice",
}


# ---------------------------------------------------------------- rows


def _random_set(rng: np.random.Generator, slots: int, low: int, high: int) -> frozenset[int]:
    k = int(rng.integers(low, high + 1))
    return frozenset(int(s) for s in rng.choice(slots, size=k, replace=False))


def _scalar_rows(attribute: str, kind: str, param: int, rng: np.random.Generator) -> list[list[int]]:
    n = rv.RANGES[attribute]
    if kind == "distribute_three":
        triple = [int(v) for v in rng.choice(n, size=3, replace=False)]
        return [triple[(param * r) % 3:] + triple[:(param * r) % 3] for r in range(3)]
    rows = []
    for _ in range(3):
        if kind == "constant":
            a = int(rng.integers(n))
            rows.append([a, a, a])
        elif kind == "progression":
            if attribute in rv.CYCLIC:
                a = int(rng.integers(n))
                rows.append([a, (a + param) % n, (a + 2 * param) % n])
            else:
                starts = [a for a in range(n) if 0 <= a + 2 * param < n]
                a = starts[int(rng.integers(len(starts)))]
                rows.append([a, a + param, a + 2 * param])
        else:  # arithmetic
            b = int(rng.integers(1, n))
            a = int(rng.integers(0, n - b)) if param == 1 else int(rng.integers(b, n))
            rows.append([a, b, a + b if param == 1 else a - b])
    return rows


def _position_rows(kind: str, param: int, slots: int, rng: np.random.Generator) -> list[list[frozenset[int]]]:
    if kind == "distribute_three":
        triple: list[frozenset[int]] = []
        while len(triple) < 3:
            s = _random_set(rng, slots, 1, slots - 1)
            if s not in triple:
                triple.append(s)
        return [triple[(param * r) % 3:] + triple[:(param * r) % 3] for r in range(3)]
    rows = []
    for _ in range(3):
        if kind == "constant":
            s = _random_set(rng, slots, 1, slots)
            rows.append([s, s, s])
        elif kind == "progression":
            s = _random_set(rng, slots, 1, slots - 1)
            rows.append([s, rv._shift(s, param, "positions", slots), rv._shift(s, 2 * param, "positions", slots)])
        elif param == 1:
            a, b = _random_set(rng, slots, 1, slots - 1), _random_set(rng, slots, 1, slots - 1)
            rows.append([a, b, a | b])
        else:
            a = _random_set(rng, slots, 2, slots)
            members = sorted(a)
            b = frozenset(int(x) for x in rng.choice(members, size=int(rng.integers(1, len(members))), replace=False))
            rows.append([a, b, a - b])
    return rows


def _attribute_rows(attribute: str, kind: str, param: int, slots: int, rng: np.random.Generator) -> list[list]:
    """Three rows following the rule and determining it (only it fits the first two rows)."""
    for _ in range(ROW_TRIES):
        rows = _position_rows(kind, param, slots, rng) if attribute == "positions" else _scalar_rows(attribute, kind, param, rng)
        if not all(rv._valid(v, attribute, slots) for row in rows for v in row):
            continue
        if rv.consistent_rules(attribute, rows[:2], slots) != [(kind, param)]:
            continue
        if rv.complete_row(attribute, kind, param, rows[2][0], rows[2][1], rows[0], 2, slots) != rows[2][2]:
            continue
        return rows
    raise RejectedPuzzle(f"no unambiguous rows for {attribute} {kind} {param}")


def _choose_rules(config: RavenConfig, rng: np.random.Generator) -> dict[str, tuple[str, int]]:
    pool = ["type", "size", "colour", "rotation"] + (["positions"] if config.grid > 1 else [])
    slots = config.grid * config.grid
    k = int(rng.integers(config.min_rules, config.max_rules + 1))
    while True:
        active = [pool[i] for i in rng.permutation(len(pool))[:k]]
        if not ("type" in active and "rotation" in active):
            break
    rules = {}
    for attribute in rv.ATTRIBUTES:
        if attribute in active:
            kinds = [kind for kind in NON_CONSTANT if rv.rule_params(attribute, kind, slots)]
            kind = kinds[int(rng.integers(len(kinds)))]
            params = rv.rule_params(attribute, kind, slots)
            rules[attribute] = (kind, params[int(rng.integers(len(params)))])
        else:
            rules[attribute] = ("constant", 0)
    return rules


# ---------------------------------------------------------------- generation


def _layout(grid: int) -> dict:
    cell = (PANEL - 2 * PAD) / grid
    origins = [[MARGIN + c * (PANEL + GAP), MARGIN + r * (PANEL + GAP)] for r in range(3) for c in range(3)]
    slots = [[PAD + (c + 0.5) * cell, PAD + (r + 0.5) * cell] for r in range(grid) for c in range(grid)]
    return {"width": WIDTH, "height": WIDTH, "panel": PANEL, "origins": origins, "answer_panel": 8, "grid": grid,
            "slots": slots, "slot_half": cell / 2}


def generate(config: RavenConfig, rng: np.random.Generator) -> Puzzle:
    slots = config.grid * config.grid
    rules = _choose_rules(config, rng)
    values: dict[str, list[list]] = {}
    for attribute in rv.ATTRIBUTES:
        kind, param = rules[attribute]
        if attribute == "positions" and config.grid == 1:
            values[attribute] = [[frozenset({0})] * 3 for _ in range(3)]
        elif attribute == "rotation" and kind == "constant":
            values[attribute] = [[0, 0, 0] for _ in range(3)]
        elif attribute == "type" and rules["rotation"][0] != "constant":
            t = ROTATING_TYPES[int(rng.integers(len(ROTATING_TYPES)))]
            values[attribute] = [[t, t, t] for _ in range(3)]
        else:
            values[attribute] = _attribute_rows(attribute, kind, param, slots, rng)
    panels = []
    for index in range(9):
        r, c = divmod(index, 3)
        panel = {a: values[a][r][c] for a in rv.ATTRIBUTES}
        panel["positions"] = sorted(int(s) for s in panel["positions"])
        panels.append({a: (panel[a] if a == "positions" else int(panel[a])) for a in rv.ATTRIBUTES})
    answer = panels[8]
    meta = {
        "task": "raven",
        "layout": _layout(config.grid),
        "palette": {**PALETTE_BASE, "fills": list(rv.FILLS)},
        "types": list(rv.TYPES),
        "sizes": list(rv.SIZES),
        "rotation_step": 90,
        "panels": panels[:8],
        "rules": [{"attribute": a, "kind": rules[a][0], "param": rules[a][1]} for a in rv.ATTRIBUTES],
        "strict_ssim": STRICT_SSIM,
    }
    if rv.predict(meta) != answer:
        raise RejectedPuzzle("rules do not reproduce the answer")
    distractors = _distractors(meta, answer, rng)
    stats = {
        "rules": float(sum(kind != "constant" for kind, _ in rules.values())),
        "objects": float(len(answer["positions"])),
        "slots": float(slots),
        # the attributes of the objects (one per slot) a solver must check to rule out every distractor
        "aspects_in_play": _option_set.set_aspects(answer, distractors,
                                                   _option_set.aspects_of(lambda panel: _stand_in(panel, slots))),
    }
    return Puzzle(
        meta=meta,
        solution=answer,
        distractors=tuple(panel for _, panel in distractors),
        violations=tuple(name for name, _ in distractors),
        answer_index=int(rng.integers(5)),
        stats=stats,
    )


# ---------------------------------------------------------------- distractors

# How often each value is the answer's, by grid (measured over 20,000 generated puzzles per
# grid, before any is turned down for its distractors, among those whose sets may run along the
# attribute: it changes along the rows, and for the type the rotation is constant). Along the colour and type axes every
# value appears in every option set, so the solution's value must be equally likely there: the
# axis is taken with probability inversely proportional to the answer value's frequency
# (AXIS_SHARE at the rarest value). Only the sets of grid 1 run along these axes.
ANSWER_FREQUENCIES: dict[int, dict[str, tuple[float, ...]]] = {
    1: {"colour": (0.268, 0.155, 0.163, 0.144, 0.27), "type": (0.26, 0.143, 0.182, 0.152, 0.263)},
}
AXIS_SHARE = 0.5  # the two whole-panel axes together never take more than the whole
MIN_VARIANTS = 4  # a set of four distractors
AXES = ("colour", "type", "positions")  # what the distractors of one puzzle all change
COMPOSING_GRIDS = (3,)  # lattices whose sets are built over the slots from three composed moves


def _two_slot_checks(grid: int, answer: Mapping[str, Any]) -> bool:
    """Whether a set over the slots needs two checked slots: on a 3x3 lattice from three
    composed moves, or a block of four slots where they do not compose (``_block_set``); on a
    2x2 one when the answer holds two objects, whose four moves (or a move's own four) leave no
    slot in which every distractor differs from the answer."""
    return grid in COMPOSING_GRIDS or (grid == 2 and len(answer["positions"]) == 2)


def _stand_in(panel: Mapping[str, Any], slots: int) -> np.ndarray:
    """Per slot: present, type, size, rotation (canonical) and colour; equal exactly when the drawings are."""
    vector = np.zeros((slots, 5))
    for slot, t, size, rotation, colour in rv.panel_objects(panel):
        vector[slot] = (1, t, size, rotation, colour)
    return vector.ravel()


def _edits(panel: Mapping[str, Any], axis: str, slots: int) -> list[dict]:
    """Every panel one edit along ``axis`` from ``panel``: the whole panel in another colour or
    type; one object moved to an empty slot."""
    if axis in ("colour", "type"):
        return [{**panel, axis: v} for v in range(rv.RANGES[axis]) if v != panel[axis]]
    occupied = list(panel["positions"])
    empty = [s for s in range(slots) if s not in occupied]
    return [{**panel, "positions": sorted([p for p in occupied if p != a] + [b])} for a in occupied for b in empty]


def _variants(meta: Mapping[str, Any], axis: str) -> Callable[[dict], list[tuple[str, dict]]]:
    """The near misses of any answer panel along ``axis``, each failing exactly the check it names."""
    slots = len(meta["layout"]["slots"])

    def variants(panel: dict) -> list[tuple[str, dict]]:
        found = []
        for edited in _edits(panel, axis, slots):
            failed = [name for name, ok in rv.judge(meta, rv.panel_objects(edited)).items() if not ok]
            if len(failed) == 1:
                found.append((failed[0], edited))
        return found

    return variants


def _combined(meta: Mapping[str, Any], solution: dict, panel: dict, edited: dict) -> tuple[str, dict] | None:
    """``panel`` with the move that made ``edited`` from ``solution``, and the one check it fails."""
    before, after = set(solution["positions"]), set(edited["positions"])
    positions = (set(panel["positions"]) - (before - after)) | (after - before)
    if len(positions) != len(panel["positions"]):
        return None
    joined = {**panel, "positions": sorted(positions)}
    failed = [name for name, ok in rv.judge(meta, rv.panel_objects(joined)).items() if not ok]
    return (failed[0], joined) if len(failed) == 1 and joined != panel else None


def _choose_axis(meta: Mapping[str, Any], answer: dict, rng: np.random.Generator) -> str:
    """The slots wherever a set over them needs two checks (``_two_slot_checks``). Otherwise colour
    or type with probability AXIS_SHARE * (rarest value's frequency / answer value's), each only
    where it changes along the rows (a constant one is read off the other panels), the type only
    where the rotation is constant (the answer of a turning rule is a triangle or a pentagon, and
    a set of five types drawn turned showed it: 0.5 for a probe on those sets); else the puzzle
    is turned down (rejecting instead of falling back keeps each answer value equally likely). A 2x2 answer
    of one, three or four objects is turned down too: its whole-panel sets need one check, and
    its moves are too few to compose (every option holds the same number of objects, so which
    numbers are drawn says nothing of which option is the solution)."""
    grid = meta["layout"]["grid"]
    if _two_slot_checks(grid, answer):
        return "positions"
    if grid == 2:
        raise RejectedPuzzle("a 2x2 answer without two objects")
    frequencies = ANSWER_FREQUENCIES[grid]
    changing = {rule["attribute"] for rule in meta["rules"] if rule["kind"] != "constant"}
    draw = rng.random()
    for axis in ("colour", "type"):
        if axis not in changing or (axis == "type" and "rotation" in changing):
            continue
        share = AXIS_SHARE * min(frequencies[axis]) / frequencies[axis][answer[axis]]
        if draw < share:
            return axis
        draw -= share
    raise RejectedPuzzle("no axis for the distractors")


def _block_set(meta: Mapping[str, Any], answer: dict, rng: np.random.Generator) -> list[tuple[str, dict]]:
    """Four panels that keep every object of the answer but two, which are placed in two others of
    a block of four slots (two of the answer's objects, two empty slots, drawn at random): five of
    the six ways to fill the block with two objects, the one left out drawn at random among the
    distractors. Each fails only the positions; no slot shows every distractor differing from the
    answer, so two slots must be checked; and the answer, like every option, is the block's
    complement of the one left out one time in five, so the set does not mark it."""
    occupied, slots = list(answer["positions"]), len(meta["layout"]["slots"])
    empty = [s for s in range(slots) if s not in occupied]
    if len(occupied) < 2 or len(empty) < 2:
        raise ValueError("no block of two objects and two empty slots")
    pair = [int(s) for s in rng.choice(occupied, size=2, replace=False)]
    block = pair + [int(s) for s in rng.choice(empty, size=2, replace=False)]
    kept = [s for s in occupied if s not in pair]
    fillings = [set(f) for f in combinations(block, 2) if set(f) != set(pair)]
    left_out = int(rng.integers(len(fillings)))
    chosen = []
    for filling in (f for i, f in enumerate(fillings) if i != left_out):
        panel = {**answer, "positions": sorted([*kept, *filling])}
        failed = [name for name, ok in rv.judge(meta, rv.panel_objects(panel)).items() if not ok]
        if len(failed) != 1:
            raise ValueError(f"a block panel fails {failed}")
        chosen.append((failed[0], panel))
    return [chosen[i] for i in rng.permutation(len(chosen)).tolist()]


def _distractors(meta: dict, answer: dict, rng: np.random.Generator) -> list[tuple[str, dict]]:
    slots = len(meta["layout"]["slots"])
    axis = _choose_axis(meta, answer, rng)
    composing = meta["layout"]["grid"] in COMPOSING_GRIDS
    try:
        return _option_set.choose_set(answer, _variants(meta, axis), lambda panel: _stand_in(panel, slots), rng,
                                      combine=partial(_combined, meta) if axis == "positions" else None,
                                      fallback=not composing)
    except ValueError as exc:
        if not composing:
            raise RejectedPuzzle(f"distractors: {exc}") from None
    # No three moves compose (fewer than three objects or empty slots): a block of four slots.
    try:
        return _block_set(meta, answer, rng)
    except ValueError as exc:
        raise RejectedPuzzle(f"distractors: {exc}") from None


# ---------------------------------------------------------------- drawing


def shape_path(type_name: str, cx: float, cy: float, radius: float, rotation: int) -> str:
    if type_name == "circle":
        return (f"M{fmt(cx - radius)} {fmt(cy)}a{fmt(radius)} {fmt(radius)} 0 1 0 {fmt(2 * radius)} 0"
                f"a{fmt(radius)} {fmt(radius)} 0 1 0 {fmt(-2 * radius)} 0Z")
    vertices = rv.polygon(type_name, radius, rotation) + np.array([cx, cy])
    head, *rest = vertices
    return f"M{fmt(head[0])} {fmt(head[1])}" + "".join(f"L{fmt(x)} {fmt(y)}" for x, y in rest) + "Z"


def draw(meta: Mapping[str, Any], answer: Mapping[str, Any] | None) -> str:
    """The matrix SVG; ``answer`` (a panel) fills the last panel, None leaves it as a dashed frame."""
    layout, palette = meta["layout"], meta["palette"]
    width, height, size = layout["width"], layout["height"], layout["panel"]
    drawing = new_drawing(width, height, palette["background"])
    panels = list(meta["panels"]) + [answer]
    half = layout["slot_half"]
    for (ox, oy), panel in zip(layout["origins"], panels):
        missing = panel is None
        drawing.add(drawing.rect(
            insert=(fmt(ox), fmt(oy)), size=(fmt(size), fmt(size)), fill=palette["background"],
            stroke=palette["missing"] if missing else palette["frame"], stroke_width=fmt(1.5),
            **({"stroke_dasharray": "6,4"} if missing else {}),
        ))
        if missing or not panel["positions"]:
            continue
        name = rv.TYPES[panel["type"]]
        radius = rv.SIZES[panel["size"]] * half
        d = "".join(shape_path(name, ox + layout["slots"][s][0], oy + layout["slots"][s][1], radius, panel["rotation"])
                    for s in panel["positions"])
        drawing.add(drawing.path(d=d, fill=palette["fills"][panel["colour"]]))
    drawing.add(drawing.path(d=_row_arrows(layout), fill=palette["frame"]))
    return to_string(drawing)


def _row_arrows(layout: Mapping[str, Any]) -> str:
    """Arrowheads pointing right in the gaps between the panels of each row (the rules' direction)."""
    size, origins = layout["panel"], layout["origins"]
    heads = []
    for r in range(3):
        for c in range(2):
            left, right = origins[3 * r + c], origins[3 * r + c + 1]
            x, y = (left[0] + size + right[0]) / 2, left[1] + size / 2
            heads.append(f"M{fmt(x - ARROW_W / 2)} {fmt(y - ARROW_H / 2)}L{fmt(x + ARROW_W / 2)} {fmt(y)}"
                         f"L{fmt(x - ARROW_W / 2)} {fmt(y + ARROW_H / 2)}Z")
    return "".join(heads)


# ---------------------------------------------------------------- strict mode


def answer_ssim(meta: Mapping[str, Any], image: np.ndarray) -> float:
    """SSIM of the answer panel of ``image`` against the rule-implied answer drawn at the image's size."""
    layout = meta["layout"]
    height, width = image.shape[:2]
    sx, sy = width / layout["width"], height / layout["height"]
    ox, oy = layout["origins"][layout["answer_panel"]]
    size = layout["panel"]
    x0, y0 = max(0, math.floor(ox * sx)), max(0, math.floor(oy * sy))
    x1, y1 = min(width, math.ceil((ox + size) * sx)), min(height, math.ceil((oy + size) * sy))
    # The whole reference picture at the image's width, cropped like the image: a faithful
    # answer then matches it pixel for pixel (a window drawn on its own lands on other pixels).
    reference = np.asarray(rasterise_cached(draw(meta, rv.predict(meta)), width))[y0:y1, x0:x1]
    crop = image[y0:y1, x0:x1]
    h, w = min(crop.shape[0], reference.shape[0]), min(crop.shape[1], reference.shape[1])
    # Wang et al.'s reference implementation first averages f x f blocks, f = round(side / 256):
    # the score then means the same at every resolution (and costs a quarter at 2048 px).
    f = max(1, round(min(h, w) / 256))
    h, w = h // f * f, w // f * f

    def prepared(rgb: np.ndarray) -> np.ndarray:
        grey = luminance(rgb[:h, :w])
        return grey.reshape(h // f, f, w // f, f).mean(axis=(1, 3))

    return ssim(prepared(crop), prepared(reference))


register_task(
    TaskSpec(
        name="raven",
        domain="pattern",
        version=VERSION,
        checks=rv.CHECKS,
        difficulties=DIFFICULTIES,
        generate=generate,
        draw=draw,
        verify=rv.verify,
        description="Raven's progressive matrices: draw the missing bottom-right panel that completes every row rule.",
        instruction=("Complete the matrix: draw the missing bottom-right panel so that "
                     "every row follows its rules. Keep the other panels unchanged."),
        answer_hint="the matrix with its missing bottom-right panel drawn in",
        difficulty_stat="rules",  # the attributes that change: expert has hard's 3 x 3 slots and more rules
        strict=StrictMode(answer_ssim, STRICT_SSIM),
        legibility=legibility,
        legibility_floors=LEGIBILITY_FLOORS,
        conventions=CONVENTIONS,
    )
)
