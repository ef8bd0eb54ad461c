"""Builds past one machine: a Dask LocalCluster of process workers, fsspec output, puzzles on the fly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import fsspec
import pyarrow.parquet as pq
import pytest

from vrforge.builds.build import build
from vrforge.builds.recipe import parse_recipe
from vrforge.builds.storage import load_release

distributed = pytest.importorskip("distributed")

from vrforge.builds.executors import DaskExecutor  # noqa: E402

RECIPE = {"name": "wide", "version": "0.0.1", "seed": 11, "resolutions": [512], "rows_per_shard": 1,
          "tasks": {"maze": {"count": 3, "difficulties": ["easy", "hard"]},
                    "ca_forward": {"count": 3, "difficulties": ["easy", "hard"]}}}
TOML = ('name = "wide"\nversion = "0.0.1"\nseed = 11\nresolutions = [512]\nrows_per_shard = 1\n'
        '[tasks.maze]\ncount = 3\ndifficulties = ["easy", "hard"]\n'
        '[tasks.ca_forward]\ncount = 3\ndifficulties = ["easy", "hard"]\n')


def folder_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local") / "ds"
    build(parse_recipe(RECIPE), out, workers=1, progress=False)
    return out


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield cluster, client


def test_dask_build_is_byte_identical_to_the_local_build(reference, cluster, tmp_path):
    _, client = cluster
    out = tmp_path / "dask"
    result = build(parse_recipe(RECIPE), out, progress=False, executor=DaskExecutor(client=client))
    assert result.items_built == 12
    assert folder_bytes(out) == folder_bytes(reference)
    assert len(client.nthreads()) == 2


def test_a_worker_killed_mid_shard_is_retried_and_the_result_is_identical(reference, cluster, tmp_path):
    local_cluster, client = cluster
    out = tmp_path / "killed-worker"
    error: list[BaseException] = []

    def run() -> None:
        try:
            build(parse_recipe(RECIPE), out, progress=False, executor=DaskExecutor(client=client, in_flight=2))
        except BaseException as exc:  # pragma: no cover - reported below
            error.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.time() + 120
    staging = []
    while time.time() < deadline and not staging:
        staging = [p for p in (out / "data").rglob(".*.tmp")] if (out / "data").exists() else []
        time.sleep(0.01)
    assert staging, "no shard was ever in progress"
    victim = next(iter(local_cluster.workers.values()))
    os.kill(victim.process.pid, signal.SIGKILL)  # the nanny restarts it; the scheduler reruns its shard
    thread.join(300)
    assert not thread.is_alive() and not error, error
    assert folder_bytes(out) == folder_bytes(reference)


def test_resume_after_the_driver_is_killed(reference, tmp_path):
    recipe = tmp_path / "wide.toml"
    recipe.write_text(TOML)
    out = tmp_path / "killed-driver"
    command = [sys.executable, "-m", "vrforge.cli", "build", str(recipe), "--out", str(out), "--quiet",
               "--executor", "dask-local", "--workers", "2"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    records = out / ".build" / "shards"
    deadline = time.time() + 180
    while time.time() < deadline and len(list(records.glob("*.json"))) < 3:
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)  # the driver and its cluster's processes
    process.wait()
    assert not (out / "manifest.json").exists()
    done = len(list(records.glob("*.json")))
    assert 3 <= done < 12
    build(parse_recipe(RECIPE), out, progress=False, executor=DaskExecutor(workers=2))
    assert folder_bytes(out) == folder_bytes(reference)


def test_memory_output_is_audited_and_loaded(reference, capsys, monkeypatch):
    import datasets

    from vrforge.cli import main

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)  # memory:// is no network; datasets asks anyway

    url = "memory://vrforge-test/wide"
    build(parse_recipe(RECIPE), url, progress=False)
    fs = fsspec.filesystem("memory")
    manifest = json.loads(fs.cat_file("/vrforge-test/wide/manifest.json"))
    assert manifest == json.loads((reference / "manifest.json").read_text())
    assert not fs.exists("/vrforge-test/wide/.build")
    assert main(["audit", url, "--quiet"]) == 0
    assert "audit PASSED" in capsys.readouterr().out
    assert json.loads(fs.cat_file("/vrforge-test/wide/audit.json"))["passed"]
    rows = load_release(url, "ca_forward-512", split="hard")
    assert len(rows) == 3 and rows[0]["id"] == "ca_forward-hard-0000" and rows[0]["puzzle"].width == 512
    with pytest.raises(ValueError, match="no config"):
        load_release(url, "raven", split="hard")


def test_memory_output_is_refused_for_a_process_cluster():
    store_error = "visible only inside one process"
    with pytest.raises(ValueError, match=store_error):
        build(parse_recipe(RECIPE), "memory://vrforge-test/refused", progress=False, executor=DaskExecutor(workers=2))


def test_cli_refuses_bad_executor_flags(tmp_path, capsys):
    from vrforge.cli import main

    recipe = tmp_path / "wide.toml"
    recipe.write_text(TOML)
    assert main(["build", str(recipe), "--executor", "dask", "--out", str(tmp_path / "x")]) == 2
    assert "--scheduler" in capsys.readouterr().err
    assert main(["build", str(recipe), "--scheduler", "tcp://127.0.0.1:1", "--out", str(tmp_path / "y")]) == 2
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


# ------------------------------------------------------------------------------ on the fly

def released_rows(folder: Path, config: str, split: str) -> dict[str, dict]:
    rows = {}
    for path in sorted((folder / "data" / config).glob(f"{split}-*.parquet")):
        for row in pq.read_table(path).to_pylist():
            rows[row["id"]] = row
    return rows


def test_streamed_rows_equal_the_released_rows(reference):
    from vrforge.builds.stream import PuzzleSource, iter_rows

    recipe = parse_recipe(RECIPE)
    source = PuzzleSource.from_recipe(recipe, "maze", "hard", 0, 3, resolution=512)
    streamed = {row["id"]: row for row in iter_rows(source)}
    assert streamed == released_rows(reference, "maze-512", "hard")


def test_iterable_dataset_matches_the_release(reference):
    from vrforge.builds.stream import PuzzleSource, iterable_dataset

    source = PuzzleSource.from_recipe(parse_recipe(RECIPE), "ca_forward", "easy", 0, 3, resolution=512)
    stream = iterable_dataset(source, block=2)
    assert stream.num_shards == 2
    released = load_release(reference, "ca_forward-512", split="easy")
    for got, want in zip(stream, released, strict=True):
        assert got["id"] == want["id"] and got["meta"] == want["meta"]
        assert got["solution"].tobytes() == want["solution"].tobytes()


def test_torch_stream_yields_each_index_once_across_ranks_and_workers(reference):
    torch = pytest.importorskip("torch")
    from vrforge.builds.stream import PuzzleSource, torch_dataset

    source = PuzzleSource.from_recipe(parse_recipe(RECIPE), "ca_forward", "hard", 0, 3, resolution=512)
    released = released_rows(reference, "ca_forward-512", "hard")
    seen: list[str] = []
    for rank in range(2):
        loader = torch.utils.data.DataLoader(torch_dataset(source, rank=rank, world_size=2), batch_size=None,
                                             num_workers=2, multiprocessing_context="fork")
        for row in loader:
            assert row == released[row["id"]]
            seen.append(row["id"])
    assert sorted(seen) == sorted(released)  # every index exactly once over 2 ranks x 2 workers


def test_partition_covers_every_index_once():
    from vrforge.builds.stream import partition

    indices = range(5, 1005)
    parts = [list(partition(indices, r, 3, w, 4)) for r in range(3) for w in range(4)]
    flat = sorted(i for part in parts for i in part)
    assert flat == list(indices)
    with pytest.raises(ValueError):
        partition(indices, 3, 3, 0, 1)


def test_a_plan_of_millions_is_made_shard_by_shard():
    import tracemalloc
    from collections import deque
    from itertools import islice

    from vrforge.builds.plan import iter_shards

    huge = parse_recipe({**RECIPE, "rows_per_shard": 1000,
                         "tasks": {"maze": {"count": 10_000_000, "difficulties": ["easy", "medium", "hard"]}}})
    tracemalloc.start()
    shards = iter_shards(huge)
    first = list(islice(shards, 3))
    last = deque(shards, maxlen=1)[0]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [s.key for s in first] == ["maze-easy-00000", "maze-easy-00001", "maze-easy-00002"]
    assert last.key == "maze-hard-09999" and last.stop == 10_000_000
    assert peak < 1_000_000  # 30,000 shards walked, never held
