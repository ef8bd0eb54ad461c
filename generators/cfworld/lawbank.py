"""The CF-World law bank (``laws/<domain>.yaml``) and the curated seed scenarios (``seeds/<domain>.yaml``).

A law file::

    domain: physics
    laws:
      - id: mechanics-released-objects-fall   # kebab-case, unique across all files, subdomain-prefixed
        subdomain: mechanics
        law: "..."                     # the real law, one sentence
        counterfactual: "..."          # the changed law
        scene: "..."                   # one concrete scene where the law shows
        factual_outcome: "..."         # one visible fact under the real law
        counterfactual_outcome: "..."  # one visible fact under the changed law
        outcome_terms: ["..."]         # phrases naming the counterfactual outcome; no L3 prompt may contain one

Physics subdomains are the five of the benchmark; other domains use any snake_case name.
A seed file holds ``scenarios:``, a list of scenarios in ``Scenario.to_dict()`` form, each
the curated scenario of the law with the same id (same domain, subdomain, law and
counterfactual text), provenance kind ``manual`` and review status ``approved``, and each
passing ``validate_scenario``. Any problem raises ``LawBankError`` with one line naming
the file and record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vrforge.generators.cfworld.validation import validate_scenario
from vrforge.schemas.cfworld import DOMAINS, Scenario, scenario_schema_errors

PACKAGE_DIR = Path(__file__).resolve().parent
LAWS_DIR = PACKAGE_DIR / "laws"
SEEDS_DIR = PACKAGE_DIR / "seeds"
PHYSICS_SUBDOMAINS = ("mechanics", "optics", "thermodynamics", "astronomy", "electromagnetism")
LAW_FIELDS = ("id", "subdomain", "law", "counterfactual", "scene", "factual_outcome", "counterfactual_outcome",
              "outcome_terms")
ID_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SUBDOMAIN_PATTERN = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


class LawBankError(ValueError):
    """A law or seed file cannot be used; the message is one line."""


@dataclass(frozen=True)
class Law:
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


def _yaml_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise LawBankError(f"{folder}: no such folder")
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml"))


def _read_mapping(path: Path, key: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise LawBankError(f"{path.name}: cannot read ({exc.__class__.__name__}: {exc})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise LawBankError(f"{path.name}: malformed YAML{where}: {' '.join(str(problem).split())}") from None
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        raise LawBankError(f"{path.name}: expected a mapping with a '{key}:' list")
    return data


def _law_problems(record: Any, domain: str) -> list[str]:
    if not isinstance(record, dict):
        return [f"not a mapping ({type(record).__name__})"]
    problems = []
    missing = [name for name in LAW_FIELDS if name not in record]
    unknown = sorted(set(record) - set(LAW_FIELDS))
    if missing:
        problems.append(f"missing field(s): {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown field(s): {', '.join(map(str, unknown))}")
    for name in LAW_FIELDS[:-1]:
        if name in record and not (isinstance(record[name], str) and record[name].strip()):
            problems.append(f"{name} must be a non-empty string")
    terms = record.get("outcome_terms")
    if "outcome_terms" in record and not (isinstance(terms, list) and terms
                                          and all(isinstance(t, str) and t.strip() for t in terms)):
        problems.append("outcome_terms must be a non-empty list of non-empty strings")
    law_id, subdomain = record.get("id"), record.get("subdomain")
    if isinstance(law_id, str) and not ID_PATTERN.match(law_id):
        problems.append(f"id {law_id!r} is not kebab-case")
    if isinstance(subdomain, str):
        if domain == "physics" and subdomain not in PHYSICS_SUBDOMAINS:
            problems.append(f"physics subdomain {subdomain!r} is not one of {', '.join(PHYSICS_SUBDOMAINS)}")
        elif not SUBDOMAIN_PATTERN.match(subdomain):
            problems.append(f"subdomain {subdomain!r} is not snake_case")
        elif isinstance(law_id, str) and not law_id.startswith(subdomain.replace("_", "-") + "-"):
            problems.append(f"id {law_id!r} does not start with its subdomain '{subdomain.replace('_', '-')}-'")
    return problems


def _label(index: int, record: Any) -> str:
    law_id = record.get("id") if isinstance(record, dict) else None
    return f"laws[{index}] (id={law_id})" if isinstance(law_id, str) else f"laws[{index}]"


def _raise_first(problems: list[str]) -> None:
    if problems:
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise LawBankError(problems[0] + more)


def load_laws(folder: Path | str | None = None) -> list[Law]:
    """Every law of ``folder`` (default: the package's laws/), sorted by (domain, id); LawBankError on any problem."""
    folder = Path(folder) if folder is not None else LAWS_DIR
    laws: list[Law] = []
    seen: dict[str, str] = {}
    problems: list[str] = []
    for path in _yaml_files(folder):
        data = _read_mapping(path, "laws")
        domain = data.get("domain")
        if domain not in DOMAINS:
            problems.append(f"{path.name}: domain {domain!r} is not one of {', '.join(DOMAINS)}")
            continue
        extra = sorted(set(data) - {"domain", "laws"})
        if extra:
            problems.append(f"{path.name}: unknown top-level key(s): {', '.join(map(str, extra))}")
        for index, record in enumerate(data["laws"]):
            found = _law_problems(record, domain)
            if found:
                problems += [f"{path.name}: {_label(index, record)}: {p}" for p in found]
                continue
            if record["id"] in seen:
                problems.append(f"{path.name}: {_label(index, record)}: duplicate id (also in {seen[record['id']]})")
                continue
            seen[record["id"]] = path.name
            laws.append(Law(
                id=record["id"], domain=domain, subdomain=record["subdomain"],
                law=" ".join(record["law"].split()), counterfactual=" ".join(record["counterfactual"].split()),
                scene=record["scene"].strip(), factual_outcome=record["factual_outcome"].strip(),
                counterfactual_outcome=record["counterfactual_outcome"].strip(),
                outcome_terms=tuple(t.strip() for t in record["outcome_terms"]),
            ))
    _raise_first(problems)
    return sorted(laws, key=lambda law: (DOMAINS.index(law.domain), law.id))


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def seed_problems(scenario: Scenario, law: Law | None, existing: list[Scenario], embed: Any = None,
                  validate: bool = True) -> list[str]:
    """Why a curated scenario cannot be a seed (empty when it can)."""
    if law is None:
        return ["no law with this id"]
    problems = []
    for name in ("domain", "subdomain", "law", "counterfactual"):
        if not _same_text(getattr(scenario, name), getattr(law, name)):
            problems.append(f"{name} differs from the law's")
    if scenario.provenance.kind != "manual" or scenario.provenance.review_status != "approved":
        problems.append("provenance must be kind manual, review_status approved")
    return problems + (validate_scenario(scenario, law, existing, embed=embed) if validate else [])


def load_seed_scenarios(folder: Path | str | None = None, laws: list[Law] | None = None,
                        embed: Any = None, validate: bool = True) -> list[Scenario]:
    """The curated seed scenarios of ``folder`` (default: the package's seeds/), sorted by (domain, id).

    ``laws`` defaults to ``load_laws()``; ``embed`` is passed to ``validate_scenario`` (None:
    lexical checks only, so loading needs no model); ``validate=False`` checks the schema,
    the law match and the provenance only (for using the seeds as examples).
    """
    folder = Path(folder) if folder is not None else SEEDS_DIR
    by_id = {law.id: law for law in (laws if laws is not None else load_laws())}
    seeds: list[Scenario] = []
    problems: list[str] = []
    for path in _yaml_files(folder):
        data = _read_mapping(path, "scenarios")
        for index, record in enumerate(data["scenarios"]):
            label = f"scenarios[{index}]" + (f" (id={record['id']})" if isinstance(record, dict) and "id" in record else "")
            if not isinstance(record, dict):
                problems.append(f"{path.name}: {label}: not a mapping")
                continue
            errors = scenario_schema_errors(record)
            if errors:
                problems.append(f"{path.name}: {label}: schema: {errors[0]}")
                continue
            scenario = Scenario.from_dict(record)
            if any(s.id == scenario.id for s in seeds):
                problems.append(f"{path.name}: {label}: duplicate seed id")
                continue
            found = seed_problems(scenario, by_id.get(scenario.id), seeds, embed, validate)
            if found:
                problems += [f"{path.name}: {label}: {p}" for p in found]
                continue
            seeds.append(scenario)
    _raise_first(problems)
    return sorted(seeds, key=lambda s: (DOMAINS.index(s.domain), s.id))
