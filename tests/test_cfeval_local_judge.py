"""The CF-Eval judge on a local transformers VLM (``--backend transformers``), with a tiny random LLaVA built offline."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

os.environ["OMP_NUM_THREADS"] = "1"

import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from _tiny_vlm import build_tiny_llava  # noqa: E402
from fakeopenai import FakeOpenAI  # noqa: E402
from PIL import Image  # noqa: E402

from vrforge.cli import main  # noqa: E402
from vrforge.openai_client import ChatClient, ChatConfig, ChatError, request_hash  # noqa: E402
from vrforge.runners import cfeval_judge as cj  # noqa: E402
from vrforge.runners.cfeval_local import (  # noqa: E402
    LocalJudgeClient,
    LocalJudgeConfig,
    first_json_object,
    local_request_hash,
)
from vrforge.runners.cfeval_personas import PERSONAS  # noqa: E402
from vrforge.schemas.cfworld import LEVELS, Level, Provenance, Question, Scenario  # noqa: E402

WEIGHTS = {"visual_integrity": 3.0, "assessment_point": 15.0, "logic_consistency": 8.0}
MARK = re.compile(r"\[(\w+)-(l\d)-(\w+)\]")
# scenario -> level -> score per dimension; B fails the L1 gate ((3 + 4) / 26 < 0.5)
SCORES = {
    "A": {"l1": (1, 1, 1), "l2": (1, 0.5, 0.5), "l3": (1, 0, 0.5)},
    "B": {"l1": (1, 0, 0.5), "l2": (1, 1, 1), "l3": (1, 1, 1)},
    "C": {"l1": (1, 0.5, 0.5), "l2": (0, 0, 0), "l3": (0.5, 0.5, 0)},
}


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


def expected_s(sid: str, level: str) -> float:
    return sum(w * s for w, s in zip(WEIGHTS.values(), SCORES[sid][level])) / 26


def answer_for(found: list[tuple[str, str, str]]) -> dict:
    sid, level = found[0][:2]
    return {f"q{i}": {"reasoning": f"looked at {dim}", "score": SCORES[sid][level][i - 1]} for i, (_, _, dim) in enumerate(found, 1)}


@pytest.fixture(scope="module")
def tiny_judge(tmp_path_factory) -> Path:
    """A random LLaVA whose tokenizer knows every word of the judge's prompts, so a prompt decodes back to its words."""
    corpus = ["SYSTEM: USER: ASSISTANT:"]
    for persona in PERSONAS.values():
        for scenario in SCENARIOS:
            for level in LEVELS:
                messages = cj.build_messages(persona, cj.level_questions(scenario, level), b"")
                corpus += [messages[0]["content"], messages[1]["content"][1]["text"]]
    return build_tiny_llava(tmp_path_factory.mktemp("tiny-judge"), corpus)


@pytest.fixture
def images(tmp_path) -> Path:
    root = tmp_path / "images"
    for n, scenario in enumerate(SCENARIOS):
        for k, level in enumerate(LEVELS):
            path = root / scenario.id / f"{level}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            buffer = io.BytesIO()
            Image.new("RGB", (32, 32), (40 * n, 60 * k, 7)).save(buffer, format="PNG")
            path.write_bytes(buffer.getvalue())
    return root


@pytest.fixture
def scenarios_file(tmp_path) -> Path:
    path = tmp_path / "scenarios.jsonl"
    path.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in SCENARIOS), encoding="utf-8")
    return path


class ScriptedGeneration:
    """Stands in for ``LocalJudgeClient._generate``: reads the real tokenized prompt, answers from SCORES."""

    def __init__(self, wrap: str = "Here is my judgement:\n```json\n{}\n```", answer=answer_for) -> None:
        self.wrap, self.answer, self.prompts = wrap, answer, []

    def __call__(self, client: LocalJudgeClient, inputs) -> tuple[str, int]:
        ids = inputs["input_ids"][0].tolist()
        prompt = client.tokenizer.decode(ids)
        self.prompts.append((prompt, len(ids), inputs["pixel_values"].shape))
        text = self.wrap.format(json.dumps(self.answer(MARK.findall(prompt))))
        return text, len(client.tokenizer(text, add_special_tokens=False).input_ids)


def use_generation(monkeypatch, generation: ScriptedGeneration) -> None:
    monkeypatch.setattr(LocalJudgeClient, "_generate", lambda client, inputs: generation(client, inputs))


def run_cli(**values) -> int:
    argv = ["cfeval", "judge"]
    for key, value in values.items():
        argv += ["--" + key.replace("_", "-")] + ([] if value is True else [str(value)])
    return main(argv)


def local_cli(tiny_judge: Path, scenarios: Path, images: Path, out: Path, **values) -> int:
    return run_cli(scenarios=scenarios, images=images, out=out, backend="transformers", model=tiny_judge,
                   local_files_only=True, dtype="float32", device="cpu", label="t2i", **values)


def read_out(out: Path) -> tuple[dict, list[dict]]:
    results = json.loads((out / "results.json").read_text())
    return results, [json.loads(line) for line in (out / "judgements.jsonl").read_text().splitlines()]


# --------------------------------------------------------------------------- a random model: every image fails


def test_random_model_answers_are_recorded_as_failures_and_cached(tiny_judge, scenarios_file, images, tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert local_cli(tiny_judge, scenarios_file, images, out, max_new_tokens=6) == 1
    results, records = read_out(out)
    assert results["counts"]["images"] == 9 and results["counts"]["failed"] == 9 and results["counts"]["ok"] == 0
    assert results["judge"] == {"backend": "transformers", "model": str(tiny_judge), "revision": None, "dtype": "float32",
                                "decoding": "greedy", "max_new_tokens": 6}
    assert len(results["failures"]) == 9
    for record in records:
        assert record["status"] == "failed" and record["S"] is None and record["judge"] == str(tiny_judge)
        error = record["error"]
        assert "\n" not in error and error.startswith(("malformed:", "invalid:")), error
    assert results["summary"]["overall"]["l1"] is None  # nothing judged

    def no_generation(self, inputs):
        raise AssertionError("a cached answer was generated again")

    monkeypatch.setattr(LocalJudgeClient, "_generate", no_generation)
    assert local_cli(tiny_judge, scenarios_file, images, out, max_new_tokens=6) == 1  # greedy: the same text, from cache
    assert [r["error"] for r in read_out(out)[1]] == [r["error"] for r in records]


def test_real_generation_counts_tokens(tiny_judge, images):
    client = LocalJudgeClient(LocalJudgeConfig(str(tiny_judge), dtype="float32", device="cpu", local_files_only=True,
                                               max_new_tokens=5))
    scenario, level = SCENARIOS[0], "l1"
    questions = cj.level_questions(scenario, level)
    messages = cj.build_messages(PERSONAS["balanced"], questions, (images / "A" / "l1.png").read_bytes())
    with pytest.raises(ChatError) as failure:
        client.complete_json(messages, cj.response_schema(3), cj.SCHEMA_NAME, validate=cj.check_answer(3))
    usage = client.usage
    assert usage.requests == 1 and usage.cache_hits == 0
    assert usage.prompt_tokens > 16 and usage.completion_tokens == 5  # the seeded random model never stops early here
    assert failure.value.kind == "malformed" and "stopped at --max-new-tokens 5" in failure.value.message


# --------------------------------------------------------------------------- a scripted answer: scores, cache, gating


def test_scripted_answers_score_cache_and_match_the_endpoint(tiny_judge, scenarios_file, images, tmp_path, monkeypatch):
    generation = ScriptedGeneration()
    use_generation(monkeypatch, generation)
    out = tmp_path / "local"
    assert local_cli(tiny_judge, scenarios_file, images, out) == 0
    assert len(generation.prompts) == 9
    for (prompt, _, pixels), (sid, level) in zip(generation.prompts, [(s.id, lvl) for s in SCENARIOS for lvl in LEVELS]):
        persona = PERSONAS["balanced" if level == "l1" else "strict"]
        assert prompt.startswith("SYSTEM: " + persona.system.split()[0]) and prompt.rstrip().endswith("ASSISTANT:")
        assert " ".join(persona.instruction.split()[:6]) in prompt
        assert [m[:2] for m in MARK.findall(prompt)] == [(sid, level)] * 3 and prompt.count("<image>") == 16
        assert tuple(pixels) == (1, 3, 32, 32)
    results, records = read_out(out)
    for record in records:
        assert record["status"] == "ok" and not record["cached"]
        assert record["S"] == pytest.approx(expected_s(record["scenario_id"], record["level"]))
        assert [q["reasoning"] for q in record["questions"]] == [f"looked at {d}" for d in WEIGHTS]
        assert record["usage"]["requests"] == 1 and record["usage"]["completion_tokens"] > 0
    assert [r["usage"]["prompt_tokens"] for r in records] == [length for _, length, _ in generation.prompts]
    assert results["usage"]["requests"] == 9

    # the same run again: everything from the cache, nothing generated, the same scores
    assert local_cli(tiny_judge, scenarios_file, images, out) == 0
    assert len(generation.prompts) == 9
    again, again_records = read_out(out)
    assert again["counts"]["cached"] == 9 and again["usage"]["requests"] == 0 and again["usage"]["cache_hits"] == 9
    assert [r["S"] for r in again_records] == [r["S"] for r in records]
    assert again["summary"] == results["summary"]

    # the endpoint backend, answering the same, gives the same judgements and metrics
    def endpoint_answer(request: dict) -> dict:
        return answer_for(MARK.findall(request["messages"][1]["content"][1]["text"]))

    with FakeOpenAI(responder=endpoint_answer) as fake:
        assert run_cli(scenarios=scenarios_file, images=images, out=tmp_path / "endpoint", base_url=fake.base_url,
                       model="judge-vl", label="t2i", no_cache=True, backoff=0) == 0
    endpoint, endpoint_records = read_out(tmp_path / "endpoint")
    assert endpoint["summary"] == results["summary"]
    same = ("scenario_id", "level", "status", "S", "S_gated", "gated", "questions", "dimension_scores", "persona")
    assert [{k: r[k] for k in same} for r in records] == [{k: r[k] for k in same} for r in endpoint_records]


def test_skip_gated_is_the_same_as_with_the_endpoint(tiny_judge, scenarios_file, images, tmp_path, monkeypatch):
    generation = ScriptedGeneration(wrap="{}")
    use_generation(monkeypatch, generation)
    assert local_cli(tiny_judge, scenarios_file, images, tmp_path / "local", skip_gated=True, no_cache=True) == 0
    asked = sorted({m[:2] for prompt, _, _ in generation.prompts for m in MARK.findall(prompt)})
    assert asked == [("A", "l1"), ("A", "l2"), ("A", "l3"), ("B", "l1"), ("C", "l1"), ("C", "l2"), ("C", "l3")]
    results, records = read_out(tmp_path / "local")
    by_key = {(r["scenario_id"], r["level"]): r for r in records}
    assert by_key[("B", "l2")]["status"] == "gated" and by_key[("B", "l3")]["status"] == "gated"
    assert (by_key[("B", "l2")]["S"], by_key[("B", "l2")]["S_gated"], by_key[("B", "l2")]["gated"]) == (None, 0.0, True)
    assert results["counts"]["gated"] == 2 and results["skip_gated"] is True

    def endpoint_answer(request: dict) -> dict:
        return answer_for(MARK.findall(request["messages"][1]["content"][1]["text"]))

    with FakeOpenAI(responder=endpoint_answer) as fake:
        assert run_cli(scenarios=scenarios_file, images=images, out=tmp_path / "endpoint", base_url=fake.base_url,
                       model="judge-vl", label="t2i", no_cache=True, backoff=0, skip_gated=True) == 0
    assert len(fake.requests) == 7
    endpoint, endpoint_records = read_out(tmp_path / "endpoint")
    assert endpoint["summary"] == results["summary"] and endpoint["counts"]["gated"] == 2
    same = ("scenario_id", "level", "status", "S", "S_gated", "gated", "error")
    assert [{k: r[k] for k in same} for r in records] == [{k: r[k] for k in same} for r in endpoint_records]


def test_partial_answer_fails_the_image_without_a_retry(tiny_judge, scenarios_file, images, tmp_path, monkeypatch):
    def partial(found):
        return {"q1": {"reasoning": "ok", "score": 1}, "q3": {"reasoning": "ok", "score": 1}}

    generation = ScriptedGeneration(answer=partial)
    use_generation(monkeypatch, generation)
    assert local_cli(tiny_judge, scenarios_file, images, tmp_path / "o", levels="l1", limit=1) == 1
    assert len(generation.prompts) == 1  # greedy decoding would give the same text again: no retry
    results, (record,) = read_out(tmp_path / "o")
    assert record["status"] == "failed" and record["error"].startswith("invalid:") and "q2" in record["error"]
    assert results["failures"] == [{"scenario_id": "A", "level": "l1", "error": record["error"]}]


# --------------------------------------------------------------------------- parsing, templates, bad input


@pytest.mark.parametrize("text, expected", [
    ('{"q1": 1}', {"q1": 1}),
    ('```json\n{"q1": {"score": 0.5}}\n```', {"q1": {"score": 0.5}}),
    ('Sure. {not json} then {"q1": 1} and {"q2": 2}', {"q1": 1}),
    ('[1, 2] {"a": [1, {"b": 2}]} trailing', {"a": [1, {"b": 2}]}),
])
def test_first_json_object(text, expected):
    assert first_json_object(text) == expected


@pytest.mark.parametrize("text", ["", "no object here", '{"q1": {"score": 1}', "[1, 2]"])
def test_no_json_object_is_malformed(text):
    with pytest.raises(ChatError) as failure:
        first_json_object(text)
    assert failure.value.kind == "malformed"


def test_templates_without_system_turn_or_without_a_template(tiny_judge):
    client = LocalJudgeClient(LocalJudgeConfig(str(tiny_judge), dtype="float32", device="cpu", local_files_only=True))
    client.load()
    chat = [{"role": "system", "content": [{"type": "text", "text": "be fair"}]},
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "q1: what?"}]}]
    assert client.prompt_text(chat) == "SYSTEM: be fair USER: <image> q1: what? ASSISTANT: "
    client.processor.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system role') }}{% endif %}"
        "{{ m['role'] }}: {% for c in m['content'] %}{{ '<image>' if c['type'] == 'image' else c['text'] }} {% endfor %}"
        "{% endfor %}answer: ")
    assert client.prompt_text(chat) == "user: be fair <image> q1: what? answer: "
    client.processor.chat_template = None
    assert client.prompt_text(chat) == "SYSTEM: be fair\nUSER: <image>\nq1: what?\nASSISTANT:"


def test_endpoint_and_local_cache_keys_differ(tiny_judge, tmp_path):
    base = LocalJudgeConfig(str(tiny_judge))
    messages = [{"role": "user", "content": "x"}]
    keys = {local_request_hash(config, messages, "s", {}) for config in (
        base, LocalJudgeConfig(str(tiny_judge), revision="v2"), LocalJudgeConfig(str(tiny_judge), dtype="bfloat16"),
        LocalJudgeConfig(str(tiny_judge), max_new_tokens=7))}
    assert len(keys) == 4
    assert local_request_hash(LocalJudgeConfig(str(tiny_judge), device="cuda"), messages, "s", {}) in keys
    with ChatClient(ChatConfig(base_url="http://127.0.0.1:9/v1", model=str(tiny_judge)), tmp_path) as endpoint:
        assert request_hash(endpoint.config, messages, "s", {}) not in keys


@pytest.mark.parametrize("values, message", [
    ({"backend": "openai"}, "--base-url is needed"),
    ({"base_url": "http://127.0.0.1:9/v1"}, "applies to --backend openai only"),
    ({"temperature": 0.7}, "decodes greedily"),
    ({"max_tokens": 50}, "--max-new-tokens"),
    ({"timeout": 30}, "--timeout, --max-retries and --backoff apply to --backend openai only"),
    ({"max_retries": 0}, "apply to --backend openai only"),
    ({"max_new_tokens": 0}, "--max-new-tokens must be at least 1"),
    ({"model": "{missing}"}, "no such model folder"),
    ({"model": "{empty}"}, "cannot load the processor"),
])
def test_bad_input_is_one_line(tiny_judge, scenarios_file, images, tmp_path, capsys, values, message):
    (tmp_path / "empty").mkdir()
    args = {"scenarios": scenarios_file, "images": images, "out": tmp_path / "o", "backend": "transformers",
            "model": tiny_judge, "local_files_only": True, "levels": "l1", "limit": 1}
    args.update({k: str(v).format(missing=tmp_path / "missing", empty=tmp_path / "empty") for k, v in values.items()})
    assert run_cli(**args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("vrforge cfeval judge: error: ") and message in err and "\n" not in err
    assert not (tmp_path / "o" / "results.json").exists()
