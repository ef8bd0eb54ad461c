"""How a person answers a task's puzzle in the browser (``vrforge study``, the generative track for people).

A task declares its answer tools in ``TaskSpec.answer_tools``: an ``AnswerTools`` with

- ``kind``: one of the tool kinds the study page knows (``TOOL_KINDS``);
- ``spec(meta)``: what the page needs to offer the tools, as JSON-ready data: picture
  geometry (in the SVG units of the task's own drawing), palettes and the targets a click can
  change. It must hold nothing the picture does not show (no solution, rule or answer key):
  it is sent to the participant's browser;
- ``build(meta, answer)``: the participant's structured answer (what the page sends back for
  that kind) turned into the task's own answer object, the one ``draw(meta, answer)`` draws.
  The drawing is then rendered and scored by the task's verifier, as a model's answer image is.
  A malformed answer raises ``AnswerError`` (one line), never anything else;
- ``encode(meta, answer_object)`` (optional): the inverse of ``build``, the structured answer
  that draws a given answer object, or None when the tools cannot express it. Scripted
  participants use it to draw a known answer with the tools;
- ``help``: one or two sentences for the instructions page: how to use the tools.

A task without answer tools (for example one made by ``vrforge new-task``) is answered in a
study by uploading a PNG of the answer drawn on the puzzle.

Tool kinds and the answer each sends back:

- ``paint``: targets (rectangles or discs) painted with palette values:
  ``{"values": [value or null per target]}``;
- ``toggle``: targets switched on or off, each in its own colour: ``{"values": [0 or 1 per target]}``;
- ``route``: lines through the cells of one or more square grids (layers):
  ``{"strokes": [[[layer, row, col], ...], ...]}``;
- ``select``: one target chosen: ``{"selected": [index]}`` (empty: none);
- ``voxels``: a heightmap of unit-cube columns on an n x n floor: ``{"heights": [[h, ...], ...]}``;
- ``panel``: a panel of objects set by attributes: ``{"type", "size", "colour", "rotation": index,
  "positions": [slot, ...]}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

TOOL_KINDS = ("paint", "toggle", "route", "select", "voxels", "panel")


class AnswerError(ValueError):
    """A structured answer that the tools could not have sent (wrong shape, value out of range): one line."""


@dataclass(frozen=True)
class AnswerTools:
    kind: str
    spec: Callable[[Mapping[str, Any]], dict[str, Any]]
    build: Callable[[Mapping[str, Any], Mapping[str, Any]], Any]
    help: str
    encode: Callable[[Mapping[str, Any], Any], dict[str, Any] | None] | None = None

    def __post_init__(self) -> None:
        if self.kind not in TOOL_KINDS:
            raise ValueError(f"unknown answer tool kind {self.kind!r} (known: {', '.join(TOOL_KINDS)})")
