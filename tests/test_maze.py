"""The multi-layer maze: generator, drawing and verifier."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import re
from collections import deque

import numpy as np
import pytest
from helpers import jpeg, noise, resized

from vrforge.generators.tacit import maze
from vrforge.params import ParamError, level_config
from vrforge.registry import accepted_puzzle, get_task, meta_errors
from vrforge.render import encode_png, rasterise
from vrforge.types import RejectedPuzzle
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
# drawing or encoding changes these. 1.7.0: hard and expert lines drawn at their answer's width.
SNAPSHOTS = {
    "easy": "9cc96043eadbecb509f11afff33dca02719369630087cba164d87b647000d694",
    "medium": "1a895575f44999353b997196e1c9ddd54e7357473dc88e923500446c4357fbf1",
    "hard": "acd43570fd0c0cb7b43d6f428adc16e39be569aab84ffed68ac8efde59d0823e",
}


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_snapshot_of_rendered_solution(difficulty):
    p = make(difficulty)
    png = encode_png(rasterise(SPEC.draw(p.meta, p.solution), (512,))[512])
    assert hashlib.sha256(png).hexdigest() == SNAPSHOTS[difficulty]
    assert io.BytesIO(png).getbuffer().nbytes < 20_000


# ---------------------------------------------------------------- expert: decoy portals, two rows

EXPERT_RESOLUTIONS = (1024, 2048)  # below its floors at 512 px (see test_legibility_floors_decide_the_resolutions)


@pytest.fixture(scope="module")
def expert():
    return make("expert")


def _graph(meta):
    """Every cell of the maze and its open passages and portals, as an adjacency map."""
    judge = verifier.Judge(meta)
    n, count = meta["size"], meta["layers"]
    adjacency = {(layer, r, c): [] for layer in range(count) for r in range(n) for c in range(n)}
    edges = [*judge.passages] + [((p["layers"][0], *p["cell"]), (p["layers"][1], *p["cell"])) for p in meta["portals"]]
    for a, b in edges:
        adjacency[a].append(b)
        adjacency[b].append(a)
    return adjacency, len(edges)


def _reach(adjacency, source, blocked=frozenset()):
    seen, queue = {source}, deque([source])
    while queue:
        for other in adjacency[queue.popleft()]:
            if other not in seen and other not in blocked:
                seen.add(other)
                queue.append(other)
    return seen


def test_expert_is_one_tree_so_its_route_is_unique_and_each_decoy_is_a_dead_end(expert):
    meta, config = expert.meta, SPEC.config("expert")
    assert len(meta["portals"]) == config.portals == 8 and meta["layers"] == 4 and meta["size"] == 32
    adjacency, edges = _graph(meta)
    # Connected with one edge fewer than cells: a tree, so exactly one route joins start and end.
    assert edges == len(adjacency) - 1 and len(_reach(adjacency, tuple(meta["start"]))) == len(adjacency)
    route = {(layer, *cell) for layer, line in expert.solution for cell in line}
    assert len(route) == meta["route_length"]
    for portal in meta["portals"][meta["layers"] - 1:]:  # the decoys
        low, high = ((layer, *portal["cell"]) for layer in portal["layers"])
        assert portal["colour"] == maze.PORTAL_COLOURS[portal["layers"][0]]  # its pair's colour, like the route's portal
        # Through the decoy lies a pocket: cut there, one side holds no part of the route.
        sides = [_reach(adjacency, low, {high}), _reach(adjacency, high, {low})]
        pocket = min(sides, key=len)
        assert not pocket & route and len({node[0] for node in pocket}) == 1
        low_size, high_size = maze.pocket_cells(meta["size"])
        assert low_size <= len(pocket) <= high_size


def test_expert_layers_are_perfect_mazes_outside_and_inside_their_pockets(expert):
    meta = expert.meta
    n = meta["size"]
    pockets = [0] * meta["layers"]
    for portal in meta["portals"][meta["layers"] - 1:]:
        adjacency, _ = _graph(meta)
        low, high = ((layer, *portal["cell"]) for layer in portal["layers"])
        pockets[min((_reach(adjacency, low, {high}), _reach(adjacency, high, {low})), key=len).pop()[0]] += 1
    for layer in range(meta["layers"]):
        opened = sum(row.count("1") for row in meta["open_east"][layer]) + sum(row.count("1") for row in meta["open_south"][layer])
        assert opened == n * n - 1 - pockets[layer]  # a spanning forest: the main region and one tree per pocket


def test_a_jump_at_a_decoy_is_a_portal_but_leads_nowhere(expert):
    meta = expert.meta
    decoy = meta["portals"][meta["layers"] - 1]
    adjacency, _ = _graph(meta)
    low, high = ((layer, *decoy["cell"]) for layer in decoy["layers"])
    pocket_side = high if len(_reach(adjacency, high, {low})) < len(_reach(adjacency, low, {high})) else low
    main_side = low if pocket_side == high else high
    # From the start along the main region to the decoy, then into its pocket: no skip, no breach,
    # but the end is out of reach.
    layers = [maze.Layer.from_meta(meta, index) for index in range(meta["layers"])]
    entry = tuple(meta["start"]) if main_side[0] == 0 else next(
        (p["layers"][1], *p["cell"]) for p in meta["portals"][: meta["layers"] - 1] if p["layers"][1] == main_side[0])
    line = [(main_side[0], *cell) for cell in layers[main_side[0]].path(entry[1:], main_side[1:])]
    inside = next(o for o in adjacency[pocket_side] if o[0] == pocket_side[0])
    cells = {*line, pocket_side, inside}
    links = {maze._link(a, b) for a, b in zip(line, line[1:])} | {maze._link(pocket_side, inside)}
    checks = verifier.judge(meta, cells, links)
    assert checks["portal_skip"] and checks["wall_breach"] and not checks["wrong_exit"]


@pytest.mark.parametrize("width", EXPERT_RESOLUTIONS)
def test_expert_oracle_passes_and_each_distractor_fails_exactly_its_check(expert, width):
    assert SPEC.verify(expert.meta, rasterise(SPEC.draw(expert.meta, expert.solution), (width,))[width]).passed
    for answer, name in zip(expert.distractors, expert.violations):
        image = rasterise(SPEC.draw(expert.meta, answer), (width,))[width]
        assert SPEC.verify(expert.meta, image).failed == [name]
    if width == 1024:  # a model's answer, resampled and compressed
        image = rasterise(SPEC.draw(expert.meta, expert.solution), (width,))[width]
        assert SPEC.verify(expert.meta, jpeg(resized(image, 0.9), 85)).passed


def test_expert_edits_are_balanced_in_ink(expert):
    # No edit changes more than EDIT_LIMIT cells and links; around a distractor, after the variants
    # that step back toward the solution are dropped, the side away from the solution holds no
    # more variants than the solution's side (or than make up the leaves a centre needs).
    editor = maze._Editor(expert.meta, [maze.Layer.from_meta(expert.meta, i) for i in range(4)],
                          maze.drawing_of(expert.solution), salt=7, balanced=True)
    solution = editor.solution
    target = editor.stand_in(solution)
    first = editor.variants(solution)
    def changed(a, b):
        return len(a.cells ^ b.cells) + len(a.links ^ b.links)

    assert all(changed(d, solution) <= maze.EDIT_LIMIT for _, d in first)
    for _, centre in first[:6]:
        around = editor.variants(centre)
        here = np.abs(editor.stand_in(centre) - target).sum()
        assert all(np.abs(editor.stand_in(d) - target).sum() >= here for _, d in around)
        assert all(changed(d, centre) <= maze.EDIT_LIMIT for _, d in around)
        away = np.sign(_ink(centre) - _ink(solution))
        if away:
            far = sum(np.sign(_ink(d) - _ink(centre)) == away for _, d in around)
            assert far <= max(maze.LEAVES, len(around) - far)


@pytest.mark.parametrize("difficulty", ["hard", "expert"])
def test_edits_leave_the_marker_cells_as_drawn(difficulty, request):
    # The solution carries none of its set's edits: an edit that covered more of a portal disc (or
    # uncovered one) would leave it the option showing the most (or least) of the portal colours.
    puzzle = request.getfixturevalue("expert") if difficulty == "expert" else make(difficulty)
    answers = [maze.drawing_of(a) for a in (puzzle.solution, *puzzle.distractors)]
    markers = {tuple(puzzle.meta["start"]), tuple(puzzle.meta["end"])}
    markers |= {(layer, *p["cell"]) for p in puzzle.meta["portals"] for layer in p["layers"]}

    def drawn(d):
        return d.cells & markers, {x for x in d.links if x[0] in markers or x[1] in markers}

    assert all(drawn(d) == drawn(answers[0]) for d in answers[1:])
    assert puzzle.stats["aspects_in_play"] >= 2


@pytest.mark.parametrize("difficulty", ["hard", "expert"])
def test_balanced_options_are_each_one_unbroken_line(difficulty, request):
    # A gap or a stray line adds two line ends and a branch one: the solution, one line, had the
    # fewest. Every option is one line through the portals, with the solution's line ends.
    puzzle = request.getfixturevalue("expert") if difficulty == "expert" else make(difficulty)
    answers = [maze.drawing_of(a) for a in (puzzle.solution, *puzzle.distractors)]
    checks = [verifier.judge(puzzle.meta, d.cells, d.links) for d in answers]
    assert all(c["disconnected"] and c["branching"] for c in checks)
    assert {maze._line_ends(d) for d in answers} == {2 * puzzle.meta["layers"]}
    assert set(puzzle.violations) <= set(maze.ONE_LINE_KINDS)


def test_legacy_configs_keep_their_edits():
    assert all(maze._legacy(SPEC.config(d)) for d in ("easy", "medium"))
    assert not maze._legacy(SPEC.config("hard"))  # three layers: two rows since 1.4.0
    assert not maze._legacy(SPEC.config("expert"))
    assert not maze._legacy(dataclasses.replace(SPEC.config("hard"), portals=3))  # decoys
    assert not maze._legacy(dataclasses.replace(SPEC.config("hard"), layers=4))  # two rows


def test_expert_meta_matches_its_schema(expert):
    assert meta_errors("maze", expert.meta) == []


def test_three_and_four_layers_lie_in_two_rows_in_a_u_and_two_stay_in_a_strip():
    four = maze.layout(SPEC.config("expert"))
    (x0, y0), (x1, y1), (x2, y2), (x3, y3) = four["origins"]
    assert y0 == y1 < y2 == y3 and x0 == x3 < x1 == x2  # top row left to right, bottom row right to left
    assert abs(four["width"] - four["height"]) < 1  # square: a strip of four 32-cell layers would be 4:1
    three = maze.layout(SPEC.config("hard"))
    (x0, y0), (x1, y1), (x2, y2) = three["origins"]
    assert y0 == y1 < y2 and x0 < x1 == x2  # the third layer under the second: the route turns down
    two = maze.layout(SPEC.config("medium"))
    assert len({y for _, y in two["origins"]}) == 1 and two["width"] > 1.8 * two["height"]
    five = maze.layout(dataclasses.replace(SPEC.config("hard"), layers=5))
    assert [row for row in sorted({y for _, y in five["origins"]})] == sorted({five["origins"][0][1], five["origins"][4][1]})


def _chevron_tips(svg: str) -> list[tuple[float, float, float, float]]:
    """(x, y, dx, dy) of each chevron: its tip, and where the tip points (from its arms' middle)."""
    found = []
    for d in re.findall(r'<path d="([^"]+)" fill="none"[^>]*stroke="#9e9e9e"', svg):
        (ax, ay), (tx, ty), (bx, by) = [tuple(map(float, p.split())) for p in re.split("[ML]", d)[1:]]
        found.append((tx, ty, tx - (ax + bx) / 2, ty - (ay + by) / 2))
    return found


@pytest.mark.parametrize("difficulty", ["medium", "hard", "expert"])
def test_chevrons_point_from_each_layer_to_the_next(difficulty):
    meta = make(difficulty).meta
    side = meta["size"] * maze.CELL
    tips = _chevron_tips(SPEC.draw(meta, None))
    assert len(tips) == meta["layers"] - 1
    for layer, (x, y, dx, dy) in enumerate(tips):
        here, there = (np.asarray(meta["layout"]["origins"][i], dtype=float) + side / 2 for i in (layer, layer + 1))
        direction = (there - here) / np.linalg.norm(there - here)
        assert np.allclose(np.array([dx, dy]) / np.hypot(dx, dy), direction)  # points to the next layer's middle
        assert np.allclose([x, y], (here + there) / 2 + direction * maze.CHEVRON / 4)  # in the gap between them


def test_every_portal_is_two_discs_of_its_pair_colour_at_one_cell(expert):
    svg = SPEC.draw(expert.meta, None)
    discs = set(re.findall(r'<circle cx="([^"]+)" cy="([^"]+)" fill="([^"]+)" r="([^"]+)"', svg))
    assert len(discs) == 2 * len(expert.meta["portals"])
    for portal in expert.meta["portals"]:
        assert portal["colour"] == maze.PORTAL_COLOURS[portal["layers"][0]]
        for layer in portal["layers"]:
            x, y = maze.cell_centre(expert.meta, layer, tuple(portal["cell"]))
            assert (maze.fmt(x), maze.fmt(y), portal["colour"], maze.fmt(maze.MARKER / 2)) in discs


def test_chained_walls_draw_the_same_pixels_as_segments(expert):
    svg = SPEC.draw(expert.meta, None)
    layout = expert.meta["layout"]
    unchained = svg
    for layer, (ox, oy) in enumerate(layout["origins"]):
        east, south = tuple(expert.meta["open_east"][layer]), tuple(expert.meta["open_south"][layer])
        chained = maze._walls_d(expert.meta["size"], ox, oy, east, south, True)
        assert chained in unchained
        unchained = unchained.replace(chained, maze._walls_d(expert.meta["size"], ox, oy, east, south, False))
    assert unchained != svg
    assert np.array_equal(rasterise(svg, (1024,))[1024], rasterise(unchained, (1024,))[1024])


# ---------------------------------------------------------------- parameters and legibility


@pytest.mark.parametrize(("overrides", "words"), [
    ({"layers": 0}, "layers must be in 1..5"),
    ({"layers": 6}, "layers must be in 1..5"),
    ({"size": 4}, "size must be in 5..40"),
    ({"size": 41}, "size must be in 5..40"),
    ({"size": 12.5}, "size must be an integer"),
    ({"portals": -2}, "portals must be in -1..32"),
    ({"portals": 33}, "portals must be in -1..32"),
    ({"portals": "many"}, "portals must be an integer"),
    ({"portals": 1}, "portals must be -1 (layers - 1) or at least layers - 1 = 2"),
    ({"layers": 1, "portals": 2}, "needs layers >= 2"),
    ({"layers": 2, "size": 5, "portals": 4}, "3 decoys need pockets of up to 8 cells each"),
])
def test_validate_rejects_each_bad_parameter_in_one_line(overrides, words):
    with pytest.raises(ParamError) as caught:
        level_config(SPEC.difficulties, "hard", overrides)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_portals_default_to_one_per_pair_and_a_recipe_can_add_decoys():
    hard = SPEC.config("hard")
    assert hard.portals == -1 and hard.decoys == 0
    assert level_config(SPEC.difficulties, "hard", {"layers": 4}).decoys == 0  # -1 follows the layers
    more = level_config(SPEC.difficulties, "hard", {"size": 32, "portals": 5})  # the reference release's hard
    assert more.decoys == 3
    for seed in range(20):  # attempts, as the build makes them: a maze whose edits do not compose is drawn again
        try:
            puzzle = SPEC.generate(more, np.random.default_rng(seed))
            break
        except RejectedPuzzle:
            continue
    assert len(puzzle.meta["portals"]) == 5


def _frame_px(image: np.ndarray, meta: dict) -> float:
    """The drawn width of layer 0's outer wall frame, in pixels, at the middle of its rows."""
    ox, oy = meta["layout"]["origins"][0]
    scale = image.shape[1] / meta["layout"]["width"]
    row = image[int((oy + meta["size"] * maze.CELL / 2) * scale)]
    dark = np.flatnonzero(row.max(axis=1) < 80)
    end = (ox + meta["size"] * maze.CELL) * scale
    inside = dark[(dark > ox * scale - 3) & (dark < end + 3)]
    return float(inside[-1] - inside[0])


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard", "expert"])
def test_legibility_shares_are_the_drawn_sizes(difficulty):
    p = make(difficulty)
    config, meta = SPEC.config(difficulty), p.meta
    shares = maze.legibility(config)
    svg = SPEC.draw(meta, p.solution)
    width = float(re.search(r'viewBox="0 0 ([\d.]+) ', svg).group(1))
    assert width == meta["layout"]["width"] and shares["cell"] == maze.CELL / width
    assert f'stroke="#222222" stroke-linecap="square" stroke-width="{maze.fmt(shares["wall"] * width)}"' in svg
    # the line, drawn no narrower than the share says (its width varies with the answer where the walls cover it)
    drawn = float(re.search(r'stroke="#1976d2" stroke-linecap="square" stroke-linejoin="miter" stroke-width="([\d.]+)"', svg).group(1))
    assert shares["path"] * width - 0.01 <= drawn <= maze.PATH_WIDTH * (1 + maze.WIDTH_JITTER) + 0.01
    assert f'r="{maze.fmt(shares["marker"] * width / 2)}"' in svg or meta["layers"] == 1
    if meta["layers"] > 1:
        # CHEVRON from arm end to arm end, half of that from the arms' middle to the tip
        assert all(np.isclose(np.hypot(dx, dy) * 2, shares["chevron"] * width) for *_, dx, dy in _chevron_tips(svg))
    # Drawn: the frame of a layer of n cells spans n cells of share x width pixels (within a wall's width).
    pixels = 1024
    image = rasterise(SPEC.draw(meta, None), (pixels,))[pixels]
    assert abs(_frame_px(image, meta) - meta["size"] * shares["cell"] * pixels) <= 2 + shares["wall"] * pixels


def test_legibility_floors_decide_the_resolutions():
    for difficulty in ("easy", "medium", "hard"):  # released at 512 px
        assert SPEC.illegible(SPEC.config(difficulty), 512) == [], difficulty
    expert = SPEC.config("expert")
    below = SPEC.illegible(expert, 512)
    assert any(line.startswith("cell is 6.89 px") for line in below) and any(line.startswith("wall is") for line in below)
    assert SPEC.illegible(expert, 1024) == [] and SPEC.illegible(expert, 2048) == []
    assert set(SPEC.legibility_floors) == set(maze.legibility(expert))


def test_conventions_name_what_the_picture_shows():
    assert len(SPEC.conventions) >= 5 and all(where for where in SPEC.conventions.values())
    assert any("portal" in rule for rule in SPEC.conventions) and any("chevron" in where for where in SPEC.conventions.values())


def test_expert_snapshot_of_rendered_solution(expert):
    png = encode_png(rasterise(SPEC.draw(expert.meta, expert.solution), (1024,))[1024])
    assert hashlib.sha256(png).hexdigest() == EXPERT_SNAPSHOT
    assert len(png) < 60_000


EXPERT_SNAPSHOT = "494f897d7a5fbc0828584f26a21419dedb6352856c62559cdb6e661287fc86dd"


def test_each_answer_has_its_own_line_width_where_walls_cover_the_line():
    """Where the walls are drawn over the line (``hard``), every distractor loses the strips of line
    under the walls it crosses and the solution none; each answer's line width, a hash of the
    answer within WIDTH_JITTER, spreads the five inks far more than those strips. ``easy`` keeps
    the plain width, the line drawn over the walls."""
    p = make("hard")
    widths = [maze.line_width(answer) for answer in p.options()]
    assert all(abs(w / maze.PATH_WIDTH - 1) <= maze.WIDTH_JITTER for w in widths)
    assert len(set(widths)) == 5 and widths == [maze.line_width(answer) for answer in p.options()]
    drawn = [float(re.search(r'stroke="#1976d2" stroke-linecap="square" stroke-linejoin="miter" stroke-width="([\d.]+)"',
                             maze.draw(p.meta, answer)).group(1)) for answer in p.options()]
    assert drawn == pytest.approx(widths, abs=0.01)
    easy = make("easy")
    assert all(f'stroke-width="{maze.PATH_WIDTH:g}"' in maze.draw(easy.meta, answer)
               or f'stroke-width="{maze.PATH_WIDTH}"' in maze.draw(easy.meta, answer) for answer in easy.options())
