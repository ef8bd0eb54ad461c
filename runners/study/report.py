"""Reports, exports and imports of study answers.

``build_report`` reads one or more study files (and optionally model runs) and gives:

- **accuracy**: per study, task and difficulty: answers, people, accuracy with a 95 % bootstrap
  interval (``runners/stats.py``, seeded) and the median time per answer;
- **agreement**: Fleiss' kappa of the options chosen (tacit-choice; pass/fail for tacit-draw)
  and Krippendorff's alpha (interval) of ratings (cfeval-rate question scores, drift-rate ratings);
- **people against a model**: for each TACIT study and each ``vrforge score`` /
  ``vrforge run tacit-choice`` results.json, on the puzzles both answered, per task: the
  people's accuracy (an item counts as solved by people when at least half its answers are
  right), the model's, and McNemar's exact test on those paired outcomes;
- **gap**: discriminative minus generative accuracy for people (a tacit-choice and a
  tacit-draw study on common puzzles) beside the model's (a discriminative and a generative run);
- **calibration** (cfeval-rate with a ``vrforge cfeval judge`` folder): the judge-pass /
  human-pass table over gate thresholds (the paper's Table 3; an image passes for people when
  its mean human S is at least 0.5) and the distribution of S_VLM - S_human;
- **drift**: the ratings and ranks given.

``write_report`` writes ``report.md``, ``report.json``, ``human_performance.md`` (the table a
release card carries) and one plot per table. Same inputs, same bytes (no timestamps).
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vrforge.errors import UserError
from vrforge.fileio import write_bytes_atomic, write_json_atomic, write_text_atomic
from vrforge.runners.study.agreement import fleiss_kappa, krippendorff_alpha
from vrforge.runners.study.store import Study, StudyError
from vrforge.schemas.layout import difficulty_rank

TACIT = ("tacit-choice", "tacit-draw")
TRACK = {"tacit-choice": "discriminative", "tacit-draw": "generative"}
DIFF_BINS = [round(-1 + 0.1 * k, 1) for k in range(21)]


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def _median(values: Sequence[float]) -> float | None:
    return round(float(statistics.median(values)), 3) if values else None


def _cell(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ci(ci: Mapping[str, Any] | None) -> str:
    return "–" if not ci else f"[{ci['low']:.2f}, {ci['high']:.2f}]"


def _order(task_difficulty: tuple[str, str]) -> tuple[str, int, str]:
    return task_difficulty[0], difficulty_rank(task_difficulty[1]), task_difficulty[1]


# ---------------------------------------------------------------- reading studies


def _load(path: str | Path) -> tuple[Study, list[dict[str, Any]]]:
    study = Study(path)
    study.check_integrity()
    return study, study.answer_rows()


def _accuracy_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    from vrforge.runners.stats import accuracy_ci

    cells: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        cells[r["item"].task, r["item"].difficulty].append(r)

    def summary(group: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        outcomes = [bool(r["result"]["correct"]) for r in group]
        seconds = [r["seconds"] for r in group if r["seconds"] is not None]
        return {"answers": len(group), "people": len({r["participant"] for r in group}), "items": len({r["item"].id for r in group}),
                "correct": sum(outcomes), "accuracy": _mean([float(o) for o in outcomes]), "ci95": accuracy_ci(outcomes),
                "median_seconds": _median(seconds)}

    table = [{"task": t, "difficulty": d, **summary(cells[t, d])} for t, d in sorted(cells, key=_order)]
    per_task = {t: summary([r for r in rows if r["item"].task == t]) for t in sorted({r["item"].task for r in rows})}
    return {"overall": summary(rows) if rows else None, "per_task_difficulty": table, "per_task": per_task}


def _participants(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    by: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["participant"]].append(r)
    out = []
    for pid in sorted(by):
        group = by[pid]
        entry = {"participant": pid, "label": group[0]["label"], "source": group[0]["source"], "answers": len(group)}
        if "correct" in group[0]["result"]:
            entry["accuracy"] = _mean([float(bool(r["result"]["correct"])) for r in group])
        seconds = [r["seconds"] for r in group if r["seconds"] is not None]
        entry["median_seconds"] = _median(seconds)
        out.append(entry)
    return out


def _tacit_agreement(kind: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    # Choices: the original option picked (so rotations do not split agreeing people); drawings: pass or fail.
    def value(r: Mapping[str, Any]) -> Any:
        return r["result"]["option"] if kind == "tacit-choice" else bool(r["result"]["correct"])

    units: dict[str, list[Any]] = defaultdict(list)
    task_of: dict[str, str] = {}
    for r in rows:
        units[r["item"].id].append(value(r))
        task_of[r["item"].id] = r["item"].task
    overall = fleiss_kappa(units)
    per_task = {task: fleiss_kappa({u: v for u, v in units.items() if task_of[u] == task}) for task in sorted(set(task_of.values()))}
    return {"statistic": "fleiss_kappa", "categories": "option chosen" if kind == "tacit-choice" else "pass / fail",
            "overall": overall, "per_task": per_task}


def _rating_agreement(kind: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    units: dict[tuple[str, int], list[float | None]] = defaultdict(list)
    for r in rows:
        if kind == "cfeval-rate":
            for q, score in enumerate(r["answer"].get("scores") or []):
                units[r["item"].id, q].append(score)
        else:
            for c, rating in enumerate(r["result"].get("ratings") or []):
                units[r["item"].id, c].append(rating)
    what = "question scores (0 / 0.5 / 1)" if kind == "cfeval-rate" else "ratings (Good 1 / Medium 0.5 / Poor 0)"
    return {"statistic": "krippendorff_alpha_interval", "values": what, "overall": krippendorff_alpha(units)}


# ---------------------------------------------------------------- model runs


def _read_run(path: str) -> dict[str, Any]:
    """A model run: a TACIT results.json (score or tacit-choice) or a cfeval judge folder."""
    from vrforge.runners.cfeval_judge import CFEvalError
    from vrforge.runners.cfeval_report import load_run
    from vrforge.runners.scoring import ScoringError, load_report

    location = Path(path)
    results = location / "results.json" if location.is_dir() else location
    try:
        kind = json.loads(results.read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        raise UserError(f"--against {path}: no readable results.json") from None
    if kind == "cfeval":
        try:
            return {"type": "cfeval", "path": path, "run": load_run(results)}
        except CFEvalError as exc:
            raise UserError(f"--against {path}: {exc}") from None
    try:
        report = load_report(results)
    except ScoringError as exc:
        raise UserError(f"--against {path}: {exc}") from None
    return {"type": "tacit", "path": path, "track": report.track, "outcomes": report.outcomes(),
            "name": Path(path).parent.name if not location.is_dir() else location.name}


def _people_by_item(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """row id -> task, difficulty and the share of its answers that are right."""
    by: dict[str, list[bool]] = defaultdict(list)
    info: dict[str, tuple[str, str]] = {}
    for r in rows:
        row_id = r["item"].private["row_id"]
        by[row_id].append(bool(r["result"]["correct"]))
        info[row_id] = (r["item"].task, r["item"].difficulty)
    return {k: {"task": info[k][0], "difficulty": info[k][1], "share": sum(v) / len(v), "answers": len(v)} for k, v in by.items()}


def _versus(kind: str, rows: Sequence[Mapping[str, Any]], run: Mapping[str, Any]) -> dict[str, Any]:
    from vrforge.runners.stats import mcnemar

    people = _people_by_item(rows)
    common = sorted(k for k in people if k in run["outcomes"])
    per_task = []
    for task in sorted({people[k]["task"] for k in common}):
        ids = [k for k in common if people[k]["task"] == task]
        pairs = [(people[k]["share"] >= 0.5, bool(run["outcomes"][k]["correct"])) for k in ids]
        per_task.append({"task": task, "puzzles": len(ids), "people": _mean([float(a) for a, _ in pairs]),
                         "model": _mean([float(b) for _, b in pairs]), "mcnemar": mcnemar(pairs)})
    pairs = [(people[k]["share"] >= 0.5, bool(run["outcomes"][k]["correct"])) for k in common]
    return {"study": kind, "run": run["path"], "track": run["track"], "same_track": TRACK[kind] == run["track"],
            "puzzles": len(common), "people": _mean([float(a) for a, _ in pairs]), "model": _mean([float(b) for _, b in pairs]),
            "mcnemar": mcnemar(pairs) if pairs else None, "per_task": per_task}


def _gap(choice: Sequence[Mapping[str, Any]], draw: Sequence[Mapping[str, Any]],
         runs: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Discriminative minus generative accuracy, for people and (where both runs are given) the model, per task."""
    d, g = _people_by_item(choice), _people_by_item(draw)
    common = sorted(set(d) & set(g))
    if not common:
        return None
    model_d = next((r["outcomes"] for r in runs if r["type"] == "tacit" and r["track"] == "discriminative"), None)
    model_g = next((r["outcomes"] for r in runs if r["type"] == "tacit" and r["track"] == "generative"), None)
    rows = []
    for task in [*sorted({d[k]["task"] for k in common}), None]:
        ids = [k for k in common if task is None or d[k]["task"] == task]
        entry: dict[str, Any] = {"task": task or "all", "puzzles": len(ids),
                                 "people_discriminative": _mean([d[k]["share"] for k in ids]),
                                 "people_generative": _mean([g[k]["share"] for k in ids])}
        entry["people_gap"] = None if entry["people_generative"] is None else round(
            entry["people_discriminative"] - entry["people_generative"], 6)
        if model_d is not None and model_g is not None:
            both = [k for k in ids if k in model_d and k in model_g]
            md = _mean([float(bool(model_d[k]["correct"])) for k in both])
            mg = _mean([float(bool(model_g[k]["correct"])) for k in both])
            entry |= {"model_puzzles": len(both), "model_discriminative": md, "model_generative": mg,
                      "model_gap": None if md is None or mg is None else round(md - mg, 6)}
        rows.append(entry)
    return {"rows": rows, "note": "per puzzle, the share of its answers that are right; gap = discriminative - generative"}


# ---------------------------------------------------------------- CF-Eval calibration


def human_scores(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(scenario_id, level) -> mean human S over the raters who gave one, and how many did."""
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        s = r["result"].get("S")
        if s is not None:
            by[r["item"].private["scenario_id"], r["item"].private["level"]].append(float(s))
    return {k: {"S": sum(v) / len(v), "raters": len(v)} for k, v in sorted(by.items())}


def _calibration(rows: Sequence[Mapping[str, Any]], run: Mapping[str, Any]) -> dict[str, Any]:
    from vrforge.runners import cfeval_metrics as metrics
    from vrforge.runners.cfeval_report import prompt_scores

    human = human_scores(rows)
    judge = prompt_scores(run["run"])
    common = [k for k in human if judge.get(k) is not None]
    passed = {k: human[k]["S"] >= metrics.DEFAULT_THRESHOLD for k in common}
    sweep = metrics.calibration_sweep({k: judge[k] for k in common}, passed, metrics.CALIBRATION_THRESHOLDS)
    diffs = [float(judge[k]) - human[k]["S"] for k in common]
    histogram = [sum(1 for x in diffs if lo <= x < hi or (hi == 1.0 and x == 1.0)) for lo, hi in zip(DIFF_BINS, DIFF_BINS[1:])]
    best = max(sweep, key=lambda r: (r["f1"] or 0.0, r["accuracy"] or 0.0, -abs(r["threshold"] - metrics.DEFAULT_THRESHOLD))) \
        if sweep else None
    return {"run": run["path"], "model": run["run"].model, "judge": run["run"].judge, "images": len(common),
            "human_only": len(human) - len(common), "rows": sweep, "best_f1_threshold": best["threshold"] if best else None,
            "difference": {"n": len(diffs), "mean": _mean(diffs), "median": _median(diffs),
                           "mean_abs": _mean([abs(x) for x in diffs]),
                           "within_0.1": _mean([float(abs(x) <= 0.1 + 1e-9) for x in diffs]),
                           "bins": DIFF_BINS, "histogram": histogram, "values": [round(x, 6) for x in diffs]}}


# ---------------------------------------------------------------- the report


def build_report(paths: Sequence[str | Path], against: Sequence[str] = ()) -> dict[str, Any]:
    runs = [_read_run(path) for path in against]
    studies = []
    loaded: dict[str, list[list[dict[str, Any]]]] = defaultdict(list)
    for path in paths:
        study, rows = _load(path)
        entry: dict[str, Any] = {"file": Path(path).name, "kind": study.kind, "title": study.info.get("title"),
                                 **study.counts(), "participants_table": _participants(rows)}
        if study.kind in TACIT:
            entry["accuracy"] = _accuracy_rows(rows)
            entry["agreement"] = _tacit_agreement(study.kind, rows)
            # Only runs of the same track: people choosing against a model choosing, drawing against drawing.
            entry["versus"] = [_versus(study.kind, rows, run) for run in runs if run["type"] == "tacit"
                               and run["track"] == TRACK[study.kind]]
        else:
            entry["agreement"] = _rating_agreement(study.kind, rows)
        if study.kind == "cfeval-rate":
            entry["human_scores"] = [{"scenario_id": k[0], "level": k[1], **v} for k, v in human_scores(rows).items()]
            entry["calibration"] = [_calibration(rows, run) for run in runs if run["type"] == "cfeval"]
        if study.kind == "drift-rate":
            ratings = [x for r in rows for x in r["result"].get("ratings") or [] if x is not None]
            entry["drift"] = {"groups_rated": len({r["item"].id for r in rows}), "ratings": len(ratings),
                              "mean_rating": _mean(ratings),
                              "shares": {label: _mean([float(x == v) for x in ratings])
                                         for label, v in (("good", 1.0), ("medium", 0.5), ("poor", 0.0))}}
        studies.append(entry)
        loaded[study.kind].append(rows)
        study.close()
    report: dict[str, Any] = {"studies": studies, "runs": [{k: v for k, v in run.items() if k in ("type", "path", "track")}
                                                          for run in runs]}
    if loaded.get("tacit-choice") and loaded.get("tacit-draw"):
        choice = [r for group in loaded["tacit-choice"] for r in group]
        draw = [r for group in loaded["tacit-draw"] for r in group]
        report["gap"] = _gap(choice, draw, runs)
    report["summary"] = [_summary_line(s) for s in studies]
    report["markdown"] = markdown(report)
    report["human_performance"] = human_performance_markdown(report)
    return report


def _summary_line(s: Mapping[str, Any]) -> str:
    line = f"{s['file']}: {s['kind']}, {s['answers']} answers to {s['items']} items from {s['participants']} participants"
    overall = (s.get("accuracy") or {}).get("overall")
    if overall:
        line += f"; accuracy {_cell(overall['accuracy'])} {_ci(overall['ci95'])}, median {_cell(overall['median_seconds'], 1)} s"
    agreement = s["agreement"]["overall"]
    value = agreement.get("kappa", agreement.get("alpha"))
    return line + f"; {'κ' if 'kappa' in agreement else 'α'} {_cell(value)}"


def markdown(report: Mapping[str, Any]) -> str:
    out = ["# Human study report", ""]
    for s in report["studies"]:
        out += [f"## {s['file']}: {s['kind']} ({s['title']})", "",
                f"{s['items']} items, {s['participants']} participants, {s['answers']} answers.", ""]
        if "accuracy" in s:
            out += ["### Accuracy per task and difficulty", "",
                    "| task | difficulty | people | answers | accuracy | 95 % CI | median s |", "|---|---|---|---|---|---|---|"]
            for r in s["accuracy"]["per_task_difficulty"]:
                out.append(f"| {r['task']} | {r['difficulty']} | {r['people']} | {r['answers']} | {_cell(r['accuracy'])} | "
                           f"{_ci(r['ci95'])} | {_cell(r['median_seconds'], 1)} |")
            o = s["accuracy"]["overall"]
            if o:
                out.append(f"| **all** | | {o['people']} | {o['answers']} | {_cell(o['accuracy'])} | {_ci(o['ci95'])} | "
                           f"{_cell(o['median_seconds'], 1)} |")
            out.append("")
        a = s["agreement"]
        out += ["### Agreement between people", ""]
        if a["statistic"] == "fleiss_kappa":
            out += [f"Fleiss' κ over the {a['categories']}, items answered by two or more people.", "",
                    "| task | items | answers | κ |", "|---|---|---|---|"]
            for task, k in a["per_task"].items():
                out.append(f"| {task} | {k['items']} | {k['answers']} | {_cell(k['kappa'])} |")
            k = a["overall"]
            out += [f"| **all** | {k['items']} | {k['answers']} | {_cell(k['kappa'])} |", ""]
        else:
            k = a["overall"]
            out += [f"Krippendorff's α (interval) over the {a['values']}: {_cell(k['alpha'])} "
                    f"({k['items']} rated units, {k['values']} values).", ""]
        for v in s.get("versus", []):
            out += [f"### People against {v['run']} ({v['track']})", "",
                    "A puzzle counts as solved by people when at least half of its answers are right; McNemar's exact test "
                    "on the puzzles both answered.", "",
                    "| task | puzzles | people | model | only people | only model | McNemar p |", "|---|---|---|---|---|---|---|"]
            for r in v["per_task"]:
                m = r["mcnemar"]
                out.append(f"| {r['task']} | {r['puzzles']} | {_cell(r['people'])} | {_cell(r['model'])} | {m['only_first']} | "
                           f"{m['only_second']} | {_cell(m['p_value'])} |")
            if v["mcnemar"]:
                m = v["mcnemar"]
                out.append(f"| **all** | {v['puzzles']} | {_cell(v['people'])} | {_cell(v['model'])} | {m['only_first']} | "
                           f"{m['only_second']} | {_cell(m['p_value'])} |")
            out.append("")
        for c in s.get("calibration", []):
            out += [f"### Gate calibration against {c['model']} judged by {c['judge']}", "",
                    f"Judge pass (S ≥ threshold) against human pass (mean human S ≥ 0.5) on {c['images']} images "
                    f"({c['human_only']} rated by people but not judged).", "",
                    "| threshold | accuracy | precision | recall | F1 | TP | FP | FN | TN |", "|---|---|---|---|---|---|---|---|---|"]
            for r in c["rows"]:
                out.append(f"| {r['threshold']:.2f} | {_cell(r['accuracy'])} | {_cell(r['precision'])} | {_cell(r['recall'])} | "
                           f"{_cell(r['f1'])} | {r['tp']} | {r['fp']} | {r['fn']} | {r['tn']} |")
            d = c["difference"]
            out += ["", f"S_VLM − S_human: mean {_cell(d['mean'])}, median {_cell(d['median'])}, mean |·| {_cell(d['mean_abs'])}, "
                        f"within ±0.1: {_cell(d['within_0.1'])} (n = {d['n']}); best F1 at threshold "
                        f"{_cell(c['best_f1_threshold'], 2)}.", ""]
        if "drift" in s:
            d = s["drift"]
            out += ["### Ratings", "", f"{d['groups_rated']} groups, {d['ratings']} ratings: mean {_cell(d['mean_rating'])}; "
                    f"Good {_cell(d['shares']['good'])}, Medium {_cell(d['shares']['medium'])}, Poor {_cell(d['shares']['poor'])}. "
                    "`vrforge study export --format drift-ratings` gives the ratings.csv that `vrforge drift human-import` "
                    "un-blinds with its key.", ""]
        out += ["### Participants", "", "| participant | label | source | answers | accuracy | median s |",
                "|---|---|---|---|---|---|"]
        for p in s["participants_table"]:
            out.append(f"| {p['participant']} | {p['label'] or '–'} | {p['source']} | {p['answers']} | {_cell(p.get('accuracy'))} | "
                       f"{_cell(p['median_seconds'], 1)} |")
        out.append("")
    gap = report.get("gap")
    if gap:
        out += ["## Generative / discriminative gap", "", f"{gap['note']}.", "",
                "| task | puzzles | people choose | people draw | people gap | model choose | model draw | model gap |",
                "|---|---|---|---|---|---|---|---|"]
        for r in gap["rows"]:
            out.append(f"| {r['task']} | {r['puzzles']} | {_cell(r['people_discriminative'])} | {_cell(r['people_generative'])} | "
                       f"{_cell(r['people_gap'])} | {_cell(r.get('model_discriminative'))} | {_cell(r.get('model_generative'))} | "
                       f"{_cell(r.get('model_gap'))} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def human_performance_markdown(report: Mapping[str, Any]) -> str:
    """The "Human performance" section a release card carries: people's accuracy per task and difficulty."""
    out = ["## Human performance", ""]
    found = False
    for s in report["studies"]:
        if "accuracy" not in s:
            continue
        found = True
        track = "choosing among the five options" if s["kind"] == "tacit-choice" else "drawing the answer"
        out += [f"People {track} ({s['participants']} participants, {s['answers']} answers; `vrforge study`).", "",
                "| task | difficulty | people | answers | accuracy | 95 % CI | median s |", "|---|---|---|---|---|---|---|"]
        for r in s["accuracy"]["per_task_difficulty"]:
            out.append(f"| {r['task']} | {r['difficulty']} | {r['people']} | {r['answers']} | {_cell(r['accuracy'])} | "
                       f"{_ci(r['ci95'])} | {_cell(r['median_seconds'], 1)} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n" if found else ""


def write_report(report: Mapping[str, Any], out: Path, plots: bool = True) -> list[Path]:
    body = {k: v for k, v in report.items() if k not in ("markdown", "human_performance")}
    paths = [out / "report.md", out / "report.json"]
    write_text_atomic(paths[0], report["markdown"])
    write_json_atomic(paths[1], body, ensure_ascii=False)
    if report["human_performance"]:
        paths.append(out / "human_performance.md")
        write_text_atomic(paths[-1], report["human_performance"])
    if plots:
        paths += plot_report(report, out)
    return paths


# ---------------------------------------------------------------- plots


def plot_report(report: Mapping[str, Any], out: Path) -> list[Path]:
    """One PNG per table; none when matplotlib is missing (a note on stderr)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        import sys

        print("plots skipped: matplotlib is not installed (pip install 'vrforge[study]')", file=sys.stderr)
        return []
    written = []

    def save(figure: Any, name: str) -> None:
        buffer = io.BytesIO()
        figure.tight_layout()
        figure.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
        plt.close(figure)
        write_bytes_atomic(out / name, buffer.getvalue())
        written.append(out / name)

    for n, s in enumerate(report["studies"]):
        stem = f"{n + 1}-{s['kind']}"
        if "accuracy" in s and s["accuracy"]["per_task_difficulty"]:
            rows = s["accuracy"]["per_task_difficulty"]
            figure, ax = plt.subplots(figsize=(max(5.0, 0.55 * len(rows) + 2), 3.6))
            x = list(range(len(rows)))
            acc = [r["accuracy"] or 0 for r in rows]
            low = [max(0.0, a - (r["ci95"] or {"low": a})["low"]) for a, r in zip(acc, rows)]
            high = [max(0.0, (r["ci95"] or {"high": a})["high"] - a) for a, r in zip(acc, rows)]
            ax.bar(x, acc, yerr=[low, high], capsize=3, color="#2f6fd6")
            ax.set_xticks(x, [f"{r['task']}\n{r['difficulty']}" for r in rows], rotation=60, ha="right", fontsize=7)
            ax.set_ylim(0, 1.05)
            ax.set_ylabel("accuracy (95 % CI)")
            ax.set_title(f"{s['kind']}: people's accuracy", fontsize=10)
            save(figure, f"{stem}-accuracy.png")
        a = s["agreement"]
        if a["statistic"] == "fleiss_kappa" and a["per_task"]:
            names = list(a["per_task"])
            figure, ax = plt.subplots(figsize=(max(4.0, 0.5 * len(names) + 2), 3.2))
            ax.bar(range(len(names)), [a["per_task"][t]["kappa"] or 0 for t in names], color="#6b8e23")
            ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
            ax.axhline(0, color="#555", linewidth=0.8)
            ax.set_ylabel("Fleiss' κ")
            ax.set_title(f"{s['kind']}: agreement between people", fontsize=10)
            save(figure, f"{stem}-agreement.png")
        for k, v in enumerate(s.get("versus", [])):
            if not v["per_task"]:
                continue
            names = [r["task"] for r in v["per_task"]]
            figure, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(names) + 2), 3.2))
            xs = range(len(names))
            ax.bar([x - 0.2 for x in xs], [r["people"] or 0 for r in v["per_task"]], 0.4, label="people", color="#2f6fd6")
            ax.bar([x + 0.2 for x in xs], [r["model"] or 0 for r in v["per_task"]], 0.4, label="model", color="#e8590c")
            ax.set_xticks(list(xs), names, rotation=60, ha="right", fontsize=7)
            ax.set_ylim(0, 1.05)
            ax.legend(fontsize=8)
            ax.set_title(f"people against the model ({v['track']})", fontsize=10)
            save(figure, f"{stem}-versus-{k + 1}.png")
        for k, c in enumerate(s.get("calibration", [])):
            figure, (left, right) = plt.subplots(1, 2, figsize=(8, 3.2))
            t = [r["threshold"] for r in c["rows"]]
            left.plot(t, [r["f1"] or 0 for r in c["rows"]], marker="o", label="F1")
            left.plot(t, [r["accuracy"] or 0 for r in c["rows"]], marker="s", label="accuracy")
            left.set_xlabel("gate threshold")
            left.set_ylim(0, 1.05)
            left.legend(fontsize=8)
            left.set_title("judge gate against people", fontsize=10)
            d = c["difference"]
            right.bar([b + 0.05 for b in d["bins"][:-1]], d["histogram"], width=0.09, color="#6b8e23")
            right.set_xlabel("S_VLM − S_human")
            right.set_ylabel("images")
            right.set_title("judge minus people", fontsize=10)
            save(figure, f"{stem}-calibration-{k + 1}.png")
        if "drift" in s:
            shares = s["drift"]["shares"]
            figure, ax = plt.subplots(figsize=(4, 3))
            ax.bar(list(shares), [v or 0 for v in shares.values()], color=["#2e7d32", "#f9a825", "#c62828"])
            ax.set_ylim(0, 1.05)
            ax.set_title("ratings given", fontsize=10)
            save(figure, f"{stem}-ratings.png")
    gap = report.get("gap")
    if gap:
        rows = [r for r in gap["rows"] if r["task"] != "all"]
        figure, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(rows) + 2), 3.2))
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r["people_gap"] or 0 for r in rows], 0.4, label="people", color="#2f6fd6")
        ax.bar([x + 0.2 for x in xs], [r.get("model_gap") or 0 for r in rows], 0.4, label="model", color="#e8590c")
        ax.axhline(0, color="#555", linewidth=0.8)
        ax.set_xticks(list(xs), [r["task"] for r in rows], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("choose − draw")
        ax.legend(fontsize=8)
        ax.set_title("generative / discriminative gap", fontsize=10)
        save(figure, "gap.png")
    return written


# ---------------------------------------------------------------- export and import

EXPORT_COLUMNS = ["kind", "participant", "label", "source", "item", "source_id", "task", "difficulty", "rotation", "answer",
                  "correct", "failed", "S", "seconds", "answered_at"]


def _export_rows(study: Study) -> list[dict[str, Any]]:
    out = []
    for r in study.answer_rows():
        item, result = r["item"], r["result"]
        out.append({"kind": study.kind, "participant": r["participant"], "label": r["label"], "source": r["source"],
                    "item": item.id, "source_id": item.source_id, "task": item.task, "difficulty": item.difficulty,
                    "rotation": r["rotation"] if study.kind == "tacit-choice" else None, "answer": r["answer"],
                    "correct": result.get("correct"), "failed": result.get("failed"), "S": result.get("S"),
                    "seconds": None if r["seconds"] is None else round(r["seconds"], 3), "answered_at": round(r["answered_at"], 3)})
    return out


def export(path: str | Path, out: Path, fmt: str | None = None) -> int:
    from vrforge.runners.drift.human import COLUMNS

    fmt = fmt or ("jsonl" if out.suffix.lower() in (".jsonl", ".json") else "csv")
    with Study(path) as study:
        study.check_integrity()
        if fmt in ("csv", "jsonl"):
            rows = _export_rows(study)
            if fmt == "jsonl":
                write_text_atomic(out, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))
            else:
                buffer = io.StringIO()
                writer = csv.DictWriter(buffer, fieldnames=EXPORT_COLUMNS, lineterminator="\n")
                writer.writeheader()
                for r in rows:
                    writer.writerow({k: json.dumps(v) if isinstance(v, dict | list) else ("" if v is None else v)
                                     for k, v in r.items()})
                write_text_atomic(out, buffer.getvalue())
            return len(rows)
        if fmt == "cfeval-human":
            if study.kind != "cfeval-rate":
                raise StudyError(f"--format cfeval-human needs a cfeval-rate study, not {study.kind}")
            scores = human_scores(study.answer_rows())
            buffer = io.StringIO()
            table = csv.writer(buffer, lineterminator="\n")
            table.writerow(["scenario_id", "level", "human_score", "raters"])
            for (sid, level), v in scores.items():
                table.writerow([sid, level, round(v["S"], 6), v["raters"]])
            write_text_atomic(out, buffer.getvalue())
            return len(scores)
        if study.kind != "drift-rate":
            raise StudyError(f"--format drift-ratings needs a drift-rate study, not {study.kind}")
        buffer = io.StringIO()
        table = csv.writer(buffer, lineterminator="\n")
        table.writerow([*COLUMNS, "rater"])
        labels = {1.0: "Good", 0.5: "Medium", 0.0: "Poor"}
        count = 0
        for r in study.answer_rows():
            private = r["item"].private
            for k, candidate in enumerate(private["candidates"]):
                rating = r["result"]["ratings"][k]
                rank = r["result"]["ranks"][k]
                if rating is None:
                    continue
                table.writerow([private["group"], candidate, private["kind"], "", "", labels[rating], "" if rank is None else rank,
                                 r["label"] or f"participant {r['participant']}"])
                count += 1
        write_text_atomic(out, buffer.getvalue())
        return count


def _table(path: Path) -> list[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StudyError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StudyError(f"cannot read {path} ({exc.__class__.__name__})") from None
    if path.suffix.lower() in (".jsonl", ".json"):
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise StudyError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
                if not isinstance(row, dict):
                    raise StudyError(f"{path}:{number}: a row must be a JSON object")
                rows.append((number, row))
        return rows
    return list(enumerate(csv.DictReader(io.StringIO(text)), 2))


def import_answers(path: str | Path, file: Path, rater: str) -> int:
    """Human answers collected elsewhere into a cfeval-rate or drift-rate study (all or nothing)."""
    from vrforge.runners.cfeval_report import _FALSE, _TRUE
    from vrforge.runners.drift.human import RATINGS

    if not rater.strip():
        raise StudyError("--rater must name the rater")
    rows = _table(file)
    with Study(path) as study:
        study.check_integrity()
        items = study.items()
        entries: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        if study.kind == "cfeval-rate":
            by_key = {it.source_id: it for it in items.values()}
            for number, row in rows:
                where = f"{file}:{number}"
                key = f"{row.get('scenario_id', '')}/{str(row.get('level', '')).lower()}"
                if key not in by_key:
                    raise StudyError(f"{where}: {key} is not an image of this study")
                passed, score = row.get("human_pass"), row.get("human_score")
                if score not in (None, ""):
                    try:
                        value = float(score)
                    except (TypeError, ValueError):
                        raise StudyError(f"{where}: human_score is not a number: {score!r}") from None
                    if not 0 <= value <= 1 or math.isnan(value):
                        raise StudyError(f"{where}: human_score must be within [0, 1], got {score!r}")
                elif passed not in (None, "") and str(passed).strip().lower() in _TRUE | _FALSE:
                    value = 1.0 if str(passed).strip().lower() in _TRUE else 0.0
                else:
                    raise StudyError(f"{where}: needs human_score in [0, 1] or human_pass (0/1)")
                entries.append((by_key[key].id, {"imported": {k: row[k] for k in sorted(row) if row[k] not in (None, "")}},
                                {"S": value}))
        elif study.kind == "drift-rate":
            owner = {c: (it, k) for it in items.values() for k, c in enumerate(it.private["candidates"])}
            per_item: dict[str, dict[int, tuple[float, int | None]]] = defaultdict(dict)
            for number, row in rows:
                where = f"{file}:{number}"
                candidate = str(row.get("candidate", "")).strip()
                if candidate not in owner:
                    raise StudyError(f"{where}: candidate {candidate!r} is not in this study")
                text = str(row.get("rating", "")).strip().lower()
                if not text:
                    continue
                if text not in RATINGS:
                    raise StudyError(f"{where}: rating must be Good, Medium or Poor, got {row.get('rating')!r}")
                rank_text = str(row.get("rank") or "").strip()
                if rank_text and not rank_text.isdigit():
                    raise StudyError(f"{where}: rank must be a whole number, got {rank_text!r}")
                item, k = owner[candidate]
                per_item[item.id][k] = (RATINGS[text], int(rank_text) if rank_text else None)
            for item_id, given in per_item.items():
                count = len(items[item_id].private["candidates"])
                ratings = [given[k][0] if k in given else None for k in range(count)]
                ranks = [given[k][1] if k in given else None for k in range(count)]
                entries.append((item_id, {"imported": {"ratings": ratings, "ranks": ranks}}, {"ratings": ratings, "ranks": ranks}))
        else:
            raise StudyError(f"answers import into cfeval-rate and drift-rate studies; {study.kind} answers come from the browser")
        if not entries:
            raise StudyError(f"{file} holds no answers")
        return study.import_answers(rater, f"import:{file.name}", entries)


def accuracy_table(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The accuracy tables for answer rows (``Study.answer_rows``) of a TACIT study."""
    return _accuracy_rows(list(rows))
