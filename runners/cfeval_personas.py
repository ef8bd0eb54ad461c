"""Judge personas for CF-Eval and their selection per level.

A persona is the judge's system prompt plus the instruction put before the questions. The
paper scores the factual level (L1) with a balanced judge and the counterfactual levels
(L2, L3) with a strict, adversarial one, because a lenient VLM judge tends to credit an
ordinary-looking image with the counterfactual effect it was asked for. That is the
default here: ``l1=balanced,l2=strict,l3=strict``.

The persona's name and text are part of every request, so changing either changes the
response cache key and its judgements are never mixed with another persona's.
"""

from __future__ import annotations

from dataclasses import dataclass

LEVELS = ("l1", "l2", "l3")

_OUTPUT_RULES = (
    "Answer with one JSON object only, no prose around it. It has one key per question id "
    '("q1", "q2", ...); each value is an object with "reasoning" (what you see in the image that '
    'decides the question, written before the score) and "score": 1 when the image fully meets the '
    "criteria, 0.5 when it meets them partly or with a clear flaw, 0 when it fails them."
)


@dataclass(frozen=True)
class Persona:
    name: str
    system: str
    instruction: str


PERSONAS: dict[str, Persona] = {
    "balanced": Persona(
        name="balanced",
        system=(
            "You are an objective, balanced judge of AI-generated images. You decide whether an image shows "
            "what the evaluation criteria ask for, judging only what is visible in the image. Minor rendering "
            "artefacts that do not change what the image shows are not failures. " + _OUTPUT_RULES
        ),
        instruction=(
            "Score the image against each question and its criteria. Give 1 when the criteria are met even if "
            "the image has small generation flaws, 0.5 when they are met only in part or with a noticeable "
            "error, and 0 only when the image clearly fails them."
        ),
    ),
    "strict": Persona(
        name="strict",
        system=(
            "You are a strict, adversarial judge of AI-generated images of counterfactual worlds. Image "
            "generators often draw the ordinary, real-world version of a scene instead of the counterfactual "
            "one they were asked for. Look for evidence of failure first: normal physics, normal shapes, "
            "normal behaviour, details that contradict the counterfactual rule. Never assume an effect that "
            "is not clearly visible. " + _OUTPUT_RULES
        ),
        instruction=(
            "Score the image strictly against each question and its criteria. Actively look for visual "
            "evidence that the image fails them. Give 1 only when the criteria are met clearly and without "
            "contradiction; when the evidence is ambiguous, partial or shows ordinary real-world behaviour, "
            "give 0.5 or 0."
        ),
    ),
}

DEFAULT_PERSONAS = {"l1": "balanced", "l2": "strict", "l3": "strict"}


class PersonaError(ValueError):
    """A persona specification that cannot be used: one line for the user."""


def get_persona(name: str) -> Persona:
    try:
        return PERSONAS[name]
    except KeyError:
        raise PersonaError(f"unknown persona {name!r} (known: {', '.join(sorted(PERSONAS))})") from None


def parse_persona_spec(spec: str | None) -> dict[str, str]:
    """``"l1=balanced,l2=strict,l3=strict"`` -> {level: persona name}.

    A bare name (``"strict"``) applies to every level; levels the spec leaves out keep the
    default (balanced for L1, strict for L2 and L3).
    """
    chosen = dict(DEFAULT_PERSONAS)
    if spec is None or not spec.strip():
        return chosen
    text = spec.strip()
    if "=" not in text and "," not in text:
        get_persona(text)
        return {level: text for level in LEVELS}
    for part in text.split(","):
        level, sep, name = (p.strip() for p in part.partition("="))
        if not sep or not level or not name:
            raise PersonaError(f"--persona: {part.strip()!r} is not LEVEL=NAME (e.g. l1=balanced,l2=strict,l3=strict)")
        level = level.lower()
        if level not in LEVELS:
            raise PersonaError(f"--persona: unknown level {level!r} (levels: {', '.join(LEVELS)})")
        get_persona(name)
        chosen[level] = name
    return chosen
