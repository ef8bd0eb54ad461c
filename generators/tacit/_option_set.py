"""The one policy by which every TACIT generator chooses a puzzle's four distractors.

A model that never solves the puzzle can still exploit any systematic difference between the
solution and its distractors: the audit (vrforge/pickers.py) runs pickers that take the option
with the most or least ink, the most or fewest colours, the one nearest or farthest from the
bare puzzle, the medoid, the one nearest the set's mean, the odd one out, and a probe learned
over all of these. If every distractor is one edit of the solution, the solution is the centre
of its set (nearest to every other option, never the odd one out), and the probe finds it
whatever four edits are chosen: a choice among such candidates cannot hide it.

So the set is a star around a centre that is the solution only one time in five
(``choose_star``): otherwise a near miss of the solution is the centre, and the solution, one
edit back from it, is one of the options around it like the others (the I-RAVEN idea, where
the answer and its distractors share edits). Each task supplies only its near misses of any
answer (``variants``: each one edit away, failing exactly the check it names, and symmetric,
so that undoing an edit looks like making one) and a key that tells drawn answers apart
(``stand_in``). The options around the centre are drawn at random, never by their pictures.

A star's distractors all carry its centre's edit, so one check (of that aspect) rules them all
out. ``choose_set`` asks more: a code over three edits in which no option is alone in any
aspect, so that a solver must check at least two aspects (``aspects_in_play``) whichever option
is the solution; it falls back to the star where a task's edits do not compose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TypeVar

import numpy as np

State = TypeVar("State")

CENTRE_TRIES = 8  # distractors tried as the centre before the solution takes it


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
    with probability 1/(count + 1) the solution, with ``count`` of its variants around it (of
    the kinds a distractor centre would have had around it: see ``_pick_like``); otherwise a
    random variant of the solution, with the solution (one edit back) and ``count - 1``
    variants of that distractor around it. The options around the centre are
    drawn at random, different violations first (the solution counting as a variant of the
    centre's own kind, since it undoes that edit), never by their pictures: a choice that
    looked at the solution's ink or distances would itself mark the solution. The set is fair
    when the task's variants are symmetric, so that undoing an edit looks like making one."""
    solution_vector = np.asarray(stand_in(solution), dtype=np.float64)
    first, first_vectors = _distinct(variants(solution), stand_in, [solution_vector])
    centred = int(rng.integers(count + 1)) == 0
    template: list[str] | None = None
    for index in rng.permutation(len(first))[:CENTRE_TRIES].tolist():
        leaves, _ = _distinct(variants(first[index][1]), stand_in, [solution_vector, first_vectors[index]])
        if len(leaves) < count - 1:
            continue
        # The solution stands for the undone edit, of the centre's kind, among the leaves.
        tails = _pick_leaves([k for k, _ in leaves], count - 1, rng, taken=first[index][0])
        if not centred:
            picked = [first[index], *(leaves[i] for i in tails)]
            return [picked[i] for i in rng.permutation(count).tolist()]
        template = [first[index][0], *(leaves[i][0] for i in tails)]
        break
    if len(first) < count:
        raise ValueError(f"only {len(first)} distinct variants of the solution")
    return [first[i] for i in _pick_like(first, template, count, rng)]


def _pick_like(found: Sequence[tuple[str, State]], template: Sequence[str] | None, count: int,
               rng: np.random.Generator) -> list[int]:
    """``count`` of the solution's own variants whose edits are of the kinds in ``template``
    where it can (the kinds of the edits around a distractor centre drawn for the puzzle), the
    rest at random, different violations first. A set centred on the solution then shows the
    same kinds of edits as one centred on a distractor: where a distractor's near misses all
    stay within its own check (an edit elsewhere would break a second one), its set differs
    in one place only, and so does the solution's."""
    kinds = [kind for kind, _ in found]
    order = rng.permutation(len(found)).tolist()
    picked: list[int] = []
    for wanted in template or []:
        match = next((i for i in order if kinds[i] == wanted and i not in picked), None)
        if match is not None:
            picked.append(match)
    rest = [i for i in order if i not in picked]
    picked += [rest[i] for i in _pick_leaves([kinds[i] for i in rest], count - len(picked), rng)]
    return picked


# ---------------------------------------------------------------- aspects in play

Aspects = tuple[bytes, ...]
# (solution, answer, edited) -> answer with the edit that made edited from the solution, and the one check it fails
Combine = Callable[[State, State, State], "tuple[str, State] | None"]


def aspects_of(stand_in: Callable[[State], np.ndarray], groups: Sequence[int] | np.ndarray | None = None
               ) -> Callable[[State], Aspects]:
    """The aspects of an answer that a solver checks, from its stand-in: coordinate i of the
    stand-in belongs to aspect ``groups[i]`` (None: every coordinate is an aspect of its own,
    such as a cell, a node or a rule entry); two answers agree on an aspect when all its
    coordinates are equal."""
    order: np.ndarray | None = None
    bounds: list[int] = []
    if groups is not None:
        labels = np.asarray(groups)
        order = np.argsort(labels, kind="stable")
        bounds = np.flatnonzero(np.diff(labels[order])).tolist()

    def aspects(state: State) -> Aspects:
        vector = np.asarray(stand_in(state), dtype=np.float64).ravel()
        if order is None:
            return tuple(v.tobytes() for v in vector)
        return tuple(part.tobytes() for part in np.split(vector[order], [b + 1 for b in bounds]))

    return aspects


def differing(solution: Aspects, answer: Aspects) -> frozenset[int]:
    """The aspects where ``answer`` differs from ``solution``."""
    return frozenset(i for i, (a, b) in enumerate(zip(solution, answer)) if a != b)


def aspects_in_play(solution: Aspects, distractors: Sequence[Aspects]) -> int:
    """The fewest aspects a solver must check to rule out every distractor: the smallest set of
    aspects that holds, for every distractor, one where it differs from the solution (a
    minimum hitting set, found as the fewest groups of distractors that share a differing
    aspect). A distractor that differs in no listed aspect needs a check of its own."""
    diffs = [differing(solution, d) for d in distractors]
    blind = sum(1 for d in diffs if not d)
    rest = [d for d in diffs if d]

    def fewest(remaining: list[frozenset[int]]) -> int:
        if not remaining:
            return 0
        first, others = remaining[0], remaining[1:]
        best = len(remaining)
        # The group of the first distractor: every subset of the others that shares an aspect with it.
        for mask in range(1 << len(others)):
            members = [others[i] for i in range(len(others)) if mask >> i & 1]
            shared = first.intersection(*members) if members else first
            if shared:
                left = [others[i] for i in range(len(others)) if not mask >> i & 1]
                best = min(best, 1 + fewest(left))
        return best

    return blind + fewest(rest)


def hitting_numbers(rows: Sequence[int]) -> list[int]:
    """For a set of answers written as bit masks over binary aspects, the aspects in play as
    seen from each member (how many checks would rule out the others were it the solution)."""
    width = 0
    for r in rows:
        width = max(width, int(r).bit_length())
    vectors = [tuple(bytes([r >> c & 1]) for c in range(width)) for r in rows]
    return [aspects_in_play(v, [w for w in vectors if w is not v]) for v in vectors]


def _codes(columns: int = 3) -> list[tuple[int, ...]]:
    """Every set of five answers over ``columns`` binary aspects (bit masks, one of them 0) that
    needs at least two checks from every member's side: each aspect splits the five 2 + 3, so no
    member is alone in any aspect. From the solution's side such a set needs two or three checks,
    whichever member it is, so the set may be translated onto any member without marking it.
    (Three checks from every side cannot be had: at most one member of five needs three here,
    and over any binary aspects, tried exhaustively over every set of the fifteen ways to split
    five options in two, some member needs at most two; a set that needed three from the
    solution's side alone would mark it.)"""
    from itertools import combinations

    found: list[tuple[int, ...]] = []
    for others in combinations(range(1, 1 << columns), 4):
        rows = (0, *others)
        if min(hitting_numbers(rows)) >= 2 and all(any(r >> c & 1 for r in rows) for c in range(columns)):
            found.append(rows)
    return found


CODES = _codes()
CODE_TRIES = 6  # edit triples tried before the set falls back to a star


def choose_set(solution: State, variants: Callable[[State], Sequence[tuple[str, State]]],
               stand_in: Callable[[State], np.ndarray], rng: np.random.Generator, *,
               groups: Sequence[int] | np.ndarray | None = None, aspects: Callable[[State], Aspects] | None = None,
               combine: Combine | None = None, signed: bool = False, same_kind: bool | None = None,
               signs_per_set: bool = False, steps: Sequence[float] = (), signs: Sequence[float] | None = None,
               tries: int = CODE_TRIES,
               fallback: bool = True, count: int = 4) -> list[tuple[str, State]]:
    """Four (violation, answer) distractors among which a solver must check at least two aspects
    (``aspects``, by default ``aspects_of(stand_in, groups)``), the solution a random member of its
    set's structure.

    The set is a code over three edits of the solution, each in aspects of its own: five
    answers, as sets of the edits they carry, such that each edit is carried by two or three of
    them (``CODES``). No member is then alone in an aspect, so ruling out the other four takes
    two checks whichever member is the solution; and the code is translated onto a random
    member (the solution carries none of the edits, the others the edits where they differ
    from that member), so the structure says nothing of which one it is. An answer that
    carries two or three edits is reached by the task's own ``variants`` (one edit at a time,
    each near miss failing exactly the check it names), so every distractor still fails
    exactly one check. A task whose near misses of a near miss seldom repeat an edit of the
    solution supplies ``combine(solution, answer, edited)``: ``answer`` with the edit that made
    ``edited`` from the solution, and the one check it fails (None unless exactly one), tried
    first. ``signed``: the three edits add or remove ink (the sum of their stand-in's change) as a
    fair coin says, each on its own: where the edits that compose are mostly of one sign (a task
    whose violations each add or each remove ink), three of one sign would leave the solution
    with the least or the most ink of its set. ``signs_per_set`` (with ``signed``): the coin is
    tossed once for the set and every try keeps to it; were it tossed again on every try, a task
    whose edits of one sign compose more often than the other's (cells added more freely than
    taken away) would keep that sign's sets more often. ``steps`` (with ``signed``): each of the
    three edits changes the stand-in's sum by exactly a size drawn from ``steps`` times a sign, the
    size drawn apart from the sign, once for the set. Seen from an option that carries an edit,
    the edit's change is negated; were the sizes tied to the signs (small removals, large
    additions), the solution, the one member from whose side every edit keeps that tie, would sit
    on values of the set's centred ink that no other member takes. ``signs`` (with ``signed``):
    the set's three signs or changes, drawn by the caller with ``set_signs`` before it draws the
    puzzle, so that a caller that draws the puzzle again when they cannot be had keeps them: were
    they drawn afresh with each puzzle, the signs that compose more easily would be kept more
    often, and the solution would have the least or the most ink too often. ``same_kind``: every try takes three edits of one
    violation (True), or of different ones (False), where a task's checks say which compose (by
    default the tries alternate); ``tries``: edit triples tried (a task whose edits seldom
    compose tries more: each try draws afresh, so the first ones are the same whatever the number). Where the edits cannot compose
    (every composite breaks a second check) the set falls back to ``choose_star``, or
    (``fallback`` False) ValueError is raised: a task that rejects the attempt then keeps only
    codes, so every set it keeps has two aspects or more in play."""
    if count != 4:
        return choose_star(solution, variants, stand_in, rng, count=count)
    aspects = aspects or aspects_of(stand_in, groups)
    variants = _kept(variants, stand_in)
    base = np.asarray(stand_in(solution), dtype=np.float64)
    base_aspects = aspects(solution)
    first, vectors = _distinct(variants(solution), stand_in, [base])
    touched = [differing(base_aspects, aspects(state)) for _, state in first]
    inks = [float((vector - base).sum()) if steps else float(np.sign((vector - base).sum())) for vector in vectors]
    joiner = None if combine is None else partial(combine, solution)
    def composed(wanted: list[float] | None, alike: bool) -> list[tuple[str, State]] | None:
        edits = _disjoint_edits([kind for kind, _ in first], touched, rng, same_kind=alike,
                                signs=(inks, wanted) if wanted is not None else None)
        if edits is None:
            return None
        # Every answer that carries some of the three edits, before the code and the solution's
        # member in it are drawn: were only the code's own answers made, a failure would turn
        # down the members that need more edits composed, and the sets kept would favour the
        # others (the centre among them), marking the solution.
        made = _compose(range(1, 8), [first[i] for i in edits], [touched[i] for i in edits], variants, aspects, joiner)
        if made is None:
            return None
        keys = {np.asarray(stand_in(state), dtype=np.float64).tobytes() for _, state in made}
        return None if len(keys) < 7 or base.tobytes() in keys else made

    once = list(signs) if signs is not None else set_signs(rng, steps) if signed and (steps or signs_per_set) else None
    for attempt in range(tries):
        # Edits of different violations compose where a task judges each aspect apart; where two
        # violations together break two checks, only edits of one violation compose: both are tried.
        wanted = once or (rng.choice((-1.0, 1.0), 3).tolist() if signed else None)
        alike = attempt % 2 == 1 if same_kind is None else same_kind
        made = composed(wanted, alike)
        if made is None:
            continue
        code = CODES[int(rng.integers(len(CODES)))]
        member = code[int(rng.integers(len(code)))]
        chosen = [made[(row ^ member) - 1] for row in code if row != member]
        return [chosen[i] for i in rng.permutation(count).tolist()]
    if not fallback:
        raise ValueError(f"no code over three composing edits in {tries} tries")
    return choose_star(solution, variants, stand_in, rng, count=count)


def set_signs(rng: np.random.Generator, steps: Sequence[float] = (), still: bool = False) -> list[float]:
    """The signs of a set's three edits, a fair coin each, or (``steps``) their changes: a size drawn
    from ``steps`` apart from the sign (see ``choose_set``); ``still``: each sign -1, 0 (an edit that
    leaves the ink as it is, such as a moved or mirrored mark) or +1, as likely."""
    if still:
        return rng.choice((-1.0, 0.0, 1.0), 3).tolist()
    signs = rng.choice((-1.0, 1.0), 3)
    return (signs * rng.choice(np.asarray(steps, dtype=np.float64), 3)).tolist() if steps else signs.tolist()


def _kept(variants: Callable[[State], Sequence[tuple[str, State]]], stand_in: Callable[[State], np.ndarray]
          ) -> Callable[[State], Sequence[tuple[str, State]]]:
    """``variants`` asked once per answer (by its stand-in): composing edits asks again and again."""
    found: dict[bytes, Sequence[tuple[str, State]]] = {}

    def kept(state: State) -> Sequence[tuple[str, State]]:
        key = np.asarray(stand_in(state), dtype=np.float64).tobytes()
        if key not in found:
            found[key] = variants(state)
        return found[key]

    return kept


def _disjoint_edits(kinds: Sequence[str], touched: Sequence[frozenset[int]], rng: np.random.Generator,
                    size: int = 3, same_kind: bool = False,
                    signs: tuple[Sequence[float], Sequence[float]] | None = None) -> list[int] | None:
    """``size`` variants of the solution that change disjoint aspects, drawn at random, different
    violations first, or (``same_kind``) all of the first drawn violation that has enough (a rule
    on the kinds and aspects alone, never the pictures); with ``signs`` (each variant's ink sign,
    or its ink change, and those wanted in turn) the k-th edit picked has the k-th one wanted, or
    leaves the ink, unless the wanted ones name 0 themselves (``set_signs(still=True)``): then
    exactly. (Where an edit that leaves the ink stands in for either sign, a sign whose own edits
    are rare is mostly drawn as one that leaves the ink, and the other sign wins.)"""
    order = [i for i in rng.permutation(len(kinds)).tolist() if touched[i]]

    def fits(i: int, picked: list[int]) -> bool:
        if signs is None:
            return True
        sign, wanted = signs[0][i], signs[1][len(picked)]
        return sign == wanted or (sign == 0 and 0 not in signs[1])

    if same_kind:
        for kind in dict.fromkeys(kinds[i] for i in order):
            alike: list[int] = []
            for i in order:
                if kinds[i] == kind and len(alike) < size and fits(i, alike) and \
                        all(not touched[i] & touched[j] for j in alike):
                    alike.append(i)
            if len(alike) == size:
                return alike
        return None
    for distinct_kinds in (True, False):
        picked: list[int] = []
        for i in order:
            if len(picked) == size:
                break
            if distinct_kinds and any(kinds[i] == kinds[j] for j in picked):
                continue
            if fits(i, picked) and all(not touched[i] & touched[j] for j in picked):
                picked.append(i)
        if len(picked) == size:
            return picked
    return None


def _compose(masks: Iterable[int], edits: Sequence[tuple[str, State]], touched: Sequence[frozenset[int]],
             variants: Callable[[State], Sequence[tuple[str, State]]], aspects: Callable[[State], Aspects],
             combine: Callable[[State, State], tuple[str, State] | None] | None = None) -> list[tuple[str, State]] | None:
    """The answers that carry the edits named by each mask (bit i: ``edits[i]``, which changes the
    aspects ``touched[i]``), each reached one edit at a time through ``variants`` from an answer
    that carries one edit fewer: the near miss whose aspects are those of the answer below with
    the edit's own; None when the task's variants do not make that edit there. (A near miss that
    changed the same aspects otherwise would leave its answer alone in them, and so mark it as
    no solution.)"""
    made: dict[int, tuple[str, State]] = {1 << i: edit for i, edit in enumerate(edits)}
    wanted = [aspects(state) for _, state in edits]

    def reach(mask: int) -> tuple[str, State] | None:
        if mask in made:
            return made[mask]
        for bit in [b for b in range(len(edits)) if mask >> b & 1]:
            below = reach(mask & ~(1 << bit))
            if below is None:
                continue
            under = aspects(below[1])
            target = tuple(wanted[bit][i] if i in touched[bit] else v for i, v in enumerate(under))
            joined = None if combine is None else combine(below[1], edits[bit][1])
            if joined is not None and aspects(joined[1]) == target:
                made[mask] = joined
                return joined
            for kind, state in variants(below[1]):
                if aspects(state) == target:
                    made[mask] = (kind, state)
                    return made[mask]
        return None

    out = [reach(mask) for mask in masks]
    return None if any(o is None for o in out) else [o for o in out if o is not None]


def set_aspects(solution: State, chosen: Sequence[tuple[str, State]], aspects: Callable[[State], Aspects]) -> float:
    """The aspects in play on a chosen set (``aspects_in_play``), as a puzzle statistic."""
    return float(aspects_in_play(aspects(solution), [aspects(state) for _, state in chosen]))
