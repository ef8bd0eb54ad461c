"""The built-in tasks' answer tools: specs that show only the picture, answers drawn and scored by the task itself."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from vrforge.answer_tools import AnswerError, AnswerTools
from vrforge.registry import accepted_puzzle, all_tasks
from vrforge.render import render_pngs
from vrforge.runners.study.tools import BUILTIN_TOOLS, tools_for

BUILTIN = sorted(BUILTIN_TOOLS)
# Meta keys that hold an answer, a rule or a key: none may reach a tool spec (it goes to the browser).
SECRET_KEYS = ("rules", "rule", "heights", "views", "unknot", "automorphisms", "hfk_total_rank", "pd_code", "switched", "solution")


def _keys(data):
    if isinstance(data, dict):
        for key, value in data.items():
            yield key
            yield from _keys(value)
    elif isinstance(data, list):
        for value in data:
            yield from _keys(value)


@pytest.fixture(scope="module")
def puzzles():
    return {task: accepted_puzzle(task, "easy", 0) for task in BUILTIN}


def test_every_builtin_task_has_tools():
    assert sorted(spec.name for spec in all_tasks() if spec.name in BUILTIN_TOOLS) == BUILTIN
    assert {spec.name for spec in all_tasks()} >= set(BUILTIN)


@pytest.mark.parametrize("task", BUILTIN)
def test_spec_shows_no_answer(task, puzzles):
    puzzle = puzzles[task]
    spec = BUILTIN_TOOLS[task].spec(puzzle.meta)
    text = json.dumps(spec)
    assert not set(_keys(spec)) & set(SECRET_KEYS)
    solution = json.dumps(puzzle.solution)
    if len(solution) > 24:  # long enough that its text standing in the spec could not be chance
        assert solution not in text
    assert spec["width"] > 0 and spec["height"] > 0


@pytest.mark.parametrize("task", BUILTIN)
def test_solution_drawn_with_the_tools_passes_and_a_distractor_fails_its_check(task, puzzles):
    from vrforge.registry import get_task

    spec, puzzle = get_task(task), puzzles[task]
    tools = BUILTIN_TOOLS[task]
    encoded = json.loads(json.dumps(tools.encode(puzzle.meta, puzzle.solution)))  # through JSON, as the browser sends it
    built = tools.build(puzzle.meta, encoded)
    assert spec.draw(puzzle.meta, built) == spec.draw(puzzle.meta, puzzle.solution)
    assert spec.verify(puzzle.meta, render_pngs(spec.draw(puzzle.meta, built), [512])[512]).passed
    drawable = [(d, v) for d, v in zip(puzzle.distractors, puzzle.violations) if tools.encode(puzzle.meta, d) is not None]
    for index in range(1, 10):  # a set whose distractors change what the tools keep fixed has none they draw
        if drawable:
            break
        puzzle = accepted_puzzle(task, "easy", index)
        drawable = [(d, v) for d, v in zip(puzzle.distractors, puzzle.violations)
                    if tools.encode(puzzle.meta, d) is not None]
    assert drawable, "the tools can draw none of the distractors of ten puzzles"
    distractor, violation = drawable[0]
    built = tools.build(puzzle.meta, json.loads(json.dumps(tools.encode(puzzle.meta, distractor))))
    verdict = spec.verify(puzzle.meta, render_pngs(spec.draw(puzzle.meta, built), [512])[512])
    assert verdict.failed == [violation]


MALFORMED = [{}, {"values": None}, {"values": "red"}, {"values": [10**9] * 4000}, {"values": [True] * 4000},
             {"strokes": "x"}, {"strokes": [[["a", 0, 0]]]}, {"strokes": [[[0, -1, 0]]]}, {"strokes": [[]]},
             {"heights": [[-1]]}, {"heights": "tall"}, {"selected": [99]}, {"selected": [0, 1]}, {"selected": ["0"]},
             {"type": 99, "size": 0, "colour": 0, "rotation": 0, "positions": []},
             {"type": 0, "size": 0, "colour": 0, "rotation": 0, "positions": [0, 0]}, {"type": None}]


@pytest.mark.parametrize("task", BUILTIN)
def test_malformed_answers_are_one_line_answer_errors(task, puzzles):
    tools = BUILTIN_TOOLS[task]
    for answer in MALFORMED:
        try:
            tools.build(puzzles[task].meta, answer)
        except AnswerError as exc:
            assert "\n" not in str(exc) and str(exc)
        # A malformed answer of another tool kind may be empty-but-valid for this one (no values): then it builds.


def test_the_taskspec_declaration_wins_and_tasks_without_tools_upload():
    declared = AnswerTools("select", lambda meta: {}, lambda meta, answer: [], "help")
    assert tools_for(SimpleNamespace(name="maze", answer_tools=declared)) is declared
    assert tools_for(SimpleNamespace(name="maze", answer_tools=None)) is BUILTIN_TOOLS["maze"]
    assert tools_for(SimpleNamespace(name="made_by_new_task", answer_tools=None)) is None
    with pytest.raises(ValueError, match="unknown answer tool kind"):
        AnswerTools("lasso", lambda meta: {}, lambda meta, answer: [], "help")
