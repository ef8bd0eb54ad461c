"""The CF-World scenario: dataclasses, ``validate()``, ``datasets.Features`` and the JSON Schema.

A scenario holds one counterfactual law in three levels (L1 factual, L2 explicit
counterfactual, L3 implicit counterfactual), each with a prompt and an assessment point,
plus the judge questions. Metrics (see DESIGN.md): S = weighted mean of the question scores
of a level, so the weights travel with each question.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import jsonschema

if TYPE_CHECKING:
    import datasets

DOMAINS = ("physics", "biology", "chemistry", "geography", "sociology")
LEVELS = ("l1", "l2", "l3")
DIMENSIONS = ("visual_integrity", "assessment_point", "logic_consistency")
PROVENANCE_KINDS = ("manual", "llm", "imported")
REVIEW_STATUSES = ("unreviewed", "imported", "needs_review", "approved", "rejected")


@dataclass(frozen=True)
class Level:
    prompt: str
    assessment_point: str

    def to_dict(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "assessment_point": self.assessment_point}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Level:
        return cls(prompt=data["prompt"], assessment_point=data["assessment_point"])


@dataclass(frozen=True)
class Question:
    level: str
    dimension: str
    question: str
    criteria: str
    weight: float
    source_id: str = ""  # the question's id in its source file ("" for generated ones)
    generator_model: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level, "dimension": self.dimension, "question": self.question, "criteria": self.criteria,
            "weight": float(self.weight), "source_id": self.source_id, "generator_model": self.generator_model,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Question:
        return cls(
            level=data["level"], dimension=data["dimension"], question=data["question"], criteria=data["criteria"],
            weight=float(data["weight"]), source_id=data.get("source_id", ""), generator_model=data.get("generator_model", ""),
        )


@dataclass(frozen=True)
class Provenance:
    kind: str  # manual / llm / imported
    model: str = ""
    prompt_hash: str = ""  # sha256 of the prompt sent to the LLM, or of the canonical source record when imported
    review_status: str = "unreviewed"
    source: str = ""  # e.g. "cf-world:prompt/physics/Optics.json#42"
    flags: tuple[str, ...] = ()  # mapping notes such as "missing_ap_l1", "category_from_filename"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "model": self.model, "prompt_hash": self.prompt_hash,
            "review_status": self.review_status, "source": self.source, "flags": list(self.flags),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Provenance:
        return cls(
            kind=data["kind"], model=data.get("model", ""), prompt_hash=data.get("prompt_hash", ""),
            review_status=data.get("review_status", "unreviewed"), source=data.get("source", ""),
            flags=tuple(data.get("flags", ())),
        )


@dataclass(frozen=True)
class Law:
    """A law of the CF-World law bank (generators/cfworld/laws/*.yaml): the drafter's input."""

    id: str
    domain: str
    subdomain: str
    law: str
    counterfactual: str
    scene: str
    factual_outcome: str
    counterfactual_outcome: str
    outcome_terms: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "domain": self.domain, "subdomain": self.subdomain, "law": self.law,
                "counterfactual": self.counterfactual, "scene": self.scene, "factual_outcome": self.factual_outcome,
                "counterfactual_outcome": self.counterfactual_outcome, "outcome_terms": list(self.outcome_terms)}


@dataclass(frozen=True)
class Scenario:
    id: str
    domain: str
    subdomain: str
    law: str
    counterfactual: str
    levels: dict[str, Level]
    questions: tuple[Question, ...] = ()
    provenance: Provenance = field(default_factory=lambda: Provenance(kind="manual"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "domain": self.domain, "subdomain": self.subdomain, "law": self.law,
            "counterfactual": self.counterfactual,
            "levels": {name: self.levels[name].to_dict() for name in LEVELS if name in self.levels},
            "questions": [q.to_dict() for q in self.questions],
            "provenance": self.provenance.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scenario:
        return cls(
            id=data["id"], domain=data["domain"], subdomain=data["subdomain"], law=data["law"],
            counterfactual=data["counterfactual"],
            levels={name: Level.from_dict(value) for name, value in data["levels"].items()},
            questions=tuple(Question.from_dict(q) for q in data.get("questions", ())),
            provenance=Provenance.from_dict(data["provenance"]),
        )

    def level_weights(self, level: str) -> dict[str, float]:
        """Total question weight per dimension at one level (S is the weighted mean of the scores)."""
        totals = {d: 0.0 for d in DIMENSIONS}
        for q in self.questions:
            if q.level == level and q.dimension in totals:
                totals[q.dimension] += q.weight
        return totals

    def validate(self) -> list[str]:
        """Every problem with this scenario (empty when it is complete and consistent)."""
        problems: list[str] = []
        if not self.id:
            problems.append("id is empty")
        if self.domain not in DOMAINS:
            problems.append(f"domain {self.domain!r} is not one of {', '.join(DOMAINS)}")
        if not self.subdomain:
            problems.append("subdomain is empty")
        if set(self.levels) != set(LEVELS):
            problems.append(f"levels must be exactly {', '.join(LEVELS)}, got {', '.join(sorted(self.levels))}")
        for name in LEVELS:
            level = self.levels.get(name)
            if level is None:
                continue
            if not level.prompt.strip():
                problems.append(f"{name}: prompt is empty")
            if not level.assessment_point.strip():
                problems.append(f"{name}: assessment_point is empty")
        for i, q in enumerate(self.questions):
            if q.level not in LEVELS:
                problems.append(f"questions[{i}]: level {q.level!r} is not one of {', '.join(LEVELS)}")
            if q.dimension not in DIMENSIONS:
                problems.append(f"questions[{i}]: dimension {q.dimension!r} is not one of {', '.join(DIMENSIONS)}")
            if not q.question.strip():
                problems.append(f"questions[{i}]: question is empty")
            if not q.weight > 0:
                problems.append(f"questions[{i}]: weight {q.weight} is not positive")
        for name in LEVELS:
            if not any(q.level == name for q in self.questions):
                problems.append(f"{name}: no judge questions")
        if self.provenance.kind not in PROVENANCE_KINDS:
            problems.append(f"provenance.kind {self.provenance.kind!r} is not one of {', '.join(PROVENANCE_KINDS)}")
        if self.provenance.review_status not in REVIEW_STATUSES:
            problems.append(f"provenance.review_status {self.provenance.review_status!r} is not one of {', '.join(REVIEW_STATUSES)}")
        return problems


def cfworld_features() -> datasets.Features:
    """Features of the ``scenarios`` config: one row per scenario, questions as a list of structs."""
    import datasets  # heavy: imported only when a dataset is being built

    string = datasets.Value("string")
    level = {"prompt": string, "assessment_point": string}
    return datasets.Features(
        {
            "id": string,
            "domain": string,
            "subdomain": string,
            "law": string,
            "counterfactual": string,
            "levels": {"l1": level, "l2": level, "l3": level},
            "questions": datasets.List(
                {
                    "level": string, "dimension": string, "question": string, "criteria": string,
                    "weight": datasets.Value("float32"), "source_id": string, "generator_model": string,
                }
            ),
            "provenance": {
                "kind": string, "model": string, "prompt_hash": string, "review_status": string,
                "source": string, "flags": datasets.List(string),
            },
        }
    )


@cache
def scenario_schema() -> dict[str, Any]:
    path = resources.files("vrforge.schemas") / "json" / "cfworld.scenario.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))


def scenario_schema_errors(data: dict[str, Any]) -> list[str]:
    """Every way a scenario dict breaks the JSON Schema (empty when it validates)."""
    validator = jsonschema.Draft202012Validator(scenario_schema())
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(data)]
