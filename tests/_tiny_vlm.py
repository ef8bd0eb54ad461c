"""A tiny LLaVA with random weights, built offline for tests: a 1-layer CLIP vision tower, a 1-layer Llama
and a word-level tokenizer trained on the given texts (words outside them read as ``<unk>``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from vrforge.bench.vlm_choice import CHAT_TEMPLATE
from vrforge.bench.vlm_choice import build_tiny_llava as build


def build_tiny_llava(folder: Path, corpus: Iterable[str], chat_template: str | None = CHAT_TEMPLATE) -> Path:
    """Save processor and model into ``folder`` (loadable with ``local_files_only``); the weights are seeded."""
    return build(folder, list(corpus), hidden=16, layers=1, image_size=32, mlp_ratio=2, max_positions=512,
                 chat_template=chat_template)
