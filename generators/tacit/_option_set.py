"""The one policy by which every TACIT generator chooses a puzzle's four distractors.

A model that never solves the puzzle can still exploit any systematic difference between the
solution and its distractors: the audit (vrforge/pickers.py) runs pickers that take the option
with the most or least ink, the most or fewest colours, the one nearest or farthest from the
bare puzzle, the medoid, the one nearest the set's mean, the odd one out, and a probe learned
over all of these. Each task supplies only its features: a stand-in picture of each candidate
answer (row 0 the solution; one grey level per drawn element, such as a cell, node, triangle
or path link), the bare puzzle in the same terms when it has one, and each candidate's
violation name. This module does the rest:

1. Candidate sets: every set of ``count`` candidates allowed by the task's rule on violations
   ("distinct": no violation twice; "cover": every violation at least once; "any"), or the
   task's own list of sets, keeping only sets whose five options all differ; above
   ``MAX_SETS``, a seeded random sample.
2. For each set, the solution's rank among the five options (0 lowest .. 4 highest, ties
   averaged) on each feature the pickers read, computed from the stand-ins.
3. A target rank for each feature is drawn uniformly from 0..4, and the features are put in a
   random order; the sets closest to the target in that order (lexicographically) are kept,
   then those naming the most different violations, then one at random.

Why a random target and not "never the medoid": a solution that is never at an extreme is
itself a tell (rule out the extremes and guess among three). With the target uniform, every
extreme picker lands on the solution about one time in five. Why a random order of features:
features that move together (ink and distance to the puzzle, medoid and nearest the mean)
cannot each hit an independent target, and a fixed compromise would put the solution in the
middle; the feature that comes first gets its target exactly, the rest follow it, so every
feature's rank stays uniform.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from math import comb
from typing import TypeVar

import numpy as np

State = TypeVar("State")

MAX_SETS = 600  # candidate sets scored per puzzle: enough choice, bounded cost
CENTRE_TRIES = 8  # distractors tried as the centre before the solution takes it
RULES = ("distinct", "cover", "any")
STAND_IN_FEATURES = ("ink", "colours", "puzzle_distance", "total_distance", "mean_distance", "nearest_other")


def candidate_sets(kinds: Sequence[str], count: int, rule: str, rng: np.random.Generator) -> np.ndarray:
    """(S, count) candidate indices allowed by ``rule``: all of them when there are at most
    MAX_SETS candidate combinations, otherwise a random sample built to satisfy the rule."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    names = sorted(set(kinds))
    by_kind = {name: [i for i, k in enumerate(kinds) if k == name] for name in names}
    if rule == "cover" and len(names) > count:
        return np.zeros((0, count), dtype=np.int64)
    if comb(len(kinds), count) <= MAX_SETS:
        sets = [c for c in combinations(range(len(kinds)), count) if _allowed([kinds[i] for i in c], names, rule)]
        return np.asarray(sets, dtype=np.int64).reshape(-1, count)
    drawn = []
    for _ in range(MAX_SETS):
        if rule == "any":
            pick = rng.choice(len(kinds), count, replace=False)
        else:
            if rule == "distinct":
                if len(names) < count:
                    break
                chosen = [names[i] for i in rng.choice(len(names), count, replace=False)]
            else:  # cover: one of every kind, the rest of kinds with candidates to spare
                chosen = list(names)
                while len(chosen) < count:
                    spare = [n for n in names if len(by_kind[n]) > chosen.count(n)]
                    if not spare:
                        break
                    chosen.append(spare[int(rng.integers(len(spare)))])
                if len(chosen) < count:
                    break
            pick = np.concatenate([rng.choice(by_kind[n], chosen.count(n), replace=False) for n in sorted(set(chosen))])
        drawn.append(np.sort(pick))
    if not drawn:
        return np.zeros((0, count), dtype=np.int64)
    return np.unique(np.asarray(drawn, dtype=np.int64), axis=0)


def _allowed(chosen: list[str], names: list[str], rule: str) -> bool:
    if rule == "distinct":
        return len(set(chosen)) == len(chosen)
    if rule == "cover":
        return set(chosen) == set(names)
    return True


def _ranks(values: np.ndarray) -> np.ndarray:
    """Rank of each option among its row's values (0 lowest, ties averaged); ``values``: (S, 5)."""
    values = np.round(values, 6)
    below = (values[:, None, :] < values[:, :, None]).sum(axis=2)
    equal = (values[:, None, :] == values[:, :, None]).sum(axis=2)
    return below + 0.5 * (equal - 1)


def _set_distances(vectors: np.ndarray, members: np.ndarray) -> np.ndarray:
    """(S, 5, 5) L1 distances between the options of each set (``members``: (S, 5) rows of
    ``vectors``): from the candidates' distance matrix when that is the smaller computation."""
    varying = vectors[:, np.ptp(vectors, axis=0) > 0]  # elements equal in every candidate move no distance
    if len(varying) ** 2 <= members.size * members.shape[1]:
        matrix = np.abs(varying[:, None, :] - varying[None, :, :]).sum(axis=2)
        return matrix[members[:, :, None], members[:, None, :]]
    x = varying[members]
    return np.abs(x[:, :, None, :] - x[:, None, :, :]).sum(axis=3)


def stand_in_ranks(vectors: np.ndarray, sets: np.ndarray, puzzle: np.ndarray | None = None,
                   distances: np.ndarray | None = None) -> np.ndarray:
    """(S, 5, features) each option's rank in its set on each stand-in feature, the solution first.

    ``vectors``: (1 + candidates, D) grey levels, the solution first; ``sets``: (S, count)
    candidate indices (0 = the first candidate, row 1 of ``vectors``); ``distances``: the
    sets' (S, 5, 5) option distances when already computed."""
    vectors = np.asarray(vectors, dtype=np.float64)
    members = np.concatenate([np.zeros((len(sets), 1), dtype=np.int64), sets + 1], axis=1)  # (S, 5)
    ink = (255.0 - vectors).sum(axis=1)
    colours = np.asarray([len(np.unique(np.round(v))) for v in vectors], dtype=np.float64)
    columns = [ink[members], colours[members]]
    if puzzle is not None:
        columns.append(np.abs(vectors - np.asarray(puzzle, dtype=np.float64)).sum(axis=1)[members])
    pairwise = _set_distances(vectors, members) if distances is None else distances
    x = vectors[:, np.ptp(vectors, axis=0) > 0][members]  # (S, 5, D')
    columns.append(pairwise.sum(axis=2))
    columns.append(np.abs(x - x.mean(axis=1, keepdims=True)).sum(axis=2))
    columns.append(np.where(np.eye(pairwise.shape[1], dtype=bool), np.inf, pairwise).min(axis=2))
    return np.stack([_ranks(c) for c in columns], axis=2)


def choose(vectors: np.ndarray, kinds: Sequence[str], rng: np.random.Generator, *, puzzle: np.ndarray | None = None,
           rule: str = "any", count: int = 4, sets: np.ndarray | Sequence[Sequence[int]] | None = None) -> list[int]:
    """Indices (into the candidates: row ``i + 1`` of ``vectors`` is candidate ``i``) of the
    chosen distractors, in random order. ``kinds``: each candidate's violation; ``sets``: the
    task's own candidate sets instead of those ``rule`` allows. Raises ValueError when no set
    of distinct options exists."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if len(kinds) != len(vectors) - 1:
        raise ValueError("one violation name per candidate (rows 1.. of vectors)")
    if sets is None:
        sets = candidate_sets(kinds, count, rule, rng)
    sets = np.asarray(sets, dtype=np.int64).reshape(-1, count)
    members = np.concatenate([np.zeros((len(sets), 1), dtype=np.int64), sets + 1], axis=1)
    distances = _set_distances(vectors, members)
    distinct = (distances + np.eye(count + 1)).min(axis=(1, 2)) > 0  # no candidate equal to the solution or another
    sets, distances = sets[distinct], distances[distinct]
    if not len(sets):
        raise ValueError("no set of distinct options")
    ranks = stand_in_ranks(vectors, np.asarray(sets), puzzle, distances)  # (S, 5, F); asarray: for the type checker
    features = ranks.shape[2]
    # The target: the rank that the option at a random position (drawn per feature) of each set's
    # sorted ranks holds, i.e. the rank of a random option; with ties (two options sharing the
    # nearest pair) that is 0.5 twice as often as a lone rank, as for any option.
    position = rng.integers(5, size=features)
    target = np.sort(ranks, axis=1)[:, position, np.arange(features)]  # (S, F)
    order = rng.permutation(features)
    gap = np.abs(ranks[:, 0, :] - target)
    cost = np.zeros(len(sets))
    for feature in order:  # lexicographic: each |rank - target| <= 4 < 10
        cost = cost * 10 + gap[:, feature]
    labels = np.asarray([{name: k for k, name in enumerate(sorted(set(kinds)))}[k] for k in kinds])
    variety = np.asarray([len(set(row)) for row in labels[sets].tolist()])
    key = cost * 10 - variety
    best = np.flatnonzero(key == key.min())
    chosen = sets[int(best[int(rng.integers(len(best)))])]
    return [int(i) for i in rng.permutation(chosen)]


def _pick_leaves(kinds: Sequence[str], count: int, rng: np.random.Generator, taken: str | None = None) -> list[int]:
    """``count`` indices drawn at random, different violations first, ``taken`` counting as
    already drawn: a rule on the kinds alone, which looks at no option's picture."""
    order = rng.permutation(len(kinds)).tolist()
    picked: list[int] = []
    used = {taken} if taken is not None else set()
    for i in order:
        if len(picked) < count and kinds[i] not in used:
            picked.append(i)
            used.add(kinds[i])
    picked += [i for i in order if i not in picked][: count - len(picked)]
    return picked


def _distinct(found: Sequence[tuple[str, State]], stand_in: Callable[[State], np.ndarray],
              exclude: Sequence[np.ndarray]) -> tuple[list[tuple[str, State]], list[np.ndarray]]:
    """The variants whose stand-in differs from every other one and from ``exclude``, in order."""
    seen = {np.asarray(v, dtype=np.float64).tobytes() for v in exclude}
    kept, vectors = [], []
    for kind, state in found:
        vector = np.asarray(stand_in(state), dtype=np.float64)
        if vector.tobytes() not in seen:
            seen.add(vector.tobytes())
            kept.append((kind, state))
            vectors.append(vector)
    return kept, vectors


def choose_star(solution: State, variants: Callable[[State], Sequence[tuple[str, State]]],
                stand_in: Callable[[State], np.ndarray], rng: np.random.Generator, *,
                count: int = 4) -> list[tuple[str, State]]:
    """Four (violation, answer) distractors built around a centre that is the solution only one
    time in five.

    ``variants(state)``: the task's near misses of any answer state, each one edit away and
    failing exactly the check it names; ``stand_in(state)``: a vector that differs whenever the
    drawn answers differ (equal ones are kept once). If every distractor were one edit of the
    solution, the solution would sit at the centre of its set, nearest to all the others, and a
    probe that never sees the puzzle would find it. So the centre is drawn like any option:
    with probability 1/(count + 1) the solution, with ``count`` of its variants around it;
    otherwise a random variant of the solution, with the solution (one edit back) and
    ``count - 1`` variants of that distractor around it. The options around the centre are
    drawn at random, different violations first (the solution counting as a variant of the
    centre's own kind, since it undoes that edit), never by their pictures: a choice that
    looked at the solution's ink or distances would itself mark the solution. The set is fair
    when the task's variants are symmetric, so that undoing an edit looks like making one."""
    solution_vector = np.asarray(stand_in(solution), dtype=np.float64)
    first, first_vectors = _distinct(variants(solution), stand_in, [solution_vector])
    if int(rng.integers(count + 1)) > 0:
        for index in rng.permutation(len(first))[:CENTRE_TRIES].tolist():
            leaves, _ = _distinct(variants(first[index][1]), stand_in, [solution_vector, first_vectors[index]])
            if len(leaves) >= count - 1:
                # The solution stands for the undone edit, of the centre's kind, among the leaves.
                tails = _pick_leaves([k for k, _ in leaves], count - 1, rng, taken=first[index][0])
                picked = [first[index], *(leaves[i] for i in tails)]
                return [picked[i] for i in rng.permutation(count).tolist()]
    if len(first) < count:
        raise ValueError(f"only {len(first)} distinct variants of the solution")
    return [first[i] for i in _pick_leaves([k for k, _ in first], count, rng)]
