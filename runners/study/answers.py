"""Checking and scoring one answer of each study kind, as the server receives it.

A request body that the study page could not have sent (a missing field, a value out of
range, an upload that is no image) raises ``AnswerError`` with one line, and nothing is
stored. TACIT drawings are turned into the task's answer object by its answer tools, drawn by
its own ``draw``, rendered at the study's resolution and scored by its verifier, exactly as a
model's answer image is; an uploaded image goes straight to the verifier.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from vrforge.answer_tools import AnswerError
from vrforge.runners.study.store import OPTION_COUNT, Item

MAX_UPLOAD_BYTES = 8 * 1024 * 1024
CFEVAL_SCORES = (0, 0.5, 1)
DRIFT_RATINGS = {"good": 1.0, "medium": 0.5, "poor": 0.0}


def score(kind: str, item: Item, rotation: int, body: Any,
          resolution: int) -> tuple[dict, dict, tuple[bytes, str] | None]:
    """(answer as stored, result, image drawn or uploaded) for one request body."""
    if not isinstance(body, Mapping):
        raise AnswerError("the request needs an 'answer' object")
    if kind == "tacit-choice":
        return _choice(item, rotation, body)
    if kind == "tacit-draw":
        return _draw(item, body, resolution)
    if kind == "cfeval-rate":
        return _cfeval(item, body)
    return _drift(item, body)


def presented(rotation: int, position: int) -> int:
    """The original option shown at ``position`` under ``rotation`` (the runners' circular order)."""
    return (position + rotation) % OPTION_COUNT


def _choice(item: Item, rotation: int, body: Mapping[str, Any]) -> tuple[dict, dict, None]:
    position = body.get("position")
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < OPTION_COUNT:
        raise AnswerError(f"'position' must be the chosen option's place, 0 to {OPTION_COUNT - 1}")
    option = presented(rotation, position)
    correct = option == item.private["answer_index"]
    return {"position": position, "option": option}, {"correct": correct, "option": option}, None


def _draw(item: Item, body: Mapping[str, Any], resolution: int) -> tuple[dict, dict, tuple[bytes, str]]:
    from vrforge.registry import get_task
    from vrforge.render import render_pngs
    from vrforge.runners.study.tools import tools_for

    spec = get_task(item.task)
    meta = item.private["meta"]
    kind = item.public["tools"]["kind"]
    if kind == "upload":
        data = _upload(body)
        verdict = spec.check(meta, data)
        if not verdict.usable:
            raise AnswerError(f"the uploaded file cannot be used: {verdict.reason}")
        image = (data, _mime(data))
        answer: dict[str, Any] = {"upload": len(data)}
    else:
        tools = tools_for(spec)
        structured = body.get("tool")
        if tools is None or not isinstance(structured, Mapping):
            raise AnswerError("the answer needs the drawing tools' 'tool' object")
        try:
            drawn = tools.build(meta, structured)
            png = render_pngs(spec.draw(meta, drawn), [resolution])[resolution]
        except AnswerError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as exc:  # a shape the tools never send
            raise AnswerError(f"the drawing cannot be made ({type(exc).__name__}: {exc})") from None
        verdict = spec.check(meta, png)
        image = (png, "image/png")
        answer = {"tool": dict(structured)}
    result = {"correct": verdict.passed, "passed": verdict.passed, "checks": dict(verdict.checks), "failed": verdict.failed,
              "reason": verdict.reason}
    return answer, result, image


def _upload(body: Mapping[str, Any]) -> bytes:
    text = body.get("upload")
    if not isinstance(text, str) or not text:
        raise AnswerError("the answer needs an uploaded image ('upload', base64)")
    if len(text) > MAX_UPLOAD_BYTES * 4 // 3 + 4:
        raise AnswerError(f"the upload is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise AnswerError("'upload' is not base64") from None


def _mime(data: bytes) -> str:
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as opened:
        return Image.MIME.get(opened.format or "", "image/png")


def _cfeval(item: Item, body: Mapping[str, Any]) -> tuple[dict, dict, None]:
    questions = item.private["questions"]
    scores = body.get("scores")
    if not isinstance(scores, list) or len(scores) != len(questions):
        raise AnswerError(f"'scores' needs one entry per question ({len(questions)})")
    for value in scores:
        if value is not None and (isinstance(value, bool) or value not in CFEVAL_SCORES):
            raise AnswerError("a score is 0, 0.5, 1, or null for 'cannot tell'")
    known = [(q["weight"], float(v)) for q, v in zip(questions, scores) if v is not None]
    total = sum(w for w, _ in known)
    s = sum(w * v for w, v in known) / total if known else None
    return {"scores": scores}, {"S": s, "cannot_tell": sum(v is None for v in scores)}, None


def _drift(item: Item, body: Mapping[str, Any]) -> tuple[dict, dict, None]:
    count = len(item.private["candidates"])
    ratings, ranks = body.get("ratings"), body.get("ranks")
    if not isinstance(ratings, list) or len(ratings) != count or any(r not in DRIFT_RATINGS for r in ratings):
        raise AnswerError(f"'ratings' needs good, medium or poor for each of the {count} outputs")
    if (not isinstance(ranks, list) or len(ranks) != count or any(isinstance(r, bool) or not isinstance(r, int) for r in ranks)
            or sorted(ranks) != list(range(1, count + 1))):
        raise AnswerError(f"'ranks' needs each rank from 1 to {count} once")
    result = {"ratings": [DRIFT_RATINGS[r] for r in ratings], "ranks": list(ranks)}
    return {"ratings": list(ratings), "ranks": list(ranks)}, result, None
