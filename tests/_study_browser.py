"""Scripted study participants: a headless Debian Chromium driven by Playwright, a server in a thread.

Playwright's own browser download cannot run on these machines: the browser is the system's
``chromium`` (``apt-get install -y chromium``), launched with ``executable_path``.
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 1700}


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=chromium(), headless=True, args=CHROMIUM_ARGS)


@contextmanager
def served(path: Path, port: int = 0) -> Iterator[str]:
    """The study at ``path`` served by uvicorn in a thread on a loopback port (0: a free one); yields the base URL."""
    import uvicorn

    from vrforge.runners.study.server import bind, make_app
    from vrforge.runners.study.store import Study

    study = Study(path)
    sock = bind("127.0.0.1", port)
    server = uvicorn.Server(uvicorn.Config(make_app(study), log_level="warning", access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
        study.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_page(page: Any, kind: str) -> None:
    """Until the page shows a page of ``kind`` (welcome, instructions, item, done)."""
    page.wait_for_selector(f"main[data-page='{kind}']", timeout=15000)


def state(page: Any) -> dict[str, Any]:
    return page.evaluate("() => fetch(document.body.dataset.base + '/api/state').then(r => r.json())")


def count_text(page: Any) -> str:
    return page.inner_text("#count")


def submit_and_wait(page: Any) -> None:
    """Submit, and wait for the server's acknowledgement (the progress moves on)."""
    before = count_text(page)
    page.click("#submit")
    page.wait_for_function("(before) => document.getElementById('count').textContent !== before"
                           " || !document.getElementById('notice').hidden", arg=before, timeout=30000)
    if page.is_visible("#notice"):
        raise AssertionError(f"the page refused the answer: {page.inner_text('#notice')}")


def start(page: Any, link: str) -> None:
    page.goto(link)
    wait_for_page(page, "welcome")
    page.click("#start")


def read_instructions(page: Any) -> None:
    wait_for_page(page, "instructions")
    page.click("#read")


def _centres(page: Any, selector: str) -> list[tuple[float, float]]:
    return [tuple(p) for p in page.evaluate(
        "(sel) => Array.from(document.querySelectorAll(sel)).map(e => { const b = e.getBoundingClientRect();"
        " return [b.x + b.width / 2, b.y + b.height / 2]; })", selector)]


def _click_targets(page: Any, selector: str, indices: list[int]) -> None:
    """Real mouse clicks at each target's centre (the browser's own hit testing picks the element)."""
    page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_function("() => Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
    centres = _centres(page, selector)
    for i in indices:
        x, y = centres[i]
        page.mouse.click(x, y)


def draw(page: Any, tools: Mapping[str, Any], answer: Mapping[str, Any]) -> None:
    """Make ``answer`` (the structured answer of the item's tool kind) with the page's tools."""
    kind = tools["kind"]
    targets = "svg.overlay [data-index]"
    if kind == "paint":
        values, initial = answer["values"], tools["initial"]
        for value in sorted({json.dumps(v) for v in values}):
            wanted = [i for i, v in enumerate(values) if json.dumps(v) == value and v != initial[i]]
            if wanted:
                page.click(f".palette button[data-value='{value}']")
                _click_targets(page, targets, wanted)
    elif kind == "toggle":
        _click_targets(page, targets, [i for i, v in enumerate(answer["values"]) if v != tools["initial"][i]])
    elif kind == "route":
        n = tools["size"]
        for stroke in answer["strokes"]:
            page.click("button:text('New line')")
            _click_targets(page, targets, [layer * n * n + r * n + c for layer, r, c in stroke])
    elif kind == "select":
        _click_targets(page, targets, answer["selected"])
    elif kind == "voxels":
        n = tools["size"]
        _click_targets(page, ".heights button", [y * n + x for y, row in enumerate(answer["heights"]) for x, h in enumerate(row)
                                                 for _ in range(h)])
    elif kind == "panel":
        for key in ("type", "size", "colour", "rotation"):
            page.click(f"button[data-attr='{key}'][data-value='{answer[key]}']")
        preset = {0} if len(tools["slots"]) == 1 else set()
        flips = sorted(preset ^ set(answer["positions"]))
        _click_targets(page, "svg.overlay [data-slot]", flips)
    else:
        raise ValueError(f"no script for tool kind {kind!r}")


@lru_cache(maxsize=64)
def _puzzle(task: str, difficulty: str, index: int, seed: int, meta_json: str) -> Any:
    from vrforge.registry import MAX_ATTEMPTS, get_task
    from vrforge.seeding import derive_seed, item_rng
    from vrforge.types import RejectedPuzzle

    spec = get_task(task)
    for attempt in range(MAX_ATTEMPTS):
        try:
            puzzle = spec.generate(spec.config(difficulty), item_rng(derive_seed(seed, task, difficulty, index, attempt)))
        except RejectedPuzzle:
            continue
        if json.dumps(puzzle.meta, sort_keys=True) == meta_json:
            return puzzle
    raise AssertionError(f"no attempt of {task} {difficulty} {index} has the study item's meta")


def puzzle_of(item: Any, seed: int = 0) -> Any:
    """The generated puzzle (solution, distractors, violations) behind a study item made with recipe seed ``seed``."""
    return _puzzle(item.task, item.difficulty, item.private["index"], seed, json.dumps(item.private["meta"], sort_keys=True))


def tool_answer(item: Any, answer: Any) -> dict[str, Any] | None:
    """The answer object ``answer`` of the item's puzzle as tool actions (None: the tools cannot make it)."""
    from vrforge.registry import get_task
    from vrforge.runners.study.tools import tools_for

    tools = tools_for(get_task(item.task))
    encoded = tools.encode(item.private["meta"], answer)
    return None if encoded is None else json.loads(json.dumps(encoded))


def wrong_answer(item: Any, seed: int = 0) -> tuple[dict[str, Any], str]:
    """A distractor the tools can draw, as tool actions, and the check it fails."""
    puzzle = puzzle_of(item, seed)
    for distractor, violation in zip(puzzle.distractors, puzzle.violations):
        encoded = tool_answer(item, distractor)
        if encoded is not None:
            return encoded, violation
    if item.task == "logic_grid":
        # Every distractor of this set changes a given, which the tools leave alone: erase one of
        # the solution's cells instead, which fails empty_cell alone.
        encoded = tool_answer(item, puzzle.solution)
        assert encoded is not None
        encoded["values"][0] = None
        return encoded, "empty_cell"
    raise AssertionError(f"{item.task}: no distractor can be drawn with the tools")


def next_item(page: Any) -> bool:
    """On to the next item, reading its instructions page first when one comes; True when there was one."""
    page.wait_for_selector("main[data-page='instructions'], main[data-page='item'], main[data-page='done']", timeout=15000)
    if page.query_selector("main[data-page='instructions']"):
        page.click("#read")
        wait_for_page(page, "item")
        return True
    return False


def copy_study(source: Path, target: Path) -> Path:
    """A consistent copy of a study file (its WAL journal included), through SQLite's backup."""
    import sqlite3

    with sqlite3.connect(source) as a, sqlite3.connect(target) as b:
        a.backup(b)
    return target


def cfeval_inputs(root: Path) -> tuple[Path, Path, Path]:
    from PIL import Image

    from vrforge.schemas.cfworld import Level, Provenance, Question, Scenario

    questions = []
    for level, point in (("l1", "the tulips are reflected in the mirror"), ("l2", "the mirror surface is pitch black")):
        questions += [Question(level, "visual_integrity", "Is the picture free of broken or melted objects?",
                               "1 when every object is whole and plausibly drawn", 3.0),
                      Question(level, "assessment_point", f"Does the picture show that {point}?", f"1 when {point}", 15.0),
                      Question(level, "logic_consistency", "Is the rest of the scene consistent with that?",
                               "1 when nothing contradicts the effect", 8.0)]
    scenario = Scenario(id="optics-mirror", domain="physics", subdomain="optics", law="Mirrors reflect light.",
                        counterfactual="Mirrors absorb all light.",
                        levels={"l1": Level("Draw a mirror facing red tulips.", "the tulips are reflected"),
                                "l2": Level("If mirrors absorbed light, draw a mirror facing red tulips.", "the mirror is black")},
                        questions=tuple(questions), provenance=Provenance(kind="manual"))
    scenarios = root / "scenarios.jsonl"
    scenarios.write_text(json.dumps(scenario.to_dict()) + "\n", encoding="utf-8")
    images = root / "t2i"
    for level, colour in (("l1", (200, 60, 60)), ("l2", (20, 20, 20))):
        (images / "optics-mirror").mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (256, 256), colour).save(images / "optics-mirror" / f"{level}.png")
    judge = root / "judge"
    judge.mkdir()
    (judge / "results.json").write_text(json.dumps({"kind": "cfeval", "model": "tiny-t2i", "judge": {"model": "tiny-judge"}}))
    (judge / "judgements.jsonl").write_text("".join(json.dumps({"scenario_id": "optics-mirror", "level": level, "status": "ok",
                                                                "S": s, "questions": []}) + "\n"
                                                    for level, s in (("l1", 0.9), ("l2", 0.3))))
    return scenarios, images, judge


def drift_export(root: Path) -> Path:
    from PIL import Image

    from vrforge.runners.drift.human import COLUMNS

    export = root / "export"
    (export / "images").mkdir(parents=True)
    Image.new("RGB", (128, 128), (30, 120, 200)).save(export / "images" / "g1-source.png")
    for name, colour in (("c3", (250, 200, 0)), ("c4", (0, 160, 90))):
        Image.new("RGB", (128, 128), colour).save(export / "images" / f"{name}.png")
    rows = [COLUMNS, ["g1", "c1", "I2T", "images/g1-source.png", "A blue square on white.", "", ""],
            ["g1", "c2", "I2T", "images/g1-source.png", "A red circle.", "", ""],
            ["g2", "c3", "T2I", "A yellow square.", "images/c3.png", "", ""],
            ["g2", "c4", "T2I", "A yellow square.", "images/c4.png", "", ""]]
    (export / "ratings.csv").write_text("".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    return export
