"""Drafting CF-World scenarios through the real HTTP client against a scripted loopback endpoint."""

import dataclasses
import hashlib
import json

import pytest
from _cfworld_fixtures import FALL_LAW, FALL_LEVELS, MIRROR_LAW, MIRROR_LEVELS, law, mirror, small_bank
from fakeopenai import Delay, FakeOpenAI, HttpError, Refusal

from vrforge.cli import main
from vrforge.generators.cfworld import draft as D
from vrforge.openai_client import ChatClient, ChatConfig
from vrforge.schemas.cfworld import DIMENSIONS, LEVELS

MIRROR, FALL = law(MIRROR_LAW), law(FALL_LAW)


def answer(levels, **changes):
    data = {"levels": {name: {"prompt": p, "assessment_point": ap} for name, (p, ap) in levels.items()},
            "questions": [{"level": lv, "dimension": dim, "question": f"Does the {lv} picture pass {dim}?",
                           "criteria": "1.0 = yes, 0.5 = partly, 0.0 = no."} for lv in LEVELS for dim in DIMENSIONS]}
    for name, (prompt, point) in changes.items():
        data["levels"][name] = {"prompt": prompt, "assessment_point": point}
    return data


GOOD_MIRROR, GOOD_FALL = answer(MIRROR_LEVELS), answer(FALL_LEVELS)


def by_law(request):
    """Answer each law with its good answer (the user message names the counterfactual)."""
    user = request["messages"][1]["content"]
    return GOOD_MIRROR if f"Counterfactual law: {MIRROR.counterfactual}" in user else GOOD_FALL


def client_for(fake, cache_dir=None, **config):
    settings = {"timeout_s": 5.0, "max_retries": 2, "backoff_s": 0.0, "api_key_env": "VRFORGE_TEST_KEY"} | config
    return ChatClient(ChatConfig(base_url=fake.base_url, model="fake-llm", **settings), cache_dir, sleep=lambda s: None)


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_good_answer_accepted_with_llm_provenance(tmp_path):
    with FakeOpenAI(answers=[GOOD_MIRROR]) as fake, client_for(fake) as client:
        report = D.draft_laws([MIRROR], client, tmp_path)
    assert report.accepted == [MIRROR.id] and not report.rejected
    (drafted,) = records(tmp_path / "drafts.jsonl")
    assert drafted["levels"] == {name: {"prompt": p, "assessment_point": ap} for name, (p, ap) in MIRROR_LEVELS.items()}
    request = fake.requests[0]
    assert request["response_format"]["json_schema"] == {"name": "cfworld_scenario", "schema": D.answer_schema(), "strict": True}
    assert MIRROR.law in request["messages"][1]["content"] and "pitch black" in request["messages"][1]["content"]
    digest = hashlib.sha256(json.dumps(request["messages"], sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert drafted["provenance"] == {"kind": "llm", "model": "fake-llm", "prompt_hash": digest, "review_status": "needs_review",
                                     "source": f"cfworld-draft:{MIRROR.id}", "flags": []}
    assert {(q["dimension"], q["weight"]) for q in drafted["questions"]} == {
        ("visual_integrity", 3.0), ("assessment_point", 15.0), ("logic_consistency", 8.0)}
    assert len(drafted["questions"]) == 9 and records(tmp_path / "rejections.jsonl") == []


def test_messages_explain_levels_and_show_a_seed_example():
    messages = D.build_messages(MIRROR)
    assert messages[0]["role"] == "system" and "weight 15" in messages[0]["content"] and "l3, implicit" in messages[0]["content"]
    seed = dataclasses.replace(mirror(), id="optics-other-law")
    assert D.example_for(MIRROR, [seed, mirror()]) == seed  # never the law's own scenario
    with_example = D.build_messages(MIRROR, seed)
    assert "A curated example" in with_example[1]["content"] and D.prompt_hash(with_example) != D.prompt_hash(messages)


def test_malformed_json_is_retried_then_accepted(tmp_path):
    with FakeOpenAI(answers=['{"levels": {"l1": ', GOOD_MIRROR]) as fake, client_for(fake) as client:
        report = D.draft_laws([MIRROR], client, tmp_path)
    assert len(fake.requests) == 2 and report.accepted == [MIRROR.id]


def test_incomplete_answer_is_retried_then_rejected_whole(tmp_path):
    incomplete = answer(MIRROR_LEVELS)
    incomplete["questions"] = incomplete["questions"][:-1]
    with FakeOpenAI(answers=[incomplete] * 2) as fake, client_for(fake, max_retries=1) as client:
        report = D.draft_laws([MIRROR], client, tmp_path)
    assert len(fake.requests) == 2 and report.rejected == {"invalid": 1}
    (rejection,) = records(tmp_path / "rejections.jsonl")
    assert rejection["kind"] == "invalid" and "no question for l3/logic_consistency" in rejection["reasons"][0]
    assert rejection["scenario"] is None and records(tmp_path / "drafts.jsonl") == []


def test_refusal_is_recorded_as_a_rejection(tmp_path):
    with FakeOpenAI(answers=[Refusal("I can't help with that.")] * 2) as fake, client_for(fake, max_retries=1) as client:
        report = D.draft_laws([MIRROR], client, tmp_path)
    assert report.rejected == {"refusal": 1} and report.accepted == []
    (rejection,) = records(tmp_path / "rejections.jsonl")
    assert rejection["law_id"] == MIRROR.id and rejection["kind"] == "refusal" and "can't help" in rejection["reasons"][0]


def test_timeout_is_retried(tmp_path):
    with FakeOpenAI(answers=[Delay(2.0, GOOD_MIRROR), GOOD_MIRROR]) as fake, client_for(fake, timeout_s=0.3) as client:
        report = D.draft_laws([MIRROR], client, tmp_path)
    assert len(fake.requests) == 2 and report.accepted == [MIRROR.id]


def test_leaking_l3_is_rejected_with_reasons(tmp_path):
    leaky = answer(MIRROR_LEVELS, l3=MIRROR_LEVELS["l2"])
    with FakeOpenAI(answers=[leaky]) as fake, client_for(fake) as client:
        report = D.draft_laws([MIRROR], client, tmp_path)
    assert report.rejected == {"leak": 1} and len(fake.requests) == 1  # a content rejection is not retried
    (rejection,) = records(tmp_path / "rejections.jsonl")
    assert rejection["kind"] == "validation"
    assert rejection["reasons"][0] == "leak (outcome terms): the L3 prompt contains 'pitch black'"
    assert rejection["reasons"][1].startswith("leak (lexical)")
    assert rejection["scenario"]["levels"]["l3"] == leaky["levels"]["l3"]
    assert records(tmp_path / "drafts.jsonl") == []


def test_near_duplicate_of_an_existing_scenario_is_rejected(tmp_path):
    existing = dataclasses.replace(mirror(), id="optics-mirror-variant")
    with FakeOpenAI(answers=[GOOD_MIRROR]) as fake, client_for(fake) as client:
        report = D.draft_laws([MIRROR], client, tmp_path, existing=[existing])
    (rejection,) = records(tmp_path / "rejections.jsonl")
    assert report.rejected == {"near-duplicate": 1}
    assert rejection["reasons"] == ["near-duplicate of optics-mirror-variant (similarity 1.00 >= 0.8)"]


def test_rerun_uses_the_cache_and_sums_token_usage(tmp_path):
    cache = tmp_path / "cache"
    with FakeOpenAI(responder=by_law) as fake, client_for(fake, cache) as client:
        first = D.draft_laws([FALL, MIRROR], client, tmp_path / "a")
    prompt_tokens = sum(len(json.dumps(r["messages"], sort_keys=True)) // 4 for r in fake.requests)
    completion_tokens = (len(json.dumps(GOOD_MIRROR)) + len(json.dumps(GOOD_FALL))) // 4
    assert first.usage == {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "requests": 2,
                           "cache_hits": 0}
    assert f"{prompt_tokens} prompt + {completion_tokens} completion tokens in 2 requests, 0 cache hits" in first.line(tmp_path)
    with FakeOpenAI(responder=by_law) as fake, client_for(fake, cache) as client:
        second = D.draft_laws([FALL, MIRROR], client, tmp_path / "b")
    assert fake.requests == [] and second.usage == {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0, "cache_hits": 2}
    assert (tmp_path / "a" / "drafts.jsonl").read_bytes() == (tmp_path / "b" / "drafts.jsonl").read_bytes()


def test_resume_skips_laws_already_drafted_or_rejected(tmp_path):
    with FakeOpenAI(answers=[Refusal("no"), GOOD_MIRROR]) as fake, client_for(fake, max_retries=0) as client:
        first = D.draft_laws([FALL, MIRROR], client, tmp_path, limit=1)
        assert first.rejected == {"refusal": 1} and len(fake.requests) == 1
        second = D.draft_laws([FALL, MIRROR], client, tmp_path)
        assert second.skipped == 1 and second.accepted == [MIRROR.id] and len(fake.requests) == 2
        third = D.draft_laws([FALL, MIRROR], client, tmp_path)
        assert third.skipped == 2 and len(fake.requests) == 2
    with FakeOpenAI(responder=by_law) as fake, client_for(fake) as client:
        again = D.draft_laws([FALL, MIRROR], client, tmp_path, retry_rejected=True)
    assert again.accepted == [FALL.id] and len(fake.requests) == 1
    assert records(tmp_path / "rejections.jsonl") == []
    assert [r["id"] for r in records(tmp_path / "drafts.jsonl")] == [FALL.id, MIRROR.id]


# ----------------------------------------------------------------------------- CLI

def draft(argv):
    return main(["cfworld", "draft", *argv])


@pytest.fixture
def bank(tmp_path):
    return small_bank(tmp_path)


def test_cli_drafts_selected_laws_and_prints_one_summary_line(tmp_path, bank, capsys, monkeypatch):
    monkeypatch.setenv("VRFORGE_TEST_KEY", "sk-test")
    laws_dir, seeds_dir = bank
    with FakeOpenAI(responder=by_law) as fake:
        argv = ["--model", "fake-llm", "--base-url", fake.base_url, "--api-key-env", "VRFORGE_TEST_KEY", "--domain", "physics",
                "--laws", str(laws_dir), "--seeds", str(seeds_dir), "--out", str(tmp_path / "out"), "--backoff", "0"]
        assert draft(argv) == 0
    assert fake.headers[0]["authorization"] == "Bearer sk-test"
    out = capsys.readouterr().out.strip()
    assert out.startswith("2 laws: 2 accepted, 0 rejected (none), 0 already done;") and "\n" not in out
    assert (tmp_path / "out" / "cache").is_dir()
    assert "A curated example" in fake.requests[0]["messages"][1]["content"]  # the other physics seed


def test_cli_errors_are_one_line(tmp_path, bank, capsys):
    laws_dir, seeds_dir = bank
    base = ["--model", "m", "--laws", str(laws_dir), "--seeds", str(seeds_dir), "--out", str(tmp_path / "out")]
    assert draft(base + ["--law-id", "optics-nothing"]) == 2
    assert capsys.readouterr().err.strip() == "vrforge cfworld draft: error: unknown law id(s): optics-nothing"
    assert draft(["--model", "m", "--laws", str(tmp_path / "absent"), "--out", str(tmp_path / "out")]) == 2
    assert "no such folder" in capsys.readouterr().err
    with FakeOpenAI(answers=[HttpError(401)]) as fake:
        assert draft(base + ["--base-url", fake.base_url, "--law-id", MIRROR.id, "--backoff", "0"]) == 2
    err = capsys.readouterr().err
    assert f"vrforge cfworld draft: error: {MIRROR.id}: http: HTTP 401" in err and "a rerun resumes here" in err
    assert records(tmp_path / "out" / "rejections.jsonl") == [] and records(tmp_path / "out" / "drafts.jsonl") == []
