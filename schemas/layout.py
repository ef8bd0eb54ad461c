"""The layout of a released TACIT dataset folder, defined once: every builder, reader and
runner takes names from here.

```
README.md                                           the card (CARD_FILE)
manifest.json                                       MANIFEST_FILE
audit.json                                          AUDIT_FILE, written by ``vrforge audit``
data/<config>/<split>-00000-of-0000N.parquet        shard_path()
gallery/<task>.png                                  gallery_path()
```

Config ``<task>`` holds the main-resolution (1024 px) images, ``<task>-512`` and
``<task>-2048`` the others; the splits are the difficulty names. Model answers for the
generative track follow the reference release: ``model_output/<task>/<difficulty>/<task>_<difficulty>_<NNNN>.png``.

This module imports nothing heavy, so any layer may read it.
"""

from __future__ import annotations

import re

DIFFICULTIES = ("easy", "medium", "hard")  # the presets every task has
# Every level a built-in task ships, in order of difficulty; a recipe may add levels of any name.
LEVELS = (*DIFFICULTIES, "expert")
DIFFICULTY_ORDER = {name: rank for rank, name in enumerate(LEVELS)}
SPLITS = DIFFICULTIES  # a TACIT config's splits are its levels; these three are always there
# A level's name: lower-case letters and digits, so that it is a split name and
# ``<task>_<level>_<NNNN>.png`` parses back without ambiguity (task names hold underscores).
LEVEL_NAME = re.compile(r"^[a-z][a-z0-9]*$")
RESOLUTIONS = (512, 1024, 2048)
MAIN_RESOLUTION = 1024

CARD_FILE = "README.md"
MANIFEST_FILE = "manifest.json"
AUDIT_FILE = "audit.json"
BOOKKEEPING_FILES = (MANIFEST_FILE, AUDIT_FILE)  # not listed in the manifest's files
OUTPUTS_FOLDER = "model_output"

_CONFIG = re.compile(r"^(?P<task>.+?)(?:-(?P<res>\d+))?$")
_OUTPUT_STEM = re.compile(r"^(?P<task>.+)_(?P<difficulty>[a-z][a-z0-9]*)_(?P<index>\d+)$")


def difficulty_rank(difficulty: str) -> int:
    """Sort key: easy, medium, hard, expert, then anything else."""
    return DIFFICULTY_ORDER.get(difficulty, len(LEVELS))


def item_id(task: str, difficulty: str, index: int) -> str:
    """A row's ``id``: ``maze-hard-0042``."""
    return f"{task}-{difficulty}-{index:04d}"


def config_name(task: str, resolution: int) -> str:
    """Config ``maze`` holds the 1024 px images, ``maze-512`` and ``maze-2048`` the others."""
    return task if resolution == MAIN_RESOLUTION else f"{task}-{resolution}"


def parse_config_name(name: str) -> tuple[str, int]:
    """(task, resolution) of a config folder name; the inverse of ``config_name``."""
    match = _CONFIG.match(name)
    assert match is not None  # the pattern matches every non-empty name
    return match["task"], int(match["res"]) if match["res"] else MAIN_RESOLUTION


def main_first(resolutions: tuple[int, ...] | list[int]) -> list[int]:
    """Resolutions with the main one first (the card's default config), then ascending."""
    return sorted(resolutions, key=lambda r: (r != MAIN_RESOLUTION, r))


def shard_path(config: str, split: str, number: int, of: int) -> str:
    return f"data/{config}/{split}-{number:05d}-of-{of:05d}.parquet"


def split_glob(config: str, split: str) -> str:
    """The card's ``data_files`` path of one split."""
    return f"data/{config}/{split}-*.parquet"


def gallery_path(task: str) -> str:
    return f"gallery/{task}.png"


def output_name(task: str, difficulty: str, index: int) -> str:
    """The reference release's answer-image path, relative to ``model_output/``."""
    return f"{task}/{difficulty}/{task}_{difficulty}_{index:04d}.png"


def parse_output_stem(stem: str) -> tuple[str, str, int] | None:
    """(task, difficulty, index) of an answer image's file stem, or None when it is not one."""
    match = _OUTPUT_STEM.match(stem)
    return (match["task"], match["difficulty"], int(match["index"])) if match else None
