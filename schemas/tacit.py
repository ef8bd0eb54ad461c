"""The TACIT row: its fields and ``datasets.Features``. Each task's ``meta`` has a JSON Schema
(``json/<task>.meta.schema.json`` for the built-in tasks), read through its ``TaskSpec``;
the release layout around the rows is ``layout.py``."""

from __future__ import annotations

import datasets

ROW_FIELDS = (
    "id", "task", "domain", "difficulty", "index", "seed", "puzzle", "solution", "distractors",
    "distractor_violations", "answer_index", "meta", "svg_puzzle", "svg_solution", "config_hash",
    "generator_version", "aspects_in_play",
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
            # the fewest aspects of the answer (cells, nodes, views, regions...) a solver must
            # check to rule out all four distractors (0: the task does not say)
            "aspects_in_play": datasets.Value("int8"),
        }
    )
