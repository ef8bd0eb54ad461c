"""Where shards are built: local worker processes, or the workers of a Dask cluster.

Both executors take shards in plan order and yield one ``ShardReport`` per committed shard.
The local executor maps *items* over a process pool (a bounded window runs ahead) and writes
each shard in this process. The Dask executor sends whole *shards* to the cluster: each task
builds its shard's items and commits the shard's files and record to the output store itself,
so the driver holds only a bounded number of futures and never the data. A worker that dies
mid-shard leaves only hidden staging files; the scheduler runs the shard again elsewhere,
and the rebuilt files are byte-identical because an item depends only on its coordinates.

Either way the worker that builds a level's first item also makes that level's gallery tiles
(``gallery_blocks``, keyed by task and level), so the build's last serial step composes the
sheets instead of reading pictures back, decoding and resizing them.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Generator, Iterator
from itertools import islice, tee
from typing import Any, Protocol

from vrforge.buffers import reuse_large_buffers
from vrforge.builds.item import BuiltItem
from vrforge.builds.plan import PlanItem, Shard
from vrforge.builds.shards import ShardReport, write_shard
from vrforge.builds.storage import Store
from vrforge.builds.worker import build_with_gallery, init_worker
from vrforge.cards.gallery import Block
from vrforge.schemas.layout import MAIN_RESOLUTION
from vrforge.threads import one_thread_per_process

OnItems = Callable[[int], Any]
GalleryBlocks = dict[tuple[str, str], Block]  # (task, level) -> the level's gallery tiles


def gallery_resolution(recipe_resolutions: tuple[int, ...], level_resolutions: tuple[int, ...]) -> int:
    """The width a level's gallery tiles are taken from: the main resolution where the level is
    released at it, else the level's largest."""
    main = MAIN_RESOLUTION if MAIN_RESOLUTION in recipe_resolutions else recipe_resolutions[-1]
    return main if main in level_resolutions else level_resolutions[-1]


def _gallery_width(shard: Shard, item: PlanItem, resolutions: tuple[int, ...]) -> int | None:
    """Only a level's first item (index 0, always in its first shard) makes gallery tiles."""
    return gallery_resolution(resolutions, shard.resolutions or resolutions) if item.index == 0 else None


class Executor(Protocol):
    gallery_blocks: GalleryBlocks

    def run(self, store: Store, shards: Iterator[Shard], recipe_seed: int, resolutions: tuple[int, ...],
            config_hash: str, on_items: OnItems) -> Iterator[ShardReport]: ...


class LocalExecutor:
    """Items over ``workers`` local processes (or in this process for one worker)."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers
        self.gallery_blocks: GalleryBlocks = {}

    def run(self, store: Store, shards: Iterator[Shard], recipe_seed: int, resolutions: tuple[int, ...],
            config_hash: str, on_items: OnItems) -> Iterator[ShardReport]:
        self.gallery_blocks = {}  # this build's only
        if self.workers <= 1:
            reuse_large_buffers()
            for shard in shards:
                widths = shard.resolutions or resolutions
                built = (self._keep(build_with_gallery(item, widths, config_hash, _gallery_width(shard, item, resolutions)))
                         for item in shard.items(recipe_seed))
                yield write_shard(store, shard, widths, built, on_items)
            return
        # One pass over the shards feeds the pool (it runs a bounded window ahead), the other
        # writes them; tee holds only the shards between the two.
        for_items, for_writing = tee(shards)
        results = _pool_results(((item, shard.resolutions or resolutions, _gallery_width(shard, item, resolutions))
                                 for shard in for_items for item in shard.items(recipe_seed)), config_hash, self.workers)
        built = (self._keep(pair) for pair in results)
        try:
            for shard in for_writing:
                yield write_shard(store, shard, shard.resolutions or resolutions,
                                  islice(built, shard.stop - shard.start), on_items)
        finally:
            results.close()

    def _keep(self, pair: tuple[BuiltItem, Block | None]) -> BuiltItem:
        built, block = pair
        if block is not None:
            self.gallery_blocks[(built.item.task, built.item.difficulty)] = block
        return built


# Each pool worker is replaced by a fresh one after this many items: a worker that has built
# every task kept ~475 MB (one task's items peak at 160-340 MB), and a fresh worker costs about a
# second of start-up. The items are seeded one by one, so which worker builds one changes nothing.
ITEMS_PER_WORKER = 200


def _pool_results(items: Iterator[tuple[PlanItem, tuple[int, ...], int | None]], config_hash: str,
                  workers: int) -> Generator[tuple[BuiltItem, Block | None], None, None]:
    """Built items (each at its resolutions, with its gallery tiles where asked) in plan order;
    a bounded window of ``4 * workers`` items runs ahead in a pool."""
    context = multiprocessing.get_context("forkserver")
    pool = context.Pool(workers, initializer=init_worker, maxtasksperchild=ITEMS_PER_WORKER)
    try:
        pending = deque(pool.apply_async(build_with_gallery, (item, widths, config_hash, gallery))
                        for item, widths, gallery in islice(items, 4 * workers))
        while pending:
            built = pending.popleft().get()
            for item, widths, gallery in islice(items, 1):
                pending.append(pool.apply_async(build_with_gallery, (item, widths, config_hash, gallery)))
            yield built
    finally:
        pool.terminate()
        pool.join()


# ---------------------------------------------------------------------------------------- Dask

def build_shard_task(store: Store, shard: Shard, recipe_seed: int, resolutions: tuple[int, ...],
                     config_hash: str) -> tuple[ShardReport, Block | None]:
    """One Dask task: build a shard's items in order and commit its files and record; with the
    level's gallery tiles when the shard holds its first item."""
    reuse_large_buffers()
    one_thread_per_process()  # a Dask worker process runs one task per core it is given
    widths = shard.resolutions or resolutions
    blocks: list[Block] = []

    def built() -> Iterator[BuiltItem]:
        for item in shard.items(recipe_seed):
            done, block = build_with_gallery(item, widths, config_hash, _gallery_width(shard, item, resolutions))
            if block is not None:
                blocks.append(block)
            yield done

    report = write_shard(store, shard, widths, built())
    return report, (blocks[0] if blocks else None)


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
        self.gallery_blocks: GalleryBlocks = {}

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
        self.gallery_blocks = {}  # this build's only
        client, owned = self._client()
        try:
            threads = sum(client.nthreads().values()) or 1
            window = self.in_flight or 2 * threads
            source = iter(shards)

            levels: dict[str, tuple[str, str]] = {}  # future key -> (task, level)

            def submit(shard: Shard) -> Any:
                key = f"vrforge-shard-{config_hash[:12]}-{shard.key}"
                levels[key] = (shard.task, shard.difficulty)
                return client.submit(build_shard_task, store, shard, recipe_seed, resolutions, config_hash,
                                     key=key, retries=self.retries, pure=False)

            pending = {submit(s) for s in islice(source, window)}
            try:
                while pending:
                    done, pending = wait(pending, return_when="FIRST_COMPLETED")
                    for future in sorted(done, key=lambda f: f.key):
                        report, block = future.result()  # a shard that failed past its retries raises here
                        if block is not None:
                            self.gallery_blocks[levels[future.key]] = block
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
