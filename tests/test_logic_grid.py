"""Visual logic grid: generator, drawing and verifier."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import time

import numpy as np
import pytest
from PIL import Image

from vrforge.generators.tacit import logic_grid as task
from vrforge.pickers import pick_all, picker_accuracy
from vrforge.registry import accepted_attempt, accepted_puzzle, get_task, meta_errors
from vrforge.render import encode_png, rasterise, render_pngs
from vrforge.seeding import derive_seed, item_rng
from vrforge.types import RejectedPuzzle
from vrforge.verifiers import logic_grid as verifier

RESOLUTIONS = (512, 1024, 2048)
DIFFICULTIES = ("easy", "medium", "hard")
LEVELS = (*DIFFICULTIES, "expert")
# sha256 of the 512 px solution PNG for item_rng(0), per difficulty (crisp rendering: exact pixels).
SNAPSHOTS = {
    "easy": "7a6c085d656576c73f9896c19eb85fdf5d0fea159769d72bb0008daa84da53b9",
    "medium": "c2d8ef0bc0aa1896bbdab23085e890f7d7e3cfcc98ef9446c65a27e9ef2877cc",
    "hard": "5232f93337f152d726a107fb0676b6fbd0fcc58db1a4f626f3d86abb9548ba1b",
}
# sha256 of the JSON of (answer index, violations, distractor grids) for item_rng(0).
OPTION_SNAPSHOTS = {
    "easy": "4d1abf3ec4c4fc675ca37effdef171999c1b6ed8fd335212a7d93926ca6c46a6",
    "medium": "e276f72eb0b025b031cebd2baa389b9b23ac07a7817398e21104c5e671ff133f",
    "hard": "4dc9430f03d5ba927b8769f236f0bab8436464971ba690be649b20fd6f961b2e",
}


def _generate(difficulty: str, seed: int) -> task.Puzzle:
    """The first accepted attempt for ``seed``, as the build would draw it."""
    return accepted_puzzle(task.TASK, difficulty, 0, seed)


@pytest.fixture(scope="module", params=LEVELS)
def built(request: pytest.FixtureRequest) -> tuple:
    puzzle = _generate(request.param, 7)
    solution = rasterise(task.draw(puzzle.meta, puzzle.solution), RESOLUTIONS)
    distractors = [rasterise(task.draw(puzzle.meta, g), RESOLUTIONS) for g in puzzle.distractors]
    return puzzle, solution, distractors


def _resized(rgb: np.ndarray, factor: float) -> np.ndarray:
    image = Image.fromarray(rgb)
    size = (round(image.width * factor), round(image.height * factor))
    return np.asarray(image.resize(size, Image.Resampling.LANCZOS))


def _jpeg(rgb: np.ndarray, quality: int = 85) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


# ---------------------------------------------------------------- oracle and distractors


def test_solution_passes_everywhere(built: tuple) -> None:
    puzzle, solution, _ = built
    for res in RESOLUTIONS:
        verdict = verifier.verify(puzzle.meta, solution[res])
        assert verdict.passed, (res, verdict.reason)
        assert verdict.details["grid"] == puzzle.solution
    for factor in (0.9, 1.1):
        assert verifier.verify(puzzle.meta, _resized(solution[1024], factor)).passed, factor
    assert verifier.verify(puzzle.meta, _jpeg(solution[512])).passed
    assert verifier.verify(puzzle.meta, encode_png(solution[512])).passed


def test_each_distractor_fails_exactly_its_check(built: tuple) -> None:
    puzzle, _, distractors = built
    assert len(puzzle.distractors) == 4
    assert set(puzzle.violations) <= set(verifier.CHECKS)
    for name, grid, rasters in zip(puzzle.violations, puzzle.distractors, distractors):
        assert [k for k, ok in verifier.judge(puzzle.meta, grid).items() if not ok] == [name]
        for res in RESOLUTIONS:
            assert verifier.verify(puzzle.meta, rasters[res]).failed == [name], (name, res)
        assert verifier.verify(puzzle.meta, _jpeg(rasters[512])).failed == [name]
        assert verifier.verify(puzzle.meta, _resized(rasters[1024], 0.9)).failed == [name]


def _state(grid: list[list[int]]) -> task.Grid:
    return tuple(tuple(row) for row in grid)


def _changed(a: task.Grid, b: task.Grid) -> int:
    return sum(x != y for ra, rb in zip(a, b) for x, y in zip(ra, rb))


@pytest.mark.parametrize(("difficulty", "seed"), [("easy", 1), ("medium", 2), ("hard", 3)])
def test_variants_fail_exactly_their_check_and_can_be_undone(difficulty: str, seed: int) -> None:
    puzzle = _generate(difficulty, seed)
    meta, rng = puzzle.meta, item_rng(0)
    fixed = task._fixed(meta)
    solution = _state(puzzle.solution)
    for state in [solution, *map(_state, puzzle.distractors)]:
        found = task._variants(meta, state, rng)
        assert len(found) >= 3
        assert len({variant for _, variant in found}) == len(found)
        for name, variant in found:
            assert [k for k, ok in verifier.judge(meta, variant).items() if not ok] == [name]
            assert _changed(state, variant) in (2, 4)  # two cells swapped, or a rectangle mirrored
            assert all(variant[r][c] == state[r][c] for r, c in fixed)  # the givens left alone
            assert state in task._edits(variant, fixed)  # the same edit undoes it
    kinds = {name for name, _ in task._variants(meta, solution, rng)}
    assert {"row_repeat", "column_repeat"} <= kinds
    assert "given_changed" not in kinds


def _off_givens(meta: dict, grid: task.Grid) -> list[int]:
    fixed = task._fixed(meta)
    return sorted(v for r, row in enumerate(grid) for c, v in enumerate(row) if (r, c) not in fixed)


@pytest.mark.parametrize("difficulty", LEVELS)
def test_every_option_shows_the_givens_and_the_same_symbols(difficulty: str) -> None:
    """No distractor changes a given, and every option holds the same symbols off the givens:
    compared with the bare puzzle, which shows the givens alone, each option differs by the same
    glyphs in other places."""
    for seed in range(6):
        puzzle = _generate(difficulty, 200 + seed)
        meta = puzzle.meta
        symbols = _off_givens(meta, _state(puzzle.solution))
        for grid in map(_state, puzzle.distractors):
            assert verifier.judge(meta, grid)["given_changed"]
            assert _off_givens(meta, grid) == symbols


def test_options_form_a_code_of_edits_that_needs_two_cells_checked() -> None:
    """The distractors carry one to three of three edits of the solution (``choose_set``), each
    edit carried by two or three of the five options: ruling them out takes checking two cells."""
    kinds, counts = set(), []
    for seed in range(40):
        puzzle = _generate("medium", 100 + seed)
        solution = _state(puzzle.solution)
        kinds.update(puzzle.violations)
        counts.append(puzzle.stats["aspects_in_play"])
        assert all(2 <= _changed(solution, d) <= 12 for d in map(_state, puzzle.distractors))
    assert min(counts) >= 2, counts  # an attempt whose edits do not compose is turned down, never a star
    assert kinds >= {"row_repeat", "column_repeat"}


def test_options_differ_as_pixels(built: tuple) -> None:
    _, solution, distractors = built
    digests = {hashlib.sha256(r[512].tobytes()).hexdigest() for r in [solution, *distractors]}
    assert len(digests) == 5


def test_meta_matches_schema_and_is_json(built: tuple) -> None:
    puzzle, _, _ = built
    assert meta_errors(task.TASK, puzzle.meta) == []
    assert json.loads(json.dumps(puzzle.meta)) == puzzle.meta
    broken = dict(puzzle.meta, givens=[[0, 0]])
    assert meta_errors(task.TASK, broken)


def test_givens_look_the_same_in_puzzle_and_answer(built: tuple) -> None:
    puzzle, solution, _ = built
    bare = rasterise(task.draw(puzzle.meta, None), (512,))[512]
    grid = verifier.read_grid(puzzle.meta, bare)
    for r, c, s in puzzle.meta["givens"]:
        assert grid[r][c] == s
    assert sum(v != verifier.EMPTY for row in grid for v in row) == len(puzzle.meta["givens"])


# ---------------------------------------------------------------- the verifier judges rules, not the stored answer


def _latin(n: int, shift: int) -> list[list[int]]:
    return [[(r * shift + c) % n for c in range(n)] for r in range(n)]


def test_any_grid_satisfying_the_rules_passes() -> None:
    # With no clues every Latin square is an answer: two different ones both pass.
    meta = task._meta(5, [])
    first, second = _latin(5, 1), _latin(5, 2)
    assert first != second
    for grid in (first, second):
        assert all(verifier.judge(meta, grid).values())
        assert verifier.verify(meta, rasterise(task.draw(meta, grid), (512,))[512]).passed
    # A clue keeps only the squares that obey it, whichever they are.
    meta = task._meta(5, [("order", 0, 1, 0, 0)])
    assert verifier.judge(meta, first)["order_violation"]
    assert not verifier.judge(meta, [row[::-1] for row in first])["order_violation"]


@pytest.mark.parametrize("check", verifier.CHECKS)
def test_each_violation_is_rejected(check: str) -> None:
    n = 4
    grid = _latin(n, 1)  # rows [0 1 2 3], [1 2 3 0], ...
    clues = [("given", 0, 0, 0), ("order", 0, 1, 0, 0), ("forbid", 1, 1, 0)]
    meta = task._meta(n, clues)
    assert all(verifier.judge(meta, grid).values())
    bad = [list(row) for row in grid]
    if check == "empty_cell":
        bad[2][2] = verifier.EMPTY
    elif check == "given_changed":
        bad = [[(v + 1) % n for v in row] for row in grid]  # still a Latin square; only the given moved
        meta = task._meta(n, [("given", 0, 0, 0)])
    elif check == "row_repeat":
        bad[2], bad[3] = [bad[2][0], *bad[3][1:]], [bad[3][0], *bad[2][1:]]  # swap first cells: columns keep
    elif check == "column_repeat":
        bad = [list(row) for row in zip(*bad)]
        bad[2], bad[3] = [bad[2][0], *bad[3][1:]], [bad[3][0], *bad[2][1:]]
        bad = [list(row) for row in zip(*bad)]
    elif check == "order_violation":
        meta = task._meta(n, [("order", 0, 0, 0, 1)])
    elif check == "forbidden_symbol":
        meta = task._meta(n, [("forbid", 1, 1, 2)])
    failed = [k for k, ok in verifier.judge(meta, bad).items() if not ok]
    assert failed == [check]
    image = rasterise(task.draw(meta, bad), (512,))[512]
    assert verifier.verify(meta, image).failed == [check]


# ---------------------------------------------------------------- bad images


def test_bad_images_are_rejected(built: tuple) -> None:
    puzzle, solution, _ = built
    meta = puzzle.meta
    height, width = solution[512].shape[:2]
    blank = rasterise(task.draw(meta, None), (512,))[512]
    verdict = verifier.verify(meta, blank)
    assert not verdict.passed and verdict.usable and "empty_cell" in verdict.failed
    white = np.full((height, width, 3), 255, np.uint8)
    assert not verifier.verify(meta, white).passed
    noise = np.random.default_rng(0).integers(0, 256, (height, width, 3), dtype=np.uint8)
    assert not verifier.verify(meta, noise).passed
    png = encode_png(solution[512])
    truncated = verifier.verify(meta, png[: len(png) // 2])
    assert not truncated.passed and not truncated.usable
    assert not verifier.verify(meta, b"not an image").usable
    assert not verifier.verify(meta, np.zeros((512, 1024, 3), np.uint8)).usable  # wrong aspect ratio
    assert not verifier.verify(meta, _resized(solution[512], 0.05)).usable  # too small to read


# ---------------------------------------------------------------- generation


def _brute_force(meta: dict) -> list[list[list[int]]]:
    """Every Latin square obeying the clues, by plain enumeration of row permutations."""
    n = meta["size"]
    perms = list(itertools.permutations(range(n)))
    found: list[list[list[int]]] = []

    def extend(rows: list[tuple[int, ...]]) -> None:
        r = len(rows)
        if r == n:
            grid = [list(row) for row in rows]
            if all(verifier.judge(meta, grid).values()):
                found.append(grid)
            return
        for perm in perms:
            if all(perm[c] != row[c] for row in rows for c in range(n)) and all(
                perm[c] == s for rr, c, s in meta["givens"] if rr == r
            ) and all(perm[c] != s for rr, c, s in meta["forbidden"] if rr == r):
                extend([*rows, perm])

    extend([])
    return found


@pytest.mark.parametrize(("difficulty", "seed"), [("easy", s) for s in range(4)] + [("medium", s) for s in range(2)])
def test_uniqueness_by_brute_force(difficulty: str, seed: int) -> None:
    puzzle = _generate(difficulty, seed)
    assert _brute_force(puzzle.meta) == [puzzle.solution]


def test_every_clue_is_needed() -> None:
    puzzle = _generate("medium", 3)
    meta = puzzle.meta
    clues = [("given", *g) for g in meta["givens"]] + [("order", *o) for o in meta["orders"]] + [
        ("forbid", *f) for f in meta["forbidden"]]
    budget = task.Budget(task.DIFFICULTIES["medium"])
    assert len(task._solve(meta["size"], clues, budget)) == 1
    for k in range(len(clues)):
        assert len(task._solve(meta["size"], clues[:k] + clues[k + 1:], budget)) == 2


def test_an_attempt_without_a_telling_clue_is_rejected_not_raised() -> None:
    # This attempt reaches a second solution that differs from the solution only in marked cells.
    with pytest.raises(RejectedPuzzle, match="no clue tells"):
        get_task(task.TASK).generate(task.DIFFICULTIES["hard"], item_rng(derive_seed(99, task.TASK, "hard", 81, 0)))
    assert accepted_attempt(task.TASK, "hard", 81, 99)[1] == 1


def test_solver_limits_reject() -> None:
    config = task.LogicGridConfig(size=6, given_weight=1, order_weight=1, forbid_weight=1, node_limit=100, attempt_nodes=160)
    budget = task.Budget(config)
    with pytest.raises(RejectedPuzzle, match="solver node limit"):
        task._solve(6, [], budget, limit=10**6)  # counting every 6x6 Latin square: far past one call's limit
    assert budget.spent > 100
    task._solve(6, [], budget, limit=1)  # one square: a few nodes
    with pytest.raises(RejectedPuzzle, match="attempt node budget"):
        task._solve(6, [], budget, limit=10**6)
    with pytest.raises(RejectedPuzzle):  # generation under a tiny budget is rejected, not slow
        task.generate(config, item_rng(0))


@pytest.mark.parametrize(("field", "value", "words"), [
    ("size", 2, "size must be in 3..7"), ("size", 8, "size must be in 3..7"), ("size", 5.0, "size must be an integer"),
    ("given_weight", -0.1, "given_weight must be in >= 0.0"), ("order_weight", "x", "order_weight must be a number"),
    ("forbid_weight", -1, "forbid_weight must be in >= 0.0"), ("node_limit", 10, "node_limit must be in 100..1000000"),
    ("attempt_nodes", 1000, "node_limit (2000) must not exceed attempt_nodes (1000)"),
])
def test_config_validation(field: str, value: object, words: str) -> None:
    import dataclasses

    from vrforge.params import ParamError

    with pytest.raises(ParamError) as caught:
        dataclasses.replace(task.DIFFICULTIES["hard"], **{field: value}).validate()
    assert "\n" not in str(caught.value) and words in str(caught.value), str(caught.value)
    with pytest.raises(ParamError, match="must not all be zero"):
        task.LogicGridConfig(5, 0, 0, 0).validate()


def test_expert_beyond_the_reference_hard() -> None:
    expert = task.DIFFICULTIES["expert"]
    assert expert.size == len(task.SHAPES) == 7 > 6
    assert list(task.DIFFICULTIES) == list(LEVELS)
    assert _generate("expert", 3).stats["clues"] >= 16  # the reference's hard has 16 constraints


@pytest.mark.parametrize("difficulty", LEVELS)
def test_legibility_is_what_is_drawn(difficulty: str) -> None:
    from vrforge.svgdraw import fmt

    spec = get_task(task.TASK)
    config = spec.difficulties[difficulty]
    shares = spec.legibility(config)
    puzzle = _generate(difficulty, 5)
    width = puzzle.meta["layout"]["width"]
    svg = task.draw(puzzle.meta, puzzle.solution)
    assert f'viewBox="0 0 {fmt(width)} ' in svg
    assert shares["cell"] * width == pytest.approx(puzzle.meta["layout"]["cell"])
    assert shares["legend_symbol"] * width == pytest.approx(2 * puzzle.meta["layout"]["legend"]["radius"])
    assert f'stroke-width="{fmt(shares["chevron_stroke"] * width)}"' in svg
    assert f'stroke-width="{fmt(shares["strike"] * width)}"' in svg
    # A square mark is drawn 0.8 of its nominal radius either side of its centre.
    x, y = task.MARK_AT + puzzle.meta["layout"]["origin"][0], task.MARK_AT + puzzle.meta["layout"]["origin"][1]
    square = task._shape_points("square", x, y, shares["forbidden_mark"] * width / 2)
    assert square[1][0] - square[0][0] == pytest.approx(1.6 * task.MARK_R)
    assert shares["symbol"] * width == pytest.approx(2 * task.GLYPH_R)
    assert spec.illegible(config, 512) == [] and set(shares) == set(spec.legibility_floors)


def test_conventions_listed() -> None:
    conventions = get_task(task.TASK).conventions
    assert any("chevron" in rule for rule in conventions) and any("struck through" in rule for rule in conventions)
    assert any("Latin square" in rule for rule in conventions)


def test_registered_and_deterministic() -> None:
    spec = get_task(task.TASK)
    assert spec.domain == "logical" and spec.checks == verifier.CHECKS
    for difficulty in DIFFICULTIES:
        a = spec.generate(spec.config(difficulty), item_rng(11))
        b = spec.generate(spec.config(difficulty), item_rng(11))
        assert spec.draw(a.meta, a.solution) == spec.draw(b.meta, b.solution)
        assert [spec.draw(a.meta, g) for g in a.distractors] == [spec.draw(b.meta, g) for g in b.distractors]
        assert a.answer_index == b.answer_index and a.violations == b.violations
        assert "<text" not in spec.draw(a.meta, None)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_snapshot(difficulty: str) -> None:
    puzzle = task.generate(task.DIFFICULTIES[difficulty], item_rng(0))
    png = render_pngs(task.draw(puzzle.meta, puzzle.solution), (512,))[512]
    assert hashlib.sha256(png).hexdigest() == SNAPSHOTS[difficulty]
    options = json.dumps([puzzle.answer_index, list(puzzle.violations), [list(map(list, g)) for g in puzzle.distractors]])
    assert hashlib.sha256(options.encode()).hexdigest() == OPTION_SNAPSHOTS[difficulty]


# ---------------------------------------------------------------- slow: context-blind pickers


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", LEVELS)
def test_context_blind_pickers(difficulty: str) -> None:
    choices, answers, seconds = [], [], 0.0
    for index in range(200):
        clock = time.perf_counter()
        puzzle = _generate(difficulty, 1000 + index)
        svgs = [task.draw(puzzle.meta, option) for option in puzzle.options()]
        seconds += time.perf_counter() - clock
        choices.append(pick_all([rasterise(svg, (256,))[256] for svg in svgs]))
        answers.append(puzzle.answer_index)
    accuracy = picker_accuracy(choices, answers)
    print(difficulty, accuracy, f"{seconds / 200 * 1000:.1f} ms per puzzle")
    assert all(value <= 0.30 for value in accuracy.values()), accuracy


@pytest.mark.slow
def test_shortcut_gate_on_expert():
    from _gate import gate

    figures = gate("logic_grid", 200, difficulties=("expert",))
    assert max(figures.values()) <= 0.30, figures
