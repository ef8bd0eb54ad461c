"""Semantic drift ("telephone game") chains: describe -> draw -> describe ..., scored against the original.

- ``inputs``: image-caption pairs (folder, JSONL, Hugging Face dataset) and GenEval prompts with specs.
- ``backends``: a captioner + text-to-image pair, a unified model, an OpenAI-compatible captioner.
- ``chain``: the chain runner (per-step seeds, resumable at step granularity, atomic writes, manifest).
- ``embed``: sentence / DINO / CLIP embedders through sentence-transformers and transformers, cached.
- ``geneval``: GenEval-style checks of a spec against detections (OWLv2 through transformers).
- ``metrics``: MCD curves, MGG, survival and failure kinds; ``human``: the single-step human cross-check;
  ``report``: results.json, samples.jsonl, tables and plots.
"""
