"""Rule decoupling: minimal symbolic scenes, each drawn under its real law and under counterfactual ones.

A model that draws the arrow right for the factual scene but keeps drawing it there when the
prompt states another rule follows its prior, not the rule. Each of the 33 rules in
``rules.RULES`` gives six prompts, the same structure as the official CF-World file
(198 = 33 x 6): a fixed-outcome rule (gravity, buoyancy, growth) gives one factual prompt and
five counterfactual ones; a positional rule gives two factual prompts (two layouts of its
driving element, two different answers) and four counterfactual ones.

A counterfactual rule never names its answer: it either reverses the law as a mechanism
("heat flows from a cold body to a hot one"; the scene says where the hot body is) or turns
the real direction by 45, 90 or 135 degrees clockwise or counter-clockwise as seen in the
picture, so the model has to find the real direction first. ``named_directions`` finds screen
directions in a text; no counterfactual statement contains one.

Every answer is computed, not written: directions are the eight screen directions, a layout
places the driving element, the law maps it to the factual direction (``away`` / ``toward`` /
fixed), and each perturbation maps the factual direction to a new one. A rule's ``motion``
removes impossible answers: a ball on a ramp cannot move into the ramp, and water in a pipe
(a ``channel``) only runs one way or the other, so a channel rule is reversed in further
layouts instead of turned. Perturbations are taken in a fixed cyclic order that shifts with
the rule and the prompt slot, skipping any already used with that layout or whose answer
repeats one already in that rule, so the six expected directions of a rule are pairwise
different. No randomness.
"""

from __future__ import annotations

import re

from vrforge.generators.cfworld.probes.rules import RULES, Rule
from vrforge.schemas.cfworld_probes import RuleProbe

# Counter-clockwise from "right": index arithmetic is rotation (a step is 45 degrees).
DIRECTIONS = ("right", "up-right", "up", "up-left", "left", "down-left", "down", "down-right")
POSITION_ADJECTIVE = {
    "right": "right", "up-right": "top-right", "up": "top", "up-left": "top-left",
    "left": "left", "down-left": "bottom-left", "down": "bottom", "down-right": "bottom-right",
}
AT_POSITION = {
    "right": "on the right", "up-right": "in the top-right corner", "up": "at the top", "up-left": "in the top-left corner",
    "left": "on the left", "down-left": "in the bottom-left corner", "down": "at the bottom",
    "down-right": "in the bottom-right corner",
}
FROM_POSITION = {
    "right": "from the right", "up-right": "from the top-right", "up": "from above", "up-left": "from the top-left",
    "left": "from the left", "down-left": "from the bottom-left", "down": "from below", "down-right": "from the bottom-right",
}
TOWARD = {
    "right": "to the right", "up-right": "towards the top-right corner", "up": "straight up",
    "up-left": "towards the top-left corner", "left": "to the left", "down-left": "towards the bottom-left corner",
    "down": "straight down", "down-right": "towards the bottom-right corner",
}
POINTING = {
    "right": "pointing right", "up-right": "pointing to the top-right", "up": "pointing straight up",
    "up-left": "pointing to the top-left", "left": "pointing left", "down-left": "pointing to the bottom-left",
    "down": "pointing straight down", "down-right": "pointing to the bottom-right",
}
# Perturbation -> eighths of a turn counter-clockwise applied to the factual direction.
STEPS = {"reverse": 4, "rotate_cw_90": -2, "rotate_ccw_90": 2, "rotate_cw_45": -1, "rotate_ccw_45": 1,
         "rotate_cw_135": -3, "rotate_ccw_135": 3}
PERTURBATIONS = ("reverse", "rotate_cw_90", "rotate_ccw_90", "rotate_cw_45", "rotate_ccw_45", "rotate_cw_135", "rotate_ccw_135")
MOTIONS = ("free", "channel", "ramp")
PROMPTS_PER_RULE = 6
BACKGROUND = "On a plain white background, draw"

_VERTICAL = {"up": r"(?:up|upper|top)", "down": r"(?:down|lower|bottom)"}
_SINGLE = {"right": r"right(?:wards?)?", "left": r"left(?:wards?)?", "up": r"(?:up(?:wards?)?|top|above|upper)",
           "down": r"(?:down(?:wards?)?|bottom|below|beneath|lower)"}


def named_directions(text: str) -> set[str]:
    """The screen directions a text names ("top-left", "to the right", "upwards"), as direction names."""
    found: set[str] = set()
    rest = text
    for direction in ("up-right", "up-left", "down-right", "down-left"):
        vertical, horizontal = direction.split("-")
        pattern = re.compile(rf"\b{_VERTICAL[vertical]}[- ]{horizontal}\b", re.IGNORECASE)
        if pattern.search(rest):
            found.add(direction)
            rest = pattern.sub(" ", rest)
    found.update(d for d, word in _SINGLE.items() if re.search(rf"\b{word}\b", rest, re.IGNORECASE))
    return found


def rotate(direction: str, steps: int) -> str:
    """``steps`` eighths of a turn counter-clockwise (negative: clockwise)."""
    return DIRECTIONS[(DIRECTIONS.index(direction) + steps) % len(DIRECTIONS)]


def opposite(direction: str) -> str:
    return rotate(direction, 4)


def factual_direction(rule: Rule, layout: str | None) -> str:
    if rule.outcome in ("away", "toward"):
        assert layout is not None, "an away/toward rule is drawn with a layout"
        return opposite(layout) if rule.outcome == "away" else layout
    return rule.outcome


def perturbed_direction(perturbation: str, factual: str) -> str:
    return rotate(factual, STEPS[perturbation])


def possible(rule: Rule, layout: str | None, direction: str) -> bool:
    """Whether the moving thing can go that way at all in this scene."""
    if rule.motion == "channel":
        return layout is not None and direction in (layout, opposite(layout))
    if rule.motion == "ramp":  # the ramp rises towards a top corner; the solid lies below its surface
        inward = "down-" + ("left" if layout == "up-left" else "right")
        return direction not in (inward, rotate(inward, 1), rotate(inward, -1))
    return True


def counterfactual_statement(rule: Rule, perturbation: str) -> str:
    if perturbation == "reverse":
        return f"Set a counterfactual rule: {rule.reversal}."
    degrees = 45 * abs(STEPS[perturbation])
    sense = "clockwise" if STEPS[perturbation] < 0 else "counter-clockwise"
    return (f"Set a counterfactual rule: {rule.subject} is turned {degrees} degrees {sense}, as seen in the picture, "
            f"from the direction it takes in our world.")


def scene(rule: Rule, layout: str | None) -> str:
    if layout is None:
        return rule.setup
    other = opposite(layout)
    return rule.setup.format(pos=POSITION_ADJECTIVE[layout], at_pos=AT_POSITION[layout], toward_pos=TOWARD[layout],
                             from_pos=FROM_POSITION[layout], opp=POSITION_ADJECTIVE[other], at_opp=AT_POSITION[other],
                             toward_opp=TOWARD[other])


def compose_prompt(rule: Rule, layout: str | None, statement: str) -> str:
    parts = [f"{BACKGROUND} {scene(rule, layout)}."]
    if statement:
        parts.append(statement)
    parts.append(f"Draw {rule.arrow} to show {rule.shows}.")
    return " ".join(parts)


def rule_probes(rule: Rule, index: int) -> list[RuleProbe]:
    """The six prompts of one rule: factual ones first (one per layout), then the counterfactual ones."""
    if rule.motion not in MOTIONS:
        raise ValueError(f"rule {rule.key}: unknown motion {rule.motion!r}")
    if not rule.reversal or named_directions(rule.reversal):
        raise ValueError(f"rule {rule.key}: the reversal must be stated and name no screen direction")
    layouts: tuple[str | None, ...] = rule.layouts or (None,)
    cf_layouts = layouts + rule.extra_layouts
    probes: list[RuleProbe] = []
    used: set[str] = set()

    def add(layout: str | None, perturbation: str, statement: str, direction: str) -> None:
        used.add(direction)
        k = len(probes)
        probes.append(RuleProbe(
            id=f"rule-{index:02d}-{rule.key}-{k}", rule_id=rule.key, rule_index=index, domain=rule.domain, law=rule.law,
            variant="factual" if perturbation == "none" else "counterfactual", perturbation=perturbation,
            layout=layout or "", counterfactual=statement, prompt=compose_prompt(rule, layout, statement),
            assessment_point=f"{rule.marker} {POINTING[direction]}", expected_direction=direction,
        ))

    for layout in layouts:
        add(layout, "none", "", factual_direction(rule, layout))
    taken: set[tuple[str | None, str]] = set()
    slot = 0
    while len(probes) < PROMPTS_PER_RULE:
        layout = cf_layouts[slot % len(cf_layouts)]
        factual = factual_direction(rule, layout)
        for perturbation in _candidates(index, slot):
            direction = perturbed_direction(perturbation, factual)
            if (layout, perturbation) not in taken and direction not in used and possible(rule, layout, direction):
                taken.add((layout, perturbation))
                add(layout, perturbation, counterfactual_statement(rule, perturbation), direction)
                break
        slot += 1
        if slot > 4 * PROMPTS_PER_RULE:  # guards a table edit that leaves too few possible answers
            raise ValueError(f"rule {rule.key}: too few perturbations with a new, possible direction")
    return probes


def _candidates(index: int, slot: int) -> tuple[str, ...]:
    """Reversal first in every other slot, then the rotations in an order that moves with the rule and
    the slot, so every kind is used across the table."""
    rotations = PERTURBATIONS[1:]
    start = (3 * index + slot) % len(rotations)
    turned = rotations[start:] + rotations[:start]
    return ("reverse", *turned) if slot % 2 == 0 else (*turned, "reverse")


def generate_rule_probes(rules: tuple[Rule, ...] = RULES) -> list[RuleProbe]:
    """All rule-decoupling prompts in table order (deterministic)."""
    keys = [rule.key for rule in rules]
    if len(set(keys)) != len(keys):
        raise ValueError("rule keys must be unique")
    return [probe for index, rule in enumerate(rules) for probe in rule_probes(rule, index)]
