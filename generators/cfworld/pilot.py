"""The cfeval-rate pilot: a fixed, seeded selection of ``PILOT_SIZE`` scenarios across the domains.

``vrforge study create cfeval-rate --pilot`` keeps only these scenarios of ``--scenarios``: each
domain gets its share of the 50 (largest remainders, at least one per domain), and within a domain
the scenarios are drawn with ``PILOT_SEED`` after sorting by (topic, id), so the same release gives
the same pilot. ``python -m vrforge.generators.cfworld.pilot [--scenarios FILE]`` prints the ids
(default: the packaged seeds); ``--ids FILE`` on the study command takes such a list instead.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from vrforge.schemas.cfworld import DOMAINS, Scenario

PILOT_SIZE = 50
PILOT_SEED = 2026


def _topic(scenario: Scenario) -> str:
    return next((f[len("topic:"):] for f in scenario.provenance.flags if f.startswith("topic:")), scenario.subdomain)


def domain_shares(counts: dict[str, int], size: int) -> dict[str, int]:
    """``size`` split over the domains in proportion to ``counts`` (largest remainders, at least one each)."""
    total = sum(counts.values())
    if size >= total:
        return dict(counts)
    quotas = {d: size * n / total for d, n in counts.items()}
    shares = {d: max(1, int(q)) for d, q in quotas.items()}
    order = sorted(counts, key=lambda d: (-(quotas[d] - int(quotas[d])), d))
    i = 0
    while sum(shares.values()) < size:
        d = order[i % len(order)]
        if shares[d] < counts[d]:
            shares[d] += 1
        i += 1
    while sum(shares.values()) > size:  # the at-least-one floor overshot: take from the largest
        d = max(shares, key=lambda k: (shares[k], k))
        shares[d] -= 1
    return shares


def pilot_ids(scenarios: Sequence[Scenario], size: int = PILOT_SIZE, seed: int = PILOT_SEED) -> list[str]:
    """The pilot's scenario ids, sorted."""
    by_domain: dict[str, list[Scenario]] = {}
    for s in scenarios:
        by_domain.setdefault(s.domain, []).append(s)
    shares = domain_shares({d: len(v) for d, v in by_domain.items()}, size)
    rng = np.random.default_rng(seed)
    chosen: list[str] = []
    for domain in sorted(by_domain, key=lambda d: (DOMAINS.index(d) if d in DOMAINS else len(DOMAINS), d)):
        pool = sorted(by_domain[domain], key=lambda s: (_topic(s), s.id))
        picks = rng.choice(len(pool), size=shares[domain], replace=False)
        chosen += [pool[int(i)].id for i in picks]
    return sorted(chosen)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vrforge.generators.cfworld.pilot", description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", help="scenarios JSONL or a CF-World release (default: the packaged seeds)")
    args = parser.parse_args(argv)
    if args.scenarios:
        from vrforge.runners.cfeval_judge import CFEvalError, load_scenarios

        try:
            scenarios = load_scenarios(args.scenarios)
        except CFEvalError as exc:
            print(exc, file=sys.stderr)
            return 1
    else:
        from vrforge.generators.cfworld.lawbank import LawBankError, read_compact

        try:
            scenarios = [scenario for _, scenario, _ in read_compact()]
        except LawBankError as exc:
            print(exc, file=sys.stderr)
            return 1
    print("\n".join(pilot_ids(scenarios)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
