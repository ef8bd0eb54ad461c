"""Where shards are built: local worker processes, or the workers of a Dask cluster.

Both executors take shards in plan order and yield one ``ShardReport`` per committed shard.
The local executor maps *items* over a process pool (a bounded window runs ahead) and writes
each shard in this process. The Dask executor sends whole *shards* to the cluster: each task
builds its shard's items and commits the shard's files and record to the output store itself,
so the driver holds only a bounded number of futures and never the data. A worker that dies
mid-shard leaves only hidden staging files; the scheduler runs the shard again elsewhere,
and the rebuilt files are byte-identical because an item depends only on its coordinates.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from collections.abc import Callable, Generator, Iterator
from itertools import islice, tee
from typing import Any, Protocol

from vrforge.buffers import reuse_large_buffers
from vrforge.builds.item import BuiltItem, build_item
from vrforge.builds.plan import PlanItem, Shard
from vrforge.builds.shards import ShardReport, write_shard
from vrforge.builds.storage import Store

OnItems = Callable[[int], Any]


class Executor(Protocol):
    def run(self, store: Store, shards: Iterator[Shard], recipe_seed: int, resolutions: tuple[int, ...],
            config_hash: str, on_items: OnItems) -> Iterator[ShardReport]: ...


class LocalExecutor:
    """Items over ``workers`` local processes (or in this process for one worker)."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers

    def run(self, store: Store, shards: Iterator[Shard], recipe_seed: int, resolutions: tuple[int, ...],
            config_hash: str, on_items: OnItems) -> Iterator[ShardReport]:
        if self.workers <= 1:
            reuse_large_buffers()
            for shard in shards:
                widths = shard.resolutions or resolutions
                built = (build_item(item, widths, config_hash) for item in shard.items(recipe_seed))
                yield write_shard(store, shard, widths, built, on_items)
            return
        # One pass over the shards feeds the pool (it runs a bounded window ahead), the other
        # writes them; tee holds only the shards between the two.
        for_items, for_writing = tee(shards)
        results = _pool_results(((item, shard.resolutions or resolutions) for shard in for_items
                                 for item in shard.items(recipe_seed)), config_hash, self.workers)
        try:
            for shard in for_writing:
                yield write_shard(store, shard, shard.resolutions or resolutions,
                                  islice(results, shard.stop - shard.start), on_items)
        finally:
            results.close()


def _pool_results(items: Iterator[tuple[PlanItem, tuple[int, ...]]], config_hash: str,
                  workers: int) -> Generator[BuiltItem, None, None]:
    """Built items (each at its resolutions) in plan order; a bounded window of ``4 * workers``
    items runs ahead in a pool."""
    context = multiprocessing.get_context("forkserver")
    pool = context.Pool(workers, initializer=_init_worker)
    try:
        pending = deque(pool.apply_async(build_item, (item, widths, config_hash)) for item, widths in islice(items, 4 * workers))
        while pending:
            built = pending.popleft().get()
            for item, widths in islice(items, 1):
                pending.append(pool.apply_async(build_item, (item, widths, config_hash)))
            yield built
    finally:
        pool.terminate()
        pool.join()


def _init_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the pool
    reuse_large_buffers()


# ---------------------------------------------------------------------------------------- Dask

def build_shard_task(store: Store, shard: Shard, recipe_seed: int, resolutions: tuple[int, ...],
                     config_hash: str) -> ShardReport:
    """One Dask task: build a shard's items in order and commit its files and record."""
    reuse_large_buffers()
    widths = shard.resolutions or resolutions
    built = (build_item(item, widths, config_hash) for item in shard.items(recipe_seed))
    return write_shard(store, shard, widths, built)


class DaskExecutor:
    """Shards on a Dask cluster: a scheduler at ``address``, a ``LocalCluster`` of ``workers``
    processes, or a ``distributed.Client`` the caller made.

    At most ``in_flight`` shards are submitted at once (default: two per worker thread), so the
    driver's memory does not grow with the plan. A failed shard is retried ``retries`` times;
    a shard whose worker died is rescheduled by Dask itself.
    """

    def __init__(self, address: str | None = None, workers: int = 2, client: Any = None, retries: int = 2,
                 in_flight: int | None = None) -> None:
        self.address = address
        self.workers = workers
        self.client = client
        self.retries = retries
        self.in_flight = in_flight
        self._cluster: Any = None  # a LocalCluster this executor started, closed with its client

    def check_store(self, store: Store) -> None:
        """``memory://`` lives inside one process: only an in-process cluster can write to it."""
        protocol = store.fs.protocol if isinstance(store.fs.protocol, str) else store.fs.protocol[0]
        in_process = self.client is not None and not _has_process_workers(self.client)
        if protocol == "memory" and not in_process:
            raise ValueError("memory:// output is visible only inside one process; "
                             "use --executor local or a shared filesystem (a local folder, s3://, gs://)")

    def run(self, store: Store, shards: Iterator[Shard], recipe_seed: int, resolutions: tuple[int, ...],
            config_hash: str, on_items: OnItems) -> Iterator[ShardReport]:
        from distributed import wait

        self.check_store(store)
        client, owned = self._client()
        try:
            threads = sum(client.nthreads().values()) or 1
            window = self.in_flight or 2 * threads
            source = iter(shards)

            def submit(shard: Shard) -> Any:
                return client.submit(build_shard_task, store, shard, recipe_seed, resolutions, config_hash,
                                     key=f"vrforge-shard-{config_hash[:12]}-{shard.key}", retries=self.retries, pure=False)

            pending = {submit(s) for s in islice(source, window)}
            try:
                while pending:
                    done, pending = wait(pending, return_when="FIRST_COMPLETED")
                    for future in sorted(done, key=lambda f: f.key):
                        report = future.result()  # a shard that failed past its retries raises here
                        on_items(report.rows)
                        pending.update(submit(s) for s in islice(source, 1))
                        yield report
            finally:  # an interrupted driver stops its queued shards; committed ones stay
                if pending:
                    client.cancel(list(pending))
        finally:
            if owned:
                client.close()
                if self._cluster is not None:
                    self._cluster.close()
                    self._cluster = None

    def _client(self) -> tuple[Any, bool]:
        from distributed import Client, LocalCluster

        if self.client is not None:
            return self.client, False
        if self.address:
            return Client(self.address), True
        cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True, dashboard_address=":0")
        self._cluster = cluster
        return Client(cluster), True


def _has_process_workers(client: Any) -> bool:
    cluster = getattr(client, "cluster", None)
    return bool(getattr(cluster, "processes", True))
