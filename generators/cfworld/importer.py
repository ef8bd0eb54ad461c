"""Import the official CF-World release into vrforge scenarios and probe records.

The release (github.com/wanshiruyishoubinanshan/cf-world) has three folders:

- ``prompt/<Discipline>.json`` and ``prompt/physics/<Subfield>.json``: one record per
  scenario (``id``, ``category``, ``prompt_l1..3``, ``ap_l1``, ``ap_l2`` / ``ap_l3`` / ``ap_3``);
- ``eval_questions/<same path>_gemini.json``: judge questions, joined to a scenario by
  (prompt file, ``source_id``) because ids restart at 0 in every file;
- ``prompt_ablation/``: the probes (``rule_decouple.json``, ``attribute_decouple.json``,
  ``de-norm/<same path as prompt/>``).

Mapping rules (also in ``MAPPING_RULES``, copied into every report):

1. Domain from the file: ``physics/*`` -> physics, ``Biology`` -> biology, ``Chemical`` ->
   chemistry, ``Geography`` -> geography, ``Sociology`` -> sociology. Records of any other
   file are rejected ("unknown discipline file").
2. Scenario id = ``<domain>[-<subfield>]-<id padded to 4 digits>``, e.g.
   ``physics-optics-0042``, ``biology-0007``: globally unique and stable across imports.
3. ``subdomain`` = the record's ``category`` with whitespace collapsed; a missing or blank
   category takes the file stem (``Astronomy``, ``Biology``) and flags ``category_from_filename``.
4. ``law`` is left empty: the release names no law apart from the category (``fill_laws``
   can fill it through an LLM, on request). ``counterfactual`` = the premise as it stands in
   ``prompt_l3`` (or ``prompt_l2``), found by ``extract_premise``: the leading clause ("If
   plastic was super-heavy", "In a world where ..."), else an "if" clause ending at ", draw"
   ("In a vacuum tube ..., if the gravitational acceleration is zero, draw ..."), a "but
   assume" clause, an "in a universe where" clause, an opening L2 statement that L3 lacks
   ("Gravity is repulsive."), or an L3 "where" clause; the report counts each pattern under
   ``premise_patterns``. When none is recognised it is empty and flagged
   ``counterfactual_not_extracted``.
5. Assessment points: ``ap_l1`` -> L1. The release mostly gives ONE counterfactual
   assessment point, ``ap_l2``, for both L2 and L3 (L3 only drops the explicit hint), so
   L2 = ``ap_l2`` and L3 = ``ap_l3``, its typo alias ``ap_3`` (flag ``ap_3_alias``), or else
   ``ap_l2`` (flag ``ap_l3_from_l2``, the normal case); a record with only ``ap_l3``/``ap_3``
   uses it for L2 too (flag ``ap_l2_from_l3``).
6. A missing ``ap_l1`` (or missing counterfactual point) does NOT reject the record: it
   is kept with an empty assessment point, flagged ``missing_ap_l1`` and marked
   ``review_status = needs_review`` (its prompts and judge questions are still usable;
   ``Scenario.validate()`` reports the empty field). Missing prompts, a missing or duplicate
   id, a non-object record or an unknown field reject the record.
7. Questions: ``question_type`` "Visual Integrity" -> visual_integrity, "Assessment Point"
   -> assessment_point, "Counterfactual Logic" -> logic_consistency; any other type
   (the release has two "Prompt Adherence" questions, weight 2) is rejected with the reason.
   ``prompt_level`` -> level, ``evaluation_criteria`` -> criteria, ``weight`` kept as given
   (3 / 8 / 15), ``id`` -> source_id, ``generator_model`` kept. A question whose
   ``source_id`` matches no imported scenario of its prompt file is rejected.
8. A scenario with a level that has no judge question is flagged ``no_questions_<level>``
   and marked needs_review (the release skipped the levels whose assessment point was
   stored under an unexpected key).
9. Probes: rule_decouple -> ``rule-decouple-NNNN`` (variant = category original/cf, group =
   rule_id, assessment point = ``ap``); attribute_decouple -> ``attribute-decouple-NNNN[-factual]``
   (variant = category, attributes A/B stripped of spaces, no assessment point); de-norm ->
   ``de-norm-<scenario id>`` with the source scenario id and its L2 assessment point.

Lose nothing silently: every record read is either imported (a scenario, a question
attached to one scenario, a probe) or listed in ``ImportReport.rejected`` with a reason,
and ``ImportReport.files`` counts read / imported / rejected per file. JSON files outside
the three folders are not read; they are listed in ``ImportReport.ignored_files``.
A file that is not valid JSON, or whose top level is not a list, stops the import with
``ReleaseError`` (one readable line, a ``UserError``): `vrforge cfworld import` exits 2 with it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vrforge.errors import UserError
from vrforge.schemas.cfworld import LEVELS, Level, Provenance, Question, Scenario

SOURCE = "cf-world"

MAPPING_RULES = (
    "domain from the file: physics/* -> physics, Biology -> biology, Chemical -> chemistry, "
    "Geography -> geography, Sociology -> sociology; other files rejected",
    "scenario id = <domain>[-<physics subfield>]-<id padded to 4 digits>, e.g. physics-optics-0042",
    "subdomain = category (whitespace collapsed); missing/blank category -> file stem, flag category_from_filename",
    "law left empty (release names none; an LLM fill is optional); counterfactual = premise of prompt_l3/prompt_l2: "
    "leading clause, else if-clause before ', draw', 'but assume' clause, 'in a universe where' clause, "
    "opening L2 statement, L3 'where' clause; else empty with flag counterfactual_not_extracted",
    "ap_l1 -> l1; ap_l2 -> l2; ap_l3 or ap_3 (flag ap_3_alias) -> l3; missing l3 point -> ap_l2 (flag ap_l3_from_l2); "
    "missing l2 point -> ap_l3/ap_3 (flag ap_l2_from_l3)",
    "missing ap_l1 (or no counterfactual point): record kept, empty assessment point, flag missing_ap_<level>, needs_review",
    "missing prompt_lN, missing/duplicate id, non-object record, unknown field -> record rejected",
    "question_type: Visual Integrity -> visual_integrity, Assessment Point -> assessment_point, "
    "Counterfactual Logic -> logic_consistency; other types rejected",
    "question joined by (prompt file, source_id); unmatched source_id rejected",
    "level without judge questions -> flag no_questions_<level>, needs_review",
    "probes: rule_decouple -> rule-decouple-NNNN; attribute_decouple -> attribute-decouple-NNNN[-suffix]; "
    "de-norm -> de-norm-<scenario id> with that scenario's l2 assessment point",
)

DOMAIN_BY_STEM = {"biology": "biology", "chemical": "chemistry", "chemistry": "chemistry",
                  "geography": "geography", "sociology": "sociology"}
DIMENSION_BY_TYPE = {"visual integrity": "visual_integrity", "assessment point": "assessment_point",
                     "counterfactual logic": "logic_consistency"}
SCENARIO_FIELDS = {"id", "category", "prompt_l1", "prompt_l2", "prompt_l3", "ap_l1", "ap_l2", "ap_l3", "ap_3"}
QUESTION_FIELDS = {"id", "source_id", "prompt_level", "category", "question_type", "question",
                   "evaluation_criteria", "weight", "generator_model"}
REVIEW_FLAGS = ("missing_ap_", "no_questions_")
PREMISE = re.compile(
    r"^\s*((?:if|in a world|imagine|suppose|assume)\b.*?)(?:,\s*(?:draw|show|depict|generate|create|illustrate|render|paint)\b|\.\s)",
    re.IGNORECASE | re.DOTALL,
)
_DRAW = r"(?:please\s+)?(?:draw|show|depict|generate|create|illustrate|render|paint)\b"
_SENTENCE_END = r"(?:\.(?=\s+[A-Z(]|\s*$)|$)"  # a full stop before a capital or at the end ("e.g.," does not end one)
# Premise patterns after the leading clause, tried in order on L3 then L2; each captures text that stands verbatim in the prompt.
PREMISE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # "In a vacuum tube ..., if the gravitational acceleration is zero, draw ..." / "... lawn. If the lawn becomes ..., draw"
    ("if_clause", re.compile(rf"(?:^|(?<=[.,;:])\s*)(if\b[^.]*?),\s*{_DRAW}", re.IGNORECASE)),
    # "Draw the Sun in space, but assume hydrogen nuclear fusion inside it has ceased."
    ("assume_clause", re.compile(rf",?\s*\bbut\s+(assum(?:e|ing)\b.+?){_SENTENCE_END}", re.IGNORECASE)),
    # "A close-up of the Sun in a universe where gravity acts as a repulsive force."
    ("world_where", re.compile(rf"\b((?:in\s+)?an?\s+(?:universe|world|reality)\s+(?:where|in which)\b.+?){_SENTENCE_END}",
                               re.IGNORECASE)),
)
# "Gravity is repulsive. A diagram showing ...": an L2 that opens with a statement the L3 prompt lacks.
L2_STATEMENT = re.compile(rf"^\s*([A-Z][^.]*?){_SENTENCE_END}")
# Last resort on L3: "A diagram of the solar system where the gravitational force ... is repulsive."
WHERE_CLAUSE = re.compile(rf"\b(where\b.+?){_SENTENCE_END}", re.IGNORECASE)


class ReleaseError(UserError, ValueError):
    """The release cannot be read at all (missing folder, malformed JSON); the message is one line."""


@dataclass(frozen=True)
class ProbeRecord:
    id: str
    kind: str  # rule_decouple / attribute_decouple / de_norm
    prompt: str
    assessment_point: str = ""
    source_scenario_id: str = ""
    variant: str = ""  # release category: original/cf, factual/unusual, or the scenario's category
    group: str = ""  # rule_id for rule_decouple, the pair number for attribute_decouple
    attributes: tuple[tuple[str, str], ...] = ()
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "kind": self.kind, "prompt": self.prompt, "assessment_point": self.assessment_point,
            "source_scenario_id": self.source_scenario_id, "variant": self.variant, "group": self.group,
            "attributes": dict(self.attributes), "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeRecord:
        return cls(
            id=data["id"], kind=data["kind"], prompt=data["prompt"], assessment_point=data.get("assessment_point", ""),
            source_scenario_id=data.get("source_scenario_id", ""), variant=data.get("variant", ""),
            group=data.get("group", ""), attributes=tuple(sorted(data.get("attributes", {}).items())),
            source=data.get("source", ""),
        )


@dataclass(frozen=True)
class Rejection:
    file: str
    record: str  # "#<index>" or the record's id
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"file": self.file, "record": self.record, "reason": self.reason}


@dataclass
class FileCount:
    kind: str  # scenarios / questions / probes / unknown
    read: int = 0
    imported: int = 0
    rejected: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "read": self.read, "imported": self.imported, "rejected": self.rejected}


@dataclass
class ImportReport:
    root: str
    scenarios: list[Scenario] = field(default_factory=list)
    probes: list[ProbeRecord] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    files: dict[str, FileCount] = field(default_factory=dict)
    flags: Counter = field(default_factory=Counter)
    premise_patterns: Counter = field(default_factory=Counter)  # how each extracted premise was found
    ignored_files: list[str] = field(default_factory=list)  # JSON files outside the three release folders
    rules: tuple[str, ...] = MAPPING_RULES

    @property
    def per_domain(self) -> dict[str, int]:
        return dict(sorted(Counter(s.domain for s in self.scenarios).items()))

    @property
    def question_count(self) -> int:
        return sum(len(s.questions) for s in self.scenarios)

    def rejection_reasons(self) -> dict[str, int]:
        """Rejections grouped by reason, with record-specific detail after ':' dropped."""
        return dict(sorted(Counter(r.reason.split(":")[0] for r in self.rejected).items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": SOURCE,
            "totals": {"scenarios": len(self.scenarios), "questions": self.question_count, "probes": len(self.probes),
                       "rejected": len(self.rejected)},
            "files": {name: count.to_dict() for name, count in sorted(self.files.items())},
            "per_domain": self.per_domain,
            "probes_per_kind": dict(sorted(Counter(p.kind for p in self.probes).items())),
            "flags": dict(sorted(self.flags.items())),
            "premise_patterns": dict(sorted(self.premise_patterns.items())),
            "rejection_reasons": self.rejection_reasons(),
            "rejected": [r.to_dict() for r in self.rejected],
            "ignored_files": list(self.ignored_files),
            "rules": list(self.rules),
        }


# ----------------------------------------------------------------------------- helpers

def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _pad(raw: str) -> str:
    """'42' -> '0042', '93_factual' -> '0093-factual', anything else slugged."""
    match = re.fullmatch(r"(\d+)(?:[_-](.+))?", raw)
    if not match:
        return _slug(raw)
    head = f"{int(match.group(1)):04d}"
    return f"{head}-{_slug(match.group(2))}" if match.group(2) else head


def _clean(text: str) -> str:
    return " ".join(text.split())


def _text(record: dict[str, Any], key: str) -> str | None:
    """A non-blank string field, stripped; None when absent, blank or not a string."""
    value = record.get(key)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _raw_id(record: dict[str, Any], key: str = "id") -> str | None:
    value = record.get(key)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _record_label(record: Any, index: int) -> str:
    if isinstance(record, dict):
        rid = _raw_id(record)
        if rid is not None:
            return f"id={rid}"
    return f"#{index}"


def _load_list(root: Path, path: Path) -> list[Any]:
    rel = path.relative_to(root).as_posix()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReleaseError(f"{rel}: cannot read ({exc.__class__.__name__}: {exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReleaseError(f"{rel}: malformed JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(data, list):
        raise ReleaseError(f"{rel}: expected a JSON list of records, got {type(data).__name__}")
    return data


def _json_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.rglob("*.json") if p.is_file()), key=lambda p: p.relative_to(folder).as_posix())


def _domain_prefix(rel_in_prompt: str) -> tuple[str, str] | None:
    """('physics', 'physics-optics') for 'physics/Optics.json'; ('biology', 'biology') for 'Biology.json'."""
    parts = rel_in_prompt[: -len(".json")].split("/")
    if len(parts) == 2 and parts[0].lower() == "physics":
        return "physics", f"physics-{_slug(parts[1])}"
    if len(parts) == 1 and parts[0].lower() in DOMAIN_BY_STEM:
        domain = DOMAIN_BY_STEM[parts[0].lower()]
        return domain, domain
    return None


def extract_premise(l3: str, l2: str) -> tuple[str, str]:
    """The counterfactual premise as it stands in the prompts, and the pattern that found it ("" and "" when none).

    The leading "If / In a world / Imagine ..." clause first (L3, then L2), then an "if" clause ending
    at ", draw", a "but assume" clause, an "in a universe where" clause, an opening L2 statement that
    L3 does not contain, and an L3 "where" clause."""
    for prompt in (l3, l2):
        match = PREMISE.match(prompt)
        if match:
            return _clean(match.group(1)).rstrip(" ,."), "leading_clause"
    for name, pattern in PREMISE_PATTERNS:
        for prompt in (l3, l2):
            match = pattern.search(prompt)
            if match:
                return _clean(match.group(1)).rstrip(" ,."), name
    match = L2_STATEMENT.match(l2)
    if match and not re.search(r"\b(?:draw|show|depict)\b", match.group(1), re.IGNORECASE) \
            and _clean(match.group(1)) not in _clean(l3):
        return _clean(match.group(1)), "l2_statement"
    match = WHERE_CLAUSE.search(l3)
    if match:
        return _clean(match.group(1)).rstrip(" ,."), "where_clause"
    return "", ""


# ----------------------------------------------------------------------------- importer

class _Importer:
    def __init__(self, root: Path):
        self.root = root
        self.report = ImportReport(root=str(root))
        # (path relative to prompt/, raw id) -> index in report.scenarios
        self.by_key: dict[tuple[str, str], int] = {}
        self.questions: dict[int, list[Question]] = {}
        self.raw_category: dict[int, str] = {}
        self.ids: set[str] = set()

    def reject(self, rel: str, label: str, reason: str) -> None:
        self.report.rejected.append(Rejection(rel, label, reason))
        self.report.files[rel].rejected += 1

    def run(self) -> ImportReport:
        root = self.root
        if not root.exists():
            raise ReleaseError(f"{root}: no such file or directory")
        if not root.is_dir():
            raise ReleaseError(f"{root}: not a directory (expected the CF-World release folder)")
        if not (root / "prompt").is_dir():
            raise ReleaseError(f"{root}: no prompt/ folder (expected the CF-World release folder)")
        loaded = {}
        for folder in ("prompt", "eval_questions", "prompt_ablation"):
            for path in _json_files(root / folder):
                loaded[path.relative_to(root).as_posix()] = _load_list(root, path)
        self.report.ignored_files = [rel for rel in (p.relative_to(root).as_posix() for p in _json_files(root)) if rel not in loaded]
        for rel, records in loaded.items():
            if rel.startswith("prompt/"):
                self.import_scenarios(rel, records)
        for rel, records in loaded.items():
            if rel.startswith("eval_questions/"):
                self.import_questions(rel, records)
        for rel, records in loaded.items():
            if rel.startswith("prompt_ablation/"):
                self.import_probes(rel, records)
        self.finish()
        return self.report

    # -- scenarios
    def import_scenarios(self, rel: str, records: list[Any]) -> None:
        count = self.report.files[rel] = FileCount("scenarios", read=len(records))
        rel_in_prompt = rel[len("prompt/"):]
        prefix = _domain_prefix(rel_in_prompt)
        stem = Path(rel).stem
        seen: set[str] = set()
        for index, record in enumerate(records):
            label = _record_label(record, index)
            if prefix is None:
                self.reject(rel, label, "unknown discipline file: not physics/<subfield>.json or Biology/Chemical/Geography/Sociology")
                continue
            if not isinstance(record, dict):
                self.reject(rel, label, f"record is not an object: {type(record).__name__}")
                continue
            unknown = sorted(set(record) - SCENARIO_FIELDS)
            if unknown:
                self.reject(rel, label, f"unknown fields: {', '.join(unknown)}")
                continue
            raw_id = _raw_id(record)
            if raw_id is None:
                self.reject(rel, label, "missing id: no usable id")
                continue
            if raw_id in seen:
                self.reject(rel, label, f"duplicate id within file: {raw_id}")
                continue
            found = {lvl: _text(record, f"prompt_{lvl}") for lvl in LEVELS}
            missing = [f"prompt_{lvl}" for lvl, p in found.items() if p is None]
            if missing:
                self.reject(rel, label, f"missing prompt: {', '.join(missing)}")
                continue
            prompts = {lvl: p for lvl, p in found.items() if p is not None}
            scenario_id = f"{prefix[1]}-{_pad(raw_id)}"
            if scenario_id in self.ids:
                self.reject(rel, label, f"scenario id collision: {scenario_id}")
                continue
            seen.add(raw_id)
            flags: list[str] = []
            category = _text(record, "category")
            if category is None:
                subdomain = stem
                flags.append("category_from_filename")
            else:
                subdomain = _clean(category)
            ap1 = _text(record, "ap_l1") or ""
            ap2 = _text(record, "ap_l2")
            ap3 = _text(record, "ap_l3")
            if ap3 is None and _text(record, "ap_3") is not None:
                ap3 = _text(record, "ap_3")
                flags.append("ap_3_alias")
            if ap3 is None and ap2 is not None:
                ap3 = ap2
                flags.append("ap_l3_from_l2")
            if ap2 is None and ap3 is not None:
                ap2 = ap3
                flags.append("ap_l2_from_l3")
            for lvl, ap in (("l1", ap1), ("l2", ap2), ("l3", ap3)):
                if not ap:
                    flags.append(f"missing_ap_{lvl}")
            counterfactual, pattern = extract_premise(prompts["l3"], prompts["l2"])
            if counterfactual:
                self.report.premise_patterns[pattern] += 1
            else:
                flags.append("counterfactual_not_extracted")
            canonical = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            scenario = Scenario(
                id=scenario_id, domain=prefix[0], subdomain=subdomain, law="", counterfactual=counterfactual,
                levels={"l1": Level(prompts["l1"], ap1), "l2": Level(prompts["l2"], ap2 or ""), "l3": Level(prompts["l3"], ap3 or "")},
                questions=(),
                provenance=Provenance(
                    kind="imported", model="", prompt_hash=hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
                    review_status="imported", source=f"{SOURCE}:{rel}#{raw_id}", flags=tuple(flags),
                ),
            )
            position = len(self.report.scenarios)
            self.report.scenarios.append(scenario)
            self.by_key[(rel_in_prompt, raw_id)] = position
            self.ids.add(scenario_id)
            self.questions[position] = []
            self.raw_category[position] = subdomain if category is not None else ""
            count.imported += 1

    # -- questions
    def import_questions(self, rel: str, records: list[Any]) -> None:
        count = self.report.files[rel] = FileCount("questions", read=len(records))
        rel_in_eval = rel[len("eval_questions/"):]
        rel_in_prompt = re.sub(r"_gemini\.json$", ".json", rel_in_eval)
        has_prompt_file = f"prompt/{rel_in_prompt}" in self.report.files
        seen: set[str] = set()
        for index, record in enumerate(records):
            label = _record_label(record, index)
            if not has_prompt_file:
                self.reject(rel, label, f"no matching prompt file: prompt/{rel_in_prompt}")
                continue
            if not isinstance(record, dict):
                self.reject(rel, label, f"record is not an object: {type(record).__name__}")
                continue
            unknown = sorted(set(record) - QUESTION_FIELDS)
            if unknown:
                self.reject(rel, label, f"unknown fields: {', '.join(unknown)}")
                continue
            qid = _raw_id(record)
            if qid is not None and qid in seen:
                self.reject(rel, label, f"duplicate id within file: {qid}")
                continue
            source_id = _raw_id(record, "source_id")
            position = self.by_key.get((rel_in_prompt, source_id)) if source_id is not None else None
            if position is None:
                self.reject(rel, label, f"unmatched source_id: {source_id!r} is not an imported scenario of prompt/{rel_in_prompt}")
                continue
            level = (_text(record, "prompt_level") or "").lower()
            if level not in LEVELS:
                self.reject(rel, label, f"unknown prompt_level: {record.get('prompt_level')!r}")
                continue
            qtype = _text(record, "question_type") or ""
            dimension = DIMENSION_BY_TYPE.get(_clean(qtype).lower())
            if dimension is None:
                self.reject(rel, label, f"unknown question_type: {qtype!r}")
                continue
            question = _text(record, "question")
            if question is None:
                self.reject(rel, label, "missing question: empty or absent")
                continue
            weight = record.get("weight")
            if isinstance(weight, bool) or not isinstance(weight, int | float) or not weight > 0:
                self.reject(rel, label, f"bad weight: {weight!r}")
                continue
            if qid is not None:
                seen.add(qid)
            qcat = _text(record, "category")
            if qcat is not None and _clean(qcat) != self.raw_category[position]:
                self.report.flags["question_category_mismatch"] += 1
            self.questions[position].append(
                Question(level=level, dimension=dimension, question=question, criteria=_text(record, "evaluation_criteria") or "",
                         weight=float(weight), source_id=qid or "", generator_model=_text(record, "generator_model") or "")
            )
            count.imported += 1

    # -- probes
    def import_probes(self, rel: str, records: list[Any]) -> None:
        count = self.report.files[rel] = FileCount("probes", read=len(records))
        rel_in_ablation = rel[len("prompt_ablation/"):]
        if rel_in_ablation == "rule_decouple.json":
            kind = "rule_decouple"
        elif rel_in_ablation == "attribute_decouple.json":
            kind = "attribute_decouple"
        elif rel_in_ablation.startswith("de-norm/"):
            kind = "de_norm"
        else:
            kind = ""
        seen = {p.id for p in self.report.probes}
        for index, record in enumerate(records):
            label = _record_label(record, index)
            if not kind:
                self.reject(rel, label, "unknown probe file: not rule_decouple.json, attribute_decouple.json or de-norm/")
                continue
            if not isinstance(record, dict):
                self.reject(rel, label, f"record is not an object: {type(record).__name__}")
                continue
            raw_id = _raw_id(record)
            prompt = _text(record, "prompt")
            if raw_id is None or prompt is None:
                self.reject(rel, label, "missing id or prompt")
                continue
            variant = _clean(_text(record, "category") or "")
            source = f"{SOURCE}:{rel}#{raw_id}"
            if kind == "rule_decouple":
                extra = sorted(set(record) - {"id", "rule_id", "category", "prompt", "ap"})
                group = _raw_id(record, "rule_id") or ""
                probe = ProbeRecord(f"rule-decouple-{_pad(raw_id)}", kind, prompt, _text(record, "ap") or "",
                                    variant=variant, group=group, source=source)
            elif kind == "attribute_decouple":
                extra = sorted(set(record) - {"id", "A", "B", "category", "prompt"})
                attributes = tuple((key, _clean(record[key])) for key in ("A", "B") if isinstance(record.get(key), str))
                probe = ProbeRecord(f"attribute-decouple-{_pad(raw_id)}", kind, prompt, variant=variant,
                                    group=raw_id.split("_")[0], attributes=attributes, source=source)
            else:
                extra = sorted(set(record) - {"id", "category", "prompt"})
                rel_in_prompt = rel_in_ablation[len("de-norm/"):]
                position = self.by_key.get((rel_in_prompt, raw_id))
                if position is None:
                    self.reject(rel, label, f"unmatched id: {raw_id!r} is not an imported scenario of prompt/{rel_in_prompt}")
                    continue
                scenario = self.report.scenarios[position]
                probe = ProbeRecord(f"de-norm-{scenario.id}", kind, prompt, scenario.levels["l2"].assessment_point,
                                    source_scenario_id=scenario.id, variant=variant, source=source)
            if extra:
                self.reject(rel, label, f"unknown fields: {', '.join(extra)}")
                continue
            if probe.id in seen:
                self.reject(rel, label, f"duplicate probe id: {probe.id}")
                continue
            seen.add(probe.id)
            self.report.probes.append(probe)
            count.imported += 1

    # -- attach questions, final flags
    def finish(self) -> None:
        final = []
        for position, scenario in enumerate(self.report.scenarios):
            questions = tuple(self.questions[position])
            flags = list(scenario.provenance.flags)
            for lvl in LEVELS:
                if not any(q.level == lvl for q in questions):
                    flags.append(f"no_questions_{lvl}")
            status = "needs_review" if any(f.startswith(REVIEW_FLAGS) for f in flags) else "imported"
            provenance = Provenance(kind="imported", model=scenario.provenance.model, prompt_hash=scenario.provenance.prompt_hash,
                                    review_status=status, source=scenario.provenance.source, flags=tuple(flags))
            self.report.flags.update(flags)
            final.append(Scenario(scenario.id, scenario.domain, scenario.subdomain, scenario.law, scenario.counterfactual,
                                  scenario.levels, questions, provenance))
        self.report.scenarios = final


def import_release(root: Path) -> ImportReport:
    """Read the official CF-World release folder; raises ReleaseError if it cannot be read at all."""
    return _Importer(Path(root)).run()


# ----------------------------------------------------------------------------- optional LLM fill of `law`

LAW_SCHEMA_NAME = "cfworld_law"
LAW_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["law"],
    "properties": {"law": {"type": "string", "minLength": 1}},
}
LAW_INSTRUCTIONS = (
    "You annotate scenarios of CF-World, a benchmark of counterfactual text-to-image prompts. Each scenario changes one "
    "law of nature or society (the premise) and asks for a picture of the consequence. Given the scenario's category, "
    "its factual prompt and its counterfactual premise, state the real-world law that the premise changes, as it holds "
    "in our world: one declarative sentence of at most 30 words, general (not about the pictured objects only), "
    "with no condition ('if') and no mention of the counterfactual. Answer with JSON: {\"law\": \"...\"}."
)
MAX_LAW_WORDS = 40


def law_messages(scenario: Scenario) -> list[dict[str, str]]:
    request = {"domain": scenario.domain, "category": scenario.subdomain, "factual_prompt": scenario.levels["l1"].prompt,
               "counterfactual_premise": scenario.counterfactual, "counterfactual_prompt": scenario.levels["l2"].prompt}
    return [{"role": "system", "content": LAW_INSTRUCTIONS},
            {"role": "user", "content": json.dumps(request, ensure_ascii=False, sort_keys=True)}]


def law_problems(scenario: Scenario, law: str) -> list[str]:
    """Why a proposed law is unusable (empty when usable): the client asks again, then the law stays empty."""
    text = " ".join(law.split())
    problems = []
    if len(text.split()) > MAX_LAW_WORDS:
        problems.append(f"longer than {MAX_LAW_WORDS} words")
    if re.match(r"(?i)(if|imagine|suppose|assume|in a world)\b", text):
        problems.append("states a condition, not a law")
    if text.endswith("?"):
        problems.append("is a question")
    if len(re.findall(r"[.!?](?:\s|$)", text)) > 1:
        problems.append("more than one sentence")
    if scenario.counterfactual and " ".join(scenario.counterfactual.lower().split()) in text.lower():
        problems.append("repeats the counterfactual premise")
    return problems


@dataclass
class LawFillReport:
    filled: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # scenario id -> why no law was accepted
    skipped: int = 0  # scenarios that already had a law
    usage: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"filled": len(self.filled), "failed": dict(sorted(self.failed.items())), "skipped": self.skipped,
                "usage": dict(self.usage)}


def fill_laws(scenarios: list[Scenario], client: Any, progress: Any = None) -> tuple[list[Scenario], LawFillReport]:
    """The scenarios with an empty ``law`` filled through an LLM (``vrforge.openai_client.ChatClient``), in the given order.

    Each answer is checked by ``law_problems`` (the client retries a rejected one) and cached by the
    client, so a rerun costs nothing. A filled scenario records the model in its provenance and the
    flag ``law_from_llm``; one without a usable answer keeps an empty law and the flag
    ``law_not_filled``. An HTTP error (bad key, unknown model) stops the fill: it would fail every
    scenario the same way."""
    from dataclasses import replace

    from vrforge.openai_client import ChatError

    report = LawFillReport()
    out: list[Scenario] = []
    for scenario in scenarios:
        if scenario.law.strip():
            report.skipped += 1
            out.append(scenario)
            continue

        def check(data: dict[str, Any], scenario: Scenario = scenario) -> None:
            problems = law_problems(scenario, data["law"])
            if problems:
                raise ValueError("the law " + "; ".join(problems))

        try:
            result = client.complete_json(law_messages(scenario), LAW_SCHEMA, LAW_SCHEMA_NAME, validate=check)
        except ChatError as exc:
            if exc.kind == "http":
                raise
            report.failed[scenario.id] = str(exc)
            provenance = replace(scenario.provenance, flags=(*scenario.provenance.flags, "law_not_filled"))
            out.append(replace(scenario, provenance=provenance))
            continue
        finally:
            if progress is not None:
                progress.update(1)
        provenance = replace(scenario.provenance, model=result.model or client.config.model,
                             flags=(*scenario.provenance.flags, "law_from_llm"))
        out.append(replace(scenario, law=" ".join(result.data["law"].split()), provenance=provenance))
        report.filled.append(scenario.id)
    report.usage = client.usage_dict()
    return out, report
