"""The CF-World release: curated seed scenarios and the three probes as one Hugging Face dataset folder.

recipe (TOML, ``kind = "cfworld"``) -> seed scenarios (``generators/cfworld/seeds/*.yaml``)
-> configs ``scenarios``, ``rule_decoupling``, ``attribute_decoupling``, ``entity_cooccurrence``, ``denominalized``
(the seeds' L2 prompts through the offline lexicon) -> one parquet file per config
(``data/<config>/test-00000-of-00001.parquet``; CF-World is an evaluation set, so every
config has the single split ``test`` and the domain is a column) -> README.md card ->
manifest.json (same layout as TACIT's: version, recipe, config hash, rows, sha256 of every
file). Everything is computed in memory (a few thousand text rows), then written file by file
under hidden temporary names and renamed; the same recipe and inputs give byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

import vrforge
from vrforge.builds.recipe import RecipeError, holds_build, read_recipe_toml, recipe_header
from vrforge.errors import UserError
from vrforge.fileio import atomic_target, sha256_file, write_bytes_atomic, write_json_atomic
from vrforge.schemas.cfworld import Scenario, cfworld_features, scenario_schema_errors
from vrforge.schemas.cfworld_probes import (
    AttributeProbe,
    DenominalizedProbe,
    EntityProbe,
    Replacement,
    RuleProbe,
    attribute_probe_features,
    denominalized_probe_features,
    entity_probe_features,
    rule_probe_features,
)
from vrforge.schemas.layout import AUDIT_FILE, BOOKKEEPING_FILES, CARD_FILE, MANIFEST_FILE

KIND = "cfworld"
CONFIGS = ("scenarios", "rule_decoupling", "attribute_decoupling", "entity_cooccurrence", "denominalized")
SPLIT = "test"
KNOWN_KEYS = {"kind", "name", "version", "license", "seeds", "lexicon", "configs"}
PROBE_VERSION = "2"  # bump when the probe generators or tables change what they produce


# libyaml's loader when present: the pure-Python one takes seconds per thousand scenarios.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CfworldBuildError(UserError, ValueError):
    """A malformed recipe or unusable input; the message is the one line the user sees."""


@dataclass(frozen=True)
class CfworldRecipe:
    name: str
    version: str
    license: str
    seeds: Path | None  # None: the packaged seed folder
    lexicon: Path | None  # None: the packaged lexicon
    configs: tuple[str, ...]
    limit: int | None = None  # at most this many seed scenarios (first by id); probes are never cut

    def normalised(self) -> dict[str, Any]:
        """What the manifest records (paths as written in the recipe would vary by checkout; inputs are hashed instead)."""
        return {"kind": KIND, "name": self.name, "version": self.version, "license": self.license,
                "configs": list(self.configs), "limit": self.limit,
                "seeds": "packaged" if self.seeds is None else self.seeds.name,
                "lexicon": "packaged" if self.lexicon is None else self.lexicon.name}


# ----------------------------------------------------------------------------- recipe

def recipe_kind(path: str | Path) -> str:
    """``cfworld`` when the TOML file says ``kind = "cfworld"``, else ``tacit`` (also when unreadable:
    the TACIT loader then reports the problem)."""
    try:
        data = read_recipe_toml(path)
    except RecipeError:
        return "tacit"
    return KIND if data.get("kind") == KIND else "tacit"


def load_cfworld_recipe(path: str | Path) -> CfworldRecipe:
    path = Path(path)
    try:
        data = read_recipe_toml(path)
    except RecipeError as exc:
        raise CfworldBuildError(str(exc)) from None
    return parse_cfworld_recipe(data, path)


def parse_cfworld_recipe(data: dict[str, Any], path: Path) -> CfworldRecipe:
    source = str(path)
    try:
        name, version, license_ = recipe_header(data, source, KIND, KNOWN_KEYS)
    except RecipeError as exc:
        raise CfworldBuildError(str(exc)) from None
    configs = data.get("configs", list(CONFIGS))
    if not isinstance(configs, list) or not configs or not all(isinstance(c, str) for c in configs):
        raise CfworldBuildError(f"{source}: 'configs' must be a non-empty list of {', '.join(CONFIGS)}")
    for config in configs:
        if config not in CONFIGS:
            raise CfworldBuildError(f"{source}: unknown config {config!r} (choose from {', '.join(CONFIGS)})")
    if len(set(configs)) != len(configs):
        raise CfworldBuildError(f"{source}: repeated config")
    paths = {}
    for key in ("seeds", "lexicon"):
        value = data.get(key, "packaged")
        if not isinstance(value, str) or not value.strip():
            raise CfworldBuildError(f"{source}: '{key}' must be \"packaged\" or a path relative to the recipe")
        paths[key] = None if value == "packaged" else (path.parent / value)
    return CfworldRecipe(name=name, version=version, license=license_,
                         seeds=paths["seeds"], lexicon=paths["lexicon"],
                         configs=tuple(c for c in CONFIGS if c in configs))


# ----------------------------------------------------------------------------- inputs

def packaged_seed_folder() -> Path:
    return Path(str(resources.files("vrforge.generators.cfworld") / "seeds"))


def read_seed_scenarios(folder: Path | None = None) -> list[Scenario]:
    """Every scenario of ``folder/*.yaml`` (each file ``scenarios:`` a list of ``Scenario.to_dict()``
    dicts), sorted by id; raises CfworldBuildError on the first unusable file or scenario."""
    folder = packaged_seed_folder() if folder is None else Path(folder)
    if not folder.is_dir():
        raise CfworldBuildError(f"no seed folder: {folder}")
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise CfworldBuildError(f"{folder}: no seed files (*.yaml)")
    scenarios: dict[str, Scenario] = {}
    for file in files:
        try:
            data = yaml.load(file.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
        except (OSError, UnicodeDecodeError) as exc:
            raise CfworldBuildError(f"cannot read {file}: {exc}") from None
        except yaml.YAMLError as exc:
            raise CfworldBuildError(f"{file}: invalid YAML: {' '.join(str(exc).split())}") from None
        if not isinstance(data, dict) or not isinstance(data.get("scenarios"), list):
            raise CfworldBuildError(f"{file}: expected a mapping with a 'scenarios' list")
        for index, record in enumerate(data["scenarios"]):
            where = f"{file.name}: scenarios[{index}]"
            if not isinstance(record, dict):
                raise CfworldBuildError(f"{where}: not a mapping")
            errors = scenario_schema_errors(record)
            if errors:
                raise CfworldBuildError(f"{where}: {errors[0]}")
            scenario = Scenario.from_dict(record)
            problems = scenario.validate()
            if problems:
                raise CfworldBuildError(f"{where} ({scenario.id}): {problems[0]}")
            if scenario.id in scenarios:
                raise CfworldBuildError(f"{where}: duplicate scenario id {scenario.id}")
            scenarios[scenario.id] = scenario
    return [scenarios[key] for key in sorted(scenarios)]


def load_seeds(folder: Path | None) -> list[Scenario]:
    """The release's scenarios. The packaged seeds (``folder`` None) load through the law bank,
    which matches each one to its law and runs every validator; a recipe's own seed folder (a
    researcher's set, with no law bank entries) is checked against the schema only. Any
    complaint about the seed files becomes one line."""
    if folder is not None:
        return read_seed_scenarios(folder)
    from vrforge.generators.cfworld.lawbank import load_seed_scenarios

    try:
        return sorted(load_seed_scenarios(), key=lambda s: s.id)
    except (ValueError, OSError) as exc:
        raise CfworldBuildError(" ".join(str(exc).split()) or "unusable packaged seed files") from None


def release_changes(recipe: CfworldRecipe) -> list[dict[str, Any]]:
    """The change notes of the packaged seeds for this release's version (``generators/cfworld/changes/``);
    none for a recipe's own seed folder."""
    from vrforge.generators.cfworld.changes import ChangesError, change_files, read_changes

    if recipe.seeds is not None:
        return []
    folder = Path(str(resources.files("vrforge.generators.cfworld") / "changes"))
    if not change_files(recipe.version, folder):
        return []
    try:
        return read_changes(recipe.version, folder)
    except ChangesError as exc:
        raise CfworldBuildError(str(exc)) from None


def _input_hashes(recipe: CfworldRecipe) -> dict[str, str]:
    """sha256 of every input file, so the config hash changes whenever an input does."""
    seeds = recipe.seeds if recipe.seeds is not None else packaged_seed_folder()
    hashes = {f"seeds/{p.name}": sha256_file(p) for p in sorted(Path(seeds).glob("*.yaml"))}
    if recipe.seeds is None:
        from vrforge.generators.cfworld.changes import change_files

        changes = Path(str(resources.files("vrforge.generators.cfworld") / "changes"))
        hashes |= {f"changes/{p.name}": sha256_file(p) for p in change_files(recipe.version, changes)}
    if recipe.lexicon is not None:
        hashes["lexicon"] = sha256_file(recipe.lexicon)
    else:
        text = (resources.files("vrforge.generators.cfworld.probes") / "lexicon.yaml").read_bytes()
        hashes["lexicon"] = hashlib.sha256(text).hexdigest()
    return hashes


def config_hash(recipe: CfworldRecipe) -> str:
    data = {"recipe": recipe.normalised(), "inputs": _input_hashes(recipe), "probe_version": PROBE_VERSION}
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


# ----------------------------------------------------------------------------- rows

@dataclass
class Tables:
    rows: dict[str, list[dict[str, Any]]]
    scenarios: list[Scenario]
    denominalization: dict[str, Any]
    curation: dict[str, Any] | None = None  # release_figures of the scenarios (None without the scenarios config)


def _features(config: str):
    return {"scenarios": cfworld_features, "rule_decoupling": rule_probe_features,
            "attribute_decoupling": attribute_probe_features, "entity_cooccurrence": entity_probe_features,
            "denominalized": denominalized_probe_features}[config]()


def build_tables(recipe: CfworldRecipe) -> Tables:
    from vrforge.generators.cfworld.probes.attribute_decoupling import generate_attribute_probes
    from vrforge.generators.cfworld.probes.denominalize import LexiconError, denominalize_with_lexicon, load_lexicon
    from vrforge.generators.cfworld.probes.entity_cooccurrence import generate_entity_probes
    from vrforge.generators.cfworld.probes.rule_decoupling import generate_rule_probes

    needs_seeds = "scenarios" in recipe.configs or "denominalized" in recipe.configs
    scenarios = load_seeds(recipe.seeds) if needs_seeds else []
    if recipe.limit is not None:
        scenarios = scenarios[:recipe.limit]
    rows: dict[str, list[dict[str, Any]]] = {}
    report: dict[str, Any] = {}
    curation = None
    if "scenarios" in recipe.configs:
        rows["scenarios"] = [s.to_dict() for s in scenarios]
        curation = scenario_figures(scenarios, packaged=recipe.seeds is None)
    if "rule_decoupling" in recipe.configs:
        rows["rule_decoupling"] = [p.to_dict() for p in generate_rule_probes()]
    if "attribute_decoupling" in recipe.configs:
        rows["attribute_decoupling"] = [p.to_dict() for p in generate_attribute_probes()]
    if "entity_cooccurrence" in recipe.configs:
        rows["entity_cooccurrence"] = [p.to_dict() for p in generate_entity_probes()]
    if "denominalized" in recipe.configs:
        try:
            lexicon = load_lexicon(recipe.lexicon)
        except LexiconError as exc:
            raise CfworldBuildError(str(exc)) from None
        result = denominalize_with_lexicon(scenarios, lexicon)
        rows["denominalized"] = [p.to_dict() for p in result.probes]
        report = result.to_dict()
    return Tables(rows=rows, scenarios=scenarios, denominalization=report, curation=curation)


def scenario_figures(scenarios: list[Scenario], packaged: bool) -> dict[str, Any]:
    """The card's figures on the scenarios (counts, openings, lengths, validator results); with the
    packaged seeds the law bank's outcome terms join the checks."""
    from vrforge.generators.cfworld.validation import release_figures

    laws = {}
    if packaged:
        from vrforge.generators.cfworld.lawbank import load_laws

        laws = {law.id: law for law in load_laws()}
    return release_figures(scenarios, laws)


def parquet_bytes(config: str, rows: list[dict[str, Any]], path: Path) -> None:
    """Write one config's rows with its explicit Features (so the card and the schema agree), atomically."""
    features = _features(config)
    table = pa.Table.from_pylist([features.encode_example(row) for row in rows], schema=features.arrow_schema)
    with atomic_target(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def data_path(config: str) -> str:
    return f"data/{config}/{SPLIT}-00000-of-00001.parquet"


# ----------------------------------------------------------------------------- card

def _size_category(rows: int) -> str:
    from vrforge.cards.card import size_category

    return size_category(rows)


def pretty_name(recipe: CfworldRecipe) -> str:
    return f"CF-World {recipe.version}" if recipe.name == KIND else f"{recipe.name} {recipe.version}"


def card_metadata(recipe: CfworldRecipe, counts: dict[str, int], sizes: dict[str, int]) -> dict[str, Any]:
    from vrforge.cards.card import card_configs

    configs, infos = card_configs(((config, _features(config)._to_yaml_list(), (SPLIT,)) for config in recipe.configs),
                                  {c: {SPLIT: n} for c, n in counts.items()}, {c: {SPLIT: n} for c, n in sizes.items()})
    return {
        "license": recipe.license,
        "pretty_name": pretty_name(recipe),
        "task_categories": ["text-to-image"],
        "language": ["en"],
        "size_categories": [_size_category(sum(counts.values()))],
        "tags": ["counterfactual-reasoning", "text-to-image", "evaluation", "synthetic"],
        "configs": configs,
        "dataset_info": infos,
    }


CONFIG_DESCRIPTIONS = {
    "scenarios": "a counterfactual scenario: law, change, L1/L2/L3 prompts with assessment points, judge questions",
    "rule_decoupling": "a symbolic scene under its real law or a counterfactual perturbation, with the expected arrow direction",
    "attribute_decoupling": "one member (rare or common) of an attribute minimal pair",
    "entity_cooccurrence": "one member (unusual or factual context) of an entity co-occurrence pair",
    "denominalized": "a scenario's L2 prompt with the outcome's names replaced by visual descriptions",
}


def render_card(recipe: CfworldRecipe, hash_: str, tables: Tables, counts: dict[str, int], sizes: dict[str, int]) -> str:
    config_rows = [f"| `{c}` | {counts[c]} | {CONFIG_DESCRIPTIONS[c]} |" for c in recipe.configs]
    by_domain = Counter(s.domain for s in tables.scenarios)
    domain_rows = ["| domain | scenarios |", "|---|---|"] + [f"| {d} | {n} |" for d, n in sorted(by_domain.items())]
    if not by_domain:
        domain_rows = ["(this release has no `scenarios` config)"]
    note = ""
    if tables.denominalization:
        unchanged = len(tables.denominalization["unchanged"])
        note = (f"In this release the lexicon rewrote {counts.get('denominalized', 0)} of the {len(tables.scenarios)} L2 prompts; "
                f"the prompts it left unchanged ({unchanged}) are not in this config and are listed in `manifest.json` "
                "under `denominalization.unchanged`.")
    curation = curation_markdown(tables.curation) if tables.curation else ""
    if curation and recipe.seeds is None:
        from vrforge.generators.cfworld.changes import change_summary, changes_markdown

        what_changed = changes_markdown(recipe.version, change_summary(release_changes(recipe)))
        curation = "\n\n".join(part for part in (PACKAGED_SEED_NOTES, what_changed, curation) if part)
    template = Template((resources.files("vrforge.cards") / "templates" / "cfworld.md").read_text(encoding="utf-8"))
    from vrforge.generators.cfworld.probes.rules import RULES

    return template.substitute(
        yaml=yaml.safe_dump(card_metadata(recipe, counts, sizes), sort_keys=False, allow_unicode=True).rstrip("\n"),
        pretty_name=pretty_name(recipe), recipe_name=recipe.name, version=recipe.version, config_hash=hash_,
        config_table="\n".join(config_rows), domain_table="\n".join(domain_rows), rule_count=len(RULES),
        denominalized_note=note, license=recipe.license, curation=curation,
    )


PACKAGED_SEED_NOTES = """### How the scenarios were written

Every scenario is written by hand in a compact form (`generators/cfworld/seeds/<domain>.yaml`:
the law, the changed mechanism, one prompt per level, the assessment points, the other
depictions the judge accepts, and single visible checks) and expanded by code into the row
schema; the law bank (`laws/<domain>.yaml`) is generated from the same records.

- **Premises change a mechanism, not the picture.** The counterfactual states a changed law
  ("water contracts as it freezes"); the visible outcome ("the ice cubes lie at the bottom of
  the glass") is stated only at L2 and must be reasoned out at L3.
- **L1 describes the scene only**, in every domain: no prompt states its own outcome, so the
  L1 gate is equally strict for all domains.
- **Judge questions.** The L2/L3 assessment question accepts every listed depiction of the
  consequence; logic questions are single visible checks, at L2/L3 including knock-on effects
  of the change (other objects the changed law also acts on); no question asks about a felt
  temperature, a sound or a smell. From 0.3.0 scene anchors ("Is there a seal on the ice") are
  judged under visual integrity at every level, the L2/L3 logic checks test consequences of the
  premise, and the rubric's validators (`generators/cfworld/rubric.py`; the audit runs them)
  hold every check to one still image, to objects its prompt asks for, to a visible "yes"
  rather than an absence, and to a yes/no question.
- **Proportions.** Domains keep the official release's order of size, but geography and
  sociology (26 and 22 official scenarios) are raised to about 10 % each so that every topic
  group of theirs has at least two scenarios and their per-domain scores rest on 40+ prompts;
  physics is cut from 54 % to 38 % to pay for it. Within a domain each topic group gets about
  its official share, with at least two scenarios per group.
- **Changes since 0.1.0.** Every prompt was rewritten (0.1.0 opened 51 % of its L2 prompts
  with one three-word opening and built every L2 as its L3 plus a sentence); scenarios whose
  premise named the outcome were rewritten around a mechanism; the errors found on reading were
  removed (fossil limestone kept at 4,000 m under a premise that rock never rises; a full Moon
  in the Sun's direction; icicles inside a greenhouse that traps warmth; steam from water
  boiling at room temperature in a warm room; thicker road ice from salt; red maple leaves
  as a law; Jupiter as a perfect sphere), and each concept that appeared in two domains
  (snow line and altitude, condensation on cold glass, the boiling point, salt pans, star
  trails) now appears once."""


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def curation_markdown(figures: dict[str, Any]) -> str:
    """The card's section on how the scenarios were curated, with the figures beside the official release's."""
    from vrforge.generators.cfworld.validation import OFFICIAL_FIGURES as OFF

    n = figures["scenarios"]
    lines = ["### Curation figures", "",
             f"{n} scenarios. Per domain, beside the official CF-World release ({OFF['scenarios']:,} scenarios):", "",
             "| domain | scenarios | share | official | official share |", "|---|---|---|---|---|"]
    for domain, count in figures["per_domain"].items():
        official = OFF["per_domain"].get(domain, 0)
        lines.append(f"| {domain} | {count} | {_pct(count / n)} | {official} | {_pct(official / OFF['scenarios'])} |")
    if figures["per_topic"]:
        lines += ["", "Per topic group (the official release's 300+ free-text categories grouped; every group is covered):",
                  "", "| domain | topic group | scenarios |", "|---|---|---|"]
        lines += [f"| {key.split('/')[0]} | {key.split('/')[1]} | {count} |" for key, count in figures["per_topic"].items()]
    lines += ["", "Per subdomain: " + ", ".join(f"{key} {count}" for key, count in figures["per_subdomain"].items()) + ".",
              "", "Prompt variety and length (three-word openings; \"first word\" is the most common first word):", "",
              "| level | mean words | official | top three-word opening (share) | official | top first word (share) | official |",
              "|---|---|---|---|---|---|---|"]
    for level, row in figures["template"]["levels"].items():
        lines.append(f"| {level.upper()} | {row['mean_words']} | {OFF['mean_words'][level]} | "
                     f"\"{row['top_opening']}\" ({_pct(row['top_opening_share'])}) | {_pct(OFF['top_opening_share'][level])} | "
                     f"\"{row['top_first_word']}\" ({_pct(row['top_first_word_share'])}) | "
                     f"{_pct(OFF['top_first_word_share'][level])} |")
    t = figures["template"]
    th = figures["thresholds"]
    failures = ", ".join(f"{name} {count}" for name, count in figures["check_failures"].items())
    lines += ["",
              f"L2 prompts that begin with their L3 prompt: {_pct(t['l3_prefix_of_l2_share'])} (official "
              f"{_pct(OFF['l3_prefix_of_l2_share'])}; at most {_pct(th['prefix_share_max'])}). L1 prompts that state their "
              "own outcome, per domain: " + ", ".join(f"{d} {_pct(v)}" for d, v in t["l1_outcome_share"].items()) + ".",
              "", "Validators (`vrforge.generators.cfworld.validation`):", "",
              f"- per scenario, scenarios failing each check: {failures};",
              f"- premise-outcome leakage (the premise names a visible attribute of the outcome): {figures['premise_leaks']} "
              f"scenarios (official release: {OFF['premise_leaks']} of {OFF['premises']} with a premise);",
              f"- law-level near-duplicates across domains (law + scene word overlap >= {th['law_duplicate_min']}): "
              f"{figures['law_duplicate_pairs']} pairs (official release: {OFF['law_duplicate_pairs']});",
              "- template uniformity over the set: " + ("; ".join(figures["set_checks"]) or "passed") + "."]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- build

def _check_out(out: Path, hash_: str) -> None:
    try:
        if holds_build(out, hash_):
            return  # the same build: rewriting it gives the same bytes
    except RecipeError as exc:
        raise CfworldBuildError(str(exc)) from None
    if out.exists() and any(out.iterdir()):
        raise CfworldBuildError(f"{out} exists and is not empty; choose another --out")


def _change_summary(recipe: CfworldRecipe) -> dict[str, Any] | None:
    from vrforge.generators.cfworld.changes import change_summary

    entries = release_changes(recipe)
    return change_summary(entries) if entries else None


def build_cfworld_recipe(recipe: CfworldRecipe, out: Path) -> Path:
    out = Path(out)
    hash_ = config_hash(recipe)
    _check_out(out, hash_)
    tables = build_tables(recipe)
    counts, sizes = {}, {}
    for config in recipe.configs:
        path = out / data_path(config)
        parquet_bytes(config, tables.rows[config], path)
        counts[config] = len(tables.rows[config])
        sizes[config] = path.stat().st_size
    write_bytes_atomic(out / CARD_FILE, render_card(recipe, hash_, tables, counts, sizes).encode("utf-8"))
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name not in BOOKKEEPING_FILES
                   and not p.name.startswith("."))
    manifest = {
        "kind": KIND,
        "name": recipe.name,
        "version": recipe.version,
        "package_version": vrforge.__version__,
        "config_hash": hash_,
        "recipe": recipe.normalised(),
        "inputs": _input_hashes(recipe),
        "probe_version": PROBE_VERSION,
        "rows": {config: {SPLIT: counts[config]} for config in recipe.configs},
        "scenarios_per_domain": dict(sorted(Counter(s.domain for s in tables.scenarios).items())),
        "curation": tables.curation,
        "changes": _change_summary(recipe),
        "denominalization": tables.denominalization,
        "files": {p.relative_to(out).as_posix(): {"sha256": sha256_file(p), "bytes": p.stat().st_size} for p in files},
    }
    write_json_atomic(out / MANIFEST_FILE, manifest)
    return out


def build_cfworld(recipe_path: str | Path, out_dir: str | Path, limit: int | None = None) -> Path:
    """Build the release described by ``recipe_path`` into ``out_dir``; returns ``out_dir``."""
    recipe = load_cfworld_recipe(recipe_path)
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise CfworldBuildError(f"--limit must be a positive integer, got {limit}")
        recipe = replace(recipe, limit=limit)
    return build_cfworld_recipe(recipe, Path(out_dir))


# ----------------------------------------------------------------------------- audit

def audit_cfworld(folder: Path) -> dict[str, Any]:
    """Re-check a built CF-World folder from its files alone and write ``audit.json`` (what
    ``vrforge publish`` requires): files against the manifest's sha256, the card's configs,
    features and split sizes against the parquet files and the manifest, and every row's own checks."""
    from vrforge.builds.audit import AuditError, card_configs, manifest_file_problems
    from vrforge.builds.audit import card_metadata as read_card_metadata

    folder = Path(folder)
    manifest_path = folder / MANIFEST_FILE
    if not manifest_path.exists():
        raise CfworldBuildError(f"{folder} has no {MANIFEST_FILE} (not a built dataset folder)")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    problems = manifest_file_problems(folder, manifest)
    card = (folder / CARD_FILE).read_text(encoding="utf-8") if (folder / CARD_FILE).exists() else ""
    try:
        metadata, configs = (read_card_metadata(card), card_configs(card)) if card else ({}, {})
    except AuditError as exc:
        raise CfworldBuildError(str(exc)) from None
    expected = manifest.get("rows", {})
    if set(configs) != set(expected):
        problems.append(f"card configs {sorted(configs)} differ from manifest {sorted(expected)}")
    infos = {info["config_name"]: info for info in metadata.get("dataset_info", [])}
    rows_checked = 0
    for config, splits in sorted(configs.items()):
        for split, pattern in splits.items():
            files = sorted(folder.glob(pattern))
            try:
                rows = [row for f in files for row in pq.read_table(f).to_pylist()]
                schema = pq.read_schema(files[0]) if files else None
            except (OSError, pa.ArrowException) as exc:
                problems.append(f"{config}/{split}: unreadable parquet ({' '.join(str(exc).split())[:200]})")
                continue
            rows_checked += len(rows)
            if expected.get(config, {}).get(split) != len(rows):
                problems.append(f"{config}/{split}: {len(rows)} rows, manifest says {expected.get(config, {}).get(split)}")
            declared = {s["name"]: s["num_examples"] for s in infos.get(config, {}).get("splits", [])}
            if declared.get(split) != len(rows):
                problems.append(f"{config}/{split}: card declares {declared.get(split)} rows, files hold {len(rows)}")
            if config in CONFIGS and schema is not None and schema != _features(config).arrow_schema:
                problems.append(f"{config}/{split}: parquet schema differs from the {config} features")
            ids = [row.get("id") for row in rows]
            if len(set(ids)) != len(ids):
                problems.append(f"{config}/{split}: repeated ids")
            problems += [f"{config}/{row.get('id')}: {p}" for row in rows for p in _row_problems(config, row)][:50]
    rubric = rubric_audit(folder, configs, manifest)
    problems += rubric["problems"]
    report = {"passed": not problems, "kind": KIND, "manifest_sha256": sha256_file(manifest_path),
              "config_hash": manifest.get("config_hash"), "files_checked": len(manifest.get("files", {})),
              "rows_checked": rows_checked,
              "rubric": {key: value for key, value in rubric.items() if key != "problems"},
              "problems": problems}
    write_json_atomic(folder / AUDIT_FILE, report)
    return report


RUBRIC_FROM = (0, 3, 0)  # releases written against the v0.3 rubric (docs/design/cfworld-rubric.md)


def _version(text: Any) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in str(text).split("."))
    except ValueError:
        return ()


def rubric_audit(folder: Path, configs: dict[str, dict[str, str]], manifest: dict[str, Any]) -> dict[str, Any]:
    """The v0.3 rubric validators (``generators/cfworld/rubric.py``, with the embedding paraphrase-leak check)
    over the ``scenarios`` rows of a release of version 0.3.0 or later: one problem line per finding
    ("rubric: <id>: <check>: ..."), the count per check, the model used, and the paraphrase-leak
    findings as warnings (recorded, not failing: see ``rubric.WARNING_KINDS``). Without the model
    the audit fails with one line saying what to install."""
    from vrforge.generators.cfworld.paraphrase import MODEL_MISSING, leak_embedder
    from vrforge.generators.cfworld.rubric import WARNING_KINDS, kind_of, validate_scenarios

    version = manifest.get("version")
    if _version(version) < RUBRIC_FROM or "scenarios" not in configs:
        return {"applied": False, "reason": f"release {version} predates the v0.3 rubric" if "scenarios" in configs
                else "no scenarios config", "per_check": {}, "problems": []}
    rows = [row for split, pattern in configs["scenarios"].items()
            for f in sorted(folder.glob(pattern)) for row in pq.read_table(f).to_pylist()]
    embed = leak_embedder()
    found = validate_scenarios((Scenario.from_dict(row) for row in rows), embed)
    problems = [f"rubric: {line}" for line in found if kind_of(line) not in WARNING_KINDS]
    if embed is None:
        problems.append(f"rubric: {MODEL_MISSING}")
    return {"applied": True, "scenarios": len(rows), "paraphrase_model": "all-MiniLM-L6-v2" if embed else None,
            "per_check": dict(sorted(Counter(kind_of(line) for line in found).items())),
            "warnings": [line for line in found if kind_of(line) in WARNING_KINDS], "problems": problems}


def _row_problems(config: str, row: dict[str, Any]) -> list[str]:
    if config == "scenarios":
        return Scenario.from_dict(row).validate()
    if config == "rule_decoupling":
        return RuleProbe(**row).validate()
    if config == "attribute_decoupling":
        return AttributeProbe(**row).validate()
    if config == "entity_cooccurrence":
        return EntityProbe(**row).validate()
    if config == "denominalized":
        data = dict(row)
        data["replacements"] = tuple(Replacement(**r) for r in row["replacements"])
        return DenominalizedProbe(**data).validate()
    return [f"unknown config {config}"]
