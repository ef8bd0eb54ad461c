"""The CF-Eval judge against a scripted loopback endpoint (tests/fakeopenai.py)."""

from __future__ import annotations

import base64
import io
import json
import math
import re
import threading
import time
from pathlib import Path

import pytest
from PIL import Image
from shared_data import external

from tests.fakeopenai import Delay, FakeOpenAI, HttpError
from vrforge.cli import main
from vrforge.openai_client import ChatClient, ChatConfig
from vrforge.runners import cfeval_judge as cj
from vrforge.runners.cfeval_personas import PERSONAS, PersonaError, parse_persona_spec
from vrforge.schemas.cfworld import LEVELS, Level, Provenance, Question, Scenario

RELEASE = external("cf-world")
WEIGHTS = {"visual_integrity": 3.0, "assessment_point": 15.0, "logic_consistency": 8.0}
MARK = re.compile(r"\[(\w+)-(l\d)-(\w+)\]")


def make_scenario(sid: str, domain: str) -> Scenario:
    questions = tuple(
        Question(level=level, dimension=dim, question=f"[{sid}-{level}-{dim}] does the image show it?",
                 criteria=f"criteria for {dim} at {level}", weight=w, source_id=f"{sid}{level}{i}")
        for level in LEVELS for i, (dim, w) in enumerate(WEIGHTS.items())
    )
    levels = {lvl: Level(prompt=f"{sid} prompt {lvl}", assessment_point=f"{sid} point {lvl}") for lvl in LEVELS}
    return Scenario(id=sid, domain=domain, subdomain="x", law="", counterfactual="if", levels=levels,
                    questions=questions, provenance=Provenance(kind="manual"))


SCENARIOS = [make_scenario("A", "physics"), make_scenario("B", "biology"), make_scenario("C", "physics")]


def png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), colour).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def images(tmp_path) -> Path:
    root = tmp_path / "images"
    for n, scenario in enumerate(SCENARIOS):
        for k, level in enumerate(LEVELS):
            path = root / scenario.id / f"{level}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(png((40 * n, 60 * k, 7)))
    return root


def user_text(request: dict) -> str:
    return request["messages"][1]["content"][1]["text"]


def marks(request: dict) -> list[tuple[str, str, str]]:
    return MARK.findall(user_text(request))


# scenario -> level -> score per dimension (visual_integrity, assessment_point, logic_consistency)
SCORES = {
    "A": {"l1": (1, 1, 1), "l2": (1, 0.5, 0.5), "l3": (1, 0, 0.5)},
    "B": {"l1": (1, 0, 0.5), "l2": (1, 1, 1), "l3": (1, 1, 1)},   # S_L1 = (3 + 4) / 26 < 0.5: gated
    "C": {"l1": (1, 0.5, 0.5), "l2": (0, 0, 0), "l3": (0.5, 0.5, 0)},
}


def answer_for(request: dict) -> dict:
    found = marks(request)
    sid, level = found[0][0], found[0][1]
    return {f"q{i}": {"reasoning": f"looked at {dim}", "score": SCORES[sid][level][i - 1]}
            for i, (_, _, dim) in enumerate(found, 1)}


def expected_s(sid: str, level: str) -> float:
    return sum(w * s for w, s in zip(WEIGHTS.values(), SCORES[sid][level])) / 26


def client_for(fake: FakeOpenAI, cache_dir: Path | None = None, **overrides) -> ChatClient:
    config = ChatConfig(base_url=fake.base_url, model="judge-vl", timeout_s=overrides.pop("timeout_s", 5.0),
                        max_retries=overrides.pop("max_retries", 2), backoff_s=0.0, **overrides)
    return ChatClient(config, cache_dir, sleep=lambda _s: None)


# --------------------------------------------------------------------------- one request per image


def test_one_request_per_image_with_all_questions_and_the_image(images):
    with FakeOpenAI(responder=answer_for) as fake:
        records = cj.judge_run(client_for(fake), SCENARIOS, images, cj.JudgeSettings(workers=2))
    assert len(fake.requests) == 9
    assert len(records) == 9
    seen = set()
    for request in fake.requests:
        found = marks(request)
        sid, level = found[0][:2]
        assert {(m[0], m[1]) for m in found} == {(sid, level)}          # only this image's questions
        assert [m[2] for m in found] == list(WEIGHTS)                    # all three of them
        part = request["messages"][1]["content"][0]
        assert part["type"] == "image_url"
        expected_url = "data:image/png;base64," + base64.b64encode((images / sid / f"{level}.png").read_bytes()).decode()
        assert part["image_url"]["url"] == expected_url
        schema = request["response_format"]["json_schema"]["schema"]
        assert schema["required"] == ["q1", "q2", "q3"]
        seen.add((sid, level))
    assert len(seen) == 9
    by_key = {(r["scenario_id"], r["level"]): r for r in records}
    for (sid, level), record in by_key.items():
        assert record["status"] == "ok"
        assert record["S"] == pytest.approx(expected_s(sid, level))
        assert record["judge"] == "judge-vl"
        assert record["usage"]["requests"] == 1 and record["usage"]["prompt_tokens"] > 0
        assert [q["dimension"] for q in record["questions"]] == list(WEIGHTS)
    assert [(r["scenario_id"], r["level"]) for r in records] == [(s, lvl) for s in "ABC" for lvl in LEVELS]


def test_personas_per_level(images):
    with FakeOpenAI(responder=answer_for) as fake:
        cj.judge_run(client_for(fake), SCENARIOS[:1], images, cj.JudgeSettings(workers=1))
        cj.judge_run(client_for(fake), SCENARIOS[:1], images,
                     cj.JudgeSettings(personas=parse_persona_spec("l1=strict,l2=balanced"), workers=1))
    systems = [(marks(r)[0][1], r["messages"][0]["content"]) for r in fake.requests]
    assert systems[:3] == [("l1", PERSONAS["balanced"].system), ("l2", PERSONAS["strict"].system), ("l3", PERSONAS["strict"].system)]
    assert systems[3:] == [("l1", PERSONAS["strict"].system), ("l2", PERSONAS["balanced"].system), ("l3", PERSONAS["strict"].system)]


def test_persona_spec():
    assert parse_persona_spec(None) == {"l1": "balanced", "l2": "strict", "l3": "strict"}
    assert parse_persona_spec("strict") == {"l1": "strict", "l2": "strict", "l3": "strict"}
    assert parse_persona_spec("l3=balanced") == {"l1": "balanced", "l2": "strict", "l3": "balanced"}
    for bad in ("l4=strict", "l1=lenient", "l1", "l1=strict,,"):
        with pytest.raises(PersonaError):
            parse_persona_spec(bad)


# --------------------------------------------------------------------------- bad answers


def valid(count: int = 3, score: float = 1) -> dict:
    return {f"q{i}": {"reasoning": "ok", "score": score} for i in range(1, count + 1)}


def test_malformed_then_valid(images):
    with FakeOpenAI(answers=["this is not JSON {", valid()]) as fake:
        records = cj.judge_run(client_for(fake), SCENARIOS[:1], images, cj.JudgeSettings(levels=("l1",), workers=1))
    assert len(fake.requests) == 2
    assert records[0]["status"] == "ok"
    assert records[0]["S"] == 1.0
    assert records[0]["usage"]["requests"] == 2


def test_partial_answer_is_retried_then_recorded_as_failure(images):
    partial = {"q1": {"reasoning": "ok", "score": 1}, "q3": {"reasoning": "ok", "score": 1}}
    with FakeOpenAI(answers=[partial, partial, partial]) as fake:
        records = cj.judge_run(client_for(fake, max_retries=2), SCENARIOS[:1], images, cj.JudgeSettings(levels=("l1",), workers=1))
    assert len(fake.requests) == 3
    record = records[0]
    assert record["status"] == "failed"
    assert record["S"] is None
    assert record["error"].startswith("invalid:") and "q2" in record["error"]


def test_partial_then_complete(images):
    partial = {"q1": {"reasoning": "ok", "score": 1}}
    with FakeOpenAI(answers=[partial, valid(score=0.5)]) as fake:
        records = cj.judge_run(client_for(fake), SCENARIOS[:1], images, cj.JudgeSettings(levels=("l1",), workers=1))
    assert len(fake.requests) == 2
    assert records[0]["status"] == "ok" and records[0]["S"] == 0.5


def test_non_numeric_score_is_retried(images):
    bad = valid()
    bad["q2"] = {"reasoning": "ok", "score": "high"}
    with FakeOpenAI(answers=[bad, valid()]) as fake:
        records = cj.judge_run(client_for(fake), SCENARIOS[:1], images, cj.JudgeSettings(levels=("l1",), workers=1))
    assert len(fake.requests) == 2 and records[0]["status"] == "ok"


def test_timeout_is_recorded_as_failure(images):
    with FakeOpenAI(answers=[Delay(3.0, valid())]) as fake:
        records = cj.judge_run(client_for(fake, timeout_s=0.3, max_retries=0), SCENARIOS[:1], images,
                               cj.JudgeSettings(levels=("l1",), workers=1))
    assert len(fake.requests) == 1
    assert records[0]["status"] == "failed"
    assert records[0]["error"].startswith("timeout:")


def test_scores_are_clipped_and_optionally_snapped(images):
    answer = {"q1": {"reasoning": "", "score": 1.4}, "q2": {"reasoning": "", "score": 0.7}, "q3": {"reasoning": "", "score": -0.2}}
    with FakeOpenAI(answers=[answer, answer]) as fake:
        clipped = cj.judge_run(client_for(fake), SCENARIOS[:1], images, cj.JudgeSettings(levels=("l1",), workers=1))[0]
        snapped = cj.judge_run(client_for(fake), SCENARIOS[:1], images, cj.JudgeSettings(levels=("l1",), snap=True, workers=1))[0]
    assert [q["score"] for q in clipped["questions"]] == [1.0, 0.7, 0.0]
    assert [q["raw_score"] for q in clipped["questions"]] == [1.4, 0.7, -0.2]
    assert clipped["clipped"] == 2
    assert clipped["S"] == pytest.approx((3 * 1.0 + 15 * 0.7) / 26)
    assert [q["score"] for q in snapped["questions"]] == [1.0, 0.5, 0.0]
    assert snapped["S"] == pytest.approx((3 + 7.5) / 26)


# --------------------------------------------------------------------------- cache, gating, missing images


def test_rerun_from_cache_sends_no_request(images, tmp_path):
    cache = tmp_path / "cache"
    with FakeOpenAI(responder=answer_for) as fake:
        first = cj.judge_run(client_for(fake, cache), SCENARIOS, images, cj.JudgeSettings(workers=2))
        assert len(fake.requests) == 9
        second = cj.judge_run(client_for(fake, cache), SCENARIOS, images, cj.JudgeSettings(workers=2))
        assert len(fake.requests) == 9  # zero new requests
        # another persona is another request: the persona is part of the cache key
        strict = cj.JudgeSettings(personas=parse_persona_spec("strict"), workers=1)
        cj.judge_run(client_for(fake, cache), SCENARIOS[:1], images, strict)
        assert len(fake.requests) == 10  # only A's L1 changes persona (L2/L3 are strict already)
    assert all(r["cached"] for r in second) and not any(r["cached"] for r in first)
    assert [r["S"] for r in first] == [r["S"] for r in second]
    assert all(r["usage"]["requests"] == 0 and r["usage"]["cache_hits"] == 1 for r in second)


def test_skip_gated_sends_no_request_for_gated_scenarios(images):
    with FakeOpenAI(responder=answer_for) as fake:
        records = cj.judge_run(client_for(fake), SCENARIOS, images, cj.JudgeSettings(skip_gated=True, workers=2))
    asked = sorted({(m[0], m[1]) for r in fake.requests for m in marks(r)})
    assert asked == [("A", "l1"), ("A", "l2"), ("A", "l3"), ("B", "l1"), ("C", "l1"), ("C", "l2"), ("C", "l3")]
    by_key = {(r["scenario_id"], r["level"]): r for r in records}
    assert by_key[("B", "l2")]["status"] == "gated" and by_key[("B", "l3")]["status"] == "gated"
    assert by_key[("B", "l2")]["usage"]["requests"] == 0
    assert (by_key[("B", "l2")]["S"], by_key[("B", "l2")]["S_gated"], by_key[("B", "l2")]["gated"]) == (None, 0.0, True)
    assert by_key[("A", "l2")]["S_gated"] == by_key[("A", "l2")]["S"] and not by_key[("A", "l2")]["gated"]
    assert by_key[("B", "l1")]["S_gated"] == by_key[("B", "l1")]["S"] and not by_key[("B", "l1")]["gated"]
    results = cj.summarize(records, cj.JudgeSettings(skip_gated=True), {"model": "judge-vl"}, "t2i")
    overall = results["summary"]["overall"]
    e1 = (expected_s("A", "l1") + expected_s("B", "l1") + expected_s("C", "l1")) / 3
    e2 = (expected_s("A", "l2") + 0 + expected_s("C", "l2")) / 3
    e3 = (expected_s("A", "l3") + 0 + expected_s("C", "l3")) / 3
    assert (overall["l1"], overall["l2"], overall["l3"]) == pytest.approx((e1, e2, e3))
    assert overall["prr"] == pytest.approx(e2 / math.sqrt(e1))
    assert overall["rrr"] == pytest.approx(e3 / math.sqrt(e2))
    assert results["counts"]["gated"] == 2


def test_gating_without_skipping_still_zeroes(images):
    with FakeOpenAI(responder=answer_for) as fake:
        records = cj.judge_run(client_for(fake), SCENARIOS, images, cj.JudgeSettings(workers=1))
    assert len(fake.requests) == 9
    b2 = next(r for r in records if (r["scenario_id"], r["level"]) == ("B", "l2"))
    assert (b2["S"], b2["S_gated"], b2["gated"]) == (pytest.approx(1.0), 0.0, True)
    per_domain = cj.summarize(records, cj.JudgeSettings(), {"model": "judge-vl"}, "t2i")["summary"]["per_domain"]
    assert per_domain["biology"]["l2"] == 0.0 and per_domain["biology"]["l3"] == 0.0
    assert per_domain["physics"]["l2"] == pytest.approx((expected_s("A", "l2") + expected_s("C", "l2")) / 2)


def test_missing_and_unusable_images_score_zero_without_a_request(images):
    (images / "A" / "l2.png").unlink()
    (images / "A" / "l3.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    with FakeOpenAI(responder=answer_for) as fake:
        records = cj.judge_run(client_for(fake), SCENARIOS[:1], images, cj.JudgeSettings(workers=1))
    assert len(fake.requests) == 1
    assert [(r["status"], r["S"]) for r in records][1:] == [("missing_image", 0.0), ("unusable_image", 0.0)]


# --------------------------------------------------------------------------- CLI and inputs


def judge_cli(values: dict) -> int:
    """``vrforge cfeval judge`` with ``--key value`` per entry (``True``: a bare flag)."""
    argv = ["cfeval", "judge"]
    for key, value in values.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            argv.append(flag)
        else:
            argv += [flag, str(value)]
    return main(argv)


def write_scenarios(path: Path, scenarios: list[Scenario]) -> Path:
    path.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in scenarios), encoding="utf-8")
    return path


def test_cli_writes_identical_files_for_identical_runs(images, tmp_path, capsys):
    scenarios = write_scenarios(tmp_path / "scenarios.jsonl", SCENARIOS)
    outputs = []
    for run in ("one", "two"):
        with FakeOpenAI(responder=answer_for) as fake:
            code = judge_cli(dict(scenarios=scenarios, images=images, out=tmp_path / run, base_url=fake.base_url,
                                         model="judge-vl", label="t2i", no_cache=True, backoff=0, workers=2))
        assert code == 0
        outputs.append(((tmp_path / run / "results.json").read_bytes(), (tmp_path / run / "judgements.jsonl").read_bytes()))
    assert outputs[0] == outputs[1]
    results = json.loads(outputs[0][0])
    assert results["model"] == "t2i" and results["judge"]["model"] == "judge-vl"
    assert results["counts"]["ok"] == 9 and results["usage"]["requests"] == 9
    assert results["personas"] == {"l1": "balanced", "l2": "strict", "l3": "strict"}
    assert len(outputs[0][1].decode().splitlines()) == 9
    assert "PRR" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "one" / "run_manifest.json").read_text())
    assert manifest["kind"] == "cfeval-judge" and manifest["runs"] == [{"completed": True}]
    assert manifest["settings"]["levels"] == ["l1", "l2", "l3"] and len(manifest["settings"]["personas_sha256"]) == 64


def test_cli_failure_exit_code(images, tmp_path):
    scenarios = write_scenarios(tmp_path / "scenarios.jsonl", SCENARIOS[:1])
    with FakeOpenAI(answers=["nope"] * 20) as fake:
        code = judge_cli(dict(scenarios=scenarios, images=images, out=tmp_path / "o", base_url=fake.base_url,
                                     model="m", max_retries=0, backoff=0, levels="l1", no_cache=True))
    assert code == 1
    results = json.loads((tmp_path / "o" / "results.json").read_text())
    assert results["counts"]["failed"] == 1 and results["failures"][0]["error"].startswith("malformed:")


@pytest.mark.parametrize("change, message", [
    ({"images": "/nonexistent/images"}, "no such images folder"),
    ({"scenarios": "/nonexistent/s.jsonl"}, "no such scenario file"),
    ({"persona": "l1=lenient"}, "unknown persona"),
    ({"threshold": "1.5"}, "--threshold"),
    ({"weights": "colour=3"}, "--weights"),
    ({"levels": "l4"}, "--levels"),
])
def test_cli_bad_input_is_one_line(images, tmp_path, capsys, change, message):
    scenarios = write_scenarios(tmp_path / "scenarios.jsonl", SCENARIOS[:1])
    values = {"scenarios": scenarios, "images": images, "out": tmp_path / "o", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    values.update(change)
    assert judge_cli(values) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("vrforge cfeval ") and ": error: " in err and message in err and "\n" not in err
    assert not (tmp_path / "o" / "results.json").exists()


def test_bad_scenario_file(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n', encoding="utf-8")
    with pytest.raises(cj.CFEvalError, match="bad.jsonl:1"):
        cj.load_scenarios(bad)
    bad.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(cj.CFEvalError, match="not valid JSON"):
        cj.load_scenarios(bad)


@pytest.mark.skipif(not RELEASE.is_dir(), reason=f"the CF-World release is absent at {RELEASE}")
def test_loads_the_official_release():
    scenarios = cj.load_scenarios(RELEASE)
    assert len(scenarios) > 1000
    assert [s.id for s in scenarios] == sorted(s.id for s in scenarios)
    weights = {(q.dimension, q.weight) for s in scenarios for q in s.questions}
    assert weights == {("visual_integrity", 3.0), ("assessment_point", 15.0), ("logic_consistency", 8.0)}


# --------------------------------------------------------------------------- report and calibration


def write_run(folder: Path, model: str, judge: str, scores: dict[tuple[str, str], float | None],
              statuses: dict[tuple[str, str], str] | None = None) -> Path:
    """A judge output folder with one question per dimension scored so that S equals the given value."""
    folder.mkdir(parents=True)
    lines = []
    for (sid, level), s in sorted(scores.items()):
        status = (statuses or {}).get((sid, level), "ok" if s is not None else "failed")
        questions = [] if s is None else [{"dimension": d, "weight": w, "score": s} for d, w in WEIGHTS.items()]
        lines.append(json.dumps({"scenario_id": sid, "domain": "physics" if sid != "B" else "biology", "level": level,
                                 "status": status, "S": s, "questions": questions}))
    (folder / "judgements.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "results.json").write_text(json.dumps({"kind": "cfeval", "model": model, "judge": {"model": judge}}), encoding="utf-8")
    return folder


JUDGE_X = {("A", "l1"): 0.8, ("A", "l2"): 0.6, ("A", "l3"): 0.3, ("B", "l1"): 0.4, ("B", "l2"): 0.9, ("B", "l3"): 0.7,
           ("C", "l1"): 0.5, ("C", "l2"): 0.2, ("C", "l3"): 0.1}


def report_args(*runs: Path, **values) -> list[str]:
    argv = ["cfeval", "report", *map(str, runs)]
    for key, value in values.items():
        argv += ["--" + key.replace("_", "-")] + ([] if value is True else [str(value)])
    return argv


def test_report_table_domains_and_agreement(tmp_path, capsys):

    judge_y = dict(JUDGE_X)
    judge_y[("A", "l2")] = 0.4
    judge_y[("C", "l1")] = 0.3  # gates C under judge y
    x = write_run(tmp_path / "x", "t2i", "judge-x", JUDGE_X)
    y = write_run(tmp_path / "y", "t2i", "judge-y", judge_y)
    z = write_run(tmp_path / "z", "other", "judge-x", {k: 1.0 for k in JUDGE_X})
    out = tmp_path / "report"
    assert main(report_args(x, y, z, out=out, no_plot=True)) == 0
    report = json.loads((out / "report.json").read_text())
    ox = report["models"]["t2i"]["judge-x"]["overall"]
    assert (ox["l1"], ox["l2"], ox["l3"]) == pytest.approx((1.7 / 3, 0.8 / 3, 0.4 / 3))
    oy = report["models"]["t2i"]["judge-y"]["overall"]
    assert (oy["l1"], oy["l2"], oy["l3"]) == pytest.approx((1.5 / 3, 0.4 / 3, 0.3 / 3))
    assert report["models"]["other"]["judge-x"]["overall"]["prr"] == pytest.approx(1.0)
    (pair,) = report["agreement"]["t2i"]
    assert pair["n"] == 9
    assert pair["mean_abs_diff"] == pytest.approx(0.4 / 9)
    # pass/fail at 0.5: x passes 5 of 9, y passes 3 (A l2 and C l1 flip); observed 7/9, chance 39/81
    assert pair["kappa"] == pytest.approx((7 / 9 - 39 / 81) / (1 - 39 / 81))  # = 4/7
    markdown = (out / "report.md").read_text()
    assert "| Model | L1 (judge-x) | L2 (judge-x) | L3 (judge-x) | PRR (judge-x) | RRR (judge-x) | L1 (judge-y)" in markdown
    e1, e2, e3 = 1.7 / 3, 0.8 / 3, 0.4 / 3
    row = f"| t2i | 0.57 | 0.27 | 0.13 | {e2 / math.sqrt(e1):.2f} | {e3 / math.sqrt(e2):.2f} |"
    assert row in markdown
    assert "| biology | 1 | 0.40 | 0.00 | 0.00 | 0.00 | – |" in markdown
    assert "| other | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 |  |  |" in markdown
    assert not (out / "cfeval_levels.png").exists()
    assert "t2i" in capsys.readouterr().out


def test_report_recomputes_with_other_weights_and_threshold(tmp_path):
    from vrforge.runners import cfeval_report as cr

    scores = dict(JUDGE_X)
    run = write_run(tmp_path / "x", "t2i", "judge-x", scores)
    # make A l1 uneven across dimensions: VI 1, AP 0.5, LC 0 (S 10.5/26 with the data weights)
    lines = (run / "judgements.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert (first["scenario_id"], first["level"]) == ("A", "l1")
    first["questions"] = [{"dimension": d, "weight": w, "score": s} for (d, w), s in zip(WEIGHTS.items(), (1.0, 0.5, 0.0))]
    first["S"] = 10.5 / 26
    (run / "judgements.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    report = cr.build_report([cr.load_run(run)], threshold=0.5, weights={"visual_integrity": 1, "assessment_point": 12,
                                                                         "logic_consistency": 7})
    overall = report["models"]["t2i"]["judge-x"]["overall"]
    assert overall["l1"] == pytest.approx((7 / 20 + 0.4 + 0.5) / 3)
    assert overall["l2"] == pytest.approx(0.2 / 3)  # A (S_L1 0.35) and B are gated now
    loose = cr.build_report([cr.load_run(run)], threshold=0.3)["models"]["t2i"]["judge-x"]["overall"]
    assert loose["l2"] == pytest.approx((0.6 + 0.9 + 0.2) / 3)


def test_report_plot(tmp_path):
    pytest.importorskip("matplotlib")

    x = write_run(tmp_path / "x", "t2i", "judge-x", JUDGE_X)
    y = write_run(tmp_path / "y", "t2i", "judge-y", JUDGE_X)
    assert main(report_args(x, y, out=tmp_path / "r")) == 0
    data = (tmp_path / "r" / "cfeval_levels.png").read_bytes()
    assert data.startswith(b"\x89PNG")
    with Image.open(io.BytesIO(data)) as image:
        assert image.size[0] > image.size[1] > 300


def test_report_without_matplotlib(tmp_path, monkeypatch, capsys):

    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    x = write_run(tmp_path / "x", "t2i", "judge-x", JUDGE_X)
    assert main(report_args(x, out=tmp_path / "r")) == 0
    assert "plot skipped: matplotlib is not installed" in capsys.readouterr().err
    assert (tmp_path / "r" / "report.md").exists() and not (tmp_path / "r" / "cfeval_levels.png").exists()


def test_report_bad_input(tmp_path, capsys):

    assert main(report_args(tmp_path, out=tmp_path / "r")) == 2
    assert "no results.json" in capsys.readouterr().err
    x = write_run(tmp_path / "x", "t2i", "judge-x", JUDGE_X)
    assert main(report_args(x, x, out=tmp_path / "r")) == 2
    assert "give each pair once" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def calibrate_args(run: Path, **values) -> list[str]:
    argv = ["cfeval", "calibrate", str(run)]
    for key, value in values.items():
        argv += ["--" + key.replace("_", "-"), str(value)]
    return argv


def test_calibrate(tmp_path, capsys):

    judge = {("k1", "l1"): 0.35, ("k2", "l1"): 0.45, ("k3", "l1"): 0.55, ("k4", "l2"): 0.65, ("k5", "l3"): 0.8,
             ("k6", "l1"): None}
    run = write_run(tmp_path / "x", "t2i", "judge-x", judge)
    human = tmp_path / "human.csv"
    human.write_text("scenario_id,level,human_pass,human_score\nk1,l1,0,\nk2,l1,1,\nk3,l1,,0.9\nk4,l2,,0.2\nk5,l3,true,\n"
                     "k6,l1,1,\nk9,l1,1,\n", encoding="utf-8")
    assert main(calibrate_args(run, human=human, out=tmp_path / "cal")) == 0
    result = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    rows = {r["threshold"]: r for r in result["rows"]}
    assert [r["threshold"] for r in result["rows"]] == [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7]
    assert (rows[0.3]["accuracy"], rows[0.3]["f1"]) == pytest.approx((0.6, 0.75))
    assert (rows[0.45]["accuracy"], rows[0.45]["f1"]) == pytest.approx((0.8, 6 / 7))
    assert (rows[0.7]["accuracy"], rows[0.7]["f1"]) == pytest.approx((0.6, 0.5))
    assert result["best_f1_threshold"] == 0.45  # 0.4 and 0.45 tie; the one nearer the 0.5 default wins
    assert result["human_only"] == 2  # k6 (judge failed) and k9 (never judged)
    assert "| 0.50 | 0.600 |" in capsys.readouterr().out
    # JSONL and a level filter
    jsonl = tmp_path / "human.jsonl"
    jsonl.write_text('{"scenario_id": "k1", "level": "l1", "human_pass": 0}\n{"scenario_id": "k4", "level": "l2", "human_pass": 1}\n')
    assert main(calibrate_args(run, human=jsonl, out=tmp_path / "cal2", levels="l1")) == 0
    assert json.loads((tmp_path / "cal2" / "calibration.json").read_text())["rows"][0]["n"] == 1


@pytest.mark.parametrize("content, message", [
    ("scenario_id,level,human_pass\nk1,l1,maybe\n", "human_pass must be 0 or 1"),
    ("scenario_id,level,human_score\nk1,l1,1.5\n", "within [0, 1]"),
    ("scenario_id,level\nk1,l1\n", "needs human_pass"),
    ("scenario_id,level,human_pass\nk1,l7,1\n", "unknown level"),
    ("scenario_id,level,human_pass\nzz,l1,1\n", "no image of"),
])
def test_calibrate_bad_input(tmp_path, capsys, content, message):

    run = write_run(tmp_path / "x", "t2i", "judge-x", {("k1", "l1"): 0.5})
    human = tmp_path / "human.csv"
    human.write_text(content, encoding="utf-8")
    assert main(calibrate_args(run, human=human, out=tmp_path / "cal")) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("vrforge cfeval ") and ": error: " in err and message in err and "\n" not in err


# --------------------------------------------------------------------------- failures and interrupts


class SlowClient:
    """Answers every image after a pause and counts the requests it received (a judge endpoint stand-in)."""

    def __init__(self, seconds: float) -> None:
        from vrforge.openai_client import ChatConfig

        self.config = ChatConfig(base_url="http://unused", model="slow-judge")
        self.seconds, self.sent, self.lock = seconds, 0, threading.Lock()

    def complete_json(self, messages, schema, schema_name, validate=None):
        from vrforge.openai_client import ChatResult, Usage

        with self.lock:
            self.sent += 1
        time.sleep(self.seconds)
        data = {qid: {"reasoning": "ok", "score": 1} for qid in schema["required"]}
        return ChatResult(data=data, raw=json.dumps(data), usage=Usage(requests=1), cached=False, request_hash="h")


def test_ctrl_c_stops_the_judge_after_the_requests_in_flight(tmp_path):
    import _thread

    scenarios = [make_scenario(f"S{n:02d}", "physics") for n in range(40)]
    for scenario in scenarios:
        for level in LEVELS:
            (tmp_path / scenario.id).mkdir(exist_ok=True)
            (tmp_path / scenario.id / f"{level}.png").write_bytes(png((1, 2, 3)))
    client = SlowClient(0.1)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        cj.judge_run(client, scenarios, tmp_path, cj.JudgeSettings(workers=4))
    time.sleep(0.5)  # the requests in flight finish; nothing new starts
    assert client.sent <= 40, f"{client.sent} of 120 requests sent after Ctrl-C"


def test_an_endpoint_that_refuses_every_request_stops_the_judge(images, tmp_path, capsys):
    scenarios = write_scenarios(tmp_path / "scenarios.jsonl", SCENARIOS)
    with FakeOpenAI(answers=[HttpError(401, json.dumps({"error": {"message": "bad key"}}))] * 9) as fake:
        code = judge_cli(dict(scenarios=scenarios, images=images, out=tmp_path / "o", base_url=fake.base_url,
                                     model="m", max_retries=0, backoff=0, no_cache=True, workers=1))
    assert code == 2 and len(fake.requests) == 1
    assert "HTTP 401" in capsys.readouterr().err and not (tmp_path / "o" / "results.json").exists()


def test_an_http_400_for_one_image_is_a_failed_image_and_the_judge_goes_on(images, tmp_path):
    scenarios = write_scenarios(tmp_path / "scenarios.jsonl", SCENARIOS[:1])

    def responder(request):
        level = marks(request)[0][1]
        return HttpError(400, json.dumps({"error": {"message": "image too large"}})) if level == "l2" else answer_for(request)

    with FakeOpenAI(responder=responder) as fake:
        code = judge_cli(dict(scenarios=scenarios, images=images, out=tmp_path / "o", base_url=fake.base_url,
                                     model="m", max_retries=0, backoff=0, no_cache=True, workers=1))
    assert code == 1 and len(fake.requests) == 3
    results = json.loads((tmp_path / "o" / "results.json").read_text())
    assert results["counts"]["ok"] == 2 and results["counts"]["failed"] == 1
    assert results["failure_reasons"] == {"http 400": 1} and "image too large" in results["failures"][0]["error"]


# --------------------------------------------------------------------------- gate edge cases and the weighting rule


def test_levels_without_l1_are_refused(images, tmp_path, capsys):
    scenarios = write_scenarios(tmp_path / "scenarios.jsonl", SCENARIOS)
    with FakeOpenAI(responder=answer_for) as fake:
        code = judge_cli(dict(scenarios=scenarios, images=images, out=tmp_path / "o", base_url=fake.base_url,
                                     model="m", levels="l2", no_cache=True))
        with pytest.raises(cj.CFEvalError, match="leaves out l1"):
            cj.judge_run(client_for(fake), SCENARIOS, images, cj.JudgeSettings(levels=("l2", "l3"), workers=1))
    assert code == 2 and fake.requests == [] and "leaves out l1" in capsys.readouterr().err
    assert not (tmp_path / "o" / "results.json").exists()


def test_a_report_cannot_ungate_scenarios_whose_l2_l3_were_never_judged(tmp_path, capsys):

    scores = dict(JUDGE_X)
    scores[("B", "l2")] = scores[("B", "l3")] = None  # B (S_L1 0.4) was gated at 0.5 and never judged
    run = write_run(tmp_path / "x", "t2i", "judge-x", scores, {("B", "l2"): "gated", ("B", "l3"): "gated"})
    assert main(report_args(run, out=tmp_path / "r1", no_plot=True)) == 0  # the judge's threshold
    assert main(report_args(run, out=tmp_path / "r2", no_plot=True, threshold=0.6)) == 0  # gates more
    assert main(report_args(run, out=tmp_path / "r3", no_plot=True, threshold=0.3)) == 2
    err = capsys.readouterr().err
    assert "1 scenario(s) pass the gate whose L2/L3 were never judged" in err and "e.g. B" in err
    assert not (tmp_path / "r3").exists()

    no_l1 = write_run(tmp_path / "y", "t2i", "judge-y", {k: v for k, v in JUDGE_X.items() if k[1] != "l1"})
    assert main(report_args(no_l1, out=tmp_path / "r4", no_plot=True)) == 2
    assert "no L1 judgement" in capsys.readouterr().err


def test_one_weighting_rule_for_the_default_and_the_override():
    from vrforge.runners import cfeval_metrics as m

    # Two assessment-point questions of weight 15 and one visual-integrity question of weight 3.
    questions = [m.ScoredQuestion("assessment_point", 15, 1.0), m.ScoredQuestion("assessment_point", 15, 0.0),
                 m.ScoredQuestion("visual_integrity", 3, 1.0)]
    default = m.image_score(questions)
    assert default == pytest.approx((15 + 0 + 3) / 33)
    # Naming the data's own weights changes nothing (it used to weigh the dimension 15 instead of 30).
    assert m.image_score(questions, {"assessment_point": 15, "visual_integrity": 3}) == pytest.approx(default)
    # An override sets each question's weight: (12 + 0 + 3) / 27.
    assert m.image_score(questions, {"assessment_point": 12}) == pytest.approx(15 / 27)


def test_several_images_per_prompt_give_per_image_and_per_prompt_scores(tmp_path):
    images = tmp_path / "images"
    for scenario in SCENARIOS:
        for level in LEVELS:
            for k in range(2):
                (images / scenario.id).mkdir(parents=True, exist_ok=True)
                (images / scenario.id / f"{level}_{k}.png").write_bytes(png((k, 9, 9)))

    def responder(request):  # image 1 of every prompt gets every question's score halved
        image = request["messages"][1]["content"][0]["image_url"]["url"]
        second = image == cj.build_messages(PERSONAS["balanced"], [], png((1, 9, 9)))[1]["content"][0]["image_url"]["url"]
        answer = answer_for(request)
        return {q: {**v, "score": v["score"] / 2 if second else v["score"]} for q, v in answer.items()}

    settings = cj.JudgeSettings(workers=2, images_per_prompt=2)
    with FakeOpenAI(responder=responder) as fake:
        records = cj.judge_run(client_for(fake), SCENARIOS, images, settings)
    by_key = {(r["scenario_id"], r["level"], r["sample"]): r for r in records}
    assert len(records) == len(fake.requests) == 18 and by_key[("A", "l1", 1)]["image"] == "A/l1_1.png"
    assert by_key[("A", "l1", 1)]["S"] == pytest.approx(expected_s("A", "l1") / 2)
    results = cj.summarize(records, settings, {"model": "judge-vl"}, "t2i")
    per_prompt, per_image = results["summary"]["overall"], results["per_image"]["overall"]
    # Prompt L1 = the mean of its two images (the second scored half): A 0.75, B 0.20, C 0.42 -> B and C gated.
    assert per_prompt["l1"] == pytest.approx(0.75 * sum(expected_s(x, "l1") for x in "ABC") / 3) and per_prompt["scenarios"] == 3
    a3, c3 = expected_s("A", "l3"), expected_s("C", "l3")
    assert per_prompt["l3"] == pytest.approx((a3 + a3 / 2) / 2 / 3)
    # Per image, C's first image (S_L1 0.56) passes the gate on its own, so its L3 counts.
    assert per_image["scenarios"] == 6 and per_image["l3"] == pytest.approx((a3 + a3 / 2 + c3) / 6)
    assert by_key[("C", "l3", 0)]["gated"] and by_key[("C", "l3", 0)]["S_gated"] == 0.0  # the record's gate is the prompt's

    # --skip-gated decides on the prompt's L1: only A's L2/L3 images are sent.
    with FakeOpenAI(responder=responder) as fake:
        skipped = cj.judge_run(client_for(fake), SCENARIOS, images, cj.JudgeSettings(workers=2, images_per_prompt=2, skip_gated=True))
    assert len(fake.requests) == 6 + 4 and sum(r["status"] == "gated" for r in skipped) == 8
