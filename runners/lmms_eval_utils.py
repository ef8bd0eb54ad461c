"""lmms-eval task functions for the TACIT discriminative track (``vrforge export lmms-eval`` copies this file
as ``utils.py`` beside the task YAMLs; it imports nothing from vrforge, so lmms-eval users need only the YAMLs).

A doc is a row of the TACIT release: ``puzzle`` and the five options (``distractors`` with
``solution`` inserted at ``answer_index``) are its six images, in that order; the text says
what the options show (the task's hint, from the YAML's ``lmms_eval_specific_kwargs``) and asks
for one letter. The answer is parsed with the same rules as ``vrforge run tacit-choice``; each doc scores 1.0 or
0.0 (``tacit_accuracy``), averaged by lmms-eval (``aggregation: mean``) per task and pooled by the
groups' ``aggregate_metric_list``.
"""

from __future__ import annotations

import io
import re
from typing import Any

LETTERS = "ABCDE"
_UPPER = r"[A-E](?![A-Za-z0-9])"
_LOWER = r"[a-e](?=\s*$|[).:,;\]*\"'])"
_LETTER = rf"(?P<letter>{_UPPER}|{_LOWER})"
_BOXED = re.compile(rf"\\boxed\{{\s*(?:\\text(?:bf)?\{{\s*)?{_LETTER}")
_ANSWER = re.compile(rf"(?i:\banswer\b)[^A-Za-z\n]{{0,6}}(?:(?i:is)\s*)?(?:(?i:option)\s*)?[^A-Za-z\n]{{0,4}}{_LETTER}")
_OPTION = re.compile(rf"(?i:\b(?:option|choice)\b)[^A-Za-z\n]{{0,4}}{_LETTER}")
_WHOLE = re.compile(rf"^\s*(?:<\w+>)?[\s(\[*\"']*{_LETTER}[\s).:\]*\"']*(?:</\w+>)?\s*$")
_LEADING = re.compile(rf"^\s*[(\[*]*{_LETTER}\s*[).:\]*]")
_STANDALONE = re.compile(r"(?<![A-Za-z0-9])[A-E](?![A-Za-z0-9])")


def _image(cell: Any):
    """A datasets Image cell (PIL image, or {"bytes": ...}) as an RGB PIL image."""
    from PIL import Image

    if isinstance(cell, dict):
        cell = Image.open(io.BytesIO(cell["bytes"]))
    return cell.convert("RGB")


def tacit_options(doc: dict[str, Any]) -> list[Any]:
    """The five options in their lettered order: the distractors with the solution inserted at answer_index."""
    options = list(doc["distractors"])
    options.insert(int(doc["answer_index"]), doc["solution"])
    return options


def tacit_doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [_image(doc["puzzle"])] + [_image(option) for option in tacit_options(doc)]


def tacit_doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs.get('pre_prompt', '')}{kwargs.get('post_prompt', '')}"


def tacit_doc_to_target(doc: dict[str, Any]) -> str:
    return LETTERS[int(doc["answer_index"])]


def parse_choice(text: str | None, count: int = 5) -> int | None:
    """The presented position named by a free-text answer, or None when it names none or several.

    In order: ``\\boxed{C}``; the last "answer ... C"; a lone "option C" / "choice C"; a reply that
    is just the letter ("C", "c)", "(C)", "**C**", "<answer>C</answer>"); a reply starting "C)" or
    "C."; finally a single distinct capital A-E standing alone in the text.
    """
    if not text or not text.strip():
        return None
    text = text.strip()
    valid = LETTERS[:count]

    def position(letter: str) -> int | None:
        upper = letter.upper()
        return valid.index(upper) if upper in valid else None

    for pattern in (_BOXED, _ANSWER):
        matches = list(pattern.finditer(text))
        if matches:
            return position(matches[-1]["letter"])
    named = {m["letter"].upper() for m in _OPTION.finditer(text)}
    if len(named) == 1:
        return position(named.pop())
    for pattern in (_WHOLE, _LEADING):
        match = pattern.match(text)
        if match:
            return position(match["letter"])
    standalone = set(_STANDALONE.findall(text))
    return position(standalone.pop()) if len(standalone) == 1 else None


def tacit_process_results(doc: dict[str, Any], results: list[str]) -> dict[str, float]:
    """1.0 when the answer names the solution's letter, else 0.0: a float per doc, so the YAML's
    ``aggregation: mean`` gives the accuracy and lmms-eval its standard error."""
    picked = parse_choice(results[0] if results else None)
    return {"tacit_accuracy": float(picked == int(doc["answer_index"]))}
