"""Rule decoupling: minimal symbolic scenes, each drawn under its real law and under counterfactual ones.

A model that draws the arrow right for the factual scene but keeps drawing it there when the
prompt states another rule follows its prior, not the rule. Each of the 33 rules in
``rules.RULES`` gives six prompts, the same structure as the official CF-World file
(198 = 33 x 6): a fixed-outcome rule (gravity, buoyancy, growth) gives one factual prompt and
five counterfactual ones; a positional rule gives two factual prompts (two layouts of its
driving element, two different answers) and four counterfactual ones.

Every answer is computed, not written: directions are the eight screen directions, a layout
places the driving element, the law maps it to the factual direction (``away`` / ``toward`` /
fixed), and each perturbation maps the factual direction to a new one: ``reverse``,
``rotate_cw`` / ``rotate_ccw`` (90 degrees as seen on the canvas) or ``gravity_<direction>``
(the outcome is pulled one fixed way, whatever the scene). Perturbations are taken in a fixed
cyclic order that shifts with the rule and the prompt slot (the diagonal gravities last),
skipping any already used in that rule or whose answer repeats one already in that rule, so
the six expected directions of a rule are pairwise different. No randomness.
"""

from __future__ import annotations

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
CORE_PERTURBATIONS = ("reverse", "gravity_down", "rotate_cw", "gravity_left", "rotate_ccw", "gravity_up", "gravity_right")
DIAGONAL_GRAVITIES = ("gravity_up_right", "gravity_down_left", "gravity_up_left", "gravity_down_right")
PERTURBATIONS = CORE_PERTURBATIONS + DIAGONAL_GRAVITIES
PROMPTS_PER_RULE = 6
BACKGROUND = "On a plain white background, draw"


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


def gravity_target(perturbation: str) -> str:
    return perturbation.removeprefix("gravity_").replace("_", "-")


def perturbed_direction(perturbation: str, factual: str) -> str:
    if perturbation == "reverse":
        return opposite(factual)
    if perturbation == "rotate_cw":
        return rotate(factual, -2)
    if perturbation == "rotate_ccw":
        return rotate(factual, 2)
    return gravity_target(perturbation)


def counterfactual_statement(rule: Rule, perturbation: str) -> str:
    if perturbation == "reverse":
        change = f"the direction of {rule.subject} is reversed, exactly opposite to the one it takes in our world"
    elif perturbation in ("rotate_cw", "rotate_ccw"):
        sense = "clockwise" if perturbation == "rotate_cw" else "counter-clockwise"
        change = f"the direction of {rule.subject} is turned 90 degrees {sense} from the one it takes in our world"
    else:
        pull = TOWARD[gravity_target(perturbation)]
        change = f"{rule.subject} is driven only by a gravity that pulls {pull}, whatever else is in the scene"
    return f"Set a counterfactual rule: {change}."


def scene(rule: Rule, layout: str | None) -> str:
    if layout is None:
        return rule.setup
    other = opposite(layout)
    return rule.setup.format(pos=POSITION_ADJECTIVE[layout], at_pos=AT_POSITION[layout], toward_pos=TOWARD[layout],
                             opp=POSITION_ADJECTIVE[other], at_opp=AT_POSITION[other], toward_opp=TOWARD[other])


def compose_prompt(rule: Rule, layout: str | None, statement: str) -> str:
    parts = [f"{BACKGROUND} {scene(rule, layout)}."]
    if statement:
        parts.append(statement)
    parts.append(f"Draw {rule.arrow} to show {rule.shows}.")
    return " ".join(parts)


def rule_probes(rule: Rule, index: int) -> list[RuleProbe]:
    """The six prompts of one rule: factual ones first (one per layout), then the counterfactual ones."""
    layouts: tuple[str | None, ...] = rule.layouts or (None,)
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
    taken: set[str] = set()
    slot = 0
    while len(probes) < PROMPTS_PER_RULE:
        layout = layouts[slot % len(layouts)]
        factual = factual_direction(rule, layout)
        for perturbation in _candidates(index, slot):
            direction = perturbed_direction(perturbation, factual)
            if perturbation not in taken and direction not in used:
                taken.add(perturbation)
                add(layout, perturbation, counterfactual_statement(rule, perturbation), direction)
                break
        else:  # cannot happen with eight directions and at most six answers; guards a bad table edit
            raise ValueError(f"rule {rule.key}: no perturbation left with a new direction")
        slot += 1
    return probes


def _rotated(items: tuple[str, ...], start: int) -> tuple[str, ...]:
    start %= len(items)
    return items[start:] + items[:start]


def _candidates(index: int, slot: int) -> tuple[str, ...]:
    """The core perturbations (reverse, rotations, the four axis gravities) first, in an order that
    moves with the rule and the slot so every kind gets used; diagonal gravities only as a fallback."""
    return _rotated(CORE_PERTURBATIONS, 3 * index + slot) + _rotated(DIAGONAL_GRAVITIES, index)


def generate_rule_probes(rules: tuple[Rule, ...] = RULES) -> list[RuleProbe]:
    """All rule-decoupling prompts in table order (deterministic)."""
    keys = [rule.key for rule in rules]
    if len(set(keys)) != len(keys):
        raise ValueError("rule keys must be unique")
    return [probe for index, rule in enumerate(rules) for probe in rule_probes(rule, index)]
