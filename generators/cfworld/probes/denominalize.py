"""De-nominalisation: an L2 prompt whose outcome names nothing, only shows it.

"If mammals performed photosynthesis, draw a polar bear with green fur" becomes "If mammals
performed photosynthesis, draw a large four-legged animal with thick white fur and a black
nose with leaf-coloured dense coat of soft hairs": the counterfactual premise (the law) stays
word for word, the target nouns and attributes of the outcome become visual descriptions, so
a model can no longer lean on the name of the thing it has seen drawn a thousand times.

Two modes:

- ``lexicon`` (offline, deterministic): a YAML lexicon maps each term to its description.
  The targets are the lexicon terms that the L2 assessment point names (the outcome: "The
  polar bear's fur is green" -> polar bear, fur, green), with their singular/plural forms and
  the head word of a compound ("bear"); they are replaced wherever they stand outside the
  premise, as whole words, case-insensitively, longest first, in one pass. A replacement keeps
  the matched text's capitalisation (``Bear`` -> ``Large ...``, ``BEAR`` -> ``LARGE ...``) and
  a leading "a"/"an" agrees with it. Scene words the outcome does not depend on stay as written.
- ``llm``: an OpenAI-compatible model rewrites the outcome under a JSON Schema; an answer is
  accepted only if it keeps the premise word for word, changes the prompt and no longer
  contains any term it says it replaced (otherwise the client retries, then the scenario is
  reported as failed).

A prompt the transform leaves unchanged (no lexicon term in its outcome) is never passed
through silently: it is listed in ``DenominalizationReport.unchanged``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from vrforge.generators.cfworld.importer import PREMISE
from vrforge.schemas.cfworld import Scenario
from vrforge.schemas.cfworld_probes import DenominalizedProbe, Replacement

if TYPE_CHECKING:
    from vrforge.openai_client import ChatClient

LEXICON_SECTIONS = {"nouns": "noun", "attributes": "attribute"}
_WORD_CHAR = r"[A-Za-z0-9]"


# libyaml's loader when present: the pure-Python one takes seconds per thousand scenarios.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LexiconError(ValueError):
    """A malformed lexicon file; the message is one line."""


@dataclass(frozen=True)
class LexiconEntry:
    term: str  # lower case
    description: str
    kind: str  # noun / attribute


@dataclass(frozen=True)
class Lexicon:
    entries: dict[str, LexiconEntry]  # lower-case term -> entry

    def pattern(self) -> re.Pattern[str]:
        terms = sorted(self.entries, key=lambda t: (-len(t), t))  # longest first: "polar bear" before "bear"
        alternation = "|".join(re.escape(t) for t in terms)
        # An optional leading article is captured so it can agree with the description ("an elephant" -> "a huge ...").
        return re.compile(rf"(?:(?<!{_WORD_CHAR})(?P<article>an?)(?P<gap>[ ]+))?"
                          rf"(?<!{_WORD_CHAR})(?<!-)(?P<term>{alternation})(?!{_WORD_CHAR})(?!-{_WORD_CHAR})", re.IGNORECASE)


def parse_lexicon(data: Any, source: str = "lexicon") -> Lexicon:
    if not isinstance(data, dict):
        raise LexiconError(f"{source}: expected a mapping with sections {', '.join(LEXICON_SECTIONS)}")
    unknown = sorted(set(data) - set(LEXICON_SECTIONS))
    if unknown:
        raise LexiconError(f"{source}: unknown section(s) {', '.join(map(str, unknown))}")
    entries: dict[str, LexiconEntry] = {}
    for section, kind in LEXICON_SECTIONS.items():
        table = data.get(section) or {}
        if not isinstance(table, dict):
            raise LexiconError(f"{source}: '{section}' must map terms to descriptions")
        for term, description in table.items():
            if not isinstance(term, str) or not term.strip() or not isinstance(description, str) or not description.strip():
                raise LexiconError(f"{source}: {section}: {term!r} must map a non-empty term to a non-empty description")
            key = " ".join(term.lower().split())
            if key in entries:
                raise LexiconError(f"{source}: term {key!r} appears twice")
            entries[key] = LexiconEntry(key, description.strip(), kind)
    if not entries:
        raise LexiconError(f"{source}: no terms")
    return Lexicon(entries)


def load_lexicon(path: str | Path | None = None) -> Lexicon:
    """The given YAML lexicon, or the packaged one."""
    if path is None:
        text = (resources.files("vrforge.generators.cfworld.probes") / "lexicon.yaml").read_text(encoding="utf-8")
        source = "lexicon.yaml"
    else:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise LexiconError(f"cannot read lexicon {path}: {exc}") from None
    try:
        data = yaml.load(text, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise LexiconError(f"{source}: invalid YAML: {' '.join(str(exc).split())}") from None
    return parse_lexicon(data, source)


def match_case(matched: str, replacement: str) -> str:
    if len(matched) > 1 and matched.isupper():
        return replacement.upper()
    if matched[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def agree_article(article: str, following: str) -> str:
    """``a`` or ``an`` for the word that now follows, in the article's original capitalisation."""
    wanted = "an" if following[:1].lower() in "aeiou" else "a"
    return match_case(article, wanted) if article[:1].isupper() else wanted


def premise_span(prompt: str, counterfactual: str) -> tuple[int, int] | None:
    """Where the counterfactual premise sits in the prompt: the scenario's own premise text if the
    prompt contains it, else the leading "If ..., draw" clause; None when there is none."""
    if counterfactual:
        start = prompt.find(counterfactual)
        if start >= 0:
            return start, start + len(counterfactual)
    match = PREMISE.match(prompt)
    if match:
        return match.start(1), match.end(1)
    return None


def _outside_premise(prompt: str, span: tuple[int, int] | None) -> list[tuple[int, int]]:
    if span is None:
        return [(0, len(prompt))]
    return [(0, span[0]), (span[1], len(prompt))]


IRREGULAR_PLURALS = {"leaf": "leaves", "person": "people", "child": "children", "man": "men", "woman": "women",
                     "mouse": "mice", "foot": "feet", "tooth": "teeth", "goose": "geese"}


def term_variants(term: str) -> set[str]:
    """Singular and plural spellings of a term, and the head word of a compound ("polar bear" -> "bear"),
    so that a target named once in the assessment point is found however the prompt inflects it."""
    forms = {term}
    for singular, plural in IRREGULAR_PLURALS.items():
        if term.endswith(singular):
            forms.add(term[: -len(singular)] + plural)
        if term.endswith(plural):
            forms.add(term[: -len(plural)] + singular)
    if term.endswith("ies"):
        forms.add(term[:-3] + "y")
    elif term.endswith("es"):
        forms.update({term[:-2], term[:-1]})
    elif term.endswith("s"):
        forms.add(term[:-1])
    else:
        forms.update({term + "s", term + "es", term[:-1] + "ies" if term.endswith("y") else term + "s"})
    heads = {form.split()[-1] for form in forms if " " in form}
    return forms | heads


def target_terms(assessment_point: str, lexicon: Lexicon) -> set[str]:
    """The lexicon terms the outcome is about: those named in the assessment point, with their variants."""
    found = {" ".join(m.group("term").lower().split()) for m in lexicon.pattern().finditer(assessment_point)}
    return {variant for term in found for variant in term_variants(term)}


def apply_lexicon(prompt: str, lexicon: Lexicon, counterfactual: str = "",
                  targets: set[str] | None = None) -> tuple[str, tuple[Replacement, ...]]:
    """The prompt with the lexicon terms outside the premise replaced (only those in ``targets`` when
    given), and the replacements made, in order."""
    pattern = lexicon.pattern()
    replacements: list[Replacement] = []

    def substitute(match: re.Match[str]) -> str:
        term = match.group("term")
        key = " ".join(term.lower().split())
        if targets is not None and key not in targets:
            return match.group(0)
        entry = lexicon.entries[key]
        description = match_case(term, entry.description)
        replacements.append(Replacement(term=term, description=description, kind=entry.kind))
        if match.group("article") is None:
            return description
        return agree_article(match.group("article"), description) + match.group("gap") + description

    pieces: list[str] = []
    cursor = 0
    for start, end in _outside_premise(prompt, premise_span(prompt, counterfactual)):
        pieces.append(prompt[cursor:start])
        pieces.append(pattern.sub(substitute, prompt[start:end]))
        cursor = end
    pieces.append(prompt[cursor:])
    return "".join(pieces), tuple(replacements)


@dataclass
class DenominalizationReport:
    probes: list[DenominalizedProbe] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # scenario ids whose prompt no lexicon term touched
    no_premise: list[str] = field(default_factory=list)  # scenario ids whose premise could not be located
    failed: dict[str, str] = field(default_factory=dict)  # scenario id -> why the LLM gave no usable rewrite
    terms: Counter = field(default_factory=Counter)  # lower-case term -> replacements made

    def to_dict(self) -> dict[str, Any]:
        return {"rewritten": len(self.probes), "unchanged": list(self.unchanged), "no_premise": list(self.no_premise),
                "failed": dict(sorted(self.failed.items())), "terms": dict(sorted(self.terms.items()))}


def premise_text(scenario: Scenario) -> str:
    source = scenario.levels["l2"].prompt
    span = premise_span(source, scenario.counterfactual)
    return source[span[0]:span[1]] if span else ""


def _probe(scenario: Scenario, prompt: str, replacements: tuple[Replacement, ...], mode: str, model: str = "") -> DenominalizedProbe:
    l2 = scenario.levels["l2"]
    return DenominalizedProbe(
        id=f"denorm-{scenario.id}", scenario_id=scenario.id, domain=scenario.domain, subdomain=scenario.subdomain,
        law=scenario.law, counterfactual=scenario.counterfactual, premise=premise_text(scenario),
        source_prompt=l2.prompt, prompt=prompt, assessment_point=l2.assessment_point,
        replacements=replacements, mode=mode, model=model,
    )


def denominalize_with_lexicon(scenarios: list[Scenario], lexicon: Lexicon | None = None,
                              outcome_only: bool = True) -> DenominalizationReport:
    """Lexicon mode over the scenarios' L2 prompts, in the given order. With ``outcome_only`` (the
    default) only the terms the L2 assessment point names are replaced, so the scene around the
    outcome keeps its ordinary words; otherwise every lexicon term outside the premise is."""
    lexicon = lexicon or load_lexicon()
    report = DenominalizationReport()
    for scenario in scenarios:
        source = scenario.levels["l2"].prompt
        if not premise_text(scenario):
            report.no_premise.append(scenario.id)
        targets = target_terms(scenario.levels["l2"].assessment_point, lexicon) if outcome_only else None
        prompt, replacements = apply_lexicon(source, lexicon, scenario.counterfactual, targets)
        if not replacements:
            report.unchanged.append(scenario.id)
            continue
        report.terms.update(r.term.lower() for r in replacements)
        report.probes.append(_probe(scenario, prompt, replacements, "lexicon"))
    return report


# ----------------------------------------------------------------------------- LLM mode

LLM_SCHEMA_NAME = "denominalized_prompt"
LLM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["prompt", "replacements"],
    "properties": {
        "prompt": {"type": "string", "minLength": 1},
        "replacements": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["term", "description", "kind"],
                "properties": {
                    "term": {"type": "string", "minLength": 1},
                    "description": {"type": "string", "minLength": 1},
                    "kind": {"enum": ["noun", "attribute"]},
                },
            },
        },
    },
}
LLM_INSTRUCTIONS = (
    "You rewrite text-to-image prompts for a benchmark of counterfactual reasoning. A prompt states a "
    "counterfactual premise and then asks for a picture. Keep the premise exactly as given, character for "
    "character. In the rest of the prompt, replace every name of the objects and attributes that the outcome "
    "(what the picture must show) is about by a purely visual description of what they look like (shape, parts, "
    "colour, texture, size), so that the picture is fully specified without naming them. Keep everything else, "
    "including sentence order. "
    "Answer with JSON: the rewritten prompt and the list of replacements (term as it appeared, its description, "
    "kind noun or attribute)."
)


def _term_present(term: str, text: str) -> bool:
    return re.search(rf"(?<!{_WORD_CHAR}){re.escape(term)}(?!{_WORD_CHAR})", text, re.IGNORECASE) is not None


def llm_messages(scenario: Scenario) -> list[dict[str, str]]:
    l2 = scenario.levels["l2"]
    request = {"premise": premise_text(scenario), "prompt": l2.prompt, "outcome": l2.assessment_point}
    return [{"role": "system", "content": LLM_INSTRUCTIONS},
            {"role": "user", "content": json.dumps(request, ensure_ascii=False, sort_keys=True)}]


def llm_answer_problems(scenario: Scenario, data: dict[str, Any]) -> list[str]:
    """Why an LLM rewrite is unusable (empty when it is usable)."""
    source = scenario.levels["l2"].prompt
    prompt = data["prompt"]
    problems = []
    premise = premise_text(scenario)
    if premise and premise not in prompt:
        problems.append("the premise was not kept word for word")
    if " ".join(prompt.split()) == " ".join(source.split()):
        problems.append("the prompt was not changed")
    outcome = prompt.replace(premise, " ") if premise else prompt
    leaked = [r["term"] for r in data["replacements"] if _term_present(r["term"], outcome)]
    if leaked:
        problems.append(f"replaced term(s) still present: {', '.join(leaked)}")
    return problems


def denominalize_with_llm(scenarios: list[Scenario], client: ChatClient) -> DenominalizationReport:
    """LLM mode through the shared chat client; a scenario without a usable answer is listed in ``failed``."""
    from vrforge.openai_client import ChatError

    report = DenominalizationReport()
    for scenario in scenarios:
        if not premise_text(scenario):
            report.no_premise.append(scenario.id)

        def validate(data: dict[str, Any], scenario: Scenario = scenario) -> None:
            problems = llm_answer_problems(scenario, data)
            if problems:
                raise ValueError("; ".join(problems))

        try:
            result = client.complete_json(llm_messages(scenario), LLM_SCHEMA, LLM_SCHEMA_NAME, validate=validate)
        except ChatError as exc:
            report.failed[scenario.id] = str(exc)
            continue
        replacements = tuple(Replacement(r["term"], r["description"], r["kind"]) for r in result.data["replacements"])
        report.terms.update(r.term.lower() for r in replacements)
        report.probes.append(_probe(scenario, result.data["prompt"], replacements, "llm", client.config.model))
    return report
