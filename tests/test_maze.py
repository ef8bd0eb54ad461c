"""The multi-layer maze: generator, drawing and verifier."""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import pytest
from helpers import jpeg, noise, resized

from vrforge.generators.tacit import maze
from vrforge.registry import accepted_puzzle, get_task, meta_errors
from vrforge.render import encode_png, rasterise
from vrforge.verifiers import maze as verifier

SPEC = get_task("maze")


def make(difficulty: str, index: int = 0):
    return accepted_puzzle(SPEC, difficulty, index)


@pytest.fixture(scope="module", params=["easy", "medium", "hard"])
def puzzle(request):
    return make(request.param)


def test_layers_are_perfect_mazes_and_the_route_is_unique(puzzle):
    meta = puzzle.meta
    n = meta["size"]
    for layer in range(meta["layers"]):
        opened = sum(row.count("1") for row in meta["open_east"][layer]) + sum(row.count("1") for row in meta["open_south"][layer])
        assert opened == n * n - 1  # a spanning tree: connected with exactly one route between cells
    # Trees joined by exactly one portal per adjacent pair form one tree: the route is unique.
    assert len(meta["portals"]) == meta["layers"] - 1
    cells = {(layer, *cell) for layer, line in puzzle.solution for cell in line}
    assert len(cells) == meta["route_length"]


def test_meta_matches_its_schema(puzzle):
    assert meta_errors("maze", puzzle.meta) == []
    assert meta_errors("maze", {**puzzle.meta, "start": [0, 1]}) != []


@pytest.mark.parametrize("width", [512, 1024, 2048])
def test_solution_passes_at_every_resolution(puzzle, width):
    image = rasterise(SPEC.draw(puzzle.meta, puzzle.solution), (width,))[width]
    verdict = SPEC.verify(puzzle.meta, image)
    assert verdict.passed, verdict.reason
    assert verdict.details["path_cells"] == puzzle.meta["route_length"]


@pytest.mark.parametrize("degrade", ["shrink", "grow", "jpeg", "png-bytes"])
def test_solution_survives_resizing_and_compression(puzzle, degrade):
    image = rasterise(SPEC.draw(puzzle.meta, puzzle.solution), (512,))[512]
    degraded = {"shrink": lambda: resized(image, 0.9), "grow": lambda: resized(image, 1.1),
                "jpeg": lambda: jpeg(image, 85), "png-bytes": lambda: encode_png(image)}[degrade]()
    assert SPEC.verify(puzzle.meta, degraded).passed


def test_each_distractor_fails_exactly_its_named_check(puzzle):
    assert len(puzzle.distractors) == 4 and set(puzzle.violations) <= set(SPEC.checks)
    for answer, name in zip(puzzle.distractors, puzzle.violations):
        for width in (512, 2048):
            image = rasterise(SPEC.draw(puzzle.meta, answer), (width,))[width]
            assert SPEC.verify(puzzle.meta, image).failed == [name]
        assert SPEC.verify(puzzle.meta, jpeg(resized(image, 0.25 * 0.9), 85)).failed == [name]


def test_options_are_pairwise_different_pixels(puzzle):
    digests = {hashlib.sha256(rasterise(SPEC.draw(puzzle.meta, o), (512,))[512].tobytes()).hexdigest()
               for o in puzzle.options()}
    assert len(digests) == 5


def test_blank_puzzle_and_noise_are_rejected(puzzle):
    blank = rasterise(SPEC.draw(puzzle.meta, None), (512,))[512]
    verdict = SPEC.verify(puzzle.meta, blank)
    assert not verdict.passed and verdict.usable
    assert {"missing_start", "wrong_exit", "disconnected"} <= set(verdict.failed)
    assert not SPEC.verify(puzzle.meta, noise(blank.shape[1], blank.shape[0])).passed


def test_a_faithful_redrawing_with_another_stroke_still_passes(puzzle):
    # Any rendering of the route passes, not only the reference picture: thinner line, no caps.
    svg = SPEC.draw(puzzle.meta, puzzle.solution).replace(f'stroke-width="{maze.fmt(maze.PATH_WIDTH)}"', 'stroke-width="5"')
    svg = svg.replace('stroke-linecap="round"', 'stroke-linecap="square"')
    assert SPEC.verify(puzzle.meta, rasterise(svg, (1024,))[1024]).passed


def test_judge_names_each_violation():
    p = make("medium", 3)
    meta = p.meta
    start, end = tuple(meta["start"]), tuple(meta["end"])
    cells = {(layer, *cell) for layer, line in p.solution for cell in line}
    links = {tuple(sorted(((layer, *a), (layer, *b)))) for layer, line in p.solution for a, b in zip(line, line[1:])}
    assert all(verifier.judge(meta, cells, links).values())
    assert verifier.judge(meta, cells - {start}, {x for x in links if start not in x})["missing_start"] is False
    assert verifier.judge(meta, cells - {end}, {x for x in links if end not in x})["wrong_exit"] is False
    n = meta["size"]
    wall = next(((0, r, c), (0, r, c + 1)) for r in range(n) for c in range(n - 1) if meta["open_east"][0][r][c] == "0")
    assert verifier.judge(meta, cells | set(wall), links | {wall})["wall_breach"] is False
    # an extra dead end hanging off the route: a branch
    layer, route = p.solution[-1]
    cell, side = next((cell, other) for cell in route[1:-1]
                      for other in [(cell[0] + dr, cell[1] + dc) for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0))]
                      if 0 <= other[0] < n and 0 <= other[1] < n and other not in route
                      and verifier._is_open(meta, (layer, *cell), (layer, *other)))
    branch_link = tuple(sorted(((layer, *cell), (layer, *side))))
    assert verifier.judge(meta, cells | {(layer, *side)}, links | {branch_link})["branching"] is False


def _editor(puzzle) -> maze._Editor:
    layers = [maze.Layer.from_meta(puzzle.meta, index) for index in range(puzzle.meta["layers"])]
    return maze._Editor(puzzle.meta, layers, maze.drawing_of(puzzle.solution), salt=7)


def _ink(drawing) -> int:
    return len(drawing.cells) + len(drawing.links)


def test_variants_fail_exactly_the_check_they_name(puzzle):
    editor = _editor(puzzle)
    solution = maze.drawing_of(puzzle.solution)
    assert maze.strokes_of(solution) == puzzle.solution or maze.drawing_of(maze.strokes_of(solution)) == solution
    first = editor.variants(solution)
    assert len(first) >= 6 and editor.variants(solution) is first  # cached: the same list every time
    later = [v for _, d in first[:5] for v in editor.variants(d)]
    for name, drawing in first + later:
        judged = verifier.judge(puzzle.meta, set(drawing.cells), set(drawing.links))
        assert editor.checks(drawing) == judged  # the fast checks are the verifier's
        assert [k for k, ok in judged.items() if not ok] == [name]
        assert maze.drawing_of(maze.strokes_of(drawing)) == drawing  # drawn as it was meant
    # Around the solution as many variants add ink as remove it.
    changes = [int(np.sign(_ink(d) - _ink(solution))) for _, d in first]
    assert changes.count(1) == changes.count(-1) > 0


def test_variants_of_a_distractor_include_reverse_edits_and_none_half_way_back():
    # The solution is one edit back from a distractor at the set's centre; the other options
    # around it must look alike: around a drawing with more ink than the solution (a branch, a
    # stray line) some variants remove ink (a gap), around one with less ink (a gap, a pruned
    # end) some add it, and none lies nearer the solution than the distractor (half the way back).
    for difficulty in ("easy", "medium", "hard"):
        p = make(difficulty)
        editor = _editor(p)
        solution = maze.drawing_of(p.solution)
        target = editor.stand_in(solution)
        reverse = {1: 0, -1: 0}
        for _, drawing in editor.variants(solution):
            away = int(np.sign(_ink(drawing) - _ink(solution)))
            here = np.abs(editor.stand_in(drawing) - target).sum()
            around = editor.variants(drawing)
            assert all(np.abs(editor.stand_in(d) - target).sum() >= here for _, d in around)
            if away:
                reverse[away] += any(np.sign(_ink(d) - _ink(drawing)) == -away for _, d in around)
        assert reverse[1] > 0 and reverse[-1] > 0, difficulty


def test_unusable_images_give_a_verdict_not_an_exception(puzzle):
    for bad in (b"\x89PNG\r\n\x1a\nbroken", b"", np.zeros((1, 1, 3), np.uint8), "/no/such.png", 3.5):
        verdict = SPEC.verify(puzzle.meta, bad)
        assert not verdict.passed and not verdict.usable and verdict.reason.startswith("unusable input")
    square = noise(512, 512) if puzzle.meta["layers"] > 1 else noise(512, 200)
    assert not SPEC.verify(puzzle.meta, square).usable  # wrong aspect ratio


def test_generation_is_deterministic():
    a, b = make("hard", 5), make("hard", 5)
    assert json.dumps(a.meta, sort_keys=True) == json.dumps(b.meta, sort_keys=True)
    assert SPEC.draw(a.meta, a.solution) == SPEC.draw(b.meta, b.solution)
    assert a.violations == b.violations and a.answer_index == b.answer_index


# sha256 of the 512 px solution PNG for seed 0, index 0: a silent change to generation,
# drawing or encoding changes these.
SNAPSHOTS = {
    "easy": "9cc96043eadbecb509f11afff33dca02719369630087cba164d87b647000d694",
    "medium": "1a895575f44999353b997196e1c9ddd54e7357473dc88e923500446c4357fbf1",
    "hard": "3c11de0894e7f287404aac24072e2c3910b1e89393f61171a07632050a8cae1b",
}


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_snapshot_of_rendered_solution(difficulty):
    p = make(difficulty)
    png = encode_png(rasterise(SPEC.draw(p.meta, p.solution), (512,))[512])
    assert hashlib.sha256(png).hexdigest() == SNAPSHOTS[difficulty]
    assert io.BytesIO(png).getbuffer().nbytes < 20_000
