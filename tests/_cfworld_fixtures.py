"""Small CF-World laws, scenarios and law-bank folders for the tests."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from vrforge.generators.cfworld.lawbank import Law
from vrforge.schemas.cfworld import DIMENSIONS, LEVELS, Level, Provenance, Question, Scenario

WEIGHTS = {"visual_integrity": 3.0, "assessment_point": 15.0, "logic_consistency": 8.0}

MIRROR_LAW = {
    "id": "optics-mirrors-reflect",
    "subdomain": "optics",
    "law": "Smooth surfaces such as mirrors reflect the light that falls on them.",
    "counterfactual": "Smooth surfaces absorb all the light that falls on them instead of reflecting it.",
    "scene": "A wall mirror facing a vase of red tulips on a wooden table.",
    "factual_outcome": "The tulips are reflected in the mirror.",
    "counterfactual_outcome": "The mirror surface is pitch black.",
    "outcome_terms": ["pitch black", "black mirror", "dark mirror"],
}
FALL_LAW = {
    "id": "mechanics-released-objects-fall",
    "subdomain": "mechanics",
    "law": "A released object falls toward the ground.",
    "counterfactual": "Gravity pushes released objects away from the ground.",
    "scene": "A child lets go of a red apple above a grassy lawn.",
    "factual_outcome": "The apple lies on the grass below the hand.",
    "counterfactual_outcome": "The apple rises above the child's head.",
    "outcome_terms": ["rises", "floating upward", "above the head"],
}
BLOOD_LAW = {
    "id": "physiology-blood-is-red",
    "subdomain": "physiology",
    "law": "Human blood is red because haemoglobin carries iron.",
    "counterfactual": "Human blood carries copper-based haemocyanin like an octopus.",
    "scene": "A nurse holding a filled blood sample tube in a hospital room.",
    "factual_outcome": "The liquid in the tube is dark red.",
    "counterfactual_outcome": "The liquid in the tube is blue.",
    "outcome_terms": ["blue blood", "blue liquid"],
}

MIRROR_LEVELS = {
    "l1": ("Draw a wall mirror facing a vase of red tulips on a wooden table.", "The tulips are reflected in the mirror."),
    "l2": ("If smooth surfaces absorbed all light instead of reflecting it, draw a wall mirror facing a vase of red tulips "
           "on a wooden table. The mirror surface should be pitch black.", "The mirror surface is pitch black."),
    "l3": ("If smooth surfaces absorbed all light instead of reflecting it, draw a wall mirror facing a vase of red tulips "
           "on a wooden table.", "The mirror surface is pitch black."),
}
FALL_LEVELS = {
    "l1": ("Draw a child letting go of a red apple above a grassy lawn.", "The apple lies on the grass below the hand."),
    "l2": ("If gravity pushed released objects away from the ground, draw a child letting go of a red apple above a "
           "grassy lawn. The apple should be rising high above the child's head.", "The apple rises above the child's head."),
    "l3": ("If gravity pushed released objects away from the ground, draw a child letting go of a red apple above a "
           "grassy lawn.", "The apple rises above the child's head."),
}


def law(record: dict[str, Any], domain: str = "physics") -> Law:
    return Law(id=record["id"], domain=domain, subdomain=record["subdomain"], law=record["law"],
               counterfactual=record["counterfactual"], scene=record["scene"], factual_outcome=record["factual_outcome"],
               counterfactual_outcome=record["counterfactual_outcome"], outcome_terms=tuple(record["outcome_terms"]))


def questions(model: str = "") -> tuple[Question, ...]:
    return tuple(Question(level=level, dimension=dim, question=f"{level} {dim}: is it right?", criteria="1.0 yes, 0.0 no",
                          weight=WEIGHTS[dim], generator_model=model) for level in LEVELS for dim in DIMENSIONS)


def scenario(record: dict[str, Any], levels: dict[str, tuple[str, str]], domain: str = "physics",
             provenance: Provenance | None = None) -> Scenario:
    return Scenario(
        id=record["id"], domain=domain, subdomain=record["subdomain"], law=record["law"],
        counterfactual=record["counterfactual"], levels={name: Level(*texts) for name, texts in levels.items()},
        questions=questions(), provenance=provenance or Provenance(kind="manual", review_status="approved"),
    )


def mirror() -> Scenario:
    return scenario(MIRROR_LAW, MIRROR_LEVELS)


def fall() -> Scenario:
    return scenario(FALL_LAW, FALL_LEVELS)


def with_level(s: Scenario, name: str, prompt: str | None = None, point: str | None = None) -> Scenario:
    old = s.levels[name]
    level = Level(prompt if prompt is not None else old.prompt, point if point is not None else old.assessment_point)
    return dataclasses.replace(s, levels={**s.levels, name: level})


def write_bank(root: Path, files: dict[str, dict[str, Any]]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (root / name).write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return root


def small_bank(tmp_path: Path) -> tuple[Path, Path]:
    """A laws/ folder (two physics laws, one biology) and a seeds/ folder (the mirror and fall scenarios)."""
    laws = write_bank(tmp_path / "laws", {
        "physics.yaml": {"domain": "physics", "laws": [MIRROR_LAW, FALL_LAW]},
        "biology.yaml": {"domain": "biology", "laws": [BLOOD_LAW]},
    })
    seeds = write_bank(tmp_path / "seeds", {"physics.yaml": {"scenarios": [mirror().to_dict(), fall().to_dict()]}})
    return laws, seeds


# A sound compact seed record (v0.3 form: anchors, a consequence check, a knock-on).
ICE_FLOATS_RECORD: dict[str, Any] = {
    "id": "mechanics-ice-floats", "subdomain": "mechanics", "topic": "density_buoyancy",
    "law": "Ice is less dense than liquid water, so it floats.",
    "counterfactual": "Water contracts as it freezes.",
    "l1": "A tall glass of cola with three ice cubes on a cafe table.",
    "l2": "Water shrinks as it freezes here, so the three ice cubes in the tall glass of cola on the cafe table lie on the bottom.",
    "l3": "Suppose water contracted as it froze. Draw a tall glass of cola with three ice cubes, on a cafe table.",
    "factual": "The ice cubes float at the top of the cola.",
    "outcome": "The ice cubes lie at the bottom of the glass.",
    "accept": ["the ice cubes are fully under the cola"],
    "anchors": ["Is there a tall glass of cola on a cafe table"],
    "subjects": "the glass, the cola and the ice cubes",
    "l1_checks": ["Do the ice cubes stick up above the surface of the cola"],
    "checks": ["Is the surface of the cola a smooth dark disc with the cubes below it"],
    "knock_on": ["Are all three cubes stacked on the floor of the glass"],
    "terms": ["bottom of the glass"],
}
