"""What a local build worker runs: one item, and its level's gallery tiles where asked.

Kept apart from ``executors`` on purpose: a forkserver worker imports only the module of the
function it is sent, and the executors' shard writing pulls in pyarrow, pandas and datasets
(about 100 MB per worker) that a worker never uses.
"""

from __future__ import annotations

import signal
from typing import Any

from vrforge.buffers import reuse_large_buffers
from vrforge.builds.item import BuiltItem, build_item
from vrforge.builds.plan import PlanItem
from vrforge.cards.gallery import Block, gallery_block
from vrforge.threads import one_thread_per_process


def gallery_example(built: BuiltItem, resolution: int) -> dict[str, Any]:
    """The gallery's example of a built item, as the shard holds its row."""
    images = built.images[resolution]
    return {"puzzle": images["puzzle"], "solution": images["solution"], "distractors": images["distractors"],
            "answer_index": built.fields["answer_index"]}


def build_with_gallery(item: PlanItem, widths: tuple[int, ...], config_hash: str,
                       gallery_width: int | None) -> tuple[BuiltItem, Block | None]:
    """``build_item``, and the gallery tiles of the item at ``gallery_width`` (None: no tiles)."""
    built = build_item(item, widths, config_hash)
    return built, (gallery_block(gallery_example(built, gallery_width)) if gallery_width else None)


def init_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the pool
    reuse_large_buffers()
    one_thread_per_process()  # the pool is the parallelism
