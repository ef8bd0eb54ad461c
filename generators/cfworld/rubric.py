"""The CF-World v0.3 rubric validators (docs/design/cfworld-rubric.md): the rules a program can check.

Each check takes a ``RubricRecord`` (a compact seed record, or a built scenario read back through
its questions' ``source_id``) and returns reasons that start with the check's name:

- **copied-check**: an L2/L3 check (``checks``, ``knock_on``) that repeats an L1 check or an anchor
  (same content words, or Jaccard >= ``COPY_MIN``), or is a bare scene anchor (every content word
  is already in the L1 prompt: it asks whether the scene is there, not whether the law changed).
- **absence-only**: a check or assessment point whose "yes" needs only an absence ("Is there no
  scab", "free of ice"): outside the negated phrase fewer than ``PRESENCE_MIN`` content words
  remain, so an image that leaves the thing out passes.
- **prompt-objects**: a check names an object (a noun, by spaCy's tagger) its level's prompt does
  not ask for: anchors against all three prompts, ``l1_checks`` against L1, ``checks`` and
  ``knock_on`` against L2 and L3 (where the outcome and accepted depictions also count, since L3
  must leave them to the reader). Generic words (``GENERIC_NOUNS``: image, colour, side, ...) pass.
- **still-image**: a motion, speed or elapsed-time word (``MOTION_TIME``) in an outcome, accepted
  depiction, factual point or check: one still image cannot show it.
- **premise-mechanism**: the premise describes the visible behaviour (a simile such as "deforms
  like soft rubber", an appearance verb, a colour) instead of a mechanism; the lexical
  premise-outcome leak of ``validation.check_premise_outcome_leak`` is reported here too.
- **v03-fields**: a record without anchors or without a knock-on check.
- **yes-no**: a judge question a rater cannot answer yes or no from the image: it must start with
  an auxiliary (Is, Are, Does, Has, Can, ...), end with "?", and offer no either/or alternatives
  ("Is the flame blue or yellow").

The embedding paraphrase-leak check lives in ``paraphrase.py``; ``validate_record`` runs it when
an embedder is given. Its findings are warnings (``WARNING_KINDS``): printed and recorded, never a
failure, since its measured precision is about 0.6.

Run on seed files (default: every packaged seed file)::

    python -m vrforge.generators.cfworld.rubric [--no-model] [seeds/physics.yaml ...]

prints one line per problem (``id: reason``; warnings prefixed ``warning:``), the count per check and
problems per file, and exits 1 if any problem (a warning alone does not fail).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from vrforge.generators.cfworld.validation import (
    _tokens,
    check_premise_outcome_leak,
    content_words,
    jaccard,
    stem,
)
from vrforge.schemas.cfworld import Question, Scenario

COPY_MIN = 0.75
PRESENCE_MIN = 3
CHECK_KINDS = ("copied-check", "absence-only", "prompt-objects", "still-image", "premise-mechanism", "v03-fields",
               "yes-no", "paraphrase-leak")
# Reported but not failing: the embedding detector's measured precision (bench/results/cfworld_paraphrase_leaks.json,
# about 0.6) makes its flags candidates for a reader, not defects.
WARNING_KINDS = ("paraphrase-leak",)


@dataclass(frozen=True)
class RubricRecord:
    """What the rubric reads of a scenario: its texts and its checks by field."""

    id: str
    law: str
    counterfactual: str
    l1: str
    l2: str
    l3: str
    factual: str
    outcome: str
    accept: tuple[str, ...] = ()
    anchors: tuple[str, ...] = ()
    l1_checks: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    knock_on: tuple[str, ...] = ()
    questions: tuple[Question, ...] = ()
    scenario: Scenario | None = None

    def prompt(self, level: str) -> str:
        return {"l1": self.l1, "l2": self.l2, "l3": self.l3}[level]

    @classmethod
    def from_compact(cls, record: dict[str, Any], domain: str = "physics") -> RubricRecord:
        """A compact seed record (one without ``lawbank.compact_problems``)."""
        from vrforge.generators.cfworld.lawbank import expand

        _, scenario = expand(record, domain, "rubric")

        def texts(name: str) -> tuple[str, ...]:
            return tuple(" ".join(t.split()) for t in record.get(name, []))

        return cls(id=record["id"], law=" ".join(record["law"].split()),
                   counterfactual=" ".join(record["counterfactual"].split()),
                   l1=scenario.levels["l1"].prompt, l2=scenario.levels["l2"].prompt, l3=scenario.levels["l3"].prompt,
                   factual=" ".join(record["factual"].split()), outcome=" ".join(record["outcome"].split()),
                   accept=texts("accept"), anchors=texts("anchors"), l1_checks=texts("l1_checks"),
                   checks=texts("checks"), knock_on=texts("knock_on"), questions=scenario.questions, scenario=scenario)

    @classmethod
    def from_scenario(cls, scenario: Scenario) -> RubricRecord:
        """A built scenario: the checks come back from the L1/L2 questions' ``source_id`` ("checks.0", ...);
        the accepted depictions from the L2 assessment criteria."""
        fields: dict[str, list[str]] = {"anchors": [], "l1_checks": [], "checks": [], "knock_on": []}
        accept: tuple[str, ...] = ()
        for q in scenario.questions:
            name = q.source_id.split(".")[0]
            if name in fields and q.level == ("l2" if name in ("checks", "knock_on") else "l1"):
                fields[name].append(q.question.rstrip("?"))
            if q.level == "l2" and q.source_id == "outcome":
                match = re.match(r"1: clearly shows any one of: (.*?); 0\.5:", q.criteria)
                accept = tuple(match.group(1).split("; ")[1:]) if match else ()
        levels = scenario.levels
        return cls(id=scenario.id, law=scenario.law, counterfactual=scenario.counterfactual,
                   l1=levels["l1"].prompt, l2=levels["l2"].prompt, l3=levels["l3"].prompt,
                   factual=levels["l1"].assessment_point, outcome=levels["l2"].assessment_point, accept=accept,
                   anchors=tuple(fields["anchors"]), l1_checks=tuple(fields["l1_checks"]), checks=tuple(fields["checks"]),
                   knock_on=tuple(fields["knock_on"]), questions=scenario.questions, scenario=scenario)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _norm(text: str) -> str:
    return " ".join(_tokens(text))


# ----------------------------------------------------------------------------- copied checks, bare anchors

def check_copied(record: RubricRecord) -> list[str]:
    """L2/L3 checks test the counterfactual: no copy of an L1 check or anchor, no bare scene anchor."""
    reasons = []
    earlier = [("L1 check", c) for c in record.l1_checks] + [("anchor", a) for a in record.anchors]
    scene = content_words(record.l1)
    for check in (*record.checks, *record.knock_on):
        words = content_words(check)
        copy = next(((kind, other) for kind, other in earlier
                     if _norm(other) == _norm(check) or (words and jaccard(words, content_words(other)) >= COPY_MIN)), None)
        if copy is not None:
            reasons.append(f"copied-check: the L2/L3 check {check!r} repeats the {copy[0]} {copy[1]!r}")
        elif words and words <= scene and presence_words(check) == words:  # an absence is no anchor
            reasons.append(f"copied-check: the L2/L3 check {check!r} is a bare scene anchor (every word is in the L1 "
                           "prompt): ask about a consequence of the premise, and move it to anchors")
    return reasons


# ----------------------------------------------------------------------------- absences

# An absence marker; a postfix one ("is the scab missing") negates what comes before it.
_PREFIX_ABSENCE = re.compile(r"\b(?:no|not|never|without|none|nothing|nobody|neither|nor|nowhere|"
                             r"(?:free|empty|bare|clear|devoid|short) of|lacks?|lacking)\b")
_POSTFIX_ABSENCE = re.compile(r"\b(?:absent|missing|gone|lacking|nowhere to be seen)\b")
# Where a negated phrase ends: punctuation, or a word that starts another phrase.
_BOUNDARY = re.compile(r"[,;:()]|\b(?:and|but|while|whereas|instead|yet|only|though|although|because|rather)\b")
_PRESENCE_WORDS = frozenset({"instead", "only", "rather"})


def presence_words(text: str) -> frozenset[str]:
    """The content words of a text outside its negated phrases (empty when it has no absence marker: all of it)."""
    text = text.lower().replace("n't", " not")
    spans: list[tuple[int, int]] = []
    for match in _PREFIX_ABSENCE.finditer(text):
        end = next((b.start() for b in _BOUNDARY.finditer(text, match.end())), len(text))
        spans.append((match.start(), end))
    for match in _POSTFIX_ABSENCE.finditer(text):
        start = max((b.end() for b in _BOUNDARY.finditer(text, 0, match.start())), default=0)
        spans.append((start, match.end()))
    if not spans:
        return content_words(text)
    kept, last = [], 0
    for start, end in sorted(spans):
        kept.append(text[last:start])
        last = max(last, end)
    kept.append(text[last:])
    return content_words(" ".join(kept))


def is_absence_only(text: str) -> bool:
    """Whether a check's "yes" needs only that something is missing."""
    lowered = text.lower().replace("n't", " not")
    if not (_PREFIX_ABSENCE.search(lowered) or _POSTFIX_ABSENCE.search(lowered)):
        return False
    if _PRESENCE_WORDS & set(_tokens(lowered)):
        return False
    return len(presence_words(text)) < PRESENCE_MIN


def check_absence_only(record: RubricRecord) -> list[str]:
    reasons = []
    for name, texts in _visible_fields(record):
        for text in texts:
            if is_absence_only(text):
                reasons.append(f"absence-only: {name} {text!r} is satisfied by leaving the thing out: add what is "
                               "there instead")
    return reasons


def _visible_fields(record: RubricRecord) -> list[tuple[str, Sequence[str]]]:
    return [("factual", [record.factual]), ("outcome", [record.outcome]), ("accept", record.accept),
            ("anchor", record.anchors), ("l1_check", record.l1_checks), ("check", record.checks),
            ("knock_on", record.knock_on)]


# ----------------------------------------------------------------------------- objects the prompt never asks for

# Nouns that name a view, a part or an attribute of whatever is drawn, not another object.
GENERIC_NOUNS = _words("""
image picture photo photograph scene view frame background foreground colour color shade hue tint side part parts
top bottom front back middle centre center edge edges end ends half left right shape size height length width depth
amount number level position angle direction way place area spot patch row line surface tip base outline pattern
texture light shadow reflection one ones rest kind sort type piece pieces bit lot pair group each other others
distance instant moment state form sign signs trace traces mark marks region regions zone section
disc circle ring arc band blob dot dots cluster heap pile mass layer sheet column streak stripe curve spiral
""")
# Parts of a body or an object that a prompt naming the whole implies.
PART_NOUNS = _words("""
head face eye eyes mouth nose ear ears neck leg legs foot feet hand hands arm arms finger fingers wing wings tail
fin fins gill gills scale scales feather feathers fur skin body belly back beak claw claws paw paws horn horns
leaf leaves stem stems root roots branch branches trunk bark petal petals lid rim handle wall walls floor roof
window windows door doors wheel wheels string strings blade blades sole shell
""")


@cache
def _nlp() -> Any:
    """spaCy's small English pipeline without parser and NER (tagging and lemmas only), or None when missing."""
    try:
        import spacy
    except ImportError:
        return None
    from vrforge.generators.cfworld.probes.denominalize import SPACY_MODELS

    for name in SPACY_MODELS:
        try:
            return spacy.load(name, exclude=["ner", "parser"])
        except OSError:
            continue
    return None


NOUNS_UNAVAILABLE = ("prompt-objects: cannot tag nouns: spaCy's English pipeline is not installed "
                     "(pip install -e '.[probes]')")


@cache
def _noun_lemmas(text: str) -> tuple[str, ...]:
    """The nouns of a check outside its negated phrases (a check may ask that a thing is absent)."""
    nlp = _nlp()
    if nlp is None:
        return ()
    kept = presence_words(text)
    return tuple(t.lemma_.lower() for t in nlp(text) if t.pos_ in ("NOUN", "PROPN") and t.is_alpha
                 and (stem(t.text.lower()) in kept or stem(t.lemma_.lower()) in kept))


@cache
def _stems(text: str) -> frozenset[str]:
    """Stems of every word and of its spaCy lemma (so "leaves" matches "leaf" and "mice" matches "mouse")."""
    out = {stem(w) for w in _tokens(text)}
    nlp = _nlp()
    if nlp is not None:
        out |= {stem(t.lemma_.lower()) for t in nlp(text) if t.is_alpha}
    return frozenset(out)


def missing_nouns(check: str, allowed_text: str) -> list[str]:
    """The nouns of ``check`` that ``allowed_text`` never names (generic and part nouns pass)."""
    allowed = _stems(allowed_text)
    return sorted({lemma for lemma in _noun_lemmas(check)
                   if lemma not in GENERIC_NOUNS and lemma not in PART_NOUNS and stem(lemma) not in allowed})


def check_prompt_objects(record: RubricRecord) -> list[str]:
    """No check may need an object its level's prompt does not ask for."""
    if _nlp() is None:
        return [NOUNS_UNAVAILABLE]
    reasons = []
    consequence = " . ".join([record.outcome, *record.accept])
    groups: list[tuple[str, Sequence[str], dict[str, str]]] = [
        ("anchor", record.anchors, {"L1": record.l1, "L2": record.l2, "L3": record.l3}),
        ("l1_check", record.l1_checks, {"L1": f"{record.l1} . {record.factual}"}),
        ("check", record.checks, {"L2": f"{record.l2} . {consequence}", "L3": f"{record.l3} . {consequence}"}),
        ("knock_on", record.knock_on, {"L2": f"{record.l2} . {consequence}", "L3": f"{record.l3} . {consequence}"}),
    ]
    for name, texts, prompts in groups:
        for text in texts:
            for level, prompt in prompts.items():
                missing = missing_nouns(text, prompt)
                if missing:
                    reasons.append(f"prompt-objects: {name} {text!r} needs {', '.join(missing)}, which the {level} prompt "
                                   "does not ask for")
    return reasons


# ----------------------------------------------------------------------------- one still image

MOTION_TIME = _words("""
moving moves motion slowly quickly rapidly speed speeding lively vigorously vigorous sluggish sluggishly
later minutes minute seconds hours eventually gradually soon meanwhile afterwards afterward flickering flickers
twitching wriggling thrashing flapping
""")
MOTION_PHRASES = re.compile(r"\b(?:starts?|started|starting|begins?|began|beginning) to\b|\babout to\b|\bgoing to\b|"
                            r"\bover time\b|\bafter (?:a|an|the|some|several|many|\d+|one|two|three|five|ten)\b|"
                            r"\bin the process of\b|\bkeeps? (?:on )?\w+ing\b|\bcontinues? to\b|\bno longer\b|"
                            r"\bany ?more\b|\bthen\b")


def motion_time_words(text: str) -> list[str]:
    lowered = " ".join(text.lower().split())
    found = sorted(set(_tokens(lowered)) & MOTION_TIME)
    return found + [m.group(0) for m in MOTION_PHRASES.finditer(lowered)]


def check_still_image(record: RubricRecord) -> list[str]:
    reasons = []
    for name, texts in _visible_fields(record):
        for text in texts:
            words = motion_time_words(text)
            if words:
                reasons.append(f"still-image: {name} {text!r} needs motion or elapsed time ({', '.join(words)}): "
                               "draw the instant its result is visible")
    return reasons


# ----------------------------------------------------------------------------- premise: a mechanism, not the picture

COLOUR_WORDS = _words("""red orange yellow green blue purple violet pink brown black white grey gray golden silver
colourless colorless""")
# A simile or an appearance verb states what is seen, not why.
_BEHAVIOUR = re.compile(r"\b(?:look|appear|seem|behave|act|deform|bend|stretch|flow|bounce|melt|glow|shine|move|float|sink|"
                        r"ripple|crumple|fold|sag|droop|wobble|shatter|break|splash|pour|drip|spread|swell|curl)"
                        r"(?:s|es|ed|ing)? like\b|"
                        r"\bas if\b|\bthe same colou?r\b|\b(?:turns?|stays?|remains?|glows?|shines?) (?:" +
                        "|".join(sorted(COLOUR_WORDS)) + r")\b|"
                        # a visible state the objects keep: the picture, not its cause
                        r"\b(?:stays?|remains?|keeps?|staying|remaining) (?:upright|standing|intact|whole|unbroken|"
                        r"in one piece|afloat|aloft|in place|still)\b")


def check_premise_mechanism(record: RubricRecord) -> list[str]:
    """The premise is a changed cause; a simile, an appearance or a colour it shares with the outcome is the picture."""
    reasons = []
    premise = record.counterfactual.lower()
    hits = [m.group(0) for m in _BEHAVIOUR.finditer(premise)]
    shared_colours = sorted(set(_tokens(premise)) & set(_tokens(record.outcome.lower())) & COLOUR_WORDS)
    if hits or shared_colours:
        named = ", ".join(repr(h) for h in hits + shared_colours)
        reasons.append(f"premise-mechanism: the premise describes the visible behaviour ({named}): state the changed "
                       "mechanism instead")
    if record.scenario is not None:
        reasons += [r.replace("premise-leak:", "premise-mechanism:", 1) for r in check_premise_outcome_leak(record.scenario)]
    return reasons


# ----------------------------------------------------------------------------- v0.3 fields

L3_WORDS = (12, 25)  # the L3 prompt's length in words: the premise and the scene, nothing more


def check_v03_fields(record: RubricRecord) -> list[str]:
    reasons = []
    words = len(record.l3.split())
    if not L3_WORDS[0] <= words <= L3_WORDS[1]:
        reasons.append(f"v03-fields: l3 has {words} words, outside {L3_WORDS[0]}-{L3_WORDS[1]}")
    if not record.anchors:
        reasons.append("v03-fields: no anchors (the scene anchors judged under visual integrity)")
    if not record.knock_on:
        reasons.append("v03-fields: no knock_on check (a second visible effect of the changed law)")
    return reasons


# ----------------------------------------------------------------------------- yes/no questions

AUXILIARIES = _words("is are was were does do did has have had can could will would should may might must")
# Either/or alternatives a rater cannot answer yes or no: two members of one class around "or".
_CONTRASTS = (
    COLOUR_WORDS | {"dark", "light", "bright", "pale"},
    _words("left right up down upward downward upwards downwards north south east west above below inside outside "
              "front behind top bottom"),
    _words("large small big little tall short long wide narrow thick thin high low"),
    _words("open closed shut full empty wet dry solid liquid whole broken straight bent curved upright flat lying "
              "standing sharp blurred blurry round square hot cold sunk floating"),
    _words("one two three four five six seven eight nine ten more fewer less many few"),
)


def yes_no_problems(question: str) -> list[str]:
    """Why a judge question is not one a rater answers yes or no from the image (empty when it is)."""
    text = " ".join(question.split())
    words = _tokens(text)
    problems = []
    if not text.endswith("?"):
        problems.append("does not end with '?'")
    # A lead-in phrase before the question proper is fine: "Setting the changed law aside, is the image ...".
    lead_in = _tokens(text.split(",", 1)[1]) if "," in text else []
    if not words or (words[0] not in AUXILIARIES and not (lead_in and lead_in[0] in AUXILIARIES)):
        problems.append(f"does not start with an auxiliary verb (starts {words[0] if words else text!r})")
    for a, b in re.findall(r"\b(\w+),? or (\w+)\b", text.lower()):
        if any(a in group and b in group for group in _CONTRASTS) and a != b:
            problems.append(f"offers alternatives ({a} or {b}) instead of one yes/no fact")
    return problems


def check_yes_no(questions: Iterable[Question]) -> list[str]:
    return [f"yes-no: {q.level} {q.dimension} question {q.question[:90]!r} {p}"
            for q in questions for p in yes_no_problems(q.question)]


# ----------------------------------------------------------------------------- all of them

def validate_record(record: RubricRecord, embed: Callable[[Sequence[str]], Any] | None = None) -> list[str]:
    """Every rubric reason for one record; ``embed`` adds the embedding paraphrase-leak check."""
    reasons = (check_copied(record) + check_absence_only(record) + check_prompt_objects(record)
               + check_still_image(record) + check_premise_mechanism(record) + check_v03_fields(record)
               + check_yes_no(record.questions))
    if embed is not None:
        from vrforge.generators.cfworld.paraphrase import check_paraphrase_leak

        reasons += check_paraphrase_leak(record, embed)
    return reasons


def validate_scenarios(scenarios: Iterable[Scenario], embed: Callable[[Sequence[str]], Any] | None = None) -> list[str]:
    """Rubric problems of built scenarios, one line each ("id: reason")."""
    return [f"{s.id}: {reason}" for s in scenarios for reason in validate_record(RubricRecord.from_scenario(s), embed)]


def kind_of(reason: str) -> str:
    """The check name a reason starts with (after an "id: " prefix)."""
    for part in reason.split(": "):
        if part in CHECK_KINDS:
            return part
    return reason.split(":")[0]


def read_records(path: Path) -> tuple[list[RubricRecord], list[str]]:
    """The compact records of one seed file, and one line per record that cannot be read."""
    import yaml

    from vrforge.generators.cfworld.lawbank import SAFE_LOADER, compact_problems

    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return [], [f"{path.name}: cannot read: {' '.join(str(exc).split())[:200]}"]
    if not isinstance(data, dict) or not isinstance(data.get("scenarios"), list) or data.get("format") != "compact":
        return [], [f"{path.name}: not a compact seed file (format: compact, scenarios: [...])"]
    records, problems = [], []
    for index, raw in enumerate(data["scenarios"]):
        found = compact_problems(raw)
        label = raw.get("id", f"scenarios[{index}]") if isinstance(raw, dict) else f"scenarios[{index}]"
        if found:
            problems += [f"{label}: record: {p}" for p in found]
            continue
        records.append(RubricRecord.from_compact(raw, str(data.get("domain", "physics"))))
    return records, problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vrforge.generators.cfworld.rubric",
                                     description="Check CF-World compact seed files against the v0.3 rubric.")
    parser.add_argument("files", nargs="*", type=Path, help="seed files (default: every packaged seed file)")
    parser.add_argument("--no-model", action="store_true", help="skip the embedding paraphrase-leak check")
    args = parser.parse_args(argv)
    from vrforge.generators.cfworld.lawbank import SEEDS_DIR

    files = args.files or sorted(SEEDS_DIR.glob("*.yaml"))
    embed = None
    if not args.no_model:
        from vrforge.generators.cfworld.paraphrase import MODEL_MISSING, leak_embedder

        embed = leak_embedder()
        if embed is None:
            print(f"note: {MODEL_MISSING}; the paraphrase-leak check is skipped", file=sys.stderr)
    kinds: Counter[str] = Counter()
    per_file: Counter[str] = Counter()
    total = 0
    for path in files:
        if not path.is_file():
            print(f"{path}: no such file")
            kinds["file"] += 1
            continue
        records, problems = read_records(path)
        lines = problems + [f"{r.id}: {reason}" for r in records for reason in validate_record(r, embed)]
        for line in lines:
            kind = kind_of(line)
            print(("warning: " if kind in WARNING_KINDS else "") + line)
            kinds[kind] += 1
            per_file[path.name] += kind not in WARNING_KINDS
        per_file[path.name] += 0  # every file listed, a clean one with 0
        total += len(records)
    failing = sum(n for kind, n in kinds.items() if kind not in WARNING_KINDS)
    print(f"{failing} problem(s) in {total} record(s)"
          + "".join(f"\n  {kind}: {n}" + (" (warnings)" if kind in WARNING_KINDS else "")
                    for kind, n in sorted(kinds.items()))
          + "".join(f"\n  {name}: {n}" for name, n in sorted(per_file.items())))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
