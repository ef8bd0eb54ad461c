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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
