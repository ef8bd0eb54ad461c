"""Stable per-item seeds: a pure function of (recipe seed, task, difficulty, index, attempt)."""

from __future__ import annotations

import hashlib
import json

import numpy as np


def derive_seed(recipe_seed: int, task: str, difficulty: str, index: int, attempt: int = 0) -> int:
    """A 63-bit seed from sorted JSON of the item's coordinates (never Python's ``hash()``)."""
    key = json.dumps(
        {"attempt": attempt, "difficulty": difficulty, "index": index, "seed": recipe_seed, "task": task},
        sort_keys=True,
        separators=(",", ":"),
    )
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def item_rng(seed: int) -> np.random.Generator:
    """One independent generator per item; nothing touches a global RNG."""
    return np.random.Generator(np.random.PCG64(seed))
