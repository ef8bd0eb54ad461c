"""Records of the three CF-World diagnostic probes: dataclasses and ``datasets.Features``.

- ``RuleProbe``: one rule-decoupling prompt (a symbolic scene under its real law or a
  counterfactual perturbation of it) with the direction the answer arrow must point.
- ``AttributeProbe``: one member of an attribute pair (a rare attribute on an object, or the
  common attribute it replaces), grouped by ``pair_id``.
- ``EntityProbe``: one member of an entity co-occurrence pair (an entity in an unusual context,
  or in the context where it belongs), grouped by ``pair_id``.
- ``DenominalizedProbe``: a scenario's L2 prompt with the outcome's nouns and attributes
  replaced by visual descriptions, the counterfactual premise unchanged.

One row per prompt in every probe, so each config is a flat list of prompts to render.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import datasets

RULE_VARIANTS = ("factual", "counterfactual")
ATTRIBUTE_VARIANTS = ("rare", "common")
ENTITY_VARIANTS = ("unusual", "factual")
ATTRIBUTE_KINDS = ("colour", "shape", "material", "texture", "size", "pattern", "state")
DENOMINALIZATION_MODES = ("lexicon", "llm")
REPLACEMENT_KINDS = ("noun", "attribute")


def _string_fields_empty(record: Any, optional: tuple[str, ...] = ()) -> list[str]:
    return [f"{f.name} is empty" for f in fields(record)
            if f.type == "str" and f.name not in optional and not getattr(record, f.name).strip()]


@dataclass(frozen=True)
class RuleProbe:
    id: str
    rule_id: str
    rule_index: int
    domain: str
    law: str  # the factual law
    variant: str  # factual / counterfactual
    perturbation: str  # none / reverse / rotate_<cw or ccw>_<45, 90 or 135>
    layout: str  # where the driving element sits ("" for rules whose outcome ignores positions)
    counterfactual: str  # the counterfactual rule as stated in the prompt ("" when factual)
    prompt: str
    assessment_point: str
    expected_direction: str  # one of the eight screen directions

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def validate(self) -> list[str]:
        problems = _string_fields_empty(self, optional=("layout", "counterfactual"))
        if self.variant not in RULE_VARIANTS:
            problems.append(f"variant {self.variant!r} is not one of {', '.join(RULE_VARIANTS)}")
        if (self.variant == "factual") != (self.perturbation == "none"):
            problems.append("perturbation must be 'none' exactly for factual prompts")
        if (self.variant == "factual") != (not self.counterfactual):
            problems.append("counterfactual must be empty exactly for factual prompts")
        return problems


@dataclass(frozen=True)
class AttributeProbe:
    id: str
    pair_id: str
    variant: str  # rare / common
    object: str
    attribute_kind: str
    attribute: str  # the attribute this prompt asks for
    counterpart: str  # the other member's attribute
    prompt: str
    assessment_point: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def validate(self) -> list[str]:
        problems = _string_fields_empty(self)
        if self.variant not in ATTRIBUTE_VARIANTS:
            problems.append(f"variant {self.variant!r} is not one of {', '.join(ATTRIBUTE_VARIANTS)}")
        if self.attribute_kind not in ATTRIBUTE_KINDS:
            problems.append(f"attribute_kind {self.attribute_kind!r} is not one of {', '.join(ATTRIBUTE_KINDS)}")
        if self.attribute == self.counterpart:
            problems.append("attribute and counterpart are the same")
        return problems


@dataclass(frozen=True)
class EntityProbe:
    id: str
    pair_id: str
    variant: str  # unusual / factual
    entity: str
    action: str
    context: str  # where this prompt puts the entity
    counterpart: str  # the other member's context
    prompt: str
    assessment_point: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def validate(self) -> list[str]:
        problems = _string_fields_empty(self)
        if self.variant not in ENTITY_VARIANTS:
            problems.append(f"variant {self.variant!r} is not one of {', '.join(ENTITY_VARIANTS)}")
        if self.context == self.counterpart:
            problems.append("context and counterpart are the same")
        if self.context not in self.prompt or self.entity not in self.prompt:
            problems.append("the prompt does not name the entity and its context")
        return problems


@dataclass(frozen=True)
class Replacement:
    term: str  # as it appeared in the prompt
    description: str  # what replaced it
    kind: str  # noun / attribute

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class DenominalizedProbe:
    id: str
    scenario_id: str
    domain: str
    subdomain: str
    law: str  # the scenario's law, unchanged
    counterfactual: str  # the scenario's counterfactual, unchanged
    premise: str  # the premise as it stands in the L2 prompt, kept word for word ("" when none was found)
    source_prompt: str  # the scenario's L2 prompt
    prompt: str
    assessment_point: str  # the scenario's L2 assessment point
    replacements: tuple[Replacement, ...]
    mode: str  # lexicon / llm
    model: str = ""  # the LLM that rewrote the prompt ("" in lexicon mode)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["replacements"] = [r.to_dict() for r in self.replacements]
        return data

    def validate(self) -> list[str]:
        problems = _string_fields_empty(self, optional=("law", "counterfactual", "premise", "model", "assessment_point"))
        if self.mode not in DENOMINALIZATION_MODES:
            problems.append(f"mode {self.mode!r} is not one of {', '.join(DENOMINALIZATION_MODES)}")
        if self.premise not in self.prompt:
            problems.append("the counterfactual premise is not kept word for word")
        if not self.replacements or self.prompt == self.source_prompt:
            problems.append("nothing was replaced")
        problems.extend(f"replacement kind {r.kind!r} is unknown" for r in self.replacements if r.kind not in REPLACEMENT_KINDS)
        return problems


def rule_probe_features() -> datasets.Features:
    import datasets

    string = datasets.Value("string")
    return datasets.Features({
        "id": string, "rule_id": string, "rule_index": datasets.Value("int32"), "domain": string, "law": string,
        "variant": string, "perturbation": string, "layout": string, "counterfactual": string, "prompt": string,
        "assessment_point": string, "expected_direction": string,
    })


def attribute_probe_features() -> datasets.Features:
    import datasets

    string = datasets.Value("string")
    return datasets.Features({
        "id": string, "pair_id": string, "variant": string, "object": string, "attribute_kind": string,
        "attribute": string, "counterpart": string, "prompt": string, "assessment_point": string,
    })


def entity_probe_features() -> datasets.Features:
    import datasets

    string = datasets.Value("string")
    return datasets.Features({
        "id": string, "pair_id": string, "variant": string, "entity": string, "action": string, "context": string,
        "counterpart": string, "prompt": string, "assessment_point": string,
    })


def denominalized_probe_features() -> datasets.Features:
    import datasets

    string = datasets.Value("string")
    return datasets.Features({
        "id": string, "scenario_id": string, "domain": string, "subdomain": string, "law": string, "counterfactual": string,
        "premise": string, "source_prompt": string, "prompt": string, "assessment_point": string,
        "replacements": datasets.List({"term": string, "description": string, "kind": string}),
        "mode": string, "model": string,
    })
