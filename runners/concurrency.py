"""Bounded concurrent maps for the runners that send requests (tacit-choice, the CF-Eval judge).

At most ``in_flight`` calls are submitted at once, so an interrupt (Ctrl-C) or a stop stops
the submission too: only the calls already running finish, and the pool is shut down without
waiting for them (their results are dropped; the response cache keeps what they return).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def bounded_map(fn: Callable[[T], R], items: Iterable[T], workers: int, in_flight: int | None = None) -> Iterator[R]:
    """``fn`` over ``items`` with ``workers`` threads and at most ``in_flight`` (default 2 x workers) submitted
    calls; results are yielded in input order (a slow item holds back the ones after it, not the submission
    of ``in_flight`` calls)."""
    if workers <= 1:
        for item in items:
            yield fn(item)
        return
    limit = max(workers, in_flight or 2 * workers)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vrforge-request")
    pending: deque[Future] = deque()
    finished = False
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= limit:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
        finished = True
    finally:
        # On an interrupt, an error or a consumer that stops early: nothing new starts and nobody waits.
        for future in pending:
            future.cancel()
        pool.shutdown(wait=finished, cancel_futures=True)
