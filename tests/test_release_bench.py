"""The release benchmark's step ledger, and the gallery the build composes from its workers' tiles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib

from vrforge.bench.release import stage_of
from vrforge.bench.steps import ENV_DIR, site_dir
from vrforge.builds.build import _gallery_example, build
from vrforge.builds.plan import Shard
from vrforge.builds.recipe import parse_recipe
from vrforge.builds.storage import open_store
from vrforge.cards.gallery import gallery_sheet

MINI = 'name = "mini"\nversion = "0.0.1"\nseed = 3\nresolutions = [512]\nrows_per_shard = 2\n' \
       '[tasks.maze]\ncount = 1\ndifficulties = ["easy", "medium"]\n'


def test_the_gallery_from_worker_tiles_is_the_gallery_read_back(tmp_path):
    out = tmp_path / "mini"
    build(parse_recipe(tomllib.loads(MINI)), out, progress=False)
    examples = [_gallery_example(open_store(out), Shard("maze", level, 0, 1, 0, 1), 512) for level in ("easy", "medium")]
    assert (out / "gallery" / "maze.png").read_bytes() == gallery_sheet(examples)


def test_stage_names_follow_the_innermost_named_step():
    assert stage_of("item > render > record (cairosvg SVG walk)") == "record (cairosvg SVG walk)"
    assert stage_of("item > verify at build time > verify > render > parse SVG") == "verify at build time"
    assert stage_of("item > generate > variants and star choice") == "variants and star choice"
    assert stage_of("build driver > finish > sha256") == "manifest hash"
    assert stage_of("build driver > shard write > sha256") == "shard write: hash files"
    assert stage_of("build driver > finish > gallery > PNG encode") == "gallery"
    assert stage_of("audit: rows > verify > decode PNG") == "audit: verify"
    assert stage_of("audit: rows > decode PNG") == "audit: decode PNG"
    assert stage_of("audit: rows") == "audit: rows (other)"
    assert stage_of("item") == "item (acceptance loop, other)"


def test_the_ledger_charges_nested_calls_to_the_inner_step(tmp_path):
    ledgers = tmp_path / "ledgers"
    ledgers.mkdir()
    code = ("import time\n"
            "from vrforge.builds import shards\n"  # imported after install: its names are wrapped
            "from vrforge.builds.storage import Store\n"
            "def spin(s):\n"
            "    end = time.thread_time() + s\n"
            "    while time.thread_time() < end: pass\n"
            "Store.sha256 = lambda self, rel: spin(0.2)\n"
            "import _vrforge_steps as steps\n"
            "steps.patch_module(__import__('vrforge.builds.storage', fromlist=['x']))\n"
            "outer = steps.timed(lambda: (spin(0.1), Store.sha256(None, 'x')), 'shard write')\n"
            "outer()\n")
    env = dict(os.environ, PYTHONPATH=str(site_dir(tmp_path / "site")), **{ENV_DIR: str(ledgers)})
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert time.perf_counter() - started < 60
    (record,) = [json.loads(p.read_text()) for p in ledgers.glob("*.json")]
    steps = record["steps"]
    assert 0.08 <= steps["shard write"][0] < 0.19  # its own 0.1 s, not the 0.2 s inside
    assert 0.18 <= steps["shard write > sha256"][0] < 0.3
    assert steps["shard write > sha256"][2] == 1
    assert record["cpu_total"] >= steps["shard write"][0] + steps["shard write > sha256"][0]
