"""Entity co-occurrence: an entity in an unusual context against the same entity where it belongs.

The official CF-World attribute probe pairs two entities in one scene (113 unusual + 113
factual prompts); this is that probe, beside the single-object attribute pairs of
``attribute_decoupling``. Both prompts of a pair come from one template and differ only in the
context, so a gap between them measures how strongly a model binds the entity to its usual
surroundings. Every prompt has an assessment point naming the entity, its action and its context.
"""

from __future__ import annotations

from vrforge.generators.cfworld.probes.entity_pairs import ENTITY_PAIRS
from vrforge.schemas.cfworld_probes import EntityProbe

VOWELS = ("a", "e", "i", "o", "u")


def entity_prompt(entity: str, action: str, context: str) -> str:
    article = "An" if entity.lower().startswith(VOWELS) else "A"
    return f"{article} {entity} {action} {context}."


def entity_assessment_point(entity: str, action: str, context: str) -> str:
    return f"The {entity} is {action} {context}"


def generate_entity_probes(pairs: tuple[tuple[str, str, str, str], ...] = ENTITY_PAIRS) -> list[EntityProbe]:
    """Two prompts per pair, unusual first, in table order (deterministic)."""
    seen: set[str] = set()
    probes: list[EntityProbe] = []
    for number, (entity, action, unusual, factual) in enumerate(pairs):
        if entity in seen:
            raise ValueError(f"entity repeated in the co-occurrence table: {entity}")
        if unusual == factual:
            raise ValueError(f"entity {entity}: the unusual and factual contexts are the same")
        seen.add(entity)
        pair_id = f"entity-{number:03d}"
        for variant, context, counterpart in (("unusual", unusual, factual), ("factual", factual, unusual)):
            probes.append(EntityProbe(
                id=f"{pair_id}-{variant}", pair_id=pair_id, variant=variant, entity=entity, action=action, context=context,
                counterpart=counterpart, prompt=entity_prompt(entity, action, context),
                assessment_point=entity_assessment_point(entity, action, context),
            ))
    return probes
