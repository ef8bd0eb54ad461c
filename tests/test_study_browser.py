"""``vrforge study`` in a real browser: scripted participants drive Debian's Chromium through Playwright.

They complete a tacit-choice study from the keyboard (with a reload and a return in a fresh
browser mid-study), draw a right and a wrong answer for every built-in task with its answer
tools, rate a cfeval-rate and a drift-rate study; the server is killed with SIGKILL between
answers and loses none; one token cannot reach another participant's items; malformed and
replayed requests are refused. Every page kind is saved as a screenshot under the test's
temporary folder (printed), to be looked at.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")

import _study_browser as sb  # noqa: E402

from vrforge.cli import main  # noqa: E402
from vrforge.runners.study.store import Study  # noqa: E402

if sb.chromium() is None:
    pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)", allow_module_level=True)

CHOICE_TASKS = "graph_coloring,maze"


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        launched = sb.launch(playwright)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("study-screenshots")
    print(f"\nstudy screenshots: {folder}")
    return folder


def _links(capsys) -> list[str]:
    return [line.split(": ", 1)[1] for line in capsys.readouterr().out.splitlines() if line.startswith("participant ")]


@pytest.fixture(scope="module")
def studies(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("studies")
    out = {"draw": root / "draw.sqlite", "choice": root / "choice.sqlite"}
    assert main(["study", "create", "tacit-draw", "--difficulties", "easy", "--items", "1", "--resolution", "512",
                 "--out", str(out["draw"])]) == 0
    assert main(["study", "create", "tacit-choice", "--tasks", CHOICE_TASKS, "--difficulties", "easy", "--items", "2",
                 "--resolution", "512", "--out", str(out["choice"])]) == 0
    return out


def invite(path: Path, count: int, capsys, base: str = "http://127.0.0.1:1") -> list[str]:
    capsys.readouterr()
    assert main(["study", "invite", str(path), "--participants", str(count), "--base-url", base]) == 0
    return [link.split("/s/")[1] for link in _links(capsys)]


def correct_position(study: Study, token: str) -> tuple[str, int, int]:
    """The current item of ``token``'s participant, the place of its solution on the page, and the rotation."""
    pid = study.participant(token)
    item, rotation = study.current(pid)
    return item.id, (item.private["answer_index"] - rotation) % 5, rotation


# ---------------------------------------------------------------- tacit-choice


def test_choice_study_completed_from_the_keyboard_with_a_reload_and_a_return(browser, studies, shots, capsys):
    path = studies["choice"]
    (token,) = invite(path, 1, capsys)
    study = Study(path)
    script = []  # (item, right?) as the scripted participant answered
    with sb.served(path) as base:
        context = browser.new_context(viewport=sb.VIEWPORT)
        page = context.new_page()
        page.goto(f"{base}/s/{token}")
        sb.wait_for_page(page, "welcome")
        page.screenshot(path=shots / "welcome.png", full_page=True)
        page.click("#start")
        total = 4
        for k in range(total):
            if k == 0:
                sb.wait_for_page(page, "instructions")
                page.screenshot(path=shots / "instructions-choice.png", full_page=True)
            sb.next_item(page)
            if k == 1:  # a reload mid-study comes back to the same item, progress kept
                before = sb.count_text(page)
                page.reload()
                sb.wait_for_page(page, "item")
                assert sb.count_text(page) == before == f"Item 2 of {total}"
            if k == 3:  # coming back another day: a new browser, the same link
                context.close()
                context = browser.new_context(viewport=sb.VIEWPORT)
                page = context.new_page()
                page.goto(f"{base}/s/{token}")
                sb.wait_for_page(page, "item")
                assert sb.count_text(page) == f"Item 4 of {total}"
            item_id, right, _ = correct_position(study, token)
            position = right if k % 3 != 1 else (right + 1) % 5  # every third answer wrong, on purpose
            page.keyboard.press("12345"[position] if k % 2 else "ABCDE"[position].lower())
            assert "chosen" in (page.get_attribute(f".option[data-position='{position}']", "class") or "")
            if k == 0:
                page.screenshot(path=shots / "item-choice.png", full_page=True)
                page.click(f".option[data-position='{position}'] button.zoom")  # an answer seen larger, then closed
                page.wait_for_selector("dialog.zoomed[open]")
                page.screenshot(path=shots / "item-choice-enlarged.png")
                page.keyboard.press("Escape")
                page.wait_for_selector("dialog.zoomed", state="detached")
                page.click("#help")  # the instructions again, over the item: the choice made stays
                page.wait_for_selector("dialog.instructions[open]")
                page.screenshot(path=shots / "instructions-again.png")
                page.click("#back")
                assert "chosen" in (page.get_attribute(f".option[data-position='{position}']", "class") or "")
            before = sb.count_text(page)
            page.keyboard.press("Enter")
            page.wait_for_function("(b) => document.getElementById('count').textContent !== b", arg=before)
            script.append((item_id, position == right))
        sb.wait_for_page(page, "done")
        page.screenshot(path=shots / "done.png", full_page=True)
        context.close()
    rows = {r["item"].id: r for r in study.answer_rows() if r["participant"] == study.participant(token)}
    assert [(i, rows[i]["result"]["correct"]) for i, _ in script] == script
    for r in rows.values():  # the rotation maps the place on the page back to the original option
        assert r["result"]["option"] == (r["answer"]["position"] + r["rotation"]) % 5
    assert all(r["seconds"] is not None and r["seconds"] >= 0 for r in rows.values())
    study.close()


# ---------------------------------------------------------------- tacit-draw


def _draw_all(page, study: Study, token: str, wrong: bool, shots: Path | None) -> dict[str, str | None]:
    """Answer every item with the tools: the solution, or a distractor; returns task -> expected failed check."""
    expected: dict[str, str | None] = {}
    pid = study.participant(token)
    for _ in range(len(study.assignment(pid))):
        page.wait_for_selector("main[data-page='instructions'], main[data-page='item']")
        if shots is not None and study.current(pid)[0].task in ("ca_forward", "maze"):
            page.screenshot(path=shots / f"instructions-{study.current(pid)[0].task}.png", full_page=True)
        sb.next_item(page)
        item = study.current(pid)[0]
        tools = item.public["tools"]
        if wrong:
            answer, expected[item.task] = sb.wrong_answer(item)
        else:
            answer, expected[item.task] = sb.tool_answer(item, sb.puzzle_of(item).solution), None
        sb.draw(page, tools, answer)
        if shots is not None:
            page.screenshot(path=shots / f"item-draw-{tools['kind']}-{item.task}.png")
        sb.submit_and_wait(page)
    return expected


def test_draw_study_every_task_right_with_the_tools_and_wrong_with_the_expected_check(browser, studies, shots, capsys):
    path = studies["draw"]
    right_token, wrong_token = invite(path, 2, capsys)
    study = Study(path)
    with sb.served(path) as base:
        outcomes = {}
        for token, wrong in ((right_token, False), (wrong_token, True)):
            page = browser.new_page(viewport=sb.VIEWPORT)
            sb.start(page, f"{base}/s/{token}")
            outcomes[token] = _draw_all(page, study, token, wrong, None if wrong else shots)
            sb.wait_for_page(page, "done")
            page.close()
    tasks = {item.task for item in study.items().values()}
    assert tasks == set(outcomes[right_token]) == set(outcomes[wrong_token])
    for r in study.answer_rows():
        expected = outcomes[right_token if r["participant"] == study.participant(right_token) else wrong_token][r["item"].task]
        assert r["result"]["failed"] == ([] if expected is None else [expected]), (r["item"].task, r["result"])
        assert r["image"] is not None  # the drawing that was scored is kept
    study.close()


def test_a_task_without_tools_is_answered_by_upload(browser, tmp_path, shots, capsys, monkeypatch):
    from vrforge.runners.study import tools

    monkeypatch.setitem(tools.BUILTIN_TOOLS, "graph_coloring", None)  # as a task made by `vrforge new-task`
    monkeypatch.setattr(tools, "tools_for", lambda spec: tools.BUILTIN_TOOLS.get(spec.name))
    path = tmp_path / "upload.sqlite"
    assert main(["study", "create", "tacit-draw", "--tasks", "graph_coloring", "--difficulties", "easy", "--items", "1",
                 "--resolution", "512", "--out", str(path)]) == 0
    (token,) = invite(path, 1, capsys)
    study = Study(path)
    item = next(iter(study.items().values()))
    assert item.public["tools"] == {"kind": "upload"}
    from vrforge.registry import get_task
    from vrforge.render import render_pngs

    spec = get_task("graph_coloring")
    solution = render_pngs(spec.draw(item.private["meta"], sb.puzzle_of(item).solution), [512])[512]
    (tmp_path / "answer.png").write_bytes(solution)
    with sb.served(path) as base:
        page = browser.new_page(viewport=sb.VIEWPORT)
        sb.start(page, f"{base}/s/{token}")
        sb.read_instructions(page)
        sb.wait_for_page(page, "item")
        page.set_input_files("input[type=file]", str(tmp_path / "answer.png"))
        page.wait_for_selector(".upload img")
        page.screenshot(path=shots / "item-draw-upload.png")
        sb.submit_and_wait(page)
        sb.wait_for_page(page, "done")
        page.close()
    (row,) = study.answer_rows()
    assert row["result"]["passed"] and row["answer"] == {"upload": len(solution)}
    study.close()


# ---------------------------------------------------------------- ratings


def test_cfeval_and_drift_rating_studies(browser, tmp_path, shots, capsys):
    scenarios, images, judge = sb.cfeval_inputs(tmp_path)
    cfeval, drift = tmp_path / "cfeval.sqlite", tmp_path / "drift.sqlite"
    assert main(["study", "create", "cfeval-rate", "--scenarios", str(scenarios), "--images", str(images), "--out", str(cfeval)]) == 0
    assert main(["study", "create", "drift-rate", str(sb.drift_export(tmp_path)), "--out", str(drift)]) == 0

    (token,) = invite(cfeval, 1, capsys)
    with sb.served(cfeval) as base:
        page = browser.new_page(viewport=sb.VIEWPORT)
        sb.start(page, f"{base}/s/{token}")
        sb.wait_for_page(page, "instructions")
        page.screenshot(path=shots / "instructions-cfeval.png", full_page=True)
        sb.read_instructions(page)
        for k in range(2):
            sb.wait_for_page(page, "item")
            # Scripted scores: everything 1, except the assessment point of the second image (cannot tell).
            for q in range(3):
                value = "null" if (k == 1 and q == 1) else "1"
                page.click(f".q[data-question='{q}'] button[data-value='{value}']")
            if k == 0:
                page.screenshot(path=shots / "item-cfeval.png", full_page=True)
            sb.submit_and_wait(page)
        sb.wait_for_page(page, "done")
        page.close()

    (token,) = invite(drift, 1, capsys)
    with sb.served(drift) as base:
        page = browser.new_page(viewport=sb.VIEWPORT)
        sb.start(page, f"{base}/s/{token}")
        sb.wait_for_page(page, "instructions")
        page.screenshot(path=shots / "instructions-drift.png", full_page=True)
        sb.read_instructions(page)
        for k in range(2):
            sb.wait_for_page(page, "item")
            page.click("#submit")  # nothing rated yet: refused on the page, nothing sent
            assert "has no rating" in page.inner_text("#notice")
            for c, rating in enumerate(("good", "poor")):
                page.click(f".candidate[data-candidate='{c}'] button[data-value='\"{rating}\"']")
                page.select_option(f"select[data-rank='{c}']", str(c + 1))
            page.screenshot(path=shots / f"item-drift-{k}.png", full_page=True)
            sb.submit_and_wait(page)
        sb.wait_for_page(page, "done")
        page.close()

    # One format for human answers: export for `cfeval calibrate --human` and `drift human-import`, and the report.
    human = tmp_path / "human.csv"
    assert main(["study", "export", str(cfeval), "--format", "cfeval-human", "--out", str(human)]) == 0
    assert human.read_text().splitlines() == ["scenario_id,level,human_score,raters", "optics-mirror,l1,1.0,1",
                                              "optics-mirror,l2,1.0,1"]
    assert main(["cfeval", "calibrate", str(judge), "--human", str(human), "--out", str(tmp_path / "cal")]) == 0
    ratings = tmp_path / "drift-ratings.csv"
    assert main(["study", "export", str(drift), "--format", "drift-ratings", "--out", str(ratings)]) == 0
    assert [line.split(",")[5:7] for line in ratings.read_text().splitlines()[1:]] == [["Good", "1"], ["Poor", "2"]] * 2
    assert main(["study", "report", str(cfeval), str(drift), "--against", str(judge), "--out", str(tmp_path / "report"),
                 "--no-plot"]) == 0
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    calibration = report["studies"][0]["calibration"][0]
    assert calibration["images"] == 2 and calibration["difference"]["values"] == [-0.1, -0.7]
    assert report["studies"][1]["drift"]["shares"] == {"good": 0.5, "medium": 0.0, "poor": 0.5}


# ---------------------------------------------------------------- safety


def _serve_process(path: Path, port: int = 0) -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen([sys.executable, "-m", "vrforge.cli", "study", "serve", str(path), "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
    line = process.stdout.readline()
    assert "serving" in line, process.stderr.read()
    return process, int(line.split("http://127.0.0.1:")[1].split("/")[0])


def test_sigkill_between_answers_loses_no_acknowledged_answer(browser, studies, capsys, tmp_path):
    path = sb.copy_study(studies["choice"], tmp_path / "choice.sqlite")
    (token,) = invite(path, 1, capsys)
    process, port = _serve_process(path)
    try:
        page = browser.new_page(viewport=sb.VIEWPORT)
        sb.start(page, f"http://127.0.0.1:{port}/s/{token}")
        for _ in range(2):
            sb.next_item(page)
            page.keyboard.press("1")
            sb.submit_and_wait(page)  # acknowledged: the page moved on
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
        with sb.served(path, port):  # a restart on the same address
            page.reload()
            page.wait_for_selector("#count:text-matches('2 of|Item 3')")
            assert "Item 3 of 4" in sb.count_text(page) or "2 of 4" in sb.count_text(page)
            page.close()
    finally:
        process.kill()
        process.wait(10)
    with Study(path) as study:
        assert len([r for r in study.answer_rows() if r["participant"] == study.participant(token)]) == 2
        study.check_integrity()


def _keys(data):
    if isinstance(data, dict):
        for key, value in data.items():
            yield key
            yield from _keys(value)
    elif isinstance(data, list):
        for value in data:
            yield from _keys(value)


def test_one_token_cannot_reach_another_participants_items_and_bad_requests_change_nothing(studies, tmp_path, capsys):
    import httpx

    path = sb.copy_study(studies["choice"], tmp_path / "choice.sqlite")
    alice, bob = invite(path, 2, capsys)
    study = Study(path)
    with sb.served(path) as base, httpx.Client(base_url=base, timeout=20) as http:
        def post(token, route, body=None, **kw):
            return http.post(f"/s/{token}/api/{route}", json=body, **kw) if "content" not in kw else \
                http.post(f"/s/{token}/api/{route}", **kw)

        for token in (alice, bob):
            state = post(token, "seen", {"block": "__welcome__"}).json()
            post(token, "seen", {"block": state["block"]["name"]})
        a_state = http.get(f"/s/{alice}/api/state").json()
        b_state = http.get(f"/s/{bob}/api/state").json()
        a_item = a_state["item"]
        secret_keys = {"answer_index", "violations", "meta", "private", "row_id", "rotation", "correct", "result", "index"}
        assert not set(_keys(a_state)) & secret_keys
        item = study.items()[a_item["id"]]
        assert item.private["row_id"] not in json.dumps(a_state)  # nor where the puzzle comes from
        assert a_item["id"] in {i for i, _ in study.assignment(study.participant(alice))}
        # Bob cannot see or answer Alice's current item (unless it is his current one too: then his own).
        if a_item["id"] != b_state["item"]["id"]:
            assert http.get(f"/s/{bob}/img/{a_item['id']}/puzzle").status_code == 404
            response = post(bob, "answer", {"item": a_item["id"], "answer": {"position": 0}})
            assert response.status_code == 409 and "not the item" in response.text
        assert http.get(f"/s/{alice}/img/{a_item['id']}/puzzle").status_code == 200
        assert http.get(f"/s/{alice}/img/{a_item['id']}/option-5").status_code == 404
        unknown = "x" * 32
        assert http.get(f"/s/{unknown}/api/state").status_code == 404
        assert http.get(f"/s/{unknown}").status_code == 404
        assert http.get("/").status_code == 404
        for route in ("/static/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/static/index.html", "/static/%2e%2e%2fapp.js",
                      "/example/x/..%2f..%2fpasswd"):
            assert http.get(f"/s/{alice}{route}").status_code == 404, route

        answered = len(study.answer_rows())
        bad = [
            (dict(content=b"{not json", headers={"Content-Type": "application/json"}), 400, "not JSON"),
            (dict(content=b"position=1", headers={"Content-Type": "application/x-www-form-urlencoded"}), 415, "application/json"),
            (dict(content=b"[" * 300_000, headers={"Content-Type": "application/json"}), 400, "not JSON"),
            ({"answer": {"position": 1}}, 404, "no such item"),
            ({"item": a_item["id"]}, 422, "'answer'"),
            ({"item": a_item["id"], "answer": {"position": 7}}, 422, "position"),
            ({"item": a_item["id"], "answer": {"position": True}}, 422, "position"),
            ({"item": a_item["id"], "answer": {"position": 1}, "elapsed_ms": -5}, 422, "elapsed_ms"),
            ({"item": "not-an-item", "answer": {"position": 1}}, 404, "no such item"),
        ]
        for body, status, reason in bad:
            response = post(alice, "answer", content=body["content"], headers=body["headers"]) if "content" in body \
                else post(alice, "answer", body)
            assert response.status_code == status and reason in response.text and response.text.count("\n") == 1, \
                (body if "content" not in body else body["headers"], response.status_code, response.text)
        assert post(alice, "seen", {"block": "someone-else"}).status_code == 422
        huge = post(alice, "seen", content=b'{"block": "' + b"x" * 10_000 + b'"}', headers={"Content-Type": "application/json"})
        assert huge.status_code == 413 and "too large" in huge.text
        assert http.put(f"/s/{alice}/api/answer").status_code == 405
        assert len(study.answer_rows()) == answered

        ok = post(alice, "answer", {"item": a_item["id"], "answer": {"position": 2}, "elapsed_ms": 1500})
        assert ok.status_code == 200 and ok.json()["saved"] is True
        replay = post(alice, "answer", {"item": a_item["id"], "answer": {"position": 3}})
        assert replay.status_code == 409 and "answered already" in replay.text
        future = [i for i, _ in study.assignment(study.participant(alice))][-1]
        assert post(alice, "answer", {"item": future, "answer": {"position": 0}}).status_code == 409
        assert http.get(f"/s/{alice}/img/{a_item['id']}/puzzle").status_code == 404  # only the current item's images
        rows = study.answer_rows()
        assert len(rows) == answered + 1 and rows[-1]["answer"]["position"] == 2
    study.close()


def test_upload_that_is_not_an_image_is_refused():
    from vrforge.answer_tools import AnswerError
    from vrforge.registry import accepted_puzzle
    from vrforge.runners.study.answers import score
    from vrforge.runners.study.store import Item

    meta = accepted_puzzle("maze", "easy", 0).meta
    item = Item("x", 0, "maze", "maze", "easy", "maze-easy-0000", {"meta": meta}, {"tools": {"kind": "upload"}}, {}, "")
    with pytest.raises(AnswerError, match="base64"):
        score("tacit-draw", item, 0, {"upload": "%%%"}, 512)
    with pytest.raises(AnswerError, match="upload"):
        score("tacit-draw", item, 0, {"tool": {}}, 512)
    with pytest.raises(AnswerError, match="cannot be used"):
        score("tacit-draw", item, 0, {"upload": base64.b64encode(b"not a png").decode()}, 512)
