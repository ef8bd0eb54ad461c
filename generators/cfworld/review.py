"""The review loop for drafted scenarios: export the pending ones, import the reviewer's decisions.

Export writes one row per scenario whose review status is ``needs_review``, as JSONL (one
object per line) or CSV (chosen by the file extension), with the scenario's read-only
fields, its six editable texts (``l1_prompt``, ``l1_assessment_point`` ... ``l3_...``), an
empty ``decision`` and an empty ``note``. Questions travel in JSONL only (read-only).

The reviewer fills ``decision`` with:

- ``approve``: review status ``approved`` (edited texts are applied first and re-validated);
- ``reject``: review status ``rejected`` (edits ignored);
- ``edit``: the edits are applied and re-validated, the status stays ``needs_review``;
- nothing: no change.

Any edit adds the provenance flag ``edited``; kind, model and prompt hash are kept, so an
approved LLM draft still says which model and prompt it came from. Import is all or
nothing: an unknown id or decision, a changed read-only field, a decision on a scenario
that is not pending or an edit that fails ``validate_scenario`` is one error line and
nothing is written.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vrforge.errors import UserError
from vrforge.fileio import write_bytes_atomic
from vrforge.generators.cfworld.jsonl import ScenarioFileError, dumps_records, read_records
from vrforge.generators.cfworld.lawbank import Law, LawBankError, load_laws
from vrforge.generators.cfworld.validation import validate_scenario
from vrforge.schemas.cfworld import LEVELS, Level, Scenario

DECISIONS = ("approve", "reject", "edit")
EDITABLE = tuple(f"{level}_{part}" for level in LEVELS for part in ("prompt", "assessment_point"))
READ_ONLY = ("id", "domain", "subdomain", "law", "counterfactual", "model", "prompt_hash")
CSV_COLUMNS = ("id", "decision", "note", *EDITABLE, "domain", "subdomain", "law", "counterfactual", "model", "prompt_hash")
PENDING = "needs_review"


class ReviewError(UserError, ValueError):
    """A decision file cannot be applied; the message is one line."""


@dataclass
class ReviewSummary:
    approved: int = 0
    rejected: int = 0
    edited: int = 0
    unchanged: int = 0

    def line(self) -> str:
        return f"{self.approved} approved, {self.rejected} rejected, {self.edited} edited, {self.unchanged} left pending"


def review_row(scenario: Scenario) -> dict[str, Any]:
    row: dict[str, Any] = {"id": scenario.id, "decision": "", "note": ""}
    for level in LEVELS:
        row[f"{level}_prompt"] = scenario.levels[level].prompt
        row[f"{level}_assessment_point"] = scenario.levels[level].assessment_point
    row.update(domain=scenario.domain, subdomain=scenario.subdomain, law=scenario.law, counterfactual=scenario.counterfactual,
               model=scenario.provenance.model, prompt_hash=scenario.provenance.prompt_hash)
    return row


def export_review(scenarios: list[Scenario], path: Path) -> int:
    """Write the pending scenarios to ``path`` (.csv or .jsonl); returns how many."""
    pending = sorted((s for s in scenarios if s.provenance.review_status == PENDING), key=lambda s: s.id)
    if path.suffix == ".csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
        writer.writeheader()
        for scenario in pending:
            writer.writerow(review_row(scenario))
        write_bytes_atomic(path, buffer.getvalue().encode("utf-8"))
    else:
        rows = [{**review_row(s), "questions": [q.to_dict() for q in s.questions]} for s in pending]
        write_bytes_atomic(path, dumps_records(rows))
    return len(pending)


def read_decisions(path: Path) -> list[dict[str, Any]]:
    try:
        if path.suffix == ".csv":
            with open(path, encoding="utf-8", newline="") as handle:
                reader = csv.DictReader(handle)
                missing = [c for c in ("id", "decision") if c not in (reader.fieldnames or [])]
                if missing:
                    raise ReviewError(f"{path}: missing column(s): {', '.join(missing)}")
                return [dict(row) for row in reader]
        return read_records(path)
    except ScenarioFileError as exc:
        raise ReviewError(str(exc)) from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ReviewError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None


def _edited(scenario: Scenario, row: dict[str, Any], label: str) -> Scenario | None:
    """The scenario with the row's texts, or None when the row changes none of them."""
    for name in READ_ONLY:
        if name in row and row[name] is not None and str(row[name]) != str(review_row(scenario)[name]):
            raise ReviewError(f"{label}: field {name!r} is read-only")
    levels = dict(scenario.levels)
    for level in LEVELS:
        prompt = row.get(f"{level}_prompt", levels[level].prompt)
        point = row.get(f"{level}_assessment_point", levels[level].assessment_point)
        if not isinstance(prompt, str) or not isinstance(point, str):
            raise ReviewError(f"{label}: {level} texts must be strings")
        levels[level] = Level(" ".join(prompt.split()), " ".join(point.split()))
    if all(levels[level] == scenario.levels[level] for level in LEVELS):
        return None
    flags = scenario.provenance.flags if "edited" in scenario.provenance.flags else (*scenario.provenance.flags, "edited")
    return dataclasses.replace(scenario, levels=levels, provenance=dataclasses.replace(scenario.provenance, flags=flags))


def apply_decisions(scenarios: list[Scenario], rows: list[dict[str, Any]], laws: dict[str, Law] | None = None,
                    embed: Any = None) -> tuple[list[Scenario], ReviewSummary]:
    """The scenarios after the decisions; raises ReviewError (nothing applied) on any bad row."""
    by_id = {s.id: s for s in scenarios}
    updated = dict(by_id)
    summary = ReviewSummary()
    seen: set[str] = set()
    for number, row in enumerate(rows, start=1):
        scenario_id = row.get("id")
        label = f"row {number} (id={scenario_id})"
        if not isinstance(scenario_id, str) or scenario_id not in by_id:
            raise ReviewError(f"{label}: no such scenario in the drafts")
        if scenario_id in seen:
            raise ReviewError(f"{label}: decided twice")
        seen.add(scenario_id)
        raw = row.get("decision") or ""
        decision = raw.strip().lower() if isinstance(raw, str) else raw
        if decision not in ("", *DECISIONS):
            raise ReviewError(f"{label}: decision {raw!r} is not one of approve, reject, edit (or empty)")
        scenario = by_id[scenario_id]
        if not decision:
            summary.unchanged += 1
            continue
        if scenario.provenance.review_status != PENDING:
            raise ReviewError(f"{label}: not pending review (status {scenario.provenance.review_status})")
        if decision == "reject":
            updated[scenario_id] = dataclasses.replace(
                scenario, provenance=dataclasses.replace(scenario.provenance, review_status="rejected"))
            summary.rejected += 1
            continue
        edited = _edited(scenario, row, label)
        if edited is not None:
            others = [s for s in updated.values() if s.id != scenario_id and s.provenance.review_status != "rejected"]
            reasons = validate_scenario(edited, (laws or {}).get(scenario_id), others, embed=embed)
            if reasons:
                raise ReviewError(f"{label}: the edit fails validation: {'; '.join(reasons)}")
            scenario = edited
            summary.edited += 1
        status = "approved" if decision == "approve" else PENDING
        summary.approved += decision == "approve"
        summary.unchanged += decision == "edit"
        updated[scenario_id] = dataclasses.replace(scenario, provenance=dataclasses.replace(scenario.provenance,
                                                                                            review_status=status))
    summary.unchanged += sum(1 for s in scenarios if s.id not in seen and s.provenance.review_status == PENDING)
    return [updated[s.id] for s in scenarios], summary


# ----------------------------------------------------------------------------- CLI entry points

def laws_by_id(folder: str | None) -> dict[str, Law]:
    """The law bank for re-validation; an absent default bank means edits are checked without law data."""
    try:
        return {law.id: law for law in load_laws(folder)}
    except LawBankError:
        if folder is not None:
            raise
        return {}



__all__ = ["apply_decisions", "laws_by_id", "export_review", "read_decisions", "ReviewError"]
