"""The TACIT row: its ``datasets.Features`` and the JSON Schema of each task's ``meta``."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import datasets
import jsonschema

ROW_FIELDS = (
    "id", "task", "domain", "difficulty", "index", "seed", "puzzle", "solution", "distractors",
    "distractor_violations", "answer_index", "meta", "svg_puzzle", "svg_solution", "config_hash",
    "generator_version",
)


def tacit_features() -> datasets.Features:
    """Explicit features: images embedded as PNG bytes, so the parquet files stand alone."""
    return datasets.Features(
        {
            "id": datasets.Value("string"),
            "task": datasets.Value("string"),
            "domain": datasets.Value("string"),
            "difficulty": datasets.Value("string"),
            "index": datasets.Value("int32"),
            "seed": datasets.Value("int64"),
            "puzzle": datasets.Image(),
            "solution": datasets.Image(),
            "distractors": datasets.List(datasets.Image()),
            "distractor_violations": datasets.List(datasets.Value("string")),
            "answer_index": datasets.Value("int8"),
            "meta": datasets.Value("string"),
            "svg_puzzle": datasets.Value("string"),
            "svg_solution": datasets.Value("string"),
            "config_hash": datasets.Value("string"),
            "generator_version": datasets.Value("string"),
        }
    )


@cache
def meta_schema(task: str) -> dict[str, Any]:
    path = resources.files("vrforge.schemas") / "json" / f"{task}.meta.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))


def meta_errors(task: str, meta: dict[str, Any]) -> list[str]:
    """Every way ``meta`` breaks its task's schema (empty when it validates)."""
    validator = jsonschema.Draft202012Validator(meta_schema(task))
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(meta)]
