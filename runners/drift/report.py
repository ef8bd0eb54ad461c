"""Reports of a scored drift run: ``results.json``, ``samples.jsonl``, ``report.md`` and plots.

Every file is a function of the chain folder and the scorers (no times, no dates), so the same
run scored twice gives the same bytes; times go to ``timings.json``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vrforge.fileio import write_bytes_atomic
from vrforge.runners.drift.chain import write_json
from vrforge.runners.drift.metrics import RELATIONS

RESULTS_FILE = "results.json"
SAMPLES_FILE = "samples.jsonl"
REPORT_FILE = "report.md"
TIMINGS_FILE = "timings.json"


def write_results(out: Path, results: dict[str, Any], samples: Sequence[dict[str, Any]]) -> None:
    write_json(out / RESULTS_FILE, results)
    lines = "".join(json.dumps(s, sort_keys=True, ensure_ascii=False) + "\n" for s in samples)
    write_bytes_atomic(out / SAMPLES_FILE, lines.encode("utf-8"))


def load_results(folder: Path) -> dict[str, Any]:
    from vrforge.errors import UserError

    path = folder / RESULTS_FILE
    if not path.is_file():
        raise UserError(f"{folder}: no {RESULTS_FILE} (score the run first: vrforge drift score {folder})")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        raise UserError(f"{path} is not valid JSON") from None


def reference_rows(paper_table: Path | None) -> list[dict[str, str]]:
    """The paper's rows (model, mcd_avg, mgg) from its table1.csv, for the side-by-side table."""
    if paper_table is None or not paper_table.is_file():
        return []
    with open(paper_table, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _fmt(value: Any, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table_markdown(runs: Sequence[tuple[str, dict[str, Any]]], reference: Sequence[dict[str, str]] = ()) -> str:
    """A table like the paper's: one row per model (MCDavg, MGG), the four relations and single-step GenEval beside."""
    head = "| model | MCDavg | MGG | " + " | ".join(RELATIONS) + " | GenEval (step 1) |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name, results in runs:
        mcd, mgg = results.get("mcd") or {}, results.get("mgg") or {}
        rel = [_fmt((mcd.get("relations", {}).get(r) or {}).get("mcd"), 4) for r in RELATIONS]
        lines.append(f"| {name} | {_fmt(mcd.get('mcd_avg'), 4)} | {_fmt(mgg.get('mgg'), 1)} | " + " | ".join(rel)
                     + f" | {_fmt(mgg.get('single_step'), 1)} |")
    for row in reference:
        lines.append(f"| {row['model']} (paper) | {float(row['mcd_avg']):.4f} | {float(row['mgg']):.1f} | "
                     + " | ".join("-" for _ in RELATIONS) + " | - |")
    return "\n".join(lines) + "\n"


def report_markdown(name: str, results: dict[str, Any], reference: Sequence[dict[str, str]] = ()) -> str:
    model = json.dumps(results.get("model"), sort_keys=True)
    parts = [f"# Semantic drift: {name}\n", f"{results.get('steps')} steps; model: `{model}`\n",
             table_markdown([(name, results)], reference)]
    mcd = results.get("mcd")
    if mcd:
        parts.append("\n## MCD curves (mean similarity to the original per step)\n")
        for relation, data in mcd["relations"].items():
            curve = ", ".join(f"{k}: {v:.4f}" for k, v in data["curve"].items())
            parts.append(f"- {relation}: MCD {data['mcd']:.4f} ({curve}); missing outputs {data['missing']}\n")
    mgg = results.get("mgg")
    if mgg:
        parts.append("\n## MGG per task (accuracy per image step, %)\n")
        steps = mgg["image_steps"]
        parts.append("| task | " + " | ".join(str(s) for s in steps) + " | mean |\n|" + "---|" * (len(steps) + 2) + "\n")
        for task, curve in mgg["per_task"].items():
            parts.append(f"| {task} | " + " | ".join(f"{curve[str(s)]:.1f}" for s in steps)
                         + f" | {mgg['per_task_mean'][task]:.1f} |\n")
        parts.append("| **mean** | " + " | ".join(f"{mgg['per_step'][str(s)]:.1f}" for s in steps) + f" | {mgg['mgg']:.1f} |\n")
        parts.append("\nSurvival (share of prompts whose checks passed at every image step so far): "
                     + ", ".join(f"{k}: {v:.3f}" for k, v in mgg["survival"].items()) + "\n")
        parts.append("\nFirst failure kinds: " + (", ".join(f"{k} {v}" for k, v in mgg["lost_kind_counts"].items()) or "none") + "\n")
    return "".join(parts)


def write_plots(out: Path, name: str, results: dict[str, Any]) -> list[Path]:
    """mcd_curves.png, mgg_curves.png, survival.png (those with data), with the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    metadata = {"Software": None}  # no version string in the file: the same results give the same bytes
    mcd = results.get("mcd")
    if mcd and mcd.get("relations"):
        fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
        for relation, data in mcd["relations"].items():
            steps = [int(k) for k in data["curve"]]
            ax.plot(steps, list(data["curve"].values()), marker="o", label=f"{relation} ({data['mcd']:.3f})")
        ax.set(xlabel="step", ylabel="similarity to the original", title=f"{name}: MCD curves")
        ax.grid(True, linestyle="--", alpha=0.5)
        ax.legend(fontsize=8)
        fig.tight_layout()
        written.append(_save(fig, out / "mcd_curves.png", metadata))
        plt.close(fig)
    mgg = results.get("mgg")
    if mgg and mgg.get("image_steps"):
        fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
        steps = mgg["image_steps"]
        for task, curve in mgg["per_task"].items():
            ax.plot(steps, [curve[str(s)] for s in steps], marker=".", alpha=0.7, label=task)
        ax.plot(steps, [mgg["per_step"][str(s)] for s in steps], color="black", linewidth=2, label=f"mean (MGG {mgg['mgg']:.1f})")
        ax.set(xlabel="step", ylabel="GenEval accuracy (%)", ylim=(-2, 102), title=f"{name}: MGG per task")
        ax.grid(True, linestyle="--", alpha=0.5)
        ax.legend(fontsize=7)
        fig.tight_layout()
        written.append(_save(fig, out / "mgg_curves.png", metadata))
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
        ax.step([0, *steps], [1.0, *[mgg["survival"][str(s)] for s in steps]], where="post")
        ax.set(xlabel="step", ylabel="share of prompts still correct", ylim=(-0.02, 1.02), title=f"{name}: survival")
        ax.grid(True, linestyle="--", alpha=0.5)
        fig.tight_layout()
        written.append(_save(fig, out / "survival.png", metadata))
        plt.close(fig)
    return written


def _save(fig: Any, path: Path, metadata: dict[str, Any]) -> Path:
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata=metadata)
    write_bytes_atomic(path, buffer.getvalue())
    return path
