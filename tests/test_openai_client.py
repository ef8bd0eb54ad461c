"""The chat client against a loopback fake of an OpenAI-compatible endpoint."""

from __future__ import annotations

import base64
import json
import pickle
import time
from pathlib import Path

import pytest
from fakeopenai import Completion, Delay, FakeOpenAI, HttpError, Refusal

from vrforge.openai_client import ChatClient, ChatConfig, ChatError, image_part

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "score": {"type": "integer", "minimum": 0}},
    "required": ["answer", "score"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "Which is it?"}]
GOOD = {"answer": "B", "score": 3}
SECRET = "sk-test-secret-value-0123456789"


@pytest.fixture
def sleeps() -> list[float]:
    return []


def make_client(fake: FakeOpenAI, sleeps: list[float], cache_dir: Path | None = None, **config) -> ChatClient:
    settings = {"timeout_s": 5.0, "max_retries": 2, "backoff_s": 0.01, "api_key_env": "VRFORGE_TEST_KEY"} | config
    return ChatClient(ChatConfig(base_url=fake.base_url, model="fake-vlm", **settings), cache_dir, sleep=sleeps.append)


def test_valid_answer_sends_schema_and_sampling(sleeps):
    with FakeOpenAI(answers=[GOOD]) as fake:
        client = make_client(fake, sleeps, temperature=0.2, seed=7, max_tokens=64)
        result = client.complete_json(MESSAGES, SCHEMA, "verdict")
    assert result.data == GOOD and not result.cached and result.model == "fake-vlm"
    assert json.loads(result.raw) == GOOD
    request = fake.requests[0]
    assert request["model"] == "fake-vlm" and request["messages"] == MESSAGES
    assert request["response_format"] == {"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True}}
    assert (request["temperature"], request["seed"], request["max_tokens"]) == (0.2, 7, 64)
    assert client.usage.requests == 1 and client.usage.prompt_tokens > 0 and client.usage.completion_tokens > 0
    assert result.usage == client.usage
    assert sleeps == []


def test_malformed_then_valid_retries_and_sums_usage(sleeps):
    with FakeOpenAI(answers=['{"answer": "B", "score":', GOOD]) as fake:
        client = make_client(fake, sleeps)
        result = client.complete_json(MESSAGES, SCHEMA, "verdict")
    assert result.data == GOOD
    assert len(fake.requests) == 2 and client.usage.requests == 2
    one_prompt = client.usage.prompt_tokens // 2
    assert client.usage.prompt_tokens == 2 * one_prompt > 0  # both attempts counted
    assert client.usage.completion_tokens == len('{"answer": "B", "score":') // 4 + len(json.dumps(GOOD)) // 4
    assert client.usage_dict() == {"prompt_tokens": client.usage.prompt_tokens, "completion_tokens": client.usage.completion_tokens,
                                   "requests": 2, "cache_hits": 0}
    assert sleeps == [0.01]


def test_fenced_json_is_accepted(sleeps):
    with FakeOpenAI(answers=["```json\n" + json.dumps(GOOD) + "\n```"]) as fake:
        assert make_client(fake, sleeps).complete_json(MESSAGES, SCHEMA, "verdict").data == GOOD


@pytest.mark.parametrize("refusal", [Refusal("I can't help with that."), Completion(None, finish_reason="content_filter"),
                                     Completion("  ")])
def test_refusal_then_valid(sleeps, refusal):
    with FakeOpenAI(answers=[refusal, GOOD]) as fake:
        result = make_client(fake, sleeps).complete_json(MESSAGES, SCHEMA, "verdict")
    assert result.data == GOOD and len(fake.requests) == 2


def test_timeout_then_valid(sleeps):
    with FakeOpenAI(answers=[Delay(2.0, GOOD), GOOD]) as fake:
        client = make_client(fake, sleeps, timeout_s=0.3)
        start = time.monotonic()
        result = client.complete_json(MESSAGES, SCHEMA, "verdict")
        elapsed = time.monotonic() - start
    assert result.data == GOOD and client.usage.requests == 2
    assert elapsed < 1.5  # the first request was abandoned at the timeout, not waited out


def test_all_attempts_time_out(sleeps):
    with FakeOpenAI(answers=[Delay(1.0, GOOD)] * 2) as fake:
        client = make_client(fake, sleeps, timeout_s=0.2, max_retries=1)
        with pytest.raises(ChatError) as caught:
            client.complete_json(MESSAGES, SCHEMA, "verdict")
    assert caught.value.kind == "timeout" and client.usage.requests == 2


def test_http_500_and_429_are_retried(sleeps):
    with FakeOpenAI(answers=[HttpError(500), HttpError(429), GOOD]) as fake:
        client = make_client(fake, sleeps)
        result = client.complete_json(MESSAGES, SCHEMA, "verdict")
    assert result.data == GOOD and len(fake.requests) == 3
    assert sleeps == [0.01, 0.02]  # exponential backoff


def test_http_400_is_not_retried(sleeps):
    with FakeOpenAI(answers=[HttpError(400, '{"error": {"message": "unknown field"}}'), GOOD]) as fake:
        client = make_client(fake, sleeps)
        with pytest.raises(ChatError) as caught:
            client.complete_json(MESSAGES, SCHEMA, "verdict")
    assert caught.value.kind == "http" and "400" in str(caught.value) and "unknown field" in str(caught.value)
    assert len(fake.requests) == 1 and fake.remaining == 1 and sleeps == []


def test_all_attempts_malformed_raise_one_line(sleeps):
    with FakeOpenAI(answers=["not json\nat all"] * 3) as fake:
        client = make_client(fake, sleeps)
        with pytest.raises(ChatError) as caught:
            client.complete_json(MESSAGES, SCHEMA, "verdict")
    assert caught.value.kind == "malformed"
    assert "\n" not in str(caught.value) and "3 attempts" in str(caught.value)
    copy = pickle.loads(pickle.dumps(caught.value))  # crosses process pools intact
    assert (copy.kind, copy.message) == (caught.value.kind, caught.value.message)
    assert len(fake.requests) == 3 and client.usage.requests == 3 and sleeps == [0.01, 0.02]


def test_schema_violation_is_retried(sleeps):
    with FakeOpenAI(answers=[{"answer": "B", "score": -1}, {"answer": "B"}, GOOD]) as fake:
        result = make_client(fake, sleeps).complete_json(MESSAGES, SCHEMA, "verdict")
    assert result.data == GOOD and len(fake.requests) == 3


def test_validate_rejection_is_invalid(sleeps):
    def only_a(data: dict) -> None:
        if data["answer"] != "A":
            raise ValueError(f"answer must be A, got {data['answer']}")

    with FakeOpenAI(answers=[GOOD] * 3) as fake:
        client = make_client(fake, sleeps)
        with pytest.raises(ChatError) as caught:
            client.complete_json(MESSAGES, SCHEMA, "verdict", validate=only_a)
    assert caught.value.kind == "invalid" and "answer must be A, got B" in caught.value.message


def test_cache_hit_makes_no_request_and_sampling_changes_the_key(sleeps, tmp_path):
    with FakeOpenAI(answers=[GOOD, {"answer": "C", "score": 1}]) as fake:
        client = make_client(fake, sleeps, cache_dir=tmp_path)
        first = client.complete_json(MESSAGES, SCHEMA, "verdict")
        second = client.complete_json(MESSAGES, SCHEMA, "verdict")
        assert len(fake.requests) == 1
        assert second.cached and second.data == first.data and second.request_hash == first.request_hash
        assert client.usage.cache_hits == 1 and client.usage.requests == 1

        warmer = make_client(fake, sleeps, cache_dir=tmp_path, temperature=0.7)
        third = warmer.complete_json(MESSAGES, SCHEMA, "verdict")
    assert len(fake.requests) == 2 and not third.cached and third.data == {"answer": "C", "score": 1}
    assert third.request_hash != first.request_hash

    files = sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*") if path.is_file())
    assert files == sorted(f"{h[:2]}/{h}.json" for h in (first.request_hash, third.request_hash))  # no temp files left
    entry = json.loads((tmp_path / first.request_hash[:2] / f"{first.request_hash}.json").read_text())
    assert set(entry) == {"data", "raw", "usage", "model"} and entry["data"] == GOOD


def test_only_validated_answers_are_cached(sleeps, tmp_path):
    with FakeOpenAI(answers=["oops"] * 3 + [GOOD]) as fake:
        client = make_client(fake, sleeps, cache_dir=tmp_path)
        with pytest.raises(ChatError):
            client.complete_json(MESSAGES, SCHEMA, "verdict")
        assert not list(tmp_path.rglob("*.json"))
        assert client.complete_json(MESSAGES, SCHEMA, "verdict").data == GOOD
    assert len(list(tmp_path.rglob("*.json"))) == 1


def test_key_is_sent_but_never_in_errors_or_cache(sleeps, tmp_path, monkeypatch):
    monkeypatch.setenv("VRFORGE_TEST_KEY", SECRET)

    def echo_key(request: dict):  # a hostile server that echoes the credential back
        return HttpError(401, json.dumps({"error": {"message": f"bad key {SECRET}"}})) if request["temperature"] else GOOD

    with FakeOpenAI(responder=echo_key) as fake:
        make_client(fake, sleeps, cache_dir=tmp_path).complete_json(MESSAGES, SCHEMA, "verdict")
        with pytest.raises(ChatError) as caught:
            make_client(fake, sleeps, cache_dir=tmp_path, temperature=1.0).complete_json(MESSAGES, SCHEMA, "verdict")
    assert fake.headers[0]["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in str(caught.value) and "***" in str(caught.value)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text()


def test_missing_key_env_sends_placeholder(sleeps, monkeypatch):
    monkeypatch.delenv("VRFORGE_TEST_KEY", raising=False)
    with FakeOpenAI(answers=[GOOD]) as fake, make_client(fake, sleeps) as client:
        client.complete_json(MESSAGES, SCHEMA, "verdict")
    assert fake.headers[0]["authorization"] == "Bearer EMPTY"


def test_image_part_travels_as_data_url(sleeps):
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(32))
    part = image_part(png)
    assert part == {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "What is shown?"}, part]}]
    with FakeOpenAI(answers=[GOOD]) as fake:
        make_client(fake, sleeps).complete_json(messages, SCHEMA, "verdict")
    sent = fake.requests[0]["messages"][0]["content"][1]["image_url"]["url"]
    assert base64.b64decode(sent.split(",", 1)[1]) == png


def test_complete_text_retries_and_caches(sleeps, tmp_path):
    with FakeOpenAI(answers=[Refusal("no"), "The answer is (C)."]) as fake:
        client = make_client(fake, sleeps, cache_dir=tmp_path)
        result = client.complete_text(MESSAGES)
        again = client.complete_text(MESSAGES)
    assert result.data == {"text": "The answer is (C)."} and again.cached and again.data == result.data
    assert "response_format" not in fake.requests[-1] and len(fake.requests) == 2


def test_fake_serves_only_while_open(sleeps):
    fake = FakeOpenAI(answers=[GOOD, GOOD])
    with fake:
        client = make_client(fake, sleeps, max_retries=0, timeout_s=1.0)
        client.complete_json(MESSAGES, SCHEMA, "verdict")
    with pytest.raises(ChatError) as caught:
        client.complete_json(MESSAGES, SCHEMA, "verdict")
    assert caught.value.kind in {"http", "timeout"} and len(fake.requests) == 1
