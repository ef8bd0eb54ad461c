"""graph_coloring: generator, drawing and verifier against the TACIT bar."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import itertools
import json
from collections import Counter

import networkx as nx
import numpy as np
import pytest
from PIL import Image

from vrforge.builds.item import build_item
from vrforge.builds.plan import PlanItem
from vrforge.generators.tacit import _graph_common as gc
from vrforge.generators.tacit import graph_coloring as task
from vrforge.params import ParamError
from vrforge.pickers import colour_count, pick_all, picker_accuracy
from vrforge.registry import accepted_puzzle, get_task, meta_errors
from vrforge.render import encode_png, rasterise
from vrforge.seeding import item_rng
from vrforge.svgdraw import fmt
from vrforge.types import RejectedPuzzle
from vrforge.verifiers import graph_coloring as verifier

DIFFICULTIES = ("easy", "medium", "hard")
LEVELS = (*DIFFICULTIES, "expert")


def make(difficulty: str, seed: int = 0):
    return accepted_puzzle("graph_coloring", difficulty, 0, seed)


def render(meta, answer, width: int = 512) -> np.ndarray:
    return rasterise(task.draw(meta, answer), [width])[width]


def resized(rgb: np.ndarray, factor: float) -> np.ndarray:
    image = Image.fromarray(rgb)
    size = (round(image.width * factor), round(image.height * factor))
    return np.asarray(image.resize(size, Image.Resampling.LANCZOS))


def jpeg(rgb: np.ndarray, quality: int = 85) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


@pytest.fixture(scope="module", params=LEVELS)
def puzzle(request):
    return make(request.param)


def test_registered():
    spec = get_task("graph_coloring")
    assert spec.domain == "graph"
    assert spec.checks == verifier.CHECKS


def test_meta_matches_schema(puzzle):
    assert meta_errors("graph_coloring", puzzle.meta) == []
    json.dumps(puzzle.meta)  # plain JSON


def test_solution_passes_at_every_resolution_and_after_degradation(puzzle):
    rasters = rasterise(task.draw(puzzle.meta, puzzle.solution), [512, 1024, 2048])
    for width, rgb in rasters.items():
        assert verifier.verify(puzzle.meta, rgb).passed, width
    for factor in (0.9, 1.1):
        assert verifier.verify(puzzle.meta, resized(rasters[512], factor)).passed, factor
    assert verifier.verify(puzzle.meta, jpeg(rasters[512])).passed
    assert verifier.verify(puzzle.meta, jpeg(resized(rasters[512], 0.9))).passed


def test_each_distractor_fails_exactly_its_check(puzzle):
    assert len(puzzle.distractors) == 4 and set(puzzle.violations) <= set(verifier.CHECKS)
    for answer, name in zip(puzzle.distractors, puzzle.violations):
        rgb = render(puzzle.meta, answer)
        for image in (rgb, resized(rgb, 0.9), resized(rgb, 1.1), jpeg(rgb)):
            assert verifier.verify(puzzle.meta, image).failed == [name]
        assert verifier.verify(puzzle.meta, render(puzzle.meta, answer, 2048)).failed == [name]


def test_options_pairwise_different(puzzle):
    digests = {hashlib.sha256(render(puzzle.meta, option).tobytes()).hexdigest() for option in puzzle.options()}
    assert len(digests) == 5
    assert puzzle.options()[puzzle.answer_index] == puzzle.solution


def test_any_proper_colouring_passes(puzzle):
    # Permuting the palette over the solution gives a different proper colouring.
    palette = puzzle.meta["palette"]
    shift = {c: palette[(i + 1) % len(palette)] for i, c in enumerate(palette)}
    other = [shift[c] for c in puzzle.solution]
    assert other != puzzle.solution
    assert verifier.verify(puzzle.meta, render(puzzle.meta, other)).passed
    # And one found independently by a fresh randomised search.
    n = len(puzzle.meta["layout"]["nodes"])
    labels = gc.colour_graph(gc.adjacency(n, [tuple(e) for e in puzzle.meta["edges"]]), len(palette),
                             rng=np.random.default_rng(7))
    assert verifier.verify(puzzle.meta, render(puzzle.meta, [palette[x] for x in labels])).passed


def test_each_violation_rejected_by_hand(puzzle):
    meta, solution = puzzle.meta, list(puzzle.solution)
    a, b = meta["edges"][0]
    conflict = list(solution)
    conflict[a] = conflict[b]
    assert verifier.verify(meta, render(meta, conflict)).failed == ["adjacent_conflict"]
    uncoloured = list(solution)
    uncoloured[a] = meta["uncoloured"]
    assert verifier.verify(meta, render(meta, uncoloured)).failed == ["uncoloured_node"]
    for colour in ("#808080", meta["off_palette"][-1], "#000000"):  # any non-palette colour
        off = list(solution)
        off[a] = colour
        assert verifier.verify(meta, render(meta, off)).failed == ["off_palette"], colour


def test_blank_puzzle_and_bad_images_rejected(puzzle):
    meta = puzzle.meta
    blank = render(meta, None)
    assert verifier.verify(meta, blank).failed == ["uncoloured_node"]
    white = np.full_like(blank, 255)
    assert not verifier.verify(meta, white).passed
    noise = np.random.default_rng(0).integers(0, 256, size=blank.shape, dtype=np.uint8)
    assert not verifier.verify(meta, noise).passed
    png = encode_png(render(meta, puzzle.solution))
    truncated = verifier.verify(meta, png[: len(png) // 2])
    assert not truncated.passed and not truncated.usable
    assert not verifier.verify(meta, b"not an image").usable
    assert not verifier.verify(meta, np.zeros((100, 400, 3), dtype=np.uint8)).usable  # wrong aspect
    assert not verifier.verify(meta, np.zeros((20, 18, 3), dtype=np.uint8)).usable  # too small


def test_drawing_is_planar_and_readable(puzzle):
    meta = puzzle.meta
    pos = [tuple(p) for p in meta["layout"]["nodes"]]
    edges = [tuple(e) for e in meta["edges"]]
    r = meta["layout"]["node_radius"]
    assert gc.crossings(pos, edges) == 0
    assert gc.layout_problem(pos, edges, 3.5 * r, 1.9 * r, planar=True) is None
    graph = nx.Graph(edges)
    assert nx.is_connected(graph) and nx.check_planarity(graph)[0]
    # The node disc at 512 px is comfortably large.
    assert r * 512 / meta["layout"]["width"] >= 20


def _colourable_brute(n: int, edges: list[tuple[int, int]], k: int) -> bool:
    """Independent check: plain backtracking in node order (no DSATUR, no symmetry breaking)."""
    adj = gc.adjacency(n, edges)
    colours = [-1] * n

    def go(v: int) -> bool:
        if v == n:
            return True
        for c in range(k):
            if all(colours[u] != c for u in adj[v]):
                colours[v] = c
                if go(v + 1):
                    return True
        colours[v] = -1
        return False

    return go(0)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_chromatic_number_is_exactly_k(difficulty):
    for seed in range(6):
        p = make(difficulty, seed)
        n = len(p.meta["layout"]["nodes"])
        edges = [tuple(e) for e in p.meta["edges"]]
        k = p.meta["colours"]
        assert p.meta["chromatic_number"] == k == len(p.meta["palette"])
        assert _colourable_brute(n, edges, k)
        assert not _colourable_brute(n, edges, k - 1)
        if n <= 9:  # exhaustive over every assignment where that is cheap
            adj_pairs = np.asarray(edges)
            found = any(np.all(np.asarray(c)[adj_pairs[:, 0]] != np.asarray(c)[adj_pairs[:, 1]])
                        for c in itertools.product(range(k - 1), repeat=n))
            assert not found


def test_solution_labels_are_proper(puzzle):
    index = {c: i for i, c in enumerate(puzzle.meta["palette"])}
    labels = [index[c] for c in puzzle.solution]
    assert all(verifier.judge(puzzle.meta, labels).values())


def test_deterministic():
    config = task.DIFFICULTIES["hard"]
    a = task.generate(config, item_rng(123))
    b = task.generate(config, item_rng(123))
    assert task.draw(a.meta, a.solution) == task.draw(b.meta, b.solution)
    assert [task.draw(a.meta, d) for d in a.distractors] == [task.draw(b.meta, d) for d in b.distractors]
    assert a.answer_index == b.answer_index and a.violations == b.violations


def labels_of(meta, fills) -> tuple[int, ...]:
    index = {c: i for i, c in enumerate(meta["palette"])}
    return tuple(index.get(c, gc.UNCOLOURED_LABEL if c == meta["uncoloured"] else gc.OFF_PALETTE_LABEL) for c in fills)


def one_apart(a, b) -> bool:
    return sum(x != y for x, y in zip(a, b)) == 1


def test_variants_fail_exactly_their_check_and_recolouring_reverses():
    for difficulty in DIFFICULTIES:
        for seed in range(4):
            p = make(difficulty, seed)
            variants = task.variants(p.meta, salt=seed)
            solution = labels_of(p.meta, p.solution)
            for state in [solution, *(labels_of(p.meta, d) for d in p.distractors)]:
                found = variants(state)
                if min(state) >= 0:  # a centre candidate; a rare blank or off-palette answer has fewer
                    assert len(found) >= 6
                assert variants(state) == found  # an answer's variants never change
                for kind, variant in found:
                    assert one_apart(state, variant)
                    assert [name for name, ok in verifier.judge(p.meta, list(variant)).items() if not ok] == [kind]
                    changed = next(i for i, (x, y) in enumerate(zip(state, variant)) if x != y)
                    if state != solution and state[changed] >= 0:
                        # Recolouring back is a variant too: undoing an edit is an edit.
                        assert state in {v for _, v in variants(variant)}


def test_options_form_a_code_that_needs_two_nodes_checked():
    """The five options differ on a few nodes, and at each of them no option stands alone (the
    colours there split the options two and three): whichever option is the solution, ruling out
    the other four takes checking at least two nodes, as the puzzle's statistic records."""
    for seed in range(30):
        p = make("medium", seed)
        options = [labels_of(p.meta, o) for o in p.options()]
        disputed = [node for node in range(len(options[0])) if len({o[node] for o in options}) > 1]
        assert 2 <= len(disputed) <= 6, seed
        for node in disputed:
            assert min(Counter(o[node] for o in options).values()) >= 2, (seed, node)
        assert p.stats["aspects_in_play"] >= 2


def test_off_palette_grey_adds_no_colour_to_the_picture(puzzle):
    fills = list(puzzle.solution)
    fills[0] = gc.OFF_PALETTE_FILL
    # No new colour (an anti-aliasing bin of the replaced colour may drop under the count's share)
    assert colour_count(render(puzzle.meta, fills)) <= colour_count(render(puzzle.meta, puzzle.solution))
    assert verifier.verify(puzzle.meta, render(puzzle.meta, fills)).failed == ["off_palette"]


SNAPSHOTS = {
    "easy": "1c43907e4dc472fddd4fb7b9e673edf6c7e6a04c4c213401d43d9448d5bf3748",
    "medium": "e9956f95338973f54cb4fe10cdd5e8da590a61c79e61ac6111cbca8509a35f81",
    "hard": "a7cd93e10f1d91294fc45b55ef0306b0969e96f8b4f729e18d516dc24e34bbd6",
}


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_snapshot(difficulty):
    p = task.generate(task.DIFFICULTIES[difficulty], item_rng(0))
    digest = hashlib.sha256()
    for option in p.options():  # the distractors too: they are released bytes
        digest.update(encode_png(render(p.meta, option)))
    digest.update(json.dumps([p.answer_index, p.violations]).encode())
    assert digest.hexdigest() == SNAPSHOTS[difficulty]


def test_expert_is_the_reference_hard():
    """20 nodes and three colours, as the reference release's hard; the palette shows k swatches."""
    config = task.DIFFICULTIES["expert"]
    for seed in range(3):
        p = make("expert", seed)
        assert len(p.meta["layout"]["nodes"]) == config.rows * config.cols - config.drop_nodes == 20
        assert p.meta["colours"] == len(p.meta["palette"]) == len(p.meta["layout"]["swatches"]) == 3


@pytest.mark.parametrize(("field", "value", "words"), [
    ("rows", 1, "rows"), ("cols", 7, "cols"), ("colours", 5, "colours"), ("colours", 3.0, "colours"),
    ("drop_nodes", -1, "drop_nodes"), ("drop_nodes", 21, "drop_nodes"), ("drop_edges", 0.5, "drop_edges"),
    ("jitter", 0.4, "jitter"), ("jitter", "big", "jitter"),
])
def test_validate_rejects_each_bad_parameter_in_one_line(field, value, words):
    with pytest.raises(ParamError) as caught:
        dataclasses.replace(task.DIFFICULTIES["expert"], **{field: value}).validate()
    assert "\n" not in str(caught.value) and words in str(caught.value)


def test_every_level_is_legible_at_512():
    spec = get_task("graph_coloring")
    for name, config in task.DIFFICULTIES.items():
        assert spec.illegible(config, 512) == [], name
    # A 6-wide grid draws smaller discs, still above the floor.
    wide = task.ColoringConfig(rows=6, cols=6, colours=3, drop_nodes=6, drop_edges=0.1, jitter=0.15)
    assert task.node_radius(wide) < task.NODE_RADIUS and spec.illegible(wide, 512) == []


@pytest.mark.parametrize("difficulty", LEVELS)
def test_legibility_shares_are_what_the_svg_draws(difficulty):
    spec = get_task("graph_coloring")
    p = make(difficulty)
    shares, layout = spec.legibility(task.DIFFICULTIES[difficulty]), p.meta["layout"]
    svg = task.draw(p.meta, p.solution)
    width = layout["width"]
    assert f'width="{fmt(width)}"' in svg
    assert f'r="{fmt(shares["node_radius"] * width)}"' in svg
    assert f'stroke-width="{fmt(shares["edge_stroke"] * width)}"' in svg
    assert f'width="{fmt(shares["swatch"] * width)}"' in svg
    # Edges keep the declared white gap from every disc they do not touch.
    pos, r = layout["nodes"], layout["node_radius"]
    least = min(gc.point_segment_distance(pos[c], pos[a], pos[b]) for a, b in p.meta["edges"]
                for c in range(len(pos)) if c not in (a, b))
    assert least - r - task.EDGE_WIDTH / 2 - task.OUTLINE_WIDTH / 2 >= shares["edge_node_gap"] * width - 1e-6


def test_build_item_accepts():
    built = build_item(PlanItem("graph_coloring", "hard", 0, 0), (512,), "test")
    assert built.fields["task"] == "graph_coloring"


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_context_blind_pickers_near_chance(difficulty):
    choices, answers = [], []
    seed = 0
    while len(answers) < 200:
        seed += 1
        try:
            p = task.generate(task.DIFFICULTIES[difficulty], item_rng(50_000 + seed))
        except RejectedPuzzle:
            continue
        options = [rasterise(task.draw(p.meta, option), [256])[256] for option in p.options()]
        choices.append(pick_all(options))
        answers.append(p.answer_index)
    accuracy = picker_accuracy(choices, answers)
    assert all(value <= 0.30 for value in accuracy.values()), accuracy
