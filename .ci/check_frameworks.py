"""The steps of ``make check-frameworks`` (.ci/check-frameworks.sh runs them in order).

- ``prepare WORK`` (project venv): a 4-puzzle release (maze and raven, 2 easy puzzles each, 512 px),
  its lmms-eval task folder and its VLMEvalKit TSVs (per task, single pass and circular), and the
  word list the tiny model's tokenizer is trained on;
- ``tiny-llava WORK`` (frameworks venv): a random-weight LLaVA saved to WORK/llava;
- ``vlmevalkit WORK`` (frameworks venv): every TSV through VLMEvalKit's ``build_dataset``, its
  ``build_prompt`` (which decodes the images to files), the tiny model and ``evaluate`` with exact
  matching; the decoded images are compared with the TSV's PNGs pixel for pixel, and the docs'
  table of answers is run through VLMEvalKit's ``can_infer``;
- ``compare WORK`` (project venv): lmms-eval's results and the saved answers of both frameworks,
  re-scored by vrforge (``parse_choice`` and ``vrforge score discriminative``); exit 1 on a mismatch.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECIPE = {"name": "frameworks-check", "version": "0.0.1", "seed": 11, "resolutions": [512], "rows_per_shard": 2,
          "tasks": {"maze": {"count": 2, "difficulties": ["easy"]}, "raven": {"count": 2, "difficulties": ["easy"]}}}
CHOICES = {letter: f"image {k + 2}" for k, letter in enumerate("ABCDE")}
# The table in docs/guides/discriminative.md: answer -> what VLMEvalKit's exact matching reads.
DOCS_TABLE = {"The answer is C": "C",
              "C. The route through option C never crosses a wall and ends on the red square.": False,
              "I pick C because the other options each break a rule of the puzzle": False,
              "Option B breaks the wall rule; the answer is D": False}


def prepare(work: Path) -> None:
    from vrforge.builds.build import build
    from vrforge.builds.recipe import parse_recipe
    from vrforge.runners.exports import export_lmms_eval, export_vlmevalkit
    from vrforge.runners.vlm_choice import Question

    release = work / "release"
    build(parse_recipe(RECIPE), release, workers=1, progress=False)
    export_lmms_eval(release, work / "lmms_tasks")
    names = [p.stem for p, _ in export_vlmevalkit(release, work / "LMUData")]
    names += [p.stem for p, _ in export_vlmevalkit(release, work / "LMUData", circular=True)]
    # The words of the prompts, so the tokenizer reads them (<image> is its special token already).
    words = {*"ABCDE", "USER:", "ASSISTANT:", "answer", "is", "The", "Options:", "Question:", "Please", "select",
             "the", "correct", "from", "options", "above.", "image", *map(str, range(2, 7))}
    for task in RECIPE["tasks"]:
        question = Question(task, b"", (b"",) * 5)
        words |= set(f"{question.intro} {question.ask}".split())
    (work / "corpus.txt").write_text("\n".join(sorted(words)) + "\n", encoding="utf-8")
    (work / "vlmeval_datasets.json").write_text(json.dumps(names), encoding="utf-8")
    print(f"prepared {release} and exports: {', '.join(names)}")


def _bench_module() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("vrforge_bench_vlm_choice", ROOT / "bench" / "vlm_choice.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tiny_llava(work: Path) -> None:
    corpus = (work / "corpus.txt").read_text(encoding="utf-8").split("\n")
    # lmms-eval 0.7.3's llava_hf is its chat model: it renders the messages with the processor's chat
    # template (a real llava-hf checkpoint ships one), so the tiny model needs one too.
    bench = _bench_module()
    folder = bench.build_tiny_llava(work / "llava", corpus, hidden=16, layers=1, image_size=32, mlp_ratio=2,
                                    max_positions=1024, chat_template=bench.CHAT_TEMPLATE)
    # Random weights answer in random words that no parser reads. An output layer that can only
    # say A-E or stop makes the answers letters; with this seed the tiny model answers "E" to every
    # prompt (its answers hardly depend on the input), which every parser reads alike, so the
    # frameworks' accuracies must equal vrforge's exactly.
    import torch
    from transformers import AutoTokenizer, LlavaForConditionalGeneration

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = LlavaForConditionalGeneration.from_pretrained(folder, local_files_only=True)
    keep = tokenizer.convert_tokens_to_ids([*"ABCDE", tokenizer.eos_token])
    generator = torch.Generator().manual_seed(10)
    with torch.no_grad():
        weight = model.lm_head.weight
        rows = torch.randn((len(keep), weight.shape[1]), generator=generator) * 4
        weight.zero_()
        weight[keep] = rows
    model.save_pretrained(folder)
    print(f"tiny LLaVA in {folder}")


class TinyLlava:
    """A VLMEvalKit model on the CPU: ``generate(message, dataset)`` over VLMEvalKit's message list."""

    def __init__(self, folder: Path) -> None:
        from transformers import AutoProcessor, LlavaForConditionalGeneration

        self.processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
        self.model = LlavaForConditionalGeneration.from_pretrained(folder, local_files_only=True).eval()

    def generate(self, message: list[dict[str, str]], dataset: str | None = None) -> str:
        import torch
        from PIL import Image

        images = [Image.open(m["value"]).convert("RGB") for m in message if m["type"] == "image"]
        text = " ".join(m["value"] for m in message if m["type"] == "text")
        prompt = "USER: " + "<image> " * len(images) + text + " ASSISTANT:"
        inputs = self.processor(images=images, text=prompt, return_tensors="pt")
        with torch.no_grad():
            out = self.model.generate(**inputs, max_new_tokens=16, do_sample=False)
        return self.processor.tokenizer.decode(out[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True).strip()


def vlmevalkit(work: Path) -> None:
    import base64
    import io
    import os

    import numpy as np
    from PIL import Image

    os.environ["LMUData"] = str(work / "LMUData")  # noqa: SIM112 - the variable VLMEvalKit reads
    from vlmeval.dataset import build_dataset
    from vlmeval.smp import toliststr
    from vlmeval.utils.matching_util import can_infer

    table = {answer: can_infer(answer, dict(CHOICES)) for answer in DOCS_TABLE}
    assert table == DOCS_TABLE, f"VLMEvalKit reads the docs' answers otherwise: {table}"
    model = TinyLlava(work / "llava")
    out: dict[str, Any] = {"docs_table": table}
    names = json.loads((work / "vlmeval_datasets.json").read_text(encoding="utf-8"))
    (work / "vlmeval-out").mkdir(exist_ok=True)
    for name in names:
        dataset = build_dataset(name)
        assert dataset is not None and type(dataset).__name__ == "CustomMCQDataset", name
        rows, predictions, exact = [], [], 0
        for i in range(len(dataset.data)):
            line = dataset.data.iloc[i]
            message = dataset.build_prompt(line)
            paths = [m["value"] for m in message if m["type"] == "image"]
            for path, encoded in zip(paths, toliststr(line["image"]) if isinstance(line["image"], str) else line["image"]):
                original = Image.open(io.BytesIO(base64.b64decode(encoded))).convert("RGB")
                saved = Image.open(path).convert("RGB")
                exact += int(Path(path).suffix == ".png" and np.array_equal(np.asarray(original), np.asarray(saved)))
            assert exact == 6 * (i + 1), f"{name}: an image VLMEvalKit saved differs from the TSV's PNG ({paths})"
            predictions.append(model.generate(message, name))
            rows.append({"index": int(line["index"]), "id": line["id"], "category": line["category"], "answer": line["answer"],
                         "prediction": predictions[-1], "can_infer": can_infer(predictions[-1], dict(CHOICES)) or None})
        data = dataset.data.copy()
        for column in ("image", "image_path"):
            data.pop(column)
        data["prediction"] = predictions
        eval_file = work / "vlmeval-out" / f"tiny_llava_{name}.xlsx"
        data.to_excel(eval_file, index=False)
        accuracy = dataset.evaluate(str(eval_file), model="exact_matching")
        out[name] = {"rows": rows, "images_pixel_exact": exact, "accuracy": accuracy.to_dict("records")}
        print(f"VLMEvalKit {name}: {len(rows)} rows, {exact} images pixel-exact, accuracy {accuracy.to_dict('records')}")
    (work / "vlmeval-out" / "check.json").write_text(json.dumps(out, indent=1, default=str), encoding="utf-8")


def _per_task(pairs: list[tuple[str, bool]]) -> dict[str, float]:
    tasks = sorted({t for t, _ in pairs})
    return {t: sum(ok for u, ok in pairs if u == t) / sum(1 for u, _ in pairs if u == t) for t in tasks}


def compare(work: Path) -> int:
    from datasets import load_dataset

    from vrforge.cli import main
    from vrforge.runners.vlm_choice import LETTERS, parse_choice

    problems: list[str] = []
    report: dict[str, Any] = {}
    release = work / "release"
    # lmms-eval: its results file (it exits 0 even when the run failed) and its saved answers.
    found = sorted((work / "lmms-out").rglob("*_results.json"))
    exit_code = (work / "lmms-eval.rc").read_text(encoding="utf-8").strip()
    if not found:
        tail = (work / "lmms-eval.log").read_text(encoding="utf-8", errors="replace")[-3000:]
        print(f"lmms-eval wrote no results file (it exited {exit_code}); the end of its log:\n{tail}")
        return 1
    report["lmms-eval exit code"] = int(exit_code)
    lmms = json.loads(found[-1].read_text(encoding="utf-8"))["results"]
    picks, docs = [], []
    for task in RECIPE["tasks"]:
        rows = load_dataset(str(release), f"{task}-512", split="easy")  # the config the exported YAML names
        (samples,) = sorted((work / "lmms-out").rglob(f"*_samples_tacit_choice_{task}_easy.jsonl"))
        for line in samples.read_text(encoding="utf-8").splitlines():
            sample = json.loads(line)
            row = rows[int(sample["doc_id"])]
            answer = sample["filtered_resps"]  # lmms-eval 0.7.3 logs the filtered answer text
            answer = answer[0] if isinstance(answer, list) else answer
            picked = parse_choice(answer)
            picks.append({"puzzle_id": row["id"], "task": task, "difficulty": "easy", "correct_index": row["answer_index"],
                          "selected_index": picked})
            docs.append((task, float(sample["tacit_accuracy"]), float(picked == row["answer_index"])))
    (work / "lmms-picks.json").write_text(json.dumps({"results": picks}), encoding="utf-8")
    assert main(["score", "discriminative", str(release), str(work / "lmms-picks.json"), "--out", str(work / "score-lmms")]) == 0
    scored = json.loads((work / "score-lmms" / "results.json").read_text(encoding="utf-8"))["summary"]
    report["lmms-eval"] = {"overall": lmms["tacit_choice"], **{t: lmms[f"tacit_choice_{t}"] for t in RECIPE["tasks"]},
                           "vrforge": {"overall": scored["overall"]["accuracy"],
                                       **{t: v["accuracy"] for t, v in scored["per_task"].items()}}}
    if any(a != b for _, a, b in docs):
        problems.append("lmms-eval scored a saved answer otherwise than vrforge's parser")
    for task in RECIPE["tasks"]:
        theirs = lmms[f"tacit_choice_{task}"]["tacit_accuracy,none"]
        if abs(theirs - scored["per_task"][task]["accuracy"]) > 1e-9:
            problems.append(f"lmms-eval {task}: {theirs} vs vrforge {scored['per_task'][task]['accuracy']}")
        if not isinstance(lmms[f"tacit_choice_{task}"].get("tacit_accuracy_stderr,none"), float):
            problems.append(f"lmms-eval {task}: no standard error")
    if abs(lmms["tacit_choice"]["tacit_accuracy,none"] - scored["overall"]["accuracy"]) > 1e-9:
        problems.append("lmms-eval overall accuracy differs from vrforge's")
    # VLMEvalKit: its accuracies, its own parse of each saved answer, and vrforge's parse of the same.
    check = json.loads((work / "vlmeval-out" / "check.json").read_text(encoding="utf-8"))
    for name, result in check.items():
        if name == "docs_table":
            continue
        rows = result["rows"]
        accuracy = result["accuracy"][0]
        circular = "circular" in name
        groups: dict[int, list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(row["index"] % 10**6, []).append(row)

        def verdicts(read: Any, groups: dict[int, list[dict[str, Any]]] = groups) -> list[tuple[str, bool]]:
            return [(g[0]["category"], all(read(r) == r["answer"] for r in g)) for g in groups.values()]

        own = _per_task(verdicts(lambda r: r["can_infer"]))
        ours = _per_task(verdicts(lambda r: (lambda p: LETTERS[p] if p is not None else None)(parse_choice(r["prediction"]))))
        report[f"VLMEvalKit {name}"] = {"reported": accuracy, "its parse re-scored": own, "vrforge parse": ours,
                                        "answers parsed differently": sum(
                                            1 for r in rows if r["can_infer"] != (lambda p: LETTERS[p] if p is not None else None)(
                                                parse_choice(r["prediction"]))),
                                        "images pixel-exact": f"{result['images_pixel_exact']} of {6 * len(rows)}",
                                        "circular": circular}
        for task, value in own.items():
            if abs(accuracy.get(task, -1) - value) > 1e-9:
                problems.append(f"VLMEvalKit {name} {task}: reported {accuracy.get(task)} vs its parse re-scored {value}")
            # Where the two parsers read every answer alike, vrforge's accuracy is VLMEvalKit's.
            if not report[f"VLMEvalKit {name}"]["answers parsed differently"] and abs(ours[task] - value) > 1e-9:
                problems.append(f"VLMEvalKit {name} {task}: {value} vs vrforge {ours[task]} on answers both parse alike")
        if result["images_pixel_exact"] != 6 * len(rows):
            problems.append(f"VLMEvalKit {name}: an image was not saved pixel for pixel")
    (work / "check.json").write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    print(json.dumps(report, indent=1, default=str))
    for problem in problems:
        print(f"check-frameworks: MISMATCH: {problem}")
    print("check-frameworks: " + ("failed" if problems else "lmms-eval and VLMEvalKit agree with vrforge's scorer"))
    return 1 if problems else 0


if __name__ == "__main__":
    step, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    if step == "prepare":
        prepare(work)
    elif step == "tiny-llava":
        tiny_llava(work)
    elif step == "vlmevalkit":
        vlmevalkit(work)
    elif step == "compare":
        sys.exit(compare(work))
    else:
        sys.exit(f"unknown step {step!r}")
