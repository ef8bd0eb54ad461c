"""The TACIT multiple-choice runner: rotation bookkeeping, answer parsing, resume, the OpenAI and likelihood backends."""

from __future__ import annotations

import base64
import io
import json
import os
from dataclasses import replace
from pathlib import Path

os.environ["OMP_NUM_THREADS"] = "1"

import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from _tiny_vlm import build_tiny_llava  # noqa: E402
from fakeopenai import FakeOpenAI, HttpError, Refusal  # noqa: E402
from PIL import Image  # noqa: E402

from vrforge import registry  # noqa: E402
from vrforge.cli import main  # noqa: E402
from vrforge.registry import get_task  # noqa: E402
from vrforge.runners.scoring import score_discriminative  # noqa: E402
from vrforge.runners.vlm_choice import (  # noqa: E402
    LETTERS,
    SAMPLES_FILE,
    Answer,
    ChoiceError,
    Item,
    Question,
    parse_choice,
    question_for,
    rotation_order,
    run_choice,
)

ANSWER_INDICES = {"easy": [0, 1, 2], "medium": [3, 4, 0]}  # 2 of 6 puzzles have the solution first
SOLUTION_RGB = (0, 200, 0)


def _png(rgb: tuple[int, int, int], size: int = 40) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (size, size), rgb).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """A hand-built TACIT folder (real row features): 3 easy + 3 medium maze rows at 512 px, solution drawn green."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vrforge.schemas.tacit import tacit_features

    root = tmp_path_factory.mktemp("tacit") / "ds"
    features = tacit_features()
    for difficulty, answers in ANSWER_INDICES.items():
        rows = []
        for index, answer_index in enumerate(answers):
            rows.append(features.encode_example({
                "id": f"maze-{difficulty}-{index:04d}", "task": "maze", "domain": "spatial", "difficulty": difficulty,
                "index": index, "seed": index, "puzzle": {"bytes": _png((128, 128, 128)), "path": None},
                "solution": {"bytes": _png(SOLUTION_RGB), "path": None},
                "distractors": [{"bytes": _png((200, 20 * k + 20 * index, 0)), "path": None} for k in range(4)],
                "distractor_violations": ["wrong_exit", "branching", "disconnected", "wall_breach"],
                "answer_index": answer_index, "meta": "{}", "svg_puzzle": "", "svg_solution": "",
                "config_hash": "test", "generator_version": "1"}))
        path = root / "data" / "maze-512" / f"{difficulty}-00000-of-00001.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=features.arrow_schema), path)
    return root


class FakeBackend:
    """Answers from a function of the question; counts questions."""

    def __init__(self, pick, name: str = "fake") -> None:
        self.pick, self.name, self.questions = pick, name, []

    def describe(self) -> dict:
        return {"backend": self.name, "model": "none"}

    def answer(self, question: Question) -> Answer:
        self.questions.append(question)
        return Answer(position=self.pick(question))


def always_a(question: Question) -> int:
    return 0


def oracle(question: Question) -> int:
    return [Image.open(io.BytesIO(o)).getpixel((0, 0)) for o in question.options].index(SOLUTION_RGB)


def _samples(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / SAMPLES_FILE).read_text().splitlines()]


# --------------------------------------------------------------------------- rotation and parsing


def test_rotation_order_presents_each_option_once_and_maps_back():
    item = Item("x", "maze", "easy", 0, 3, b"P", (b"0", b"1", b"2", b"3", b"4"))
    for rotation in range(5):
        question, order = question_for(item, rotation)
        assert order == rotation_order(rotation) and sorted(order) == [0, 1, 2, 3, 4]
        assert [question.options[p] for p in range(5)] == [item.options[order[p]] for p in range(5)]
    assert rotation_order(0) == [0, 1, 2, 3, 4] and rotation_order(2) == [2, 3, 4, 0, 1]
    assert [kind for kind, _ in question.parts()].count("image") == 6


@pytest.mark.parametrize("text, expected", [
    ("The answer is C", 2), ("c)", 2), ("C", 2), ("(b)", 1), ("**D**", 3), ("<answer>E</answer>", 4),
    ("Answer: **B**", 1), ("\\boxed{A}", 0), ("Option A is wrong. The answer is D.", 3), ("A. the route", 0),
    ("The best option is D", 3), ("Final answer: e", 4),
    ("garbage ###", None), ("", None), ("I cannot tell", None), ("F", None), ("Between B and C, maybe C", None),
    ("The answer is a maze route", None), ("A careful look shows D", None),
])
def test_parse_choice(text, expected):
    assert parse_choice(text) == expected


# --------------------------------------------------------------------------- the run, with fake backends


def test_always_a_single_pass_circular_and_histograms(dataset, tmp_path):
    backend = FakeBackend(always_a)
    result = run_choice(dataset, backend, tmp_path / "out")
    s = result.summary
    assert len(backend.questions) == 6 * 5
    overall = dict(s["single_pass"]["overall"])
    ci = overall.pop("ci95")
    assert overall == {"n": 6, "correct": 2, "accuracy": round(2 / 6, 6)} and ci["low"] <= 2 / 6 <= ci["high"]
    # always "A": each puzzle is right in exactly one rotation (where the solution sits first)
    assert s["rotation_averaged"]["overall"]["correct"] == 6 and s["rotation_averaged"]["overall"]["n"] == 30
    assert s["circular"]["overall"]["correct"] == 0
    assert s["position_histogram"]["single_pass"] == {"A": 6, "B": 0, "C": 0, "D": 0, "E": 0, "none": 0}
    assert s["position_histogram"]["all_rotations"]["A"] == 30
    assert s["consistent"]["count"] == 0  # always "A" is a different original option in each rotation
    for sample in _samples(tmp_path / "out"):
        assert [r["selected_index"] for r in sample["rotations"]] == rotation_order(0)  # A of rotation r is option r
        assert sample["selected_index"] == 0 and sample["correct"] == (sample["correct_index"] == 0)
    report = score_discriminative(dataset, tmp_path / "out" / "results.json")
    assert report.summary["rejected"]["total"] == 0 and report.summary["answer_index_mismatches"]["total"] == 0
    assert report.summary["overall"] == s["single_pass"]["overall"]


def test_oracle_is_circular_correct_and_answers_every_letter(dataset, tmp_path):
    result = run_choice(dataset, FakeBackend(oracle), tmp_path / "out")
    s = result.summary
    assert s["single_pass"]["overall"]["accuracy"] == 1.0 and s["circular"]["overall"]["accuracy"] == 1.0
    assert s["consistent"]["count"] == 6
    assert s["position_histogram"]["all_rotations"] == {"A": 6, "B": 6, "C": 6, "D": 6, "E": 6, "none": 0}
    for sample in _samples(tmp_path / "out"):
        for r in sample["rotations"]:
            assert r["answer"] == r["correct_letter"] and r["selected_index"] == sample["correct_index"]
    results = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert [e["selected_index"] for e in results] == [0, 1, 2, 3, 4, 0]


def test_no_circular_asks_once(dataset, tmp_path):
    backend = FakeBackend(oracle)
    result = run_choice(dataset, backend, tmp_path / "out", rotations=1, difficulties=["easy"])
    assert len(backend.questions) == 3 and result.summary["circular"] is None and result.summary["consistent"] is None
    assert result.summary["single_pass"]["overall"]["n"] == 3


def test_resume_skips_done_items_and_ends_byte_identical(dataset, tmp_path):
    fresh = tmp_path / "fresh"
    run_choice(dataset, FakeBackend(oracle), fresh)
    out = tmp_path / "resumed"
    run_choice(dataset, FakeBackend(oracle), out, limit=1)
    with open(out / SAMPLES_FILE, "a") as handle:
        handle.write('{"id": "maze-easy-0001", "rotat')  # a torn line from a killed run
    backend = FakeBackend(oracle)
    result = run_choice(dataset, backend, out)
    assert len(backend.questions) == 4 * 5 and (result.asked, result.skipped) == (4, 2)
    assert result.notes and "dropped 1" in result.notes[0]
    for name in ("results.json", SAMPLES_FILE, "run_manifest.json"):
        assert (out / name).read_bytes() == (fresh / name).read_bytes()
    again = FakeBackend(oracle)
    run_choice(dataset, again, out)
    assert again.questions == []
    with pytest.raises(ChoiceError, match='other settings .*backend: "fake" -> "other"'):
        run_choice(dataset, FakeBackend(oracle, name="other"), out)


def test_settings_are_written_first_and_a_changed_question_text_is_refused(dataset, tmp_path, monkeypatch):

    out = tmp_path / "out"

    def interrupted(question):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_choice(dataset, FakeBackend(interrupted), out)
    manifest = json.loads((out / "run_manifest.json").read_text())
    assert manifest["kind"] == "tacit-choice" and manifest["settings"]["backend"] == "fake"
    assert manifest["runs"] == [{"completed": False}] and len(manifest["settings"]["prompt_sha256"]) == 64
    run_choice(dataset, FakeBackend(oracle), out, limit=1)
    monkeypatch.setitem(registry._TASKS, "maze", replace(get_task("maze"), answer_hint="a different hint"))
    with pytest.raises(ChoiceError, match="prompt_sha256"):
        run_choice(dataset, FakeBackend(oracle), out)
    # An older version's run.json is still the folder's settings.
    monkeypatch.undo()
    legacy = tmp_path / "legacy"
    run_choice(dataset, FakeBackend(oracle), legacy, limit=1)
    settings = json.loads((legacy / "run_manifest.json").read_text())["settings"]
    (legacy / "run_manifest.json").unlink()
    (legacy / "run.json").write_text(json.dumps({**settings, "rotations": 1}))
    with pytest.raises(ChoiceError, match="rotations: 1 -> 5"):
        run_choice(dataset, FakeBackend(oracle), legacy)


def test_the_guard_stops_after_consecutive_failures(dataset, tmp_path, monkeypatch):
    from vrforge.runners import vlm_choice
    from vrforge.runners.vlm_choice import BackendError

    monkeypatch.setattr(vlm_choice, "MAX_CONSECUTIVE_FAILURES", 3)

    class AlwaysFails(FakeBackend):
        def answer(self, question):
            self.questions.append(question)
            return Answer(position=None, error="model: out of memory", failed=True)

    backend = AlwaysFails(always_a)
    with pytest.raises(BackendError, match="3 puzzles in a row failed"):
        run_choice(dataset, backend, tmp_path / "out")
    assert len(backend.questions) == 3 and len(_samples(tmp_path / "out")) == 3


def _cli(*argv: str) -> int:
    return main(["run", "tacit-choice", *argv])


@pytest.mark.parametrize("argv, message", [
    (["{missing}", "--model", "m"], "no such dataset folder"),
    (["{ds}", "--model", "m", "--backend", "openai"], "needs --base-url"),
    (["{ds}", "--model", "m", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--limit", "0"], "--limit"),
    (["{ds}", "--model", "m", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--tasks", "nope"], "nope"),
    (["{ds}", "--model", "m", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--resolution", "2048"],
     "no 2048 px"),
    (["{ds}", "--model", "{missing}", "--local-files-only"], "no such model folder"),
    (["{ds}", "--model", "{empty}", "--local-files-only"], "cannot load the processor"),
    (["{ds}", "--model", "m", "--answer-template", "A"], "{letter}"),
])
def test_bad_inputs_are_one_line_errors(dataset, tmp_path, capsys, argv, message):
    (tmp_path / "empty").mkdir()
    argv = [a.format(ds=dataset, missing=tmp_path / "missing", empty=tmp_path / "empty") for a in argv]
    assert _cli(*argv, "--out", str(tmp_path / "out"), "--quiet") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "out" / "results.json").exists()


# --------------------------------------------------------------------------- OpenAI backend


def test_openai_backend_parses_answers_and_sends_six_data_urls(dataset, tmp_path):
    script = ["The answer is C", "c)", "garbage", Refusal("no"), "**B**"]
    with FakeOpenAI(answers=script) as fake:
        code = _cli(str(dataset), "--backend", "openai", "--base-url", fake.base_url, "--model", "fake-model",
                    "--difficulties", "easy", "--limit", "1", "--max-retries", "0", "--out", str(tmp_path / "out"), "--quiet")
    assert code == 0 and len(fake.requests) == 5
    for request in fake.requests:
        parts = request["messages"][0]["content"]
        urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
        assert len(urls) == 6 and all(u.startswith("data:image/png;base64,") for u in urls)
    first = [p["image_url"]["url"] for p in fake.requests[0]["messages"][0]["content"] if p["type"] == "image_url"]
    assert base64.b64decode(first[0].split(",", 1)[1]) == _png((128, 128, 128))  # the puzzle comes first
    (sample,) = _samples(tmp_path / "out")
    rotations = sample["rotations"]
    assert [r["answer"] for r in rotations] == ["C", "C", None, None, "B"]
    assert [r["selected_index"] for r in rotations] == [2, 3, None, None, 0]  # position p of rotation r is (p + r) % 5
    assert rotations[0]["raw"] == "The answer is C" and "refusal" in rotations[3]["error"]
    summary = json.loads((tmp_path / "out" / "results.json").read_text())["summary"]
    assert summary["no_answer"] == {"single_pass": 0, "all_rotations": 2, "answers": 5}
    assert summary["circular"]["overall"]["correct"] == 0


def test_openai_workers_give_the_same_results_as_one_at_a_time(dataset, tmp_path):
    expected = run_choice(dataset, FakeBackend(always_a), tmp_path / "serial")
    with FakeOpenAI(responder=lambda request: "A") as fake:
        code = _cli(str(dataset), "--backend", "openai", "--base-url", fake.base_url, "--model", "fake-model",
                    "--workers", "3", "--out", str(tmp_path / "out"), "--quiet")
    assert code == 0 and len(fake.requests) == 30
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["results"] == json.loads((tmp_path / "serial" / "results.json").read_text())["results"]
    assert data["summary"]["circular"] == expected.summary["circular"]
    assert [s["id"] for s in _samples(tmp_path / "out")] == [s["id"] for s in _samples(tmp_path / "serial")]


def test_an_http_400_for_one_puzzle_is_a_failed_item_and_the_run_finishes(dataset, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--backend", "openai", "--model", "fake-model", "--max-retries", "0", "--out", str(out), "--quiet"]
    too_long = json.dumps({"error": {"message": "this request has 9000 tokens, over the 8192 of the context"}})
    script = ["A"] * 5 + [HttpError(400, too_long)] + ["A"] * 20
    with FakeOpenAI(answers=script) as fake:
        code = _cli(str(dataset), "--base-url", fake.base_url, *argv)
    assert code == 1 and len(fake.requests) == 26  # the failed puzzle's other rotations are not asked
    err = capsys.readouterr().err
    assert "failed puzzles: 1 (HTTP 400 1)" in err
    data = json.loads((out / "results.json").read_text())
    assert data["counts"] == {"items": 6, "ok": 5, "failed": 1, "reasons": {"HTTP 400": 1}}
    assert data["summary"]["single_pass"]["overall"]["n"] == 5 and data["summary"]["failed"]["count"] == 1
    assert [e["puzzle_id"] for e in data["results"]] == ["maze-easy-0000", "maze-easy-0002", "maze-medium-0000",
                                                         "maze-medium-0001", "maze-medium-0002"]
    failed = [s for s in _samples(out) if s["status"] == "failed"]
    assert [s["id"] for s in failed] == ["maze-easy-0001"] and "9000 tokens" in failed[0]["error"]

    with FakeOpenAI(responder=lambda request: "A") as fake:  # a resume keeps the failure: no request
        assert _cli(str(dataset), "--base-url", fake.base_url, *argv) == 1 and fake.requests == []
        assert _cli(str(dataset), "--base-url", fake.base_url, *argv, "--retry-failed") == 0
        assert len(fake.requests) == 5
    assert json.loads((out / "results.json").read_text())["counts"]["failed"] == 0


def test_openai_unreachable_endpoint_stops_with_one_line(dataset, tmp_path, capsys):
    with FakeOpenAI(answers=[HttpError(401)]) as fake:
        code = _cli(str(dataset), "--backend", "openai", "--base-url", fake.base_url, "--model", "fake-model",
                    "--max-retries", "0", "--out", str(tmp_path / "out"), "--quiet")
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "401" in err
    assert (tmp_path / "out" / SAMPLES_FILE).read_text() == ""


# --------------------------------------------------------------------------- likelihood backend (tiny LLaVA)


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory) -> Path:
    """A LLaVA with random weights whose word-level tokenizer knows the question's words."""
    question = Question("maze", b"", (b"",) * 5)
    corpus = [" ".join(text for kind, text in question.parts() if kind == "text"), "USER: ASSISTANT: A B C D E"]
    return build_tiny_llava(tmp_path_factory.mktemp("tiny-llava"), corpus)


def test_likelihood_end_to_end_through_the_cli(dataset, tiny_llava, tmp_path):
    out = tmp_path / "out"
    code = _cli(str(dataset), "--model", str(tiny_llava), "--local-files-only", "--dtype", "float32", "--device", "cpu",
                "--out", str(out), "--quiet")
    assert code == 0
    samples = _samples(out)
    assert len(samples) == 6
    for sample in samples:
        assert len(sample["rotations"]) == 5
        for r in sample["rotations"]:
            scores = r["scores"]
            assert len(scores) == 5 and all(s < 0 for s in scores)
            assert r["answer"] == LETTERS[scores.index(max(scores))]
            assert r["selected_index"] == r["order"][LETTERS.index(r["answer"])]
    data = json.loads((out / "results.json").read_text())
    assert data["summary"]["model"] == str(tiny_llava) and data["summary"]["backend"] == "likelihood"
    report = score_discriminative(dataset, out / "results.json")
    assert report.summary["rejected"]["total"] == 0
    assert report.summary["overall"] == data["summary"]["single_pass"]["overall"]


def test_likelihood_scoring_paths_agree(dataset, tiny_llava):
    from vrforge.runners.vlm_backends import LikelihoodBackend
    from vrforge.runners.vlm_choice import load_items

    backend = LikelihoodBackend(str(tiny_llava), local_files_only=True, dtype="float32", device="cpu")
    backend.load()
    item = next(load_items(dataset, 512, {"maze-easy-0001"}))
    question, _ = question_for(item, 0)
    images = [Image.open(io.BytesIO(v)).convert("RGB") for k, v in question.parts() if k == "image"]
    inputs = backend.processor(images=images, text=backend.prompt_text(question), return_tensors="pt")
    fast = backend.score(inputs, backend.continuations)
    slow = backend.score(inputs, backend.continuations, one_pass=False)
    assert fast == pytest.approx(slow, abs=1e-5)
    assert backend.prompt_text(question).count("<image>") == 6

    multi = LikelihoodBackend(str(tiny_llava), local_files_only=True, dtype="float32", device="cpu",
                              answer_template="Option {letter}:", normalise="sum")
    multi.load()
    assert all(len(c) == 2 for c in multi.continuations)
    answer = multi.answer(question)
    assert len(answer.scores) == 5 and answer.position == answer.scores.index(max(answer.scores))
    broken = Question("maze", b"not a png", question.options)  # one puzzle's image cannot be decoded
    failed = backend.answer(broken)
    assert failed.failed and failed.error.startswith("decode: ") and failed.position is None
    backend.processor.chat_template = None  # a model without a chat template gets the plain USER/ASSISTANT layout
    assert backend.prompt_text(question).startswith("USER: ") and backend.answer(question).position is not None


def test_the_gap_against_a_choice_run_includes_circular_accuracy_and_mcnemar(dataset, tmp_path):
    """Generative answers for the six puzzles (four right) against always-"A" choices (two right single-pass,
    none circular): the gap on both accuracies, with McNemar's test on the paired outcomes."""
    from vrforge.runners.scoring import Report, constructive_selective_gap

    run_choice(dataset, FakeBackend(always_a), tmp_path / "choice")
    ids = [f"maze-{d}-{i:04d}" for d in ("easy", "medium") for i in range(3)]
    passed = dict(zip(ids, [True, True, False, True, True, False]))
    generative = Report("generative", {"track": "generative"},
                        [{"id": pid, "task": "maze", "difficulty": pid.split("-")[1], "passed": ok} for pid, ok in passed.items()])
    gap = constructive_selective_gap(generative, tmp_path / "choice" / "results.json")
    # single pass: always "A" is right where the solution is first (easy-0000, medium-0002)
    assert gap["overall"]["discriminative_correct"] == 2 and gap["overall"]["generative_correct"] == 4
    assert gap["overall"]["mcnemar"]["only_first"] == 3 and gap["overall"]["mcnemar"]["only_second"] == 1
    assert gap["overall"]["mcnemar"]["p_value"] == pytest.approx(0.625)  # 2 * P(X <= 1), X ~ Bin(4, 1/2)
    circular = gap["circular"]
    assert circular["discriminative_circular_accuracy"] == 0.0 and circular["gap"] == pytest.approx(-4 / 6, abs=1e-6)
    assert circular["mcnemar"]["only_first"] == 4 and circular["mcnemar"]["p_value"] == pytest.approx(0.125)


def test_batched_questions_and_the_kv_cache_give_the_unbatched_scores(dataset, tiny_llava):
    """Left-padded batches (questions of different lengths) and continuations scored over the prompt's KV cache
    agree with one question and one full pass at a time."""
    from vrforge.runners.vlm_backends import LikelihoodBackend
    from vrforge.runners.vlm_choice import load_items

    item = next(load_items(dataset, 512, {"maze-easy-0001"}))
    questions = [question_for(item, r)[0] for r in range(5)]
    # Another task's hint makes a longer text: the batch needs padding.
    questions.append(Question("raven", questions[0].puzzle, questions[0].options))
    options = {"local_files_only": True, "dtype": "float32", "device": "cpu"}
    for template in ("{letter}", "Option {letter}:"):
        one = LikelihoodBackend(str(tiny_llava), answer_template=template, normalise="sum", **options)
        batched = LikelihoodBackend(str(tiny_llava), answer_template=template, normalise="sum", batch_size=6, **options)
        alone = [one.answer(q).scores for q in questions]
        together = [a.scores for a in batched.answer_many(questions)]
        for a, b in zip(alone, together):
            assert a == pytest.approx(b, abs=1e-4), template
        if template != "{letter}":  # the KV-cache path against one full pass per continuation
            one.load()
            images = [[Image.open(io.BytesIO(v)).convert("RGB") for k, v in q.parts() if k == "image"] for q in questions[:1]]
            inputs = one.processor(images=images[0], text=one.prompt_text(questions[0]), return_tensors="pt")
            assert one.score(inputs, one.continuations, one_pass=False) == pytest.approx(alone[0], abs=1e-4)


def test_data_parallel_processes_write_rank_files_and_process_0_merges(dataset, tmp_path):
    fresh = tmp_path / "fresh"
    run_choice(dataset, FakeBackend(oracle), fresh)
    out = tmp_path / "dp"
    one, zero = FakeBackend(oracle), FakeBackend(oracle)
    result = run_choice(dataset, one, out, rank=1, world=2)
    assert result.summary == {} and (out / "samples.rank1.jsonl").is_file() and (out / ".rank1.done").is_file()
    assert len(one.questions) == 3 * 5  # puzzles 1, 3, 5 of six
    assert not (out / "results.json").exists()
    merged = run_choice(dataset, zero, out, rank=0, world=2, merge_timeout_s=5)
    assert len(zero.questions) == 3 * 5 and merged.summary["puzzles"] == 6
    for name in ("results.json", SAMPLES_FILE):
        assert (out / name).read_bytes() == (fresh / name).read_bytes()
    assert not list(out.glob("samples.rank*")) and not list(out.glob(".rank*"))


def test_an_interrupted_data_parallel_run_resumes_in_one_process(dataset, tmp_path):
    from vrforge.runners.vlm_choice import BackendError

    out = tmp_path / "dp"
    run_choice(dataset, FakeBackend(oracle), out, rank=1, world=2)
    with pytest.raises(BackendError, match=r"process\(es\) 1 did not finish"):  # process 1's marker is from another launch
        (out / ".rank1.done").write_text(json.dumps({"rank": 1, "world": 2, "run": "an earlier launch"}))
        run_choice(dataset, FakeBackend(oracle), out, rank=0, world=2, merge_timeout_s=0.2)
    backend = FakeBackend(oracle)
    result = run_choice(dataset, backend, out)  # one process: the rank files' answers are kept
    assert backend.questions == [] and result.summary["puzzles"] == 6
    assert not list(out.glob("samples.rank*"))


class _Logprob:
    def __init__(self, logprob: float) -> None:
        self.logprob = logprob


class FakeVLLM:
    """Stands in for ``vllm.LLM``: a tokenizer with one id per letter, and generate() returning the first
    position's top logprobs, favouring the option whose image is the green solution."""

    class Tokenizer:
        def encode(self, text, add_special_tokens=False):
            return [100 + "ABCDE".index(text)] if text in "ABCDE" and len(text) == 1 else [1, 2]

        def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
            parts = messages[0]["content"]
            return "".join("<image>" if p["type"] == "image" else p["text"] for p in parts) + "ASSISTANT:"

    def __init__(self) -> None:
        self.requests = []

    def get_tokenizer(self):
        return self.Tokenizer()

    def generate(self, requests, params, use_tqdm=False):
        self.requests.extend(requests)
        outputs = []
        for request in requests:
            options = request["multi_modal_data"]["image"][1:]
            solution = [img.getpixel((0, 0)) for img in options].index(SOLUTION_RGB)
            # the solution's letter first, the next letter second; the other three fall outside the top logprobs
            top = {100 + solution: _Logprob(-0.1), 100 + (solution + 1) % 5: _Logprob(-2.5)}
            outputs.append(type("Out", (), {"outputs": [type("Seq", (), {"logprobs": [top]})()]})())
        return outputs


def test_vllm_backend_scores_the_letters_from_logprobs(dataset, tmp_path):
    from vrforge.runners.vlm_backends import VLLMBackend

    engine = FakeVLLM()
    backend = VLLMBackend("fake/vlm", engine=engine, sampling_params=object())
    result = run_choice(dataset, backend, tmp_path / "out", difficulties=["easy"])
    assert result.summary["circular"]["overall"]["accuracy"] == 1.0 and result.summary["backend"] == "vllm"
    assert len(engine.requests) == 3 * 5 and all(len(r["multi_modal_data"]["image"]) == 6 for r in engine.requests)
    assert engine.requests[0]["prompt"].count("<image>") == 6 and engine.requests[0]["prompt"].endswith("ASSISTANT:")
    scores = _samples(tmp_path / "out")[0]["rotations"][0]["scores"]
    assert sorted(s for s in scores if s is not None) == [-2.5, -0.1] and scores.count(None) == 3


def test_vllm_backend_needs_vllm(monkeypatch):
    import builtins

    from vrforge.runners.vlm_backends import BackendError, VLLMBackend

    real_import = builtins.__import__

    def no_vllm(name, *args, **kwargs):
        if name == "vllm":
            raise ImportError("No module named 'vllm'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_vllm)
    with pytest.raises(BackendError, match=r"vrforge\[vllm\]"):
        VLLMBackend("some/model")


def test_processor_kwargs_and_the_model_class_registry(tiny_llava, monkeypatch):
    import transformers

    from vrforge.runners import vlm_backends

    seen = {}
    real = transformers.AutoProcessor.from_pretrained

    def spy(model, **kwargs):
        seen.update(kwargs)
        return real(model, **{k: v for k, v in kwargs.items() if k != "max_pixels"})

    monkeypatch.setattr(transformers.AutoProcessor, "from_pretrained", spy)
    backend = vlm_backends.LikelihoodBackend(str(tiny_llava), local_files_only=True, dtype="float32", device="cpu",
                                             processor_kwargs={"max_pixels": 802816})
    backend.load()
    assert seen["max_pixels"] == 802816 and backend.describe()["processor_kwargs"] == {"max_pixels": 802816}
    common = {"revision": None, "trust_remote_code": False, "local_files_only": True}
    assert vlm_backends.model_classes(str(tiny_llava), common) == list(vlm_backends.AUTO_CLASSES)
    monkeypatch.setitem(vlm_backends.MODEL_CLASSES, "llava", "AutoModel")
    assert vlm_backends.model_classes(str(tiny_llava), common)[0] == "AutoModel"


def test_every_model_class_failure_is_named_on_one_line(tiny_llava, tmp_path):
    import shutil

    from vrforge.runners.vlm_backends import BackendError, load_vlm

    broken = tmp_path / "broken"
    shutil.copytree(tiny_llava, broken)
    for weights in broken.glob("*.safetensors"):
        weights.write_bytes(b"not weights")
    with pytest.raises(BackendError) as caught:
        load_vlm(str(broken), local_files_only=True, dtype="float32", device="cpu")
    message = str(caught.value)
    assert "\n" not in message and "AutoModelForImageTextToText:" in message and "AutoModel:" in message


def test_vlm_choice_bench_smoke(tmp_path):
    from vrforge.bench.vlm_choice import main

    results = tmp_path / "vlm_choice.json"
    assert main(["--puzzles", "1", "--hidden", "32", "--layers", "1", "--results", str(results)]) == 0
    report = json.loads(results.read_text())
    assert report["questions"] == 5 and report["one_token_answers"]["batched"]["questions_per_second"] > 0
    assert report["multi_token_answers"]["kv_speedup"] > 0 and report["model"]["images_per_question"] == 6


def test_ctrl_c_stops_tacit_choice_after_the_questions_in_flight(dataset, tmp_path):
    import _thread
    import threading
    import time

    pressed = threading.Lock()  # one Ctrl-C: two threads may both see the sixth answer

    class Slow(FakeBackend):
        def answer(self, question):
            time.sleep(0.05)
            # Ctrl-C once a puzzle's worth of questions is answered, whatever the load.
            if len(self.questions) >= 6 and pressed.acquire(blocking=False):
                threading.Timer(0.05, _thread.interrupt_main).start()
            return super().answer(question)

    backend = Slow(oracle)
    with pytest.raises(KeyboardInterrupt):
        run_choice(dataset, backend, tmp_path / "out", workers=2)
    time.sleep(0.5)  # what was in flight finishes; nothing new starts
    asked = len(backend.questions)
    assert asked < 30, f"{asked} of 30 questions asked after Ctrl-C"
    finished = _samples(tmp_path / "out")
    assert all(len(s["rotations"]) == 5 for s in finished)  # only complete puzzles are kept
    result = run_choice(dataset, FakeBackend(oracle), tmp_path / "out")  # and the same command resumes
    assert result.summary["puzzles"] == 6 and result.skipped == len(finished)
