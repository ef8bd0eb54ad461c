"""The change notes of a seed rewrite: ``changes/v<version>-<seed stem>.yaml``, one per seed file.

Each file is a YAML list of what changed in a scenario::

    - id: cells-skin-heals-by-division        # the scenario as it is now
      replaces: cells-skin-heals-by-clotting   # only when a new scenario replaced an unsound one
      kinds: [science, checks]                 # of CHANGE_KINDS
      note: "clotting and scabs need no cell division: the outcome is now ..."

The release card counts the changes by kind and lists the replaced scenarios (``changes_markdown``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from vrforge.errors import UserError

CHANGES_DIR = Path(__file__).resolve().parent / "changes"
CHANGE_KINDS = ("science", "uniqueness", "decidability", "leakage", "checks", "writing", "time", "replaced")
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ChangesError(UserError, ValueError):
    """A change-note file cannot be used; the message is one line."""


def change_files(version: str, folder: Path | None = None) -> list[Path]:
    folder = CHANGES_DIR if folder is None else Path(folder)
    return sorted(folder.glob(f"v{version}-*.yaml")) if folder.is_dir() else []


def _entry_problems(entry: Any) -> list[str]:
    if not isinstance(entry, dict):
        return [f"not a mapping ({type(entry).__name__})"]
    problems = []
    unknown = sorted(set(entry) - {"id", "replaces", "kinds", "note"})
    if unknown:
        problems.append(f"unknown field(s): {', '.join(map(str, unknown))}")
    for name in ("id", "note"):
        if not (isinstance(entry.get(name), str) and entry[name].strip()):
            problems.append(f"{name} must be a non-empty string")
    if "replaces" in entry and not (isinstance(entry["replaces"], str) and entry["replaces"].strip()):
        problems.append("replaces must be a non-empty string")
    kinds = entry.get("kinds")
    if not (isinstance(kinds, list) and kinds and all(isinstance(k, str) for k in kinds)):
        problems.append("kinds must be a non-empty list")
    else:
        bad = [k for k in kinds if k not in CHANGE_KINDS]
        if bad:
            problems.append(f"unknown kind(s) {', '.join(bad)} (choose from {', '.join(CHANGE_KINDS)})")
    return problems


def read_changes(version: str, folder: Path | None = None) -> list[dict[str, Any]]:
    """Every change entry of ``version`` (the files' entries in file order); ChangesError on the first problem."""
    entries: list[dict[str, Any]] = []
    for path in change_files(version, folder):
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ChangesError(f"{path.name}: cannot read: {' '.join(str(exc).split())[:200]}") from None
        if data is None:
            continue  # a file started but still empty
        if not isinstance(data, list):
            raise ChangesError(f"{path.name}: expected a YAML list of changes")
        for index, entry in enumerate(data):
            problems = _entry_problems(entry)
            if problems:
                label = entry.get("id", "") if isinstance(entry, dict) else ""
                raise ChangesError(f"{path.name}: [{index}]{f' (id={label})' if label else ''}: {problems[0]}")
            entries.append({"file": path.name, **entry})
    return entries


def change_summary(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts per kind (every kind listed, in ``CHANGE_KINDS`` order), scenarios changed, and the replacements."""
    kinds = Counter(k for e in entries for k in dict.fromkeys(e["kinds"]))
    return {"scenarios_changed": len({e["id"] for e in entries}),
            "per_kind": {k: kinds.get(k, 0) for k in CHANGE_KINDS},
            "replaced": [{"id": e["id"], "replaces": e["replaces"]} for e in entries if e.get("replaces")]}


def changes_markdown(version: str, summary: dict[str, Any]) -> str:
    """The card's "What changed" section."""
    if not summary["scenarios_changed"]:
        return ""
    lines = [f"### What changed in {version}", "",
             f"{summary['scenarios_changed']} scenarios changed against the rubric "
             "(`docs/design/cfworld-rubric.md`); one change can be of several kinds "
             f"(`generators/cfworld/changes/v{version}-*.yaml` holds a note for each):", "",
             "| kind | scenarios |", "|---|---|"]
    lines += [f"| {kind} | {n} |" for kind, n in summary["per_kind"].items()]
    if summary["replaced"]:
        lines += ["", "Replaced (a scenario that could not be made sound, replaced by one on another law of its topic): "
                  + ", ".join(f"`{r['replaces']}` by `{r['id']}`" for r in summary["replaced"]) + "."]
    return "\n".join(lines)
