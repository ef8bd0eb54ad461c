"""CF-Eval reports: the paper-style results table, per-domain tables, judge agreement, a plot, and calibration.

``vrforge cfeval report`` reads one or more judge runs (folders with ``results.json`` and
``judgements.jsonl`` from ``vrforge cfeval judge``) and writes ``report.md`` (one row per
generating model with L1, L2, L3, PRR and RRR under each judge, like the paper's main
table; then per-domain tables and, for every model judged by two judges, their agreement:
Pearson and Spearman of S per image, Cohen's kappa of pass/fail at the gate threshold and
the mean absolute difference), ``report.json`` (the same at full precision) and
``cfeval_levels.png`` (matplotlib, Agg backend; skipped with a message when matplotlib is
not installed). The metrics are recomputed from the judgements, so ``--threshold`` and
``--weights`` can change the gate and the dimension weights without asking the judge again.

``vrforge cfeval calibrate`` compares judge-pass (S >= t, the ungated score of each image) with a
human judgement of a sample of images for t = 0.3, 0.35, ..., 0.7 and reports accuracy,
precision, recall and F1 per threshold, like the paper's calibration table. The human
file is CSV or JSONL with ``scenario_id``, ``level`` and either ``human_pass`` (0/1) or
``human_score`` (in [0, 1]; pass when >= ``--human-threshold``, default 0.5).
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vrforge.runners import cfeval_metrics as metrics
from vrforge.runners.cfeval_judge import JUDGEMENTS_FILE, RESULTS_FILE, CFEvalError

REPORT_MD = "report.md"
REPORT_JSON = "report.json"
PLOT_FILE = "cfeval_levels.png"
CALIBRATION_MD = "calibration.md"
CALIBRATION_JSON = "calibration.json"
ZERO_STATUSES = ("missing_image", "unusable_image")  # the model produced nothing usable: S = 0


@dataclass
class Run:
    """One judge run: which model, which judge, and its per-image records."""

    path: Path
    model: str
    judge: str
    records: list[dict[str, Any]]


def load_run(path: str | Path) -> Run:
    """A judge run from its folder, its results.json or its judgements.jsonl."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    results_path, judgements_path = folder / RESULTS_FILE, folder / JUDGEMENTS_FILE
    try:
        results = json.loads(results_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CFEvalError(f"{folder}: no {RESULTS_FILE} (not a `vrforge cfeval judge` output folder)") from None
    except (OSError, ValueError) as exc:
        raise CFEvalError(f"cannot read {results_path} ({exc.__class__.__name__})") from None
    if not isinstance(results, dict) or results.get("kind") != "cfeval":
        raise CFEvalError(f"{results_path} is not a CF-Eval results.json")
    records = []
    try:
        lines = judgements_path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CFEvalError(f"cannot read {judgements_path} ({exc.__class__.__name__})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CFEvalError(f"{judgements_path}:{number}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict) or not {"scenario_id", "level", "status", "S"} <= set(record):
            raise CFEvalError(f"{judgements_path}:{number}: not a CF-Eval judgement")
        records.append(record)
    return Run(folder, str(results.get("model", folder.name)), str(results.get("judge", {}).get("model", "judge")), records)


def image_scores(run: Run, weights: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """Rows for the metrics: S per prompt (recomputed from the question scores when ``weights`` is given; the mean
    of its images' S when the run judged several images per prompt)."""
    from vrforge.runners.cfeval_judge import prompt_rows

    return prompt_rows(_image_rows(run, weights))


def _image_rows(run: Run, weights: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """S of every judged image (``sample`` kept)."""
    rows = []
    for r in run.records:
        score = r["S"]
        if r["status"] == "ok" and weights:
            parts = [metrics.ScoredQuestion(q["dimension"], float(q["weight"]), float(q["score"])) for q in r["questions"]]
            score = metrics.image_score(parts, weights)
        elif r["status"] in ZERO_STATUSES:
            score = 0.0
        elif r["status"] != "ok":
            score = None
        rows.append({"scenario_id": r["scenario_id"], "domain": r.get("domain", ""), "level": r["level"], "S": score,
                     "sample": r.get("sample", 0)})
    return rows


def judged_scores(run: Run, weights: dict[str, float] | None = None,
                  statuses: Sequence[str] = ("ok",)) -> dict[tuple[str, ...], float]:
    """(scenario_id, level) -> ungated S for the images with one of ``statuses`` ((scenario_id, level, k) with
    several images per prompt)."""
    by_key = {(r["scenario_id"], r["level"], r.get("sample", 0)): r["status"] for r in run.records}
    several = any(r.get("sample", 0) for r in run.records)
    return {((row["scenario_id"], row["level"], row["sample"]) if several else (row["scenario_id"], row["level"])): row["S"]
            for row in _image_rows(run, weights)
            if by_key[(row["scenario_id"], row["level"], row["sample"])] in statuses and row["S"] is not None}


def prompt_scores(run: Run, weights: dict[str, float] | None = None) -> dict[tuple[str, str], float]:
    """(scenario_id, level) -> S of the images the model answered (an absent or unusable image scores 0); with
    several images per prompt, their mean, which is what the gate sees."""
    grouped: dict[tuple[str, str], list[float]] = defaultdict(list)
    for key, value in judged_scores(run, weights, statuses=("ok", *ZERO_STATUSES)).items():
        grouped[(key[0], key[1])].append(value)
    return {key: sum(values) / len(values) for key, values in grouped.items()}


def check_gate_inputs(run: Run, threshold: float) -> None:
    """Refuse a gate the run cannot apply: L2/L3 without L1, or a threshold that un-gates scenarios
    whose L2/L3 were never judged (``--skip-gated`` at a higher threshold) — their means would be biased."""
    from vrforge.runners.cfeval_judge import prompt_rows

    levels: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in run.records:
        levels[r["scenario_id"]][r["level"]].append(r)
    s1 = {row["scenario_id"]: row["S"] for row in prompt_rows(run.records) if row["level"] == "l1"}
    no_l1 = sorted(sid for sid, lv in levels.items() if "l1" not in lv)
    if no_l1:
        raise CFEvalError(f"{run.path}: {len(no_l1)} scenario(s) have no L1 judgement (e.g. {no_l1[0]}), so the L1 gate "
                          "cannot be applied; judge l1 too")
    ungated = sorted(sid for sid, lv in levels.items()
                     if any(r["status"] == "gated" for rows in lv.values() for r in rows) and not metrics.is_gated(s1[sid], threshold))
    if ungated:
        raise CFEvalError(f"{run.path}: at threshold {threshold:g}, {len(ungated)} scenario(s) pass the gate whose L2/L3 "
                          f"were never judged (--skip-gated), e.g. {ungated[0]}; judge them (the same `vrforge cfeval judge` "
                          "command without --skip-gated reuses the cached answers) or keep the threshold")


# --------------------------------------------------------------------------- report


def build_report(runs: Sequence[Run], threshold: float = metrics.DEFAULT_THRESHOLD,
                 weights: dict[str, float] | None = None) -> dict[str, Any]:
    """Summaries per (model, judge) and agreement per model between every pair of its judges."""
    seen: set[tuple[str, str]] = set()
    summaries: dict[str, dict[str, Any]] = defaultdict(dict)
    for run in runs:
        check_gate_inputs(run, threshold)
        if (run.model, run.judge) in seen:
            raise CFEvalError(f"two runs of {run.model} judged by {run.judge} ({run.path}): give each pair once")
        seen.add((run.model, run.judge))
        summaries[run.model][run.judge] = metrics.model_summary(image_scores(run, weights), threshold)
    agreement: dict[str, list[dict[str, Any]]] = {}
    by_model: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_model[run.model].append(run)
    for model, model_runs in sorted(by_model.items()):
        ordered = sorted(model_runs, key=lambda r: r.judge)
        pairs = []
        for i, a in enumerate(ordered):
            for b in ordered[i + 1:]:
                result = metrics.judge_agreement(judged_scores(a, weights), judged_scores(b, weights), threshold)
                pairs.append({"judge_a": a.judge, "judge_b": b.judge, **result})
        if pairs:
            agreement[model] = pairs
    judges = sorted({run.judge for run in runs})
    return {"threshold": threshold, "dimension_weights": weights or {}, "judges": judges,
            "models": {model: dict(sorted(per_judge.items())) for model, per_judge in sorted(summaries.items())},
            "agreement": agreement}


def _cell(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def report_markdown(report: dict[str, Any]) -> str:
    judges = report["judges"]
    out = ["# CF-Eval results", "",
           f"Gate: S_L1 < {report['threshold']:g} sets S_L2 = S_L3 = 0. PRR = E[S_L2] / sqrt(E[S_L1]), "
           "RRR = E[S_L3] / sqrt(E[S_L2]).", ""]
    header = ["Model"] + [f"{col} ({judge})" for judge in judges for col in ("L1", "L2", "L3", "PRR", "RRR")]
    out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for model, per_judge in report["models"].items():
        cells = [model]
        for judge in judges:
            o = per_judge.get(judge, {}).get("overall")
            cells += [_cell(o[k]) if o else "" for k in ("l1", "l2", "l3", "prr", "rrr")]
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "## Per domain", ""]
    for model, per_judge in report["models"].items():
        for judge, summary in per_judge.items():
            out += [f"### {model} — judge {judge}", "",
                    "| Domain | scenarios | L1 | L2 | L3 | PRR | RRR |", "|---|---|---|---|---|---|---|"]
            rows = [*summary["per_domain"].items(), ("all", summary["overall"])]
            for domain, s in rows:
                out.append(f"| {domain} | {s['scenarios']} | {_cell(s['l1'])} | {_cell(s['l2'])} | {_cell(s['l3'])} | "
                           f"{_cell(s['prr'])} | {_cell(s['rrr'])} |")
            out += ["", f"{summary['gated_scenarios']} scenario(s) gated.", ""]
    if report["agreement"]:
        out += ["## Judge agreement (S per image)", "",
                "| Model | Judge A | Judge B | images | Pearson | Spearman | kappa (pass/fail) | mean abs diff |",
                "|---|---|---|---|---|---|---|---|"]
        for model, pairs in report["agreement"].items():
            for p in pairs:
                out.append(f"| {model} | {p['judge_a']} | {p['judge_b']} | {p['n']} | {_cell(p['pearson'], 3)} | "
                           f"{_cell(p['spearman'], 3)} | {_cell(p['kappa'], 3)} | {_cell(p['mean_abs_diff'], 3)} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def plot_report(report: dict[str, Any], path: Path) -> bool:
    """Bars of E[S_L1..3] (top) and PRR / RRR (bottom) per model, one column per judge. False without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    judges, models = report["judges"], list(report["models"])
    fig, axes = plt.subplots(2, len(judges), figsize=(max(5.0, 1.1 * len(models) + 2.5) * len(judges), 6.5),
                             squeeze=False, sharey="row")
    rows = ((("l1", "L1"), ("l2", "L2"), ("l3", "L3")), (("prr", "PRR"), ("rrr", "RRR")))
    tops = [0.0, 0.0]
    colours = {"l1": "#4c72b0", "l2": "#dd8452", "l3": "#c44e52", "prr": "#55a868", "rrr": "#8172b3"}
    for col, judge in enumerate(judges):
        for row, keys in enumerate(rows):
            ax = axes[row][col]
            width = 0.8 / len(keys)
            for k, (key, name) in enumerate(keys):
                values = [(report["models"][m].get(judge, {}).get("overall", {}).get(key) or 0.0) for m in models]
                xs = [i + (k - (len(keys) - 1) / 2) * width for i in range(len(models))]
                ax.bar(xs, values, width=width, label=name, color=colours[key])
                tops[row] = max(tops[row], *values)
            ax.set_xticks(range(len(models)))
            ax.set_xticklabels(models, rotation=30, ha="right", fontsize=8)
            ax.grid(axis="y", alpha=0.3)
            ax.set_title(f"judge {judge}" if row == 0 else f"PRR / RRR — judge {judge}", fontsize=10)
            if col == 0:
                ax.set_ylabel("mean S" if row == 0 else "ratio")
            ax.legend(fontsize=8, loc="upper center", ncol=len(keys), frameon=False)
    for row in range(2):  # room above the bars for the legend; RRR can exceed 1
        axes[row][0].set_ylim(0, max(1.0, tops[row]) * 1.18)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    from vrforge.fileio import write_bytes_atomic

    write_bytes_atomic(path, buffer.getvalue())
    return True


# --------------------------------------------------------------------------- calibration


_TRUE = {"1", "true", "yes", "pass"}
_FALSE = {"0", "false", "no", "fail"}


def load_human(path: str | Path, human_threshold: float = 0.5) -> dict[tuple[str, str], bool]:
    """(scenario_id, level) -> human pass, from CSV or JSONL (human_pass 0/1 or human_score in [0, 1])."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CFEvalError(f"no such human judgement file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CFEvalError(f"cannot read {path} ({exc.__class__.__name__})") from None
    if path.suffix.lower() in (".jsonl", ".json"):
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append((number, json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise CFEvalError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
    else:
        rows = [(number, row) for number, row in enumerate(csv.DictReader(io.StringIO(text)), 2)]
    human: dict[tuple[str, str], bool] = {}
    for number, row in rows:
        where = f"{path}:{number}"
        if not isinstance(row, dict) or not row.get("scenario_id") or not row.get("level"):
            raise CFEvalError(f"{where}: needs scenario_id and level")
        key = (str(row["scenario_id"]), str(row["level"]).lower())
        if key[1] not in metrics.LEVELS:
            raise CFEvalError(f"{where}: unknown level {row['level']!r}")
        value = row.get("human_pass")
        if value not in (None, ""):
            text_value = str(value).strip().lower()
            if text_value not in _TRUE | _FALSE:
                raise CFEvalError(f"{where}: human_pass must be 0 or 1, got {value!r}")
            passed = text_value in _TRUE
        elif row.get("human_score") not in (None, ""):
            try:
                score = float(row["human_score"])
            except (TypeError, ValueError):
                raise CFEvalError(f"{where}: human_score is not a number: {row['human_score']!r}") from None
            if not 0 <= score <= 1:
                raise CFEvalError(f"{where}: human_score must be within [0, 1], got {score}")
            passed = score >= human_threshold
        else:
            raise CFEvalError(f"{where}: needs human_pass (0/1) or human_score")
        if key in human:
            raise CFEvalError(f"{where}: {key[0]} {key[1]} judged twice")
        human[key] = passed
    if not human:
        raise CFEvalError(f"{path} holds no human judgements")
    return human


def calibration_markdown(rows: Sequence[dict[str, Any]], run: Run) -> str:
    out = [f"# Gate calibration: {run.model} judged by {run.judge}", "",
           f"Judge-pass (S >= threshold) against human pass/fail on {rows[0]['n'] if rows else 0} images.", "",
           "| threshold | accuracy | precision | recall | F1 | TP | FP | FN | TN |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['threshold']:.2f} | {_cell(r['accuracy'], 3)} | {_cell(r['precision'], 3)} | {_cell(r['recall'], 3)} | "
                   f"{_cell(r['f1'], 3)} | {r['tp']} | {r['fp']} | {r['fn']} | {r['tn']} |")
    return "\n".join(out) + "\n"
