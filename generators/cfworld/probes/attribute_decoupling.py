"""Attribute decoupling: a rare attribute on an object against the common one, as a minimal pair.

Both prompts of a pair come from one template and differ only in the attribute (and its
article), so a gap between them measures how strongly the model binds the object to its
usual attribute. Every prompt has an assessment point naming the attribute it asks for.
"""

from __future__ import annotations

from vrforge.generators.cfworld.probes.attribute_pairs import ATTRIBUTE_PAIRS
from vrforge.schemas.cfworld_probes import AttributeProbe

VOWEL_SOUNDS = ("a", "e", "i", "o", "u")


def article(word: str) -> str:
    return "an" if word.lower().startswith(VOWEL_SOUNDS) else "a"


def attribute_prompt(obj: str, kind: str, attribute: str, setting: str) -> str:
    if kind == "material":
        return f"A photo of {article(obj)} {obj} made of {attribute} {setting}."
    return f"A photo of {article(attribute)} {attribute} {obj} {setting}."


def attribute_assessment_point(obj: str, kind: str, attribute: str) -> str:
    if kind == "material":
        return f"The {obj} is made of {attribute}"
    return f"The {obj} is {attribute}"


def generate_attribute_probes(pairs: tuple[tuple[str, str, str, str, str], ...] = ATTRIBUTE_PAIRS) -> list[AttributeProbe]:
    """Two prompts per pair, rare first, in table order (deterministic)."""
    seen: set[tuple[str, str]] = set()
    probes: list[AttributeProbe] = []
    for number, (obj, kind, rare, common, setting) in enumerate(pairs):
        if (obj, rare) in seen:
            raise ValueError(f"attribute pair repeated: {rare} {obj}")
        seen.add((obj, rare))
        pair_id = f"attribute-{number:03d}"
        for variant, attribute, counterpart in (("rare", rare, common), ("common", common, rare)):
            probes.append(AttributeProbe(
                id=f"{pair_id}-{variant}", pair_id=pair_id, variant=variant, object=obj, attribute_kind=kind,
                attribute=attribute, counterpart=counterpart, prompt=attribute_prompt(obj, kind, attribute, setting),
                assessment_point=attribute_assessment_point(obj, kind, attribute),
            ))
    return probes
