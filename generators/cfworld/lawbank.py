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

The packaged seeds are written in the compact authoring form (``format: compact``), one
record per scenario holding the law and everything a person writes for it::

    domain: physics
    format: compact
    scenarios:
      - id: optics-lenses-converge-light     # as above
        subdomain: optics
        topic: lenses                         # the official-release subcategory group (see TOPICS)
        law: "..."                            # the real law
        counterfactual: "..."                 # the changed mechanism; never the visible outcome
        l1: "..."                             # the scene, no outcome sentence
        l2: "..."                             # premise, scene and the outcome stated
        l3: "..."                             # premise and scene, 12-25 words
        factual: "..."                        # L1 assessment point (a single visible fact)
        outcome: "..."                        # L2/L3 assessment point
        accept: ["..."]                       # other depictions of the same consequence the L3/L2 judge accepts
        anchors: ["..."]                      # scene anchors every prompt asks for (visual integrity, every level)
        subjects: "..."                       # what visual integrity inspects
        l1_checks: ["..."]                    # single visible checks of the real scene
        checks: ["..."]                       # single visible checks under the change
        knock_on: ["..."]                     # visible knock-on effects of the change (also checks)
        terms: ["..."]                        # outcome phrases no L3 prompt may contain

``expand`` turns a record into its ``Law`` and its ``Scenario`` (questions built from the
checks, one question per check, the dimension's weight split between them), and
``law_files_text`` writes the law bank (``laws/<domain>.yaml``) from the compact seeds, so
the two never disagree.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from vrforge.errors import UserError
from vrforge.generators.cfworld.validation import validate_scenario, validate_set
from vrforge.schemas.cfworld import DOMAINS, Law, Level, Provenance, Question, Scenario, scenario_schema_errors

PACKAGE_DIR = Path(__file__).resolve().parent
LAWS_DIR = PACKAGE_DIR / "laws"
SEEDS_DIR = PACKAGE_DIR / "seeds"
PHYSICS_SUBDOMAINS = ("mechanics", "optics", "thermodynamics", "astronomy", "electromagnetism")
LAW_FIELDS = ("id", "subdomain", "law", "counterfactual", "scene", "factual_outcome", "counterfactual_outcome",
              "outcome_terms")
# libyaml's loader when present: the pure-Python one takes seconds for the 400 seed records.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
ID_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SUBDOMAIN_PATTERN = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


class LawBankError(UserError, ValueError):
    """A law or seed file cannot be used; the message is one line."""


def _yaml_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise LawBankError(f"{folder}: no such folder")
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml"))


def _read_mapping(path: Path, key: str) -> dict[str, Any]:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
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
    compact = {scenario.id: scenario for _, scenario, _ in read_compact(folder)}
    for path in _yaml_files(folder):
        data = _read_mapping(path, "scenarios")
        records = data["scenarios"]
        if data.get("format") == "compact":
            records = [compact[r["id"]].to_dict() for r in records]
        for index, record in enumerate(records):
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
    if validate and not problems:
        problems += [f"{folder.name}: {p}" for p in validate_set(seeds)]
    _raise_first(problems)
    return sorted(seeds, key=lambda s: (DOMAINS.index(s.domain), s.id))


# ----------------------------------------------------------------------------- the compact authoring form

COMPACT_REQUIRED = ("id", "subdomain", "topic", "law", "counterfactual", "l1", "l2", "l3", "factual", "outcome",
                    "subjects", "l1_checks", "checks", "knock_on", "terms")
COMPACT_OPTIONAL = ("accept", "anchors")
COMPACT_LISTS = ("l1_checks", "checks", "knock_on", "terms", "accept", "anchors")
WEIGHTS = {"visual_integrity": 3.0, "assessment_point": 15.0, "logic_consistency": 8.0}


def _sentence(text: str) -> str:
    text = " ".join(text.split()).rstrip(". ")
    return text[:1].upper() + text[1:] + "."


def _clause(text: str) -> str:
    """An assessment point as a clause after "that": lower-case first letter, no full stop."""
    text = " ".join(text.split()).rstrip(". ")
    return text if len(text) > 1 and text[1].isupper() else text[:1].lower() + text[1:]  # keep "UV", lower "A pile"


def _either(points: list[str]) -> str:
    return "; ".join(_clause(p) for p in points)


def compact_questions(record: dict[str, Any]) -> tuple[Question, ...]:
    """The judge questions of a compact record: per level one visual-integrity question, one
    assessment-point question (L2/L3 accepting every listed depiction) and one question per single check."""
    subjects = " ".join(record["subjects"].split())
    factual, outcome = _clause(record["factual"]), _clause(record["outcome"])
    accepted = [record["outcome"], *record.get("accept", [])]
    questions: list[Question] = []

    # source_id names the record field a question comes from ("anchors.0", "knock_on.1"), so a built
    # release can still be read back as its record (see rubric.RubricRecord.from_scenario).
    def add(level: str, dimension: str, question: str, criteria: str, weight: float, role: str) -> None:
        questions.append(Question(level=level, dimension=dimension, question=question, criteria=criteria, weight=weight,
                                  source_id=role))

    anchors = [" ".join(a.split()) for a in record.get("anchors", [])]
    integrity_weight = round(WEIGHTS["visual_integrity"] / (1 + len(anchors)), 4)
    for level in ("l1", "l2", "l3"):
        lead = "Is the image" if level == "l1" else "Setting the changed law aside, is the image"
        add(level, "visual_integrity", f"{lead} free of rendering artifacts, with {subjects} clearly and naturally drawn?",
            f"1: {subjects} all well formed; 0.5: minor artifacts or distortions; 0: severe artifacts, or {subjects} "
            "warped, merged or missing", integrity_weight, "subjects")
        # Scene anchors ("Is there a seal on the ice") ask whether the scene is there, not whether the law holds.
        for index, anchor in enumerate(anchors):
            add(level, "visual_integrity", anchor if anchor.endswith("?") else anchor + "?",
                "1: yes, clearly; 0.5: partly or ambiguous; 0: no", integrity_weight, f"anchors.{index}")
        if level == "l1":
            add(level, "assessment_point", f"Does the image show that {factual}?",
                f"1: clearly shows that {factual}; 0.5: suggested but ambiguous or partly hidden; 0: not shown, "
                f"or instead {outcome}", WEIGHTS["assessment_point"], "factual")
            checks = [(f"l1_checks.{i}", c) for i, c in enumerate(record["l1_checks"])]
        else:
            if len(accepted) > 1:
                question = (f"Does the image show the consequence of the change in any of these forms: "
                            f"{_either(accepted)}?")
            else:
                question = f"Does the image show that {outcome}?"
            add(level, "assessment_point", question,
                f"1: clearly shows any one of: {_either(accepted)}; 0.5: present but weak, partial or ambiguous; "
                f"0: the ordinary result ({factual}) or no visible effect", WEIGHTS["assessment_point"], "outcome")
            checks = [(f"{name}.{i}", c) for name in ("checks", "knock_on") for i, c in enumerate(record[name])]
        weight = round(WEIGHTS["logic_consistency"] / len(checks), 4)
        for role, check in checks:
            text = " ".join(check.split())
            add(level, "logic_consistency", text if text.endswith("?") else text + "?",
                "1: yes, clearly; 0.5: partly or ambiguous; 0: no", weight, role)
    return tuple(questions)


def compact_problems(record: Any) -> list[str]:
    """Why a compact record cannot be expanded (empty when it can)."""
    if not isinstance(record, dict):
        return [f"not a mapping ({type(record).__name__})"]
    problems = []
    missing = [name for name in COMPACT_REQUIRED if name not in record]
    unknown = sorted(set(record) - set(COMPACT_REQUIRED) - set(COMPACT_OPTIONAL))
    if missing:
        problems.append(f"missing field(s): {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown field(s): {', '.join(map(str, unknown))}")
    for name in COMPACT_REQUIRED:
        value = record.get(name)
        if name not in record:
            continue
        if name in COMPACT_LISTS:
            if name != "knock_on" and not (isinstance(value, list) and value):
                problems.append(f"{name} must be a non-empty list")
            elif not (isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)):
                problems.append(f"{name} must be a list of non-empty strings")
        elif not (isinstance(value, str) and value.strip()):
            problems.append(f"{name} must be a non-empty string")
    for name in COMPACT_OPTIONAL:  # optional: a record written before v0.3 has no anchors
        value = record.get(name, [])
        if not (isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)):
            problems.append(f"{name} must be a list of non-empty strings")
    return problems


def expand(record: dict[str, Any], domain: str, source: str) -> tuple[Law, Scenario]:
    """A compact record's law-bank entry and curated scenario (the record must have no ``compact_problems``)."""
    text = {name: " ".join(record[name].split()) for name in COMPACT_REQUIRED if name not in COMPACT_LISTS}
    law = Law(id=text["id"], domain=domain, subdomain=text["subdomain"], law=text["law"],
              counterfactual=text["counterfactual"], scene=text["l1"], factual_outcome=_sentence(text["factual"]),
              counterfactual_outcome=_sentence(text["outcome"]), outcome_terms=tuple(t.strip() for t in record["terms"]))
    levels = {"l1": Level(text["l1"], law.factual_outcome), "l2": Level(text["l2"], law.counterfactual_outcome),
              "l3": Level(text["l3"], law.counterfactual_outcome)}
    scenario = Scenario(id=law.id, domain=domain, subdomain=law.subdomain, law=law.law, counterfactual=law.counterfactual,
                        levels=levels, questions=compact_questions(record),
                        provenance=Provenance(kind="manual", review_status="approved", source=source,
                                              flags=(f"topic:{text['topic']}",)))
    return law, scenario


def read_compact(folder: Path | str | None = None) -> list[tuple[Law, Scenario, str]]:
    """Every compact record of ``folder`` (default: the package's seeds/) expanded, as (law, scenario, topic),
    sorted by (domain, id); LawBankError (one line) on any problem."""
    folder = Path(folder) if folder is not None else SEEDS_DIR
    out: list[tuple[Law, Scenario, str]] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for path in _yaml_files(folder):
        data = _read_mapping(path, "scenarios")
        if data.get("format") != "compact":
            continue
        domain = data.get("domain")
        if domain not in DOMAINS:
            problems.append(f"{path.name}: domain {domain!r} is not one of {', '.join(DOMAINS)}")
            continue
        for index, record in enumerate(data["scenarios"]):
            label = f"scenarios[{index}]" + (f" (id={record['id']})" if isinstance(record, dict) and "id" in record else "")
            found = compact_problems(record)
            if not found:
                law_record = {"id": record["id"], "subdomain": record["subdomain"], "law": record["law"],
                              "counterfactual": record["counterfactual"], "scene": record["l1"],
                              "factual_outcome": record["factual"], "counterfactual_outcome": record["outcome"],
                              "outcome_terms": record["terms"]}
                found = _law_problems(law_record, domain)
            if not found and record["id"] in seen:
                found = [f"duplicate id (also in {seen[record['id']]})"]
            if found:
                problems += [f"{path.name}: {label}: {p}" for p in found]
                continue
            seen[record["id"]] = path.name
            law, scenario = expand(record, domain, f"vrforge:seeds/{path.name}")
            out.append((law, scenario, " ".join(record["topic"].split())))
    _raise_first(problems)
    return sorted(out, key=lambda item: (DOMAINS.index(item[0].domain), item[0].id))


def topic_of(scenario: Scenario) -> str:
    """The official-subcategory group a curated scenario covers (its ``topic:`` flag), or ""."""
    return next((flag[len("topic:"):] for flag in scenario.provenance.flags if flag.startswith("topic:")), "")


def law_files_text(folder: Path | str | None = None) -> dict[str, str]:
    """The law bank files (name -> YAML text) implied by the compact seeds of ``folder``."""
    by_domain: dict[str, list[dict[str, Any]]] = {}
    for law, _, _ in read_compact(folder):
        record = law.to_dict()
        record.pop("domain")
        by_domain.setdefault(law.domain, []).append(record)
    header = ("# Generated from seeds/{domain}.yaml by vrforge.generators.cfworld.lawbank.write_law_files:\n"
              "# edit the seeds, then regenerate.\n")
    return {f"{domain}.yaml": header.format(domain=domain) + yaml.safe_dump(
        {"domain": domain, "laws": records}, sort_keys=False, allow_unicode=True, width=120)
        for domain, records in by_domain.items()}


def write_law_files(seeds: Path | str | None = None, laws: Path | str | None = None) -> list[Path]:
    """Regenerate ``laws/<domain>.yaml`` from the compact seeds."""
    folder = Path(laws) if laws is not None else LAWS_DIR
    written = []
    for name, text in sorted(law_files_text(seeds).items()):
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


# ----------------------------------------------------------------------------- coverage of the official release

# The official release labels its scenarios with 300+ free-text categories (167 in chemistry alone,
# most used once); the curated set covers them through these groups. Rules are tried in order; a
# category is matched in lower case; the first rule with a keyword in it wins, else the fallback.
TOPIC_RULES: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "physics/classical-mechanics": (
        ("surface_tension", ("surface tension",)), ("density_buoyancy", ("density",)), ("vibrations", ("vibration",)),
        ("solid_mechanics", ("solid",)), ("statics", ("statics",)), ("fluid_mechanics", ("fluid",)),
        ("dynamics", ("",)),
    ),
    "physics/optics": (
        ("lenses", ("lens",)), ("diffuse_reflection", ("diffuse",)), ("refraction", ("refraction",)),
        ("dispersion", ("dispersion",)), ("light_paths", ("light gravity",)), ("optics_general", ("",)),
    ),
    "physics/thermodynamics": (
        ("gas_solidification", ("gaseous solidification",)), ("phase_change", ("phase change",)),
        ("thermal_expansion", ("thermal expansion",)), ("thermal_radiation", ("radiance",)),
        ("heat_transfer", ("heat transfer",)), ("heat_general", ("",)),
    ),
    "physics/electromagnetism": (
        ("magnetic_poles", ("magnetic poles",)), ("static_electricity", ("static",)), ("conductivity", ("conductivity",)),
        ("lightning", ("lightning",)), ("ferromagnetism", ("ferromagnetism",)), ("electromagnetism_general", ("",)),
    ),
    "physics/astronomy": (("astronomy", ("",)),),
    "biology": (
        ("symbiosis", ("symbiosis", "parasit")), ("respiration", ("respirat", "environmental adaptation")),
        ("lifecycle", ("reproduction", "lifecycle", "metamorphosis", "development")),
        ("senses", ("sensory", "perception", "(light)")), ("cells", ("cell",)),
        ("ecology", ("ecolog", "trophic", "decomposition")), ("ecogeography", ("allen", "bergmann", "gloger")),
        ("metabolism", ("metabolism",)),
        ("plants", ("plant", "botany", "phototropism")), ("adaptation", ("",)),
    ),
    "chemistry": (
        ("flame_tests", ("flame test",)), ("precipitation", ("precipitat", "solubility")),
        ("acid_base", ("indicator", "acid-base", "neutralization")), ("phase_change", ("phase change",)),
        ("organic", ("organic", "alcohol", "mechanism", "named rxn", "ketone", "phenol", "alkyne", "amine", "benzene")),
        ("redox", ("redox", "oxidation", "rust", "tarnish", "sacrificial", "galvanic", "displacement", "reactivity",
                   "alkali metal")),
        ("equilibrium", ("equilibrium", "complex ion")), ("kinetics", ("kinetic", "rate", "catalyst", "activation")),
        ("thermochemistry", ("thermodynamics", "entropy", "calorimetry", "formation", "combustion")),
        ("atomic_structure", ("pauli", "coulomb", "electrostatic", "mass spectrometry", "metallic character")),
        ("molecular_structure", ("structure", "allotrope", "stability", "polarity", "intermolecular")),
        ("gases", ("gas", "atmospheric", "environmental")),
        ("separation", ("chromatography", "tyndall", "colloid", "suspension", "filtration")),
        ("nuclear", ("decay", "nuclear")), ("biochemistry", ("biochemistry",)),
        ("transition_colours", ("",)),
    ),
    "geography": (
        ("earth_rotation", ("rotation", "coriolis", "day-night")), ("seasons", ("season", "climate zones")),
        ("atmosphere", ("rain shadow", "atmospher", "rainbow", "shadow")),
        ("hydrology", ("river", "delta", "hydrology", "surface tension")), ("magnetosphere", ("magnetic", "aurora")),
        ("planetary", ("planetary",)), ("geology", ("",)),
    ),
    "sociology": (
        ("economics", ("econom", "inflation", "labor", "creative destruction")), ("psychology", ("psycholog",)),
        ("society", ("",)),
    ),
}


def official_topic(scenario: Scenario) -> str:
    """The curated topic group of an imported official scenario (its file's rules applied to its category)."""
    key = scenario.domain
    if scenario.domain == "physics":
        # imported ids are physics-<subfield>-NNNN (see the importer's mapping rules)
        key = "physics/" + scenario.id[len("physics-"):].rsplit("-", 1)[0]
    category = " ".join(scenario.subdomain.lower().split())
    for topic, keywords in TOPIC_RULES.get(key, ()):
        if any(word in category for word in keywords):
            return topic
    return ""


def all_topics() -> dict[str, tuple[str, ...]]:
    """Every topic group per domain, in rule order."""
    out: dict[str, list[str]] = {}
    for key, rules in TOPIC_RULES.items():
        topics = out.setdefault(key.split("/")[0], [])
        topics += [topic for topic, _ in rules if topic not in topics]
    return {domain: tuple(topics) for domain, topics in out.items()}


if __name__ == "__main__":
    for written_path in write_law_files():
        print(written_path.name)
