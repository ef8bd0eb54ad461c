"""Unknot detection: generator, drawing and verifier."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from helpers import jpeg, noise, resized

from vrforge.generators.tacit import unknot
from vrforge.registry import accepted_puzzle, get_task, meta_errors
from vrforge.render import encode_png, rasterise
from vrforge.verifiers import unknot as verifier

SPEC = get_task("unknot")


def make(difficulty: str, index: int = 0, seed: int = 0):
    return accepted_puzzle(SPEC, difficulty, index, seed)


@pytest.fixture(scope="module", params=["easy", "medium", "hard"])
def puzzle(request):
    return make(request.param)


def _hfk(pd):
    from knot_floer_homology import pd_to_hfk

    return pd_to_hfk(pd)["total_rank"]


def test_exactly_one_diagram_is_the_unknot_certified_by_knot_floer_homology(puzzle):
    meta = puzzle.meta
    ranks = [_hfk(d["pd_code"]) for d in meta["diagrams"]]  # recomputed, not read from meta
    assert ranks == [d["hfk_total_rank"] for d in meta["diagrams"]]
    assert [i for i, r in enumerate(ranks) if r == 1] == [meta["unknot"]] == puzzle.solution
    # Same shadow, same crossing number everywhere: crossing count and size give nothing away.
    assert {len(d["pd_code"]) for d in meta["diagrams"]} == {meta["crossings"]}
    assert len({json.dumps(sorted(d["switched"])) for d in meta["diagrams"]}) == len(meta["diagrams"])
    for d in meta["diagrams"]:
        assert not unknot._alternating([tuple(x) for x in d["pd_code"]])  # no alternating give-away


def test_crossing_switch_is_an_involution_and_mirror_keeps_the_unknot():
    p = make("medium", 1)
    pd = [tuple(x) for x in p.meta["diagrams"][p.meta["unknot"]]["pd_code"]]
    every = set(range(len(pd)))
    assert unknot._flip(unknot._flip(pd, {0, 2}), {0, 2}) == pd
    assert _hfk([list(x) for x in unknot._flip(pd, every)]) == 1  # the mirror image is still the unknot


def test_meta_matches_its_schema(puzzle):
    assert meta_errors("unknot", puzzle.meta) == []
    assert meta_errors("unknot", {**puzzle.meta, "unknot": -1}) != []


@pytest.mark.parametrize("width", [512, 1024, 2048])
def test_solution_passes_at_every_resolution(puzzle, width):
    image = rasterise(SPEC.draw(puzzle.meta, puzzle.solution), (width,))[width]
    verdict = SPEC.verify(puzzle.meta, image)
    assert verdict.passed, verdict.reason
    assert verdict.details["marked"] == [puzzle.meta["unknot"]]


@pytest.mark.parametrize("degrade", ["shrink", "grow", "jpeg", "png-bytes"])
def test_solution_survives_resizing_and_compression(puzzle, degrade):
    image = rasterise(SPEC.draw(puzzle.meta, puzzle.solution), (512,))[512]
    degraded = {"shrink": lambda: resized(image, 0.9), "grow": lambda: resized(image, 1.1),
                "jpeg": lambda: jpeg(image, 85), "png-bytes": lambda: encode_png(image)}[degrade]()
    assert SPEC.verify(puzzle.meta, degraded).passed


def test_each_distractor_fails_exactly_its_named_check(puzzle):
    assert len(puzzle.distractors) == 4
    assert len({tuple(d) for d in puzzle.distractors} | {tuple(puzzle.solution)}) == 5
    for answer, name in zip(puzzle.distractors, puzzle.violations):
        for width in (512, 2048):
            image = rasterise(SPEC.draw(puzzle.meta, answer), (width,))[width]
            assert SPEC.verify(puzzle.meta, image).failed == [name]
        assert SPEC.verify(puzzle.meta, jpeg(resized(image, 0.25 * 0.9), 85)).failed == [name]


def test_options_are_pairwise_different_pixels(puzzle):
    digests = {hashlib.sha256(rasterise(SPEC.draw(puzzle.meta, o), (512,))[512].tobytes()).hexdigest()
               for o in puzzle.options()}
    assert len(digests) == 5


def test_each_violation_is_rejected_by_its_check():
    p = make("easy", 2)
    meta = p.meta
    knotted = next(i for i in range(len(meta["diagrams"])) if i != meta["unknot"])
    cases = {"no_mark": [], "several_marks": [meta["unknot"], knotted], "marked_knotted": [knotted]}
    for name, marks in cases.items():
        image = rasterise(SPEC.draw(meta, marks), (512,))[512]
        assert SPEC.verify(meta, image).failed == [name]
    # The frame on an otherwise blank picture: the diagrams are missing.
    svg = SPEC.draw(meta, p.solution)
    blank = SPEC.draw({**meta, "diagrams": [{**d, "curves": d["curves"][:1], "halos": [], "overs": []}
                                            for d in meta["diagrams"]]}, p.solution)
    assert svg != blank
    assert SPEC.verify(meta, rasterise(blank, (512,))[512]).failed == ["diagrams_missing"]
    assert verifier.judge(meta, [meta["unknot"]], [True] * len(meta["diagrams"])) == dict.fromkeys(verifier.CHECKS, True)


def test_a_redrawn_frame_in_another_style_still_passes():
    p = make("medium", 4)
    svg = SPEC.draw(p.meta, p.solution).replace(f'rx="{unknot.fmt(3 * unknot.FRAME_INSET)}"', 'rx="0"')
    svg = svg.replace(f'stroke-width="{unknot.fmt(unknot.FRAME_WIDTH)}"', 'stroke-width="11"')
    assert SPEC.verify(p.meta, rasterise(svg, (1024,))[1024]).passed


def test_blank_puzzle_and_noise_are_rejected(puzzle):
    blank = rasterise(SPEC.draw(puzzle.meta, None), (512,))[512]
    verdict = SPEC.verify(puzzle.meta, blank)
    assert verdict.usable and verdict.failed == ["no_mark"]
    assert not SPEC.verify(puzzle.meta, noise(blank.shape[1], blank.shape[0])).passed


def test_unusable_images_give_a_verdict_not_an_exception(puzzle):
    for bad in (b"\x89PNG\r\n\x1a\nbroken", b"", np.zeros((1, 1, 3), np.uint8), "/no/such.png", 3.5):
        verdict = SPEC.verify(puzzle.meta, bad)
        assert not verdict.passed and not verdict.usable and verdict.reason.startswith("unusable input")
    assert not SPEC.verify(puzzle.meta, noise(512, 100)).usable  # wrong aspect ratio


def test_generation_is_deterministic_and_leaves_python_random_alone():
    import random

    random.seed(5)
    before = random.getstate()
    a, b = make("hard", 5), make("hard", 5)
    assert random.getstate() == before
    assert json.dumps(a.meta, sort_keys=True) == json.dumps(b.meta, sort_keys=True)
    assert SPEC.draw(a.meta, a.solution) == SPEC.draw(b.meta, b.solution)
    assert a.violations == b.violations and a.answer_index == b.answer_index


def test_config_validation():
    with pytest.raises(ValueError):
        unknot.UnknotConfig(diagrams=4, columns=2, min_crossings=5, max_crossings=6).validate()
    with pytest.raises(ValueError):
        unknot.UnknotConfig(diagrams=6, columns=3, min_crossings=8, max_crossings=14).validate()


# sha256 of the 512 px solution PNG for seed 0, index 0: a silent change to generation,
# drawing or encoding changes these.
SNAPSHOTS = {
    "easy": "01d426150f15dfb92e445a3f81a1a9ec41cde0bf2475219e0a93c06a5bd6fa70",
    "medium": "8edd3e772e909c2206f077888edc437b70f01d6bfa0a018adfd9ecf13c201350",
    "hard": "0a578b83512237c136872382acce50fe275670ab2716723b3349c8c3772623d8",
}


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_snapshot_of_rendered_solution(difficulty):
    p = make(difficulty)
    png = encode_png(rasterise(SPEC.draw(p.meta, p.solution), (512,))[512])
    assert hashlib.sha256(png).hexdigest() == SNAPSHOTS[difficulty]


@pytest.mark.slow
def test_context_blind_pickers_on_200_puzzles_per_difficulty():
    from vrforge.pickers import pick_all, picker_accuracy

    for difficulty in ("easy", "medium", "hard"):
        choices, answers = [], []
        for index in range(200):
            p = make(difficulty, index, seed=99)
            options = [np.asarray(rasterise(SPEC.draw(p.meta, o), (256,))[256]) for o in p.options()]
            choices.append(pick_all(options))
            answers.append(p.answer_index)
        accuracy = picker_accuracy(choices, answers)
        assert all(value <= 0.30 for value in accuracy.values()), (difficulty, accuracy)
