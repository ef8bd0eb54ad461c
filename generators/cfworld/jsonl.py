"""Scenario JSONL files: read with one-line errors, write atomically in a deterministic order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vrforge.errors import UserError
from vrforge.fileio import write_bytes_atomic
from vrforge.schemas.cfworld import DOMAINS, Scenario, scenario_schema_errors


class ScenarioFileError(UserError, ValueError):
    """A scenario or record file cannot be used; the message is one line."""


def read_records(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file (blank lines skipped); [] when the file does not exist."""
    if not path.exists():
        return []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioFileError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScenarioFileError(f"{path}:{number}: malformed JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise ScenarioFileError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
        records.append(record)
    return records


def read_scenarios(path: Path) -> list[Scenario]:
    scenarios = []
    for number, record in enumerate(read_records(path), start=1):
        errors = scenario_schema_errors(record)
        if errors:
            raise ScenarioFileError(f"{path}: record {number}: not a scenario ({errors[0]})")
        scenarios.append(Scenario.from_dict(record))
    return scenarios


def dumps_records(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records).encode("utf-8")


def scenario_order(scenario: Scenario) -> tuple[int, str]:
    return (DOMAINS.index(scenario.domain) if scenario.domain in DOMAINS else len(DOMAINS), scenario.id)


def write_scenarios(path: Path, scenarios: list[Scenario]) -> None:
    """Sorted by (domain, id), written atomically: same scenarios, same bytes."""
    write_bytes_atomic(path, dumps_records([s.to_dict() for s in sorted(scenarios, key=scenario_order)]))


def write_records(path: Path, records: list[dict[str, Any]], key: str = "id") -> None:
    write_bytes_atomic(path, dumps_records(sorted(records, key=lambda r: str(r.get(key, "")))))
