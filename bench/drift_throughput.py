"""Semantic-drift chain throughput and the per-step cost split, with tiny random-weight models.

Builds tiny models from configs (nothing is downloaded): a LLaVA captioner, a Stable Diffusion
pipeline (64 px, 2 denoising steps), and the scorers (sentence-transformers BERT, DINOv2, CLIP,
OWLv2). Then, over N pairs and M GenEval prompts for G steps (default 20):

- the runner (``vrforge.runners.drift.run.run_drift``): per-step seeds, PNG/CSV files written
  atomically, resume checks, manifest;
- a plain in-memory loop over the same model and chains (no files), as the baseline;
- scoring (``score_run``): MCD embeddings and MGG detection.

Model loading is timed apart. Writes bench/results/drift_throughput.json: chain steps per
second of both loops and their ratio (target: runner >= 0.8 x plain), and the cost split per
step (caption, generate, embed, detect) in milliseconds per item and in shares of the total.

    python -m vrforge.bench.drift_throughput                  # 4 pairs, 6 GenEval prompts, G = 20

The tiny LLaVA builder lives in the repository's tests folder: run this from a checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_RATIO = 0.80
FALLBACK_SPECS: list[dict[str, Any]] = [
    {"tag": "single_object", "include": [{"class": "cat", "count": 1}], "prompt": "a photo of a cat"},
    {"tag": "counting", "include": [{"class": "clock", "count": 2}], "exclude": [{"class": "clock", "count": 3}],
     "prompt": "a photo of two clocks"},
    {"tag": "colors", "include": [{"class": "car", "count": 1, "color": "blue"}], "prompt": "a photo of a blue car"},
]


def _repository() -> Path:
    """The checkout above this file: the GenEval metadata sits in ../shared/external beside it."""
    here = Path(__file__).resolve().parent
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    return here


def build_models(work: Path) -> dict[str, Path]:
    from vrforge.bench.drift_tiny import build_clip, build_dino, build_owlv2, build_sentence
    from vrforge.bench.gpu_t2i import build_pipeline
    from vrforge.bench.vlm_choice import build_tiny_llava

    build_pipeline("sd15", work / "sd-build", tiny=True).save_pretrained(work / "sd")
    corpus = ["a photo of a red cat on the left of a dog", "USER: ASSISTANT: Describe this image in one sentence."]
    build_tiny_llava(work / "llava", corpus, hidden=16, layers=1, image_size=32)
    return {"sd": work / "sd", "llava": work / "llava", "clip": build_clip(work / "clip"), "dino": build_dino(work / "dino"),
            "owl": build_owlv2(work / "owl"), "sentence": build_sentence(work / "sentence")}


def _inputs(pairs: int, prompts: int) -> tuple[list[Any], list[Any]]:
    import numpy as np
    from PIL import Image

    from vrforge.runners.drift.inputs import GenEvalSample, PairSample, load_geneval

    rng = np.random.Generator(np.random.PCG64(0))
    samples = [PairSample(f"p{k:03d}", f"a photo of a red cat number {k}",
                          Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8))) for k in range(pairs)]
    metadata = _repository().parent / "shared" / "external" / "geneval" / "prompts" / "evaluation_metadata.jsonl"
    if metadata.is_file():
        geneval = load_geneval(metadata)
        # an even spread over the six tasks
        by_tag: dict[str, list[Any]] = {}
        for sample in geneval:
            by_tag.setdefault(sample.tag, []).append(sample)
        chosen = [s for k in range(prompts) for tag in sorted(by_tag) if k < len(by_tag[tag]) for s in [by_tag[tag][k]]][:prompts]
    else:
        chosen = [GenEvalSample(str(k), spec["prompt"], spec) for k, spec in enumerate(FALLBACK_SPECS * prompts)][:prompts]
    return samples, chosen


def plain_loop(model: Any, tracks: list[Any], steps: int, seed: int, batch_size: int) -> float:
    """The same chains in memory: no files, no resume checks, no manifest."""
    from vrforge.runners.drift import backends
    from vrforge.runners.drift.chain import chain_seed, modality

    started = time.perf_counter()
    for track in tracks:
        current: dict[str, Any] = {
            i: (track.texts.get(i) if modality(track.direction, 0) == "text" else track.images[i]) for i in track.ids}
        for step in range(1, steps + 1):
            for start in range(0, len(track.ids), batch_size):
                batch = track.ids[start:start + batch_size]
                outputs: list[Any]  # images after a drawing step, texts after a describing one
                if modality(track.direction, step) == "image":
                    seeds = [chain_seed(seed, track, i, step) for i in batch]
                    outputs = backends.generate_batch(model, [current[i] for i in batch], seeds)
                else:
                    outputs = backends.caption_batch(model, [current[i] for i in batch])
                current.update(zip(batch, outputs))
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--geneval", type=int, default=6, help="GenEval prompts (spread over the tasks)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--results", default="bench/results/drift_throughput.json")
    args = parser.parse_args(argv)

    import torch

    from vrforge.runners.drift import chain
    from vrforge.runners.drift.backends import DiffusersGenerator, PairModel, VlmCaptioner
    from vrforge.runners.drift.run import ScoringConfig, build_scorers, run_drift, score_run

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    pairs, geneval = _inputs(args.pairs, args.geneval)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        models = build_models(work / "models")
        build_seconds = time.perf_counter() - t0

        def make_model() -> PairModel:
            return PairModel(VlmCaptioner(str(models["llava"]), max_new_tokens=args.max_new_tokens, local_files_only=True),
                             DiffusersGenerator(str(models["sd"]), steps=2, size=64, local_files_only=True))

        model = make_model()
        manifest, timings = run_drift(work / "run", model, pairs=pairs, geneval=geneval, steps=args.steps, seed=0,
                                      batch_size=args.batch_size, progress=False, model_settings=model.describe(), inputs={})
        runner_seconds = manifest["runs"][-1]["wall_seconds"] - timings.load_seconds
        tracks = chain.plan_tracks(work / "unused", pairs, geneval)
        plain_seconds = plain_loop(model, tracks, args.steps, 0, args.batch_size)

        config = ScoringConfig(text_embedder=str(models["sentence"]), image_embedder=str(models["dino"]), clip=str(models["clip"]),
                               detector=str(models["owl"]), local_files_only=True)
        scorers = build_scorers(config, work / "run", {s.id: s.spec for s in geneval})
        t0 = time.perf_counter()
        score_run(work / "run", scorers, plots=False)
        score_seconds = time.perf_counter() - t0

    chain_steps = (2 * len(pairs) + len(geneval)) * args.steps
    image_steps = len(geneval) * (args.steps // 2 + args.steps % 2)
    embedded = int(scorers.timings["embedded"])  # texts and images looked up (cache hits included: the originals)
    per_item = {
        "caption_ms": 1000 * timings.caption_seconds / max(1, timings.captions),
        "generate_ms": 1000 * timings.generate_seconds / max(1, timings.images),
        "embed_ms": 1000 * scorers.timings["embed_seconds"] / max(1, embedded),
        "detect_ms": 1000 * scorers.timings["detect_seconds"] / max(1, int(scorers.timings["detected"])),
    }
    totals = {"caption": timings.caption_seconds, "generate": timings.generate_seconds,
              "embed": scorers.timings["embed_seconds"], "detect": scorers.timings["detect_seconds"]}
    whole = sum(totals.values())
    report = {
        "benchmark": "drift_throughput",
        "steps": args.steps, "pairs": len(pairs), "geneval_prompts": len(geneval), "batch_size": args.batch_size,
        "chains": 2 * len(pairs) + len(geneval), "chain_steps": chain_steps,
        "captions": timings.captions, "images": timings.images, "embedded": embedded, "detected_images": image_steps,
        "model_build_seconds": round(build_seconds, 3), "model_load_seconds": round(timings.load_seconds, 3),
        "scoring_load_seconds": round(scorers.timings["load_seconds"], 3),
        "runner_seconds": round(runner_seconds, 3), "plain_loop_seconds": round(plain_seconds, 3),
        "runner_steps_per_second": round(chain_steps / runner_seconds, 3),
        "plain_steps_per_second": round(chain_steps / plain_seconds, 3),
        "ratio": round(plain_seconds / runner_seconds, 3), "target_ratio": TARGET_RATIO,
        "score_seconds": round(score_seconds, 3),
        "per_item_ms": {k: round(v, 2) for k, v in per_item.items()},
        "split_share": {k: round(v / whole, 4) for k, v in totals.items()} if whole else {},
        "threads": torch.get_num_threads(), "cpus": os.cpu_count(),
        "note": "tiny random-weight models (64 px SD, 2 denoising steps); timings on a shared machine are contended",
    }
    out = Path(args.results)
    out.parent.mkdir(parents=True, exist_ok=True)
    chain.write_json(out, report)
    print(json.dumps(report, indent=2))
    print(f"runner {report['runner_steps_per_second']} chain steps/s vs plain {report['plain_steps_per_second']} "
          f"(ratio {report['ratio']}, target >= {TARGET_RATIO}); wrote {out}")
    return 0 if report["ratio"] >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
