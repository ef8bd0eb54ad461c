"""TACIT multiple-choice throughput on a tiny VLM: batched against unbatched, KV-cache reuse against full passes.

Builds a small LLaVA from configs with random weights (nothing is downloaded: a CLIP vision
tower and a Llama, ``--hidden`` wide, ``--layers`` deep, 64 px images, so each question holds
six images of 65 tokens) and times the likelihood backend over the same questions (every
rotation of ``--puzzles`` synthetic puzzles):

- one-token answers (``{letter}``): ``--batch-size 1`` against ``--batch-size 5`` (a puzzle's
  five rotations in one left-padded forward pass);
- a multi-token answer template (``Option {letter}:``): one full forward pass per
  continuation (the earlier way) against the prompt run once and its KV cache reused for the
  five continuations in one more pass.

Model building and one warm-up question are not timed.

    python -m vrforge.bench.vlm_choice                    # writes bench/results/vlm_choice.json
"""

from __future__ import annotations

import argparse
import io
import platform
import tempfile
import time
from pathlib import Path
from typing import Any, cast

CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'].upper() }}: {% for c in m['content'] %}"
                 "{% if c['type'] == 'image' %}<image> {% else %}{{ c['text'] }} {% endif %}{% endfor %}{% endfor %}"
                 "{% if add_generation_prompt %}ASSISTANT: {% endif %}")


def build_tiny_llava(folder: Path, corpus: list[str], hidden: int, layers: int, *, image_size: int = 64,
                     head_dim: int = 32, mlp_ratio: int = 4, max_positions: int = 2048,
                     chat_template: str | None = CHAT_TEMPLATE) -> Path:
    """A seeded random-weight LLaVA (word-level tokenizer trained on ``corpus``) saved into ``folder``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["<unk>", "<s>", "</s>", "<pad>", "<image>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>", extra_special_tokens={"image_token": "<image>"})
    patch = max(8, image_size // 8)
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}),
        tokenizer=fast, patch_size=patch, num_additional_image_tokens=1, vision_feature_select_strategy="default",
        chat_template=chat_template)
    heads = max(2, hidden // head_dim)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=hidden, intermediate_size=mlp_ratio * hidden, num_hidden_layers=layers,
                                       num_attention_heads=heads, image_size=image_size, patch_size=patch),
        text_config=LlamaConfig(vocab_size=len(fast), hidden_size=hidden, intermediate_size=mlp_ratio * hidden,
                                num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                                max_position_embeddings=max_positions),
        image_token_index=cast(int, fast.convert_tokens_to_ids("<image>")),  # one token: one id
        vision_feature_layer=-1)
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def _png(seed: int) -> bytes:
    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, size=(64, 64, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def _questions(puzzles: int) -> list[Any]:
    from vrforge.runners.vlm_choice import Item, question_for

    tasks = ("maze", "raven", "unknot")  # different hints: different text lengths, so batches are padded
    questions: list[Any] = []
    for p in range(puzzles):
        item = Item(f"p{p}", tasks[p % len(tasks)], "easy", p, p % 5, _png(10 * p), tuple(_png(10 * p + k + 1) for k in range(5)))
        questions.extend(question_for(item, r)[0] for r in range(5))
    return questions


def _time(backend: Any, questions: list[Any], per_call: int) -> dict[str, Any]:
    backend.answer_many(questions[:1])  # warm-up
    started = time.perf_counter()
    for start in range(0, len(questions), per_call):
        backend.answer_many(questions[start:start + per_call])
    seconds = time.perf_counter() - started
    return {"questions": len(questions), "seconds": round(seconds, 3), "questions_per_second": round(len(questions) / seconds, 3)}


class _FullPasses:
    """The likelihood backend scoring each multi-token continuation on its own full pass (the way before the KV cache)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def answer_many(self, questions: list[Any]) -> list[Any]:
        from vrforge.runners.vlm_choice import pil_image

        b = self.backend
        b.load()
        out = []
        for q in questions:
            images = [pil_image(v) for k, v in q.parts() if k == "image"]
            inputs = b.processor(images=images, text=b.prompt_text(q), return_tensors="pt").to(b.model.device, dtype=b.model.dtype)
            out.append(b.score(inputs, b.continuations, one_pass=False))
        return out


def measure(puzzles: int, hidden: int, layers: int, work: Path) -> dict[str, Any]:
    import torch

    from vrforge.runners.vlm_backends import LikelihoodBackend
    from vrforge.runners.vlm_choice import Question

    sample = Question("maze", b"", (b"",) * 5)
    corpus = [" ".join(Question(task, b"", (b"",) * 5).texts())
              for task in ("maze", "raven", "unknot")] + ["USER: ASSISTANT: A B C D E Option A: B: C: D: E:"]
    del sample
    model = build_tiny_llava(work / "tiny-llava", corpus, hidden, layers)
    questions = _questions(puzzles)
    common: dict[str, Any] = {"local_files_only": True, "dtype": "float32", "device": "cpu"}
    one_token = {
        "unbatched": _time(LikelihoodBackend(str(model), batch_size=1, **common), questions, 1),
        "batched": _time(LikelihoodBackend(str(model), batch_size=5, **common), questions, 5),
    }
    template = "Option {letter}:"
    multi = {
        "full_passes": _time(_FullPasses(LikelihoodBackend(str(model), answer_template=template, **common)), questions, 1),
        "kv_cache": _time(LikelihoodBackend(str(model), answer_template=template, batch_size=1, **common), questions, 1),
        "kv_cache_batched": _time(LikelihoodBackend(str(model), answer_template=template, batch_size=5, **common), questions, 5),
    }
    return {
        "model": {"kind": "LLaVA (CLIP vision + Llama), random weights", "hidden": hidden, "layers": layers, "image_px": 64,
                  "image_tokens": 65, "images_per_question": 6},
        "puzzles": puzzles, "questions": len(questions),
        "torch_threads": torch.get_num_threads(), "machine": platform.machine(), "python": platform.python_version(),
        "one_token_answers": {**one_token, "speedup": round(one_token["batched"]["questions_per_second"]
                                                            / one_token["unbatched"]["questions_per_second"], 3)},
        "multi_token_answers": {**multi,
                                "kv_speedup": round(multi["kv_cache"]["questions_per_second"]
                                                    / multi["full_passes"]["questions_per_second"], 3),
                                "kv_batched_speedup": round(multi["kv_cache_batched"]["questions_per_second"]
                                                            / multi["full_passes"]["questions_per_second"], 3)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--puzzles", type=int, default=8, help="synthetic puzzles, five questions each (default 8)")
    parser.add_argument("--hidden", type=int, default=128, help="hidden size of both towers (default 128)")
    parser.add_argument("--layers", type=int, default=2, help="layers of both towers (default 2)")
    parser.add_argument("--results", default="bench/results/vlm_choice.json")
    args = parser.parse_args(argv)
    from vrforge.fileio import write_json_atomic

    with tempfile.TemporaryDirectory() as work:
        report = measure(args.puzzles, args.hidden, args.layers, Path(work))
    write_json_atomic(Path(args.results), report)
    one, multi = report["one_token_answers"], report["multi_token_answers"]
    print(f"one-token answers: {one['unbatched']['questions_per_second']} -> {one['batched']['questions_per_second']} "
          f"questions/s batched ({one['speedup']}x); multi-token: full passes {multi['full_passes']['questions_per_second']}, "
          f"KV cache {multi['kv_cache']['questions_per_second']} ({multi['kv_speedup']}x), "
          f"KV cache batched {multi['kv_cache_batched']['questions_per_second']} ({multi['kv_batched_speedup']}x); "
          f"wrote {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
