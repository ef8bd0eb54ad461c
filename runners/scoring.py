"""Scoring of the TACIT generative and discriminative tracks, and the constructive-selective gap.

This module is the logic and the report files; ``vrforge.commands.score`` is the ``vrforge score`` command line.

Generative track: a model draws an answer image per puzzle, stored under the reference
release's naming ``model_output/<task>/<difficulty>/<task>_<difficulty>_<NNNN>.png``
(NNNN = the row's ``index``, zero-padded to 4). Every image is checked by its task's
verifier against the row's ``meta``; a missing file and an unusable image count as wrong
and are counted apart. The report gives accuracy overall, per task, per difficulty and per
task x difficulty, and, per task, how often each check failed (why answers fail).

Discriminative track: a model picks one of the five options; its answers come in the
reference format ``{"results": [{puzzle_id, task, difficulty, correct_index,
selected_index}]}``, read as-is. An entry is correct when ``selected_index ==
correct_index``. Entries with an unknown ``puzzle_id``, an index outside 0..4, a task or
difficulty contradicting the dataset, or a repeated ``puzzle_id`` (the first is kept) are
rejected and listed with the reason, never a traceback; a ``selected_index`` of null (the
model gave no parsable answer) counts as wrong. ``correct_index`` is also compared with the
dataset's ``answer_index`` and disagreements are listed. ``puzzle_id`` is the dataset id
(``maze-hard-0042``); the file-name form ``maze_hard_0042`` is accepted as well.

Both tracks write ``results.json`` (``{format_version, kind, summary, counts}``, the layout of
``runners/outputs.py``; sorted keys, no timestamps, so the same inputs give the same bytes)
and ``samples.jsonl`` (one line per item), lmms-eval style, each written under a temporary
name and renamed. ``load_report`` also reads the flat summary an older version wrote.

The constructive-selective gap compares, for the puzzles scored in both tracks, generative
accuracy with discriminative accuracy, overall, per task and per difficulty;
``gap = discriminative - generative`` (how much better the model picks than it draws), with
McNemar's exact test on the paired outcomes (``runners/stats.py``). Given the
``results.json`` of ``vrforge run tacit-choice`` as the discriminative side, the gap is also
computed on circular accuracy (a puzzle counts only when every rotation picks the solution).
Every overall accuracy carries a 95 % bootstrap interval over puzzles (seeded: same bytes).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from vrforge.errors import UserError
from vrforge.fileio import jsonl_text, write_bytes_atomic, write_json_atomic
from vrforge.schemas.layout import (
    MAIN_RESOLUTION,
    MANIFEST_FILE,
    OUTPUTS_FOLDER,
    difficulty_rank,
    output_name,
    parse_config_name,
    parse_output_stem,
)
from vrforge.types import OPTION_COUNT

FORMAT_VERSION = 1
MISSING_REASON = "missing output"
RESULTS_FILE = "results.json"
SAMPLES_FILE = "samples.jsonl"
_ROW_COLUMNS = ("id", "task", "difficulty", "index", "meta", "answer_index")


class ScoringError(UserError):
    """Input that cannot be scored (missing folder, no shards, unreadable JSON): one line for the user."""


@dataclass
class Report:
    """A scored track: ``summary`` is what ``results.json`` holds, ``samples`` one dict per item."""

    track: str
    summary: dict[str, Any]
    samples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def accuracy(self) -> float | None:
        return self.summary["overall"]["accuracy"]

    def to_dict(self) -> dict[str, Any]:
        return self.summary

    def outcomes(self) -> dict[str, dict[str, Any]]:
        """id -> {task, difficulty, correct[, circular]} for every scored item (failed items left out)."""
        key = "passed" if self.track == "generative" else "correct"
        out = {}
        for s in self.samples:
            if s.get("status", "ok") != "ok":
                continue
            out[s["id"]] = {"task": s["task"], "difficulty": s["difficulty"], "correct": bool(s[key])}
            if s.get("circular_correct") is not None:
                out[s["id"]]["circular"] = bool(s["circular_correct"])
        return out

    def write(self, out_dir: str | Path) -> tuple[Path, Path]:
        """Write ``results.json`` and ``samples.jsonl`` into ``out_dir`` (atomically); returns both paths."""

        out = Path(out_dir)
        results_path, samples_path = out / RESULTS_FILE, out / SAMPLES_FILE
        write_bytes_atomic(samples_path, jsonl_text(self.samples).encode("utf-8"))
        write_json_atomic(results_path, self.envelope(), ensure_ascii=False)
        return results_path, samples_path

    def envelope(self) -> dict[str, Any]:
        """``results.json``: the summary inside the layout every runner shares."""
        overall = self.summary["overall"]
        return {"format_version": FORMAT_VERSION, "kind": f"score-{self.track}", "summary": self.summary,
                "counts": {"items": overall["n"], "correct": overall["correct"]}}


def load_report(results_json: str | Path) -> Report:
    """Read a ``results.json`` written by this module and the ``samples.jsonl`` beside it."""
    path = Path(results_json)
    summary = _read_json(path)
    if isinstance(summary, dict) and isinstance(summary.get("summary"), dict) and str(summary.get("kind")).startswith("score-"):
        summary = summary["summary"]
    elif isinstance(summary, dict) and summary.get("kind") == "tacit-choice" and isinstance(summary.get("summary"), dict):
        summary = {**summary["summary"], "track": "discriminative"}  # a tacit-choice run: its samples have every rotation
    if not isinstance(summary, dict) or summary.get("track") not in ("generative", "discriminative"):
        raise ScoringError(f"{path} is not a vrforge score results.json (no 'track': generative/discriminative)")
    samples_path = path.parent / summary.get("samples_file", SAMPLES_FILE)
    try:
        lines = samples_path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ScoringError(f"cannot read {samples_path} beside {path.name} ({exc.__class__.__name__})") from None
    samples = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            samples.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ScoringError(f"{samples_path}:{number}: not valid JSON ({exc.msg})") from None
    return Report(summary["track"], summary, samples)


# --------------------------------------------------------------------------- dataset


def dataset_configs(dataset_dir: Path) -> dict[int, dict[str, Path]]:
    """resolution -> task -> config folder, from ``data/<config>/``."""
    data = Path(dataset_dir) / "data"
    found: dict[int, dict[str, Path]] = defaultdict(dict)
    if data.is_dir():
        for folder in sorted(p for p in data.iterdir() if p.is_dir()):
            task, resolution = parse_config_name(folder.name)
            found[resolution][task] = folder
    return dict(found)


def chosen_configs(folder: Path, resolution: int | None, tasks: Sequence[str] | None) -> dict[str, Path]:
    """task -> config folder of a built TACIT dataset at ``resolution`` (None: the main
    resolution when present, else the smallest), limited to ``tasks``; ScoringError otherwise."""
    if not folder.is_dir():
        raise ScoringError(f"no such dataset folder: {folder}")
    configs = dataset_configs(folder)
    if not configs:
        raise ScoringError(f"{folder} has no data/<config>/ parquet folders (not a built dataset folder)")
    if resolution is None:
        resolution = MAIN_RESOLUTION if MAIN_RESOLUTION in configs else min(configs)
    if resolution not in configs:
        raise ScoringError(f"{folder} has no {resolution} px configs (found: {', '.join(f'{r} px' for r in sorted(configs))})")
    chosen = configs[resolution]
    if tasks:
        unknown = [t for t in tasks if t not in chosen]
        if unknown:
            raise ScoringError(f"task(s) not in {folder} at {resolution} px: {', '.join(unknown)} "
                               f"(present: {', '.join(sorted(chosen))})")
        chosen = {t: chosen[t] for t in tasks}
    return chosen


def read_rows(dataset_dir: str | Path, config_resolution: int | None = MAIN_RESOLUTION,
              tasks: Sequence[str] | None = None, with_puzzle: bool = False) -> list[dict[str, Any]]:
    """The dataset's rows (id, task, difficulty, index, meta, answer_index) without any image;
    ``with_puzzle`` adds ``puzzle``: the bare puzzle's PNG bytes (the generative track aligns
    every answer with it).

    ``config_resolution=None`` takes the main resolution when present, else the smallest.
    Rows are ordered by task, difficulty (easy, medium, hard) and index.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(dataset_dir)
    chosen = chosen_configs(folder, config_resolution, tasks)
    rows: list[dict[str, Any]] = []
    for task in sorted(chosen):
        shards = sorted(chosen[task].glob("*.parquet"))
        if not shards:
            raise ScoringError(f"{chosen[task]} holds no parquet shard")
        for shard in shards:
            try:
                table = pq.read_table(shard, columns=list(_ROW_COLUMNS) + (["puzzle"] if with_puzzle else []))
            except (pa.ArrowException, OSError) as exc:
                raise ScoringError(f"cannot read {shard} ({exc.__class__.__name__}: {str(exc).splitlines()[0]})") from None
            for row in table.to_pylist():
                if with_puzzle:
                    row["puzzle"] = (row["puzzle"] or {}).get("bytes")
                rows.append(row)
    rows.sort(key=lambda r: (r["task"], difficulty_rank(r["difficulty"]), r["difficulty"], r["index"]))
    seen: set[str] = set()
    for row in rows:
        if row["id"] in seen:
            raise ScoringError(f"{folder}: puzzle id {row['id']} appears twice at {config_resolution} px")
        seen.add(row["id"])
    return rows


def dataset_info(dataset_dir: Path) -> dict[str, Any]:
    """name, version and config hash of a built dataset, from its manifest (empty when unreadable)."""
    try:
        manifest = json.loads((Path(dataset_dir) / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(manifest, dict):
        return {}
    return {k: manifest[k] for k in ("name", "version", "config_hash") if k in manifest}


# --------------------------------------------------------------------------- aggregation


def _acc(correct: int, n: int) -> dict[str, Any]:
    return {"n": n, "correct": correct, "accuracy": round(correct / n, 6) if n else None}


class _Tally:
    def __init__(self) -> None:
        self.counts: dict[Any, list[int]] = defaultdict(lambda: [0, 0])

    def add(self, key: Any, ok: bool) -> None:
        cell = self.counts[key]
        cell[0] += int(ok)
        cell[1] += 1

    def table(self) -> dict[Any, dict[str, Any]]:
        return {key: _acc(c, n) for key, (c, n) in self.counts.items()}


def aggregate(items: Iterable[tuple[str, str, bool]]) -> dict[str, Any]:
    """overall (with a 95 % bootstrap interval) / per_task / per_difficulty / per_task_difficulty from (task, difficulty, correct)."""
    from vrforge.runners.stats import accuracy_ci

    items = list(items)
    overall, tasks, diffs, both = _Tally(), _Tally(), _Tally(), _Tally()
    for task, difficulty, ok in items:
        overall.add("all", ok)
        tasks.add(task, ok)
        diffs.add(difficulty, ok)
        both.add((task, difficulty), ok)
    per_td: dict[str, dict[str, Any]] = defaultdict(dict)
    for (task, difficulty), value in both.table().items():
        per_td[task][difficulty] = value
    return {
        "overall": {**overall.table().get("all", _acc(0, 0)), "ci95": accuracy_ci([ok for _, _, ok in items])},
        "per_task": tasks.table(),
        "per_difficulty": diffs.table(),
        "per_task_difficulty": dict(per_td),
    }


# --------------------------------------------------------------------------- generative


def _outputs_root(outputs_dir: Path) -> Path:
    """Accept the ``model_output`` folder itself or a folder holding it."""
    inner = outputs_dir / OUTPUTS_FOLDER
    return inner if inner.is_dir() else outputs_dir


def _verify_one(job: tuple[str, str, str, bytes | None]) -> dict[str, Any]:
    """Verify one answer image (aligned with the row's puzzle image when it has one); never
    raises (a verifier crash is recorded as unusable)."""
    from vrforge.registry import UnknownTask, get_task

    task, meta_text, path, puzzle = job
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return {"missing": True, "passed": False, "usable": False, "failed": [], "reason": MISSING_REASON}
    except OSError as exc:
        return {"missing": False, "passed": False, "usable": False, "failed": [],
                "reason": f"unusable input: cannot read ({exc.__class__.__name__})"}
    try:
        spec = get_task(task)
        verdict = spec.check(json.loads(meta_text), data, puzzle=puzzle)
    except UnknownTask:
        return {"missing": False, "passed": False, "usable": False, "failed": [], "reason": f"unknown task {task!r}"}
    except Exception as exc:  # noqa: BLE001 - one bad item must not end the run
        return {"missing": False, "passed": False, "usable": False, "failed": [],
                "reason": f"verifier error: {exc.__class__.__name__}: {exc}"}
    return {"missing": False, "passed": bool(verdict.passed), "usable": bool(verdict.usable),
            "failed": list(verdict.failed), "reason": verdict.reason}


def _map_verify(jobs: list[tuple[str, str, str, bytes | None]], workers: int, progress: bool) -> Iterator[dict[str, Any]]:
    from tqdm import tqdm

    bar = tqdm(total=len(jobs), desc="verify outputs", unit="image", disable=not progress, dynamic_ncols=True)
    try:
        if workers <= 1 or len(jobs) < 2:
            for job in jobs:
                yield _verify_one(job)
                bar.update()
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                for result in pool.map(_verify_one, jobs, chunksize=max(1, min(16, len(jobs) // (workers * 4)))):
                    yield result
                    bar.update()
    finally:
        bar.close()


def score_generative(dataset_dir: str | Path, outputs_dir: str | Path, config_resolution: int = MAIN_RESOLUTION,
                     tasks: Sequence[str] | None = None, workers: int = 1, progress: bool = False) -> Report:
    """Verify every answer image under ``outputs_dir`` against the dataset's rows.

    ``config_resolution`` picks which configs' rows (and so which ``meta``) to score against;
    the verifiers accept any resolution, so this matters only when metas differ by size.
    """
    dataset_dir, outputs_dir = Path(dataset_dir), Path(outputs_dir)
    if not outputs_dir.is_dir():
        raise ScoringError(f"no such outputs folder: {outputs_dir}")
    if workers < 1:
        raise ScoringError(f"workers must be at least 1, got {workers}")
    rows = read_rows(dataset_dir, config_resolution, tasks, with_puzzle=True)
    root = _outputs_root(outputs_dir)
    names = [output_name(r["task"], r["difficulty"], r["index"]) for r in rows]
    jobs = [(r["task"], r["meta"], str(root / name), r.pop("puzzle")) for r, name in zip(rows, names)]

    samples: list[dict[str, Any]] = []
    failed_checks: dict[str, Counter] = defaultdict(Counter)
    failed_by_difficulty: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    missing: Counter = Counter()
    unusable: Counter = Counter()
    unusable_reasons: Counter = Counter()
    for row, name, result in zip(rows, names, _map_verify(jobs, workers, progress)):
        task = row["task"]
        failed_checks[task].update(result["failed"])
        failed_by_difficulty[task][row["difficulty"]].update(result["failed"])
        if result["missing"]:
            missing[task] += 1
        elif not result["usable"]:
            unusable[task] += 1
            unusable_reasons[result["reason"]] += 1
        samples.append({"id": row["id"], "task": task, "difficulty": row["difficulty"], "index": row["index"],
                        "output": name, **result})

    summary = {
        "track": "generative",
        "format_version": FORMAT_VERSION,
        "dataset": dataset_info(dataset_dir),
        "config_resolution": config_resolution,
        "samples_file": SAMPLES_FILE,
        **aggregate((s["task"], s["difficulty"], s["passed"]) for s in samples),
        "failed_checks": {task: dict(sorted(failed_checks[task].items())) for task in sorted({r["task"] for r in rows})},
        "failed_checks_per_difficulty": {
            task: {d: dict(sorted(failed_by_difficulty[task][d].items()))
                   for d in sorted({r["difficulty"] for r in rows if r["task"] == task}, key=difficulty_rank)}
            for task in sorted({r["task"] for r in rows})},
        "missing": {"total": sum(missing.values()), "per_task": dict(missing)},
        "unusable": {"total": sum(unusable.values()), "per_task": dict(unusable), "reasons": dict(unusable_reasons)},
    }
    return Report("generative", summary, samples)


# --------------------------------------------------------------------------- discriminative


def _is_index(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def read_reference_results(results_json: str | Path) -> list[Any]:
    """The ``results`` list of a reference-format file (entries not yet validated)."""
    path = Path(results_json)
    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ScoringError(f'{path} is not in the reference format {{"results": [...]}}')
    return data["results"]


def write_reference_results(path: str | Path, entries: Iterable[Mapping[str, Any]]) -> Path:
    """Write entries in the reference format ``{"results": [{puzzle_id, task, difficulty, correct_index, selected_index}]}``."""

    keys = ("puzzle_id", "task", "difficulty", "correct_index", "selected_index")
    results = []
    for entry in entries:
        missing = [k for k in keys if k not in entry]
        if missing:
            raise ValueError(f"reference result entry lacks {', '.join(missing)}: {dict(entry)!r}")
        results.append({k: entry[k] for k in keys})
    path = Path(path)
    write_json_atomic(path, {"results": results}, ensure_ascii=False)
    return path


def score_discriminative(dataset_dir: str | Path, results_json: str | Path | None = None, *,
                         entries: Sequence[Any] | None = None, config_resolution: int | None = None) -> Report:
    """Score reference-format five-way choices against the dataset (``entries`` instead of a file is allowed)."""
    dataset_dir = Path(dataset_dir)
    if entries is None:
        if results_json is None:
            raise ScoringError("give a results file or entries")
        entries = read_reference_results(results_json)
    rows = read_rows(dataset_dir, config_resolution)
    by_id = {r["id"]: r for r in rows}
    by_key = {(r["task"], r["difficulty"], r["index"]): r for r in rows}

    samples: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    mismatches: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    no_selection = 0

    def reject(position: int, puzzle_id: Any, reason: str) -> None:
        rejected.append({"entry": position, "puzzle_id": puzzle_id if isinstance(puzzle_id, str) else None, "reason": reason})

    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            reject(position, None, "entry is not an object")
            continue
        puzzle_id = entry.get("puzzle_id")
        if not isinstance(puzzle_id, str):
            reject(position, None, "missing or non-string puzzle_id")
            continue
        row = by_id.get(puzzle_id)
        if row is None:
            key = parse_output_stem(puzzle_id)
            if key:
                row = by_key.get(key)
        if row is None:
            reject(position, puzzle_id, "unknown puzzle_id")
            continue
        if "task" in entry and entry["task"] != row["task"]:
            reject(position, puzzle_id, f"task {entry['task']!r} does not match the dataset's {row['task']!r}")
            continue
        if "difficulty" in entry and entry["difficulty"] != row["difficulty"]:
            reject(position, puzzle_id, f"difficulty {entry['difficulty']!r} does not match the dataset's {row['difficulty']!r}")
            continue
        correct_index = entry.get("correct_index")
        if not _is_index(correct_index) or not 0 <= correct_index < OPTION_COUNT:
            reject(position, puzzle_id, f"correct_index {correct_index!r} is not an option index 0..{OPTION_COUNT - 1}")
            continue
        selected = entry.get("selected_index")
        if selected is not None and (not _is_index(selected) or not 0 <= selected < OPTION_COUNT):
            reject(position, puzzle_id, f"selected_index {selected!r} is not an option index 0..{OPTION_COUNT - 1}")
            continue
        if row["id"] in seen:
            reject(position, puzzle_id, f"duplicate puzzle_id (entry {seen[row['id']]} kept)")
            continue
        seen[row["id"]] = position
        if selected is None:
            no_selection += 1
        if correct_index != row["answer_index"]:
            mismatches.append({"id": row["id"], "correct_index": correct_index, "answer_index": row["answer_index"]})
        samples.append({"id": row["id"], "task": row["task"], "difficulty": row["difficulty"], "index": row["index"],
                        "correct_index": correct_index, "selected_index": selected, "answer_index": row["answer_index"],
                        "correct": selected == correct_index})

    samples.sort(key=lambda s: (s["task"], difficulty_rank(s["difficulty"]), s["difficulty"], s["index"]))
    reasons = Counter(_reason_kind(r["reason"]) for r in rejected)
    answered = {s["id"] for s in samples}
    summary = {
        "track": "discriminative",
        "format_version": FORMAT_VERSION,
        "dataset": dataset_info(dataset_dir),
        "samples_file": SAMPLES_FILE,
        **aggregate((s["task"], s["difficulty"], s["correct"]) for s in samples),
        "entries": len(entries),
        "no_selection": no_selection,
        "not_answered": {"total": len(rows) - len(answered),
                         "per_task": dict(Counter(r["task"] for r in rows if r["id"] not in answered))},
        "rejected": {"total": len(rejected), "reasons": dict(reasons), "entries": rejected},
        "answer_index_mismatches": {"total": len(mismatches), "entries": mismatches},
        "chance": round(1 / OPTION_COUNT, 6),
    }
    return Report("discriminative", summary, samples)


def _reason_kind(reason: str) -> str:
    for kind in ("unknown puzzle_id", "duplicate puzzle_id", "correct_index", "selected_index", "task", "difficulty"):
        if reason.startswith(kind):
            return {"correct_index": "correct_index out of range", "selected_index": "selected_index out of range",
                    "task": "task mismatch", "difficulty": "difficulty mismatch"}.get(kind, kind)
    return reason


# --------------------------------------------------------------------------- gap


def _as_report(report: Report | str | Path) -> Report:
    if isinstance(report, Report):
        return report
    if isinstance(report, str | Path):
        return load_report(report)
    raise TypeError(f"expected a Report or a results.json path, got {type(report).__name__}")


def constructive_selective_gap(generative_report: Report | str | Path, discriminative_report: Report | str | Path) -> dict[str, Any]:
    """Generative vs discriminative accuracy on the puzzles scored in both; gap = discriminative - generative."""
    gen, disc = _as_report(generative_report), _as_report(discriminative_report)
    if gen.track != "generative" or disc.track != "discriminative":
        raise ScoringError(f"the gap needs a generative then a discriminative report (got {gen.track}, {disc.track})")
    g, d = gen.outcomes(), disc.outcomes()
    common = sorted(set(g) & set(d))

    def tally(key) -> dict[Any, dict[str, Any]]:
        cells: dict[Any, list[int]] = defaultdict(lambda: [0, 0, 0])
        for pid in common:
            cell = cells[key(g[pid])]
            cell[0] += 1
            cell[1] += int(g[pid]["correct"])
            cell[2] += int(d[pid]["correct"])
        out = {}
        for k, (n, gc, dc) in cells.items():
            ga, da = round(gc / n, 6), round(dc / n, 6)
            out[k] = {"n": n, "generative_correct": gc, "discriminative_correct": dc,
                      "generative_accuracy": ga, "discriminative_accuracy": da, "gap": round((dc - gc) / n, 6)}
        return out

    empty = {"n": 0, "generative_correct": 0, "discriminative_correct": 0,
             "generative_accuracy": None, "discriminative_accuracy": None, "gap": None}
    overall = tally(lambda _: "all").get("all", empty)
    result = {
        "definition": "gap = discriminative_accuracy - generative_accuracy, on puzzles scored in both tracks",
        "puzzles": len(common),
        "only_generative": len(set(g) - set(d)),
        "only_discriminative": len(set(d) - set(g)),
        "overall": {**overall, **_gap_statistics(common, g, d, "correct")},
        "per_task": tally(lambda o: o["task"]),
        "per_difficulty": tally(lambda o: o["difficulty"]),
        "circular": None,
    }
    if common and all("circular" in d[pid] for pid in common):
        n = len(common)
        gc = sum(g[pid]["correct"] for pid in common)
        dc = sum(d[pid]["circular"] for pid in common)
        result["circular"] = {"n": n, "generative_accuracy": round(gc / n, 6), "discriminative_circular_accuracy": round(dc / n, 6),
                              "gap": round((dc - gc) / n, 6), **_gap_statistics(common, g, d, "circular")}
    return result


def _gap_statistics(common: Sequence[str], g: Mapping[str, Any], d: Mapping[str, Any], key: str) -> dict[str, Any]:
    """McNemar on the paired outcomes and a bootstrap interval of the gap (puzzles resampled)."""
    from vrforge.runners.stats import bootstrap_ci, mcnemar

    pairs = [(bool(g[pid]["correct"]), bool(d[pid][key])) for pid in common]

    def gap(sample: Sequence[tuple[bool, bool]]) -> float | None:
        return (sum(b for _, b in sample) - sum(a for a, _ in sample)) / len(sample) if sample else None

    return {"mcnemar": mcnemar(pairs), "gap_ci95": bootstrap_ci(pairs, gap)}


def format_gap(gap: Mapping[str, Any]) -> str:
    """The gap as a plain-text table (one row per task, then overall)."""
    def pct(x: float | None) -> str:
        return "   -  " if x is None else f"{100 * x:5.1f}%"

    lines = [f"{'task':<22}{'n':>6}  {'generative':>10}  {'discriminative':>14}  {'gap':>8}"]
    rows = [*sorted(gap["per_task"].items()), ("overall", gap["overall"])]
    for name, cell in rows:
        g = "   -  " if cell["gap"] is None else f"{100 * cell['gap']:+5.1f}pp"
        lines.append(f"{name:<22}{cell['n']:>6}  {pct(cell['generative_accuracy']):>10}  "
                     f"{pct(cell['discriminative_accuracy']):>14}  {g:>8}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- I/O helpers


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScoringError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise ScoringError(f"{path} is a folder, not a JSON file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScoringError(f"cannot read {path} ({exc.__class__.__name__})") from None
    except json.JSONDecodeError as exc:
        raise ScoringError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
