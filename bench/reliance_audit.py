"""Reliance-audit throughput: items x perturbations per second, batched against one image per forward pass.

Builds a LLaVA-style model from configs with random weights (nothing is downloaded; ``--hidden``
and ``--layers`` set its size, the default is a tiny one for CPU) and a golden release of
``--items`` items per question type, then runs ``vrforge.runners.reliance.audit.run_audit`` on
the whole ladder (14 perturbations, ``--repeats`` repeats of the stochastic ones, plus the
original and the counterfactual) twice: with ``--batch-size`` images per forward pass and with
one. A third run adds the internals (site effects, layer sweep, mediation) on every item.
Loading is not timed.

    python -m vrforge.bench.reliance_audit --items 4

writes bench/results/reliance_audit.json with items/s, items x perturbations/s and forward
requests/s of each run, and the batched/unbatched ratio.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from vrforge.fileio import write_json_atomic

WORDS = ("A B C D E What colour is the square circle triangle diamond ? red blue green yellow purple orange pink brown "
         "Where in image left right top bottom How many are Is there a relative to of above below yes no 1 2 3 4 "
         "Answer with option's letter only USER ASSISTANT")


def build_llava(folder: Path, hidden: int, layers: int, image_size: int) -> Path:
    from vrforge.bench.vlm_choice import build_tiny_llava

    return build_tiny_llava(folder, [WORDS], hidden, layers, image_size=image_size, head_dim=64, mlp_ratio=2, max_positions=512)


def timed_run(golden: Path, model: Path, out: Path, batch_size: int, repeats: int, internals: bool) -> dict[str, Any]:
    from vrforge.runners.reliance.audit import Settings, run_audit
    from vrforge.runners.reliance.backends import TransformersScorer

    scorer = TransformersScorer(str(model), local_files_only=True, device="cpu", dtype="float32", batch_size=batch_size)
    scorer.load()
    settings = Settings(repeats=repeats, min_confidence=0.0, internals=internals, internals_items=10 ** 6)
    started = time.perf_counter()
    result = run_audit(golden, scorer, out, settings, plots=False)
    wall = time.perf_counter() - started
    items = result.asked
    perturbations = len(settings.perturbations)
    requests = items * result.throughput["forward_requests_per_item"]
    return {"batch_size": batch_size, "internals": internals, "items": items, "wall_s": round(wall, 3),
            "items_per_s": round(items / wall, 3), "items_x_perturbations_per_s": round(items * perturbations / wall, 3),
            "forward_requests_per_s": round(requests / wall, 3),
            "requests_per_item": result.throughput["forward_requests_per_item"]}


def main(argv: list[str] | None = None) -> int:
    import os

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=4, help="items per question type (default 4: 20 items)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=16, help="model width (default 16: tiny)")
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--image-size", type=int, default=32, help="the vision tower's input size in px")
    parser.add_argument("--results", default="bench/results/reliance_audit.json")
    args = parser.parse_args(argv)
    import torch

    from vrforge.builds.reliance_build import build_reliance, load_reliance_recipe

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        recipe = Path(__file__).resolve().parents[1] / "builds" / "recipes" / "reliance-v0.1.0.toml"
        golden = build_reliance(replace(load_reliance_recipe(recipe), count=args.items), tmp_path / "golden")
        model = build_llava(tmp_path / "model", args.hidden, args.layers, args.image_size)
        runs = [timed_run(golden, model, tmp_path / f"run{k}", batch, args.repeats, internals)
                for k, (batch, internals) in enumerate(((args.batch_size, False), (1, False), (args.batch_size, True)))]
    report = {
        "bench": "reliance_audit", "model": {"kind": "llava", "hidden": args.hidden, "layers": args.layers,
                                              "image_size": args.image_size, "weights": "random"},
        "items_per_type": args.items, "repeats": args.repeats, "torch_threads": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "cpus": os.cpu_count(),
        "batched": runs[0], "unbatched": runs[1], "with_internals": runs[2],
        "ratio_batched_over_unbatched": round(runs[0]["items_x_perturbations_per_s"] / runs[1]["items_x_perturbations_per_s"], 3),
    }
    results = Path(args.results)
    write_json_atomic(results, report)
    print(json.dumps({k: report[k] for k in ("batched", "unbatched", "with_internals", "ratio_batched_over_unbatched")}, indent=1))
    print(f"wrote {results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
