"""graph_isomorphism: generator, drawing and verifier against the TACIT bar."""

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
from vrforge.generators.tacit import graph_isomorphism as task
from vrforge.params import ParamError
from vrforge.pickers import colour_count, pick_all, picker_accuracy
from vrforge.registry import accepted_puzzle, get_task, meta_errors
from vrforge.render import encode_png, rasterise
from vrforge.seeding import item_rng
from vrforge.svgdraw import fmt
from vrforge.types import RejectedPuzzle
from vrforge.verifiers import graph_isomorphism as verifier

DIFFICULTIES = ("easy", "medium", "hard")
LEVELS = (*DIFFICULTIES, "expert")


def make(difficulty: str, seed: int = 0):
    return accepted_puzzle("graph_isomorphism", difficulty, 0, seed)


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


def edges_of(meta, key):
    return [tuple(e) for e in meta[key]]


def labels_to_fills(meta, labels):
    return [meta["palette"][x] for x in labels]


def isomorphisms(meta):
    """Every map B node -> A node that is an isomorphism (networkx VF2, independent of the verifier)."""
    a, b = nx.Graph(), nx.Graph()
    a.add_nodes_from(range(meta["nodes"]))
    b.add_nodes_from(range(meta["nodes"]))
    a.add_edges_from(edges_of(meta, "edges_a"))
    b.add_edges_from(edges_of(meta, "edges_b"))
    for mapping in nx.algorithms.isomorphism.GraphMatcher(b, a).isomorphisms_iter():
        yield [mapping[j] for j in range(meta["nodes"])]


def test_registered():
    spec = get_task("graph_isomorphism")
    assert spec.domain == "graph"
    assert spec.checks == verifier.CHECKS


def test_meta_matches_schema(puzzle):
    assert meta_errors("graph_isomorphism", puzzle.meta) == []
    json.dumps(puzzle.meta)


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


def test_solution_is_an_isomorphism(puzzle):
    index = {c: i for i, c in enumerate(puzzle.meta["palette"])}
    labels = [index[c] for c in puzzle.solution]
    assert labels in list(isomorphisms(puzzle.meta))
    assert sum(1 for _ in isomorphisms(puzzle.meta)) == puzzle.meta["automorphisms"]


def test_every_isomorphism_passes():
    # Find puzzles whose graph has symmetries: every automorphism gives another valid answer.
    checked = 0
    for seed in range(40):
        p = make("easy", seed)
        maps = list(isomorphisms(p.meta))
        if len(maps) < 2:
            continue
        for labels in maps[:3]:
            assert verifier.verify(p.meta, render(p.meta, labels_to_fills(p.meta, labels))).passed
        checked += 1
        if checked == 2:
            break
    assert checked == 2


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_judge_accepts_exactly_the_isomorphisms(difficulty):
    # Exhaustive over every one-to-one colouring (n! maps): the verifier's judge passes a map
    # if and only if networkx says it is an isomorphism.
    p = make(difficulty, 3)
    n = p.meta["nodes"]
    valid = {tuple(m) for m in isomorphisms(p.meta)}
    edges_a = {frozenset(e) for e in p.meta["edges_a"]}
    edges_b = np.asarray(p.meta["edges_b"])
    count = 0
    for perm in itertools.permutations(range(n)):
        labels = np.asarray(perm)
        preserves = all(frozenset((int(x), int(y))) in edges_a for x, y in labels[edges_b])
        assert preserves == (perm in valid)
        if n <= 6:
            assert all(verifier.judge(p.meta, list(perm)).values()) == preserves
        count += preserves
    assert count == p.meta["automorphisms"] >= 1


def test_each_violation_rejected_by_hand(puzzle):
    meta = puzzle.meta
    index = {c: i for i, c in enumerate(meta["palette"])}
    labels = [index[c] for c in puzzle.solution]
    fills = list(puzzle.solution)
    blank = list(fills)
    blank[0] = meta["uncoloured"]
    assert verifier.verify(meta, render(meta, blank)).failed == ["uncoloured_node"]
    for colour in ("#808080", meta["off_palette"][-1], "#000000"):
        off = list(fills)
        off[0] = colour
        assert verifier.verify(meta, render(meta, off)).failed == ["off_palette"], colour
    twice = list(fills)
    twice[0] = twice[1]
    assert verifier.verify(meta, render(meta, twice)).failed == ["not_bijective"]
    valid = {tuple(m) for m in isomorphisms(meta)}
    for x, y in itertools.combinations(range(meta["nodes"]), 2):
        swapped = list(labels)
        swapped[x], swapped[y] = swapped[y], swapped[x]
        if tuple(swapped) not in valid:
            assert verifier.verify(meta, render(meta, labels_to_fills(meta, swapped))).failed == ["edge_mismatch"]
            break
    else:
        raise AssertionError("no non-isomorphic swap")


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
    assert not verifier.verify(meta, np.zeros((400, 400, 3), dtype=np.uint8)).usable  # wrong aspect
    assert not verifier.verify(meta, np.zeros((18, 36, 3), dtype=np.uint8)).usable  # too small


def test_drawings_are_readable(puzzle):
    layout = puzzle.meta["layout"]
    r = layout["node_radius"]
    for nodes, key in (("nodes_a", "edges_a"), ("nodes_b", "edges_b")):
        pos = [tuple(p) for p in layout[nodes]]
        assert gc.layout_problem(pos, edges_of(puzzle.meta, key), 3.1 * r, 1.8 * r, planar=False) is None
    assert r * 512 / layout["width"] >= (13 if puzzle.meta["nodes"] <= task.CIRCLE_NODES else 10)
    # Every colour distinct from every other and from the uncoloured fill.
    colours = puzzle.meta["palette"] + puzzle.meta["off_palette"] + [puzzle.meta["uncoloured"]]
    assert len(set(colours)) == len(colours) == len(task.pool(puzzle.meta["nodes"])) + 2  # the pool, grey, blank


def test_hard_graphs_defeat_degree_counting():
    for seed in range(5):
        p = make("hard", seed)
        degrees = {d for _, d in nx.Graph(edges_of(p.meta, "edges_a")).degree()}
        assert len(degrees) == 1  # cubic
        assert p.stats["refinement_classes"] <= 2


def test_expert_graphs_are_cubic_on_twelve_nodes_in_distinct_colours():
    for seed in range(3):
        p = make("expert", seed)
        assert p.meta["nodes"] == 12 and len(p.meta["edges_a"]) == 18
        assert {d for _, d in nx.Graph(edges_of(p.meta, "edges_a")).degree()} == {3}
        assert set(p.meta["palette"]) <= set(gc.WIDE_POOL) and len(set(p.meta["palette"])) == 12


def test_wide_pool_keeps_the_pool_separation_and_stays_off_the_greys():
    def rgb(colour):
        return np.asarray([int(colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=np.float64)

    assert gc.WIDE_POOL[: len(gc.POOL)] == gc.POOL
    pairs = itertools.combinations(gc.WIDE_POOL, 2)
    assert min(np.linalg.norm(rgb(a) - rgb(b)) for a, b in pairs) >= 89
    for grey in ("#000000", "#333333", "#555555", "#808080", "#aaaaaa", "#ffffff"):
        assert min(np.linalg.norm(rgb(grey) - rgb(c)) for c in gc.WIDE_POOL[len(gc.POOL):]) >= 85, grey
    assert len(gc.WIDE_POOL) - 1 >= task.MAX_NODES  # one colour stays off-palette


def test_clear_circle_order_keeps_every_edge_off_the_nodes_it_does_not_join():
    rng = np.random.default_rng(3)
    graph = nx.random_regular_graph(3, 12, seed=3)
    edges = sorted(tuple(sorted(e)) for e in graph.edges())
    box = (50.0, 50.0, 330.0, 330.0)
    order, start = gc.clear_circle_order(12, edges, rng, box, 30.0)
    assert sorted(order) == list(range(12))
    assert gc.layout_problem(gc.circle_slots(order, start, box), edges, 0.0, 30.0, planar=False) is None


@pytest.mark.parametrize(("field", "value", "words"), [
    ("nodes", 3, "nodes"), ("nodes", 15, "nodes"), ("edges", 10, "edges"), ("edges", 66, "edges"), ("edges", 91, "edges"),
    ("edges", 2, "edges"), ("near_regular", 1, "near_regular"),
])
def test_validate_rejects_each_bad_parameter_in_one_line(field, value, words):
    with pytest.raises(ParamError) as caught:
        dataclasses.replace(task.DIFFICULTIES["expert"], **{field: value}).validate()
    assert "\n" not in str(caught.value) and words in str(caught.value)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_legibility_shares_are_what_the_svg_draws_and_legible_at_512(difficulty):
    spec = get_task("graph_isomorphism")
    p = make(difficulty)
    config, layout = task.DIFFICULTIES[difficulty], p.meta["layout"]
    shares, width = spec.legibility(config), layout["width"]
    assert spec.illegible(config, 512) == []
    svg = task.draw(p.meta, p.solution)
    assert f'width="{fmt(width)}"' in svg
    assert f'r="{fmt(shares["node_radius"] * width)}"' in svg
    assert f'stroke-width="{fmt(shares["edge_stroke"] * width)}"' in svg
    r = layout["node_radius"]
    for nodes, key in (("nodes_a", "edges_a"), ("nodes_b", "edges_b")):
        pos = layout[nodes]
        least = min(gc.point_segment_distance(pos[c], pos[a], pos[b]) for a, b in p.meta[key]
                    for c in range(len(pos)) if c not in (a, b))
        assert least - r - task.EDGE_WIDTH / 2 - task.OUTLINE_WIDTH / 2 >= shares["edge_node_gap"] * width - 1e-6


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


def one_edit(a, b, pairs) -> bool:
    """b is a from one exchange of a ``pairs`` pair's colours, or from one node's new label."""
    changed = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    if len(changed) == 1:
        return True
    x, y = changed if len(changed) == 2 else (None, None)
    return (x, y) in pairs and a[x] == b[y] and a[y] == b[x]


def test_variants_fail_exactly_their_check_and_exchanges_reverse():
    for difficulty in DIFFICULTIES:
        for seed in range(4):
            p = make(difficulty, seed)
            variants = task.variants(p.meta, salt=seed)
            pairs = set(task.swap_pairs(p.meta["nodes"], edges_of(p.meta, "edges_b")))
            assert len(pairs) >= task.SWAP_PAIRS
            solution = labels_of(p.meta, p.solution)
            for state in [solution, *(labels_of(p.meta, d) for d in p.distractors)]:
                found = variants(state)
                assert variants(state) == found  # an answer's variants never change
                if sorted(state) == sorted(solution):  # one-to-one: a centre candidate
                    assert len(found) >= 6
                for kind, variant in found:
                    assert one_edit(state, variant, pairs)
                    assert [name for name, ok in verifier.judge(p.meta, list(variant)).items() if not ok] == [kind]
                    if state != solution and sorted(variant) == sorted(state):
                        # Exchanging back is a variant too: undoing an edit is an edit.
                        assert state in {v for _, v in variants(variant)}


def test_options_form_a_code_of_exchanges_that_needs_two_nodes_checked():
    """The five options differ on a few nodes, and at each of them no option stands alone (the
    colours there split the options two and three), so ruling out the four distractors takes
    checking two nodes whichever option is the solution; most distractors keep every colour
    once, so their ink equals the solution's."""
    one_to_one = codes = 0
    for seed in range(30):
        p = make("medium", seed)
        solution = labels_of(p.meta, p.solution)
        options = [labels_of(p.meta, o) for o in p.options()]
        one_to_one += sum(sorted(labels_of(p.meta, d)) == sorted(solution) for d in p.distractors)
        splits = [Counter(o[node] for o in options) for node in range(len(solution))]
        if all(len(values) == 1 or min(values.values()) >= 2 for values in splits):
            codes += 1  # the rest: stars, where a small graph has too few disjoint exchanges
            assert p.stats["aspects_in_play"] >= 2
    assert codes >= 0.7 * 30
    assert one_to_one >= 0.8 * 4 * 30


def test_off_palette_grey_adds_no_colour_to_the_picture(puzzle):
    fills = list(puzzle.solution)
    fills[0] = gc.OFF_PALETTE_FILL
    assert colour_count(render(puzzle.meta, fills)) == colour_count(render(puzzle.meta, puzzle.solution))
    assert verifier.verify(puzzle.meta, render(puzzle.meta, fills)).failed == ["off_palette"]


SNAPSHOTS = {
    "easy": "ead7eff0063655d1473664dc020a1aa4f34f9f7751a8d6590c84ed23c9c9dcaa",
    "medium": "8cb44f94d5c6f8737843823a2dba02c8feac4a65f9cb96eea6896a32e5eba970",
    "hard": "dd1aaafa3844f8a5133f0ccf2847fb9090d52bb604f1714a997eb10340ba0daa",
}


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_snapshot(difficulty):
    p = task.generate(task.DIFFICULTIES[difficulty], item_rng(0))
    digest = hashlib.sha256()
    for option in p.options():  # the distractors too: they are released bytes
        digest.update(encode_png(render(p.meta, option)))
    digest.update(json.dumps([p.answer_index, p.violations]).encode())
    assert digest.hexdigest() == SNAPSHOTS[difficulty]


def test_build_item_accepts():
    built = build_item(PlanItem("graph_isomorphism", "hard", 0, 0), (512,), "test")
    assert built.fields["task"] == "graph_isomorphism"


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
