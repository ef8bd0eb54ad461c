"""The release audit: re-checks a built dataset folder from its files alone.

Per row: meta validates; the solution passes its verifier; each distractor fails exactly its
named check; the five options are different pixels (all at every resolution config).
Per release: every file matches the manifest's sha256; the card's configs and the parquet
row counts match the manifest; every context-blind picker and the learned probe
(vrforge/pickers.py, judged on every puzzle of a task) stay at or below 0.30 per task; the
answer position is uniform (chi-square); difficulty statistics grow from easy to hard.
``audit.json`` records every figure and the manifest's sha256, which publishing checks.
"""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import re
from collections import Counter, defaultdict
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from tqdm import tqdm

from vrforge.buffers import reuse_large_buffers
from vrforge.cards.card import AUDIT_PENDING, audit_section, with_audit_section
from vrforge.fileio import sha256_file, write_bytes_atomic, write_json_atomic
from vrforge.imageio import UnusableImage, load_rgb
from vrforge.pickers import PROBE, gate_figures, option_features
from vrforge.registry import UnknownTask, get_task
from vrforge.schemas.layout import (
    AUDIT_FILE,
    BOOKKEEPING_FILES,
    CARD_FILE,
    MAIN_RESOLUTION,
    MANIFEST_FILE,
    config_name,
    difficulty_rank,
)
from vrforge.set_probes import LEARNERS, SetInputs, learner_figures, set_inputs
from vrforge.threads import one_thread_per_process

PICKER_LIMIT = 0.30
# basic: the pickers and the probe; budget: also the learners of vrforge.set_probes, the set CNN
# on each task's whole set only; full: the set CNN on every level as well.
PROBE_MODES = ("basic", "budget", "full")
CNN_EPOCHS = 40  # the set CNN's training epochs in a full audit (0: leave it out)
PICKER_MIN_PUZZLES = 100  # below this a picker's accuracy is noise: reported, not judged
GROWTH_MIN_PER_DIFFICULTY = 20  # likewise for the growth of mean difficulty statistics
UNIFORM_P_MIN = 0.01
MAX_LISTED_FAILURES = 50
CARD = CARD_FILE


class AuditError(RuntimeError):
    """The folder cannot be audited at all (no manifest, unreadable card); one line for the user."""


def chi_square_uniform(counts: list[int]) -> tuple[float, float]:
    """Pearson's statistic against a uniform distribution and its p-value (closed form for 4 dof)."""
    total = sum(counts)
    expected = total / len(counts)
    statistic = sum((c - expected) ** 2 / expected for c in counts) if total else 0.0
    if len(counts) != 5:
        raise ValueError("closed-form p-value implemented for five positions (4 degrees of freedom)")
    return statistic, math.exp(-statistic / 2) * (1 + statistic / 2)


def manifest_file_problems(folder: Path, manifest: dict[str, Any], digests: dict[str, str] | None = None) -> list[str]:
    """Every file of a release folder against the manifest: missing, unlisted, changed.
    ``digests``: sha256 already taken of some files (relative path -> hex), by whoever read them."""
    listed = manifest.get("files", {})
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - set(BOOKKEEPING_FILES)
    known = digests or {}
    return ([f"missing file {name}" for name in sorted(set(listed) - present)]
            + [f"file not in manifest: {name}" for name in sorted(present - set(listed))]
            + [f"sha256 mismatch: {name}" for name in sorted(set(listed) & present)
               if (known.get(name) or sha256_file(folder / name)) != listed[name]["sha256"]])


def card_metadata(card: str) -> dict[str, Any]:
    """The card's YAML front matter."""
    match = re.match(r"^---\n(.*?)\n---\n", card, re.S)
    if not match:
        raise AuditError("README.md has no YAML front matter")
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise AuditError(f"README.md front matter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise AuditError("README.md front matter is not a mapping")
    return data


def card_configs(card: str) -> dict[str, dict[str, str]]:
    """config -> split -> data_files glob, from the card's ``configs``."""
    return {c["config_name"]: {f["split"]: f["path"] for f in c.get("data_files", [])}
            for c in card_metadata(card).get("configs", [])}


def _audit_shard(job: list[tuple[str, bool]], learners: bool = False) -> dict[str, Any]:
    """Every per-row check for one shard: its parquet files, one per resolution, read side by side
    (the same puzzles in the same order), so each puzzle's meta is parsed and validated once. In
    the smallest resolution's file (``True``) also the options' pairwise difference and the picks."""
    failures: list[str] = []
    picks: list[tuple[str, str, np.ndarray, int, SetInputs | None]] = []
    aspects: list[tuple[str, str, int]] = []  # (task, level, aspects in play) per puzzle that records it
    # Each file is read once: its bytes give the sha256 the manifest is checked against, then the rows.
    digests: dict[str, str] = {}
    tables = []
    for path, with_picks in job:
        data = Path(path).read_bytes()
        digests[path] = hashlib.sha256(data).hexdigest()
        tables.append((pq.read_table(pa.BufferReader(data)), with_picks))
        del data
    counts = {table.num_rows for table, _ in tables}
    if len(counts) > 1:
        failures.append(f"{', '.join(path for path, _ in job)}: resolutions hold {sorted(counts)} rows")
    rows = sum(table.num_rows for table, _ in tables)
    for position in range(min(counts)):
        versions = [(table.slice(position, 1).to_pylist()[0], with_picks) for table, with_picks in tables]
        first = versions[0][0]
        rid = first["id"]
        if any(row["id"] != rid or row["meta"] != first["meta"] for row, _ in versions):
            failures.append(f"{rid}: the resolutions of this row differ in id or meta")
            continue
        try:
            spec = get_task(first["task"])
        except UnknownTask:
            failures.append(f"{rid}: unknown task {first['task']!r}")
            continue
        if first.get("aspects_in_play"):
            aspects.append((first["task"], first["difficulty"], int(first["aspects_in_play"])))
        meta = json.loads(first["meta"])
        errors = spec.meta_errors(meta)
        if errors:
            failures.append(f"{rid}: meta does not match its schema ({errors[0]})")
        for row, with_picks in versions:
            failures += _row_failures(spec, meta, row, picks if with_picks else None, learners)
    return {"rows": rows, "failures": failures, "picks": picks, "aspects": aspects, "sha256": digests}


def _row_failures(spec: Any, meta: dict[str, Any], row: dict[str, Any],
                  picks: list[tuple[str, str, np.ndarray, int, SetInputs | None]] | None, learners: bool = False) -> list[str]:
    """The verifier checks of one row's images; with ``picks``, also the options' difference and the picks."""
    rid, failures = row["id"], []
    try:  # each image is decoded once, then verified, compared and (maybe) picked from
        solution = load_rgb(row["solution"]["bytes"])
        distractors = [load_rgb(d["bytes"]) for d in row["distractors"]]
    except UnusableImage as exc:
        return [f"{rid}: an option image cannot be read ({exc})"]
    verdict = spec.verify(meta, solution)
    if not verdict.passed:
        failures.append(f"{rid}: solution fails at {solution.shape[1]} px ({verdict.reason})")
    for image, name in zip(distractors, row["distractor_violations"]):
        failed = spec.verify(meta, image).failed
        if failed != [name]:
            failures.append(f"{rid}: distractor '{name}' fails {failed or 'nothing'} at {image.shape[1]} px")
    if picks is not None:  # the smallest resolution: options that differ there differ everywhere
        options = list(distractors)
        options.insert(row["answer_index"], solution)
        if len({hashlib.sha256(o.tobytes()).digest() for o in options}) != len(options):
            failures.append(f"{rid}: two options are identical pixels")
        try:
            puzzle = load_rgb(row["puzzle"]["bytes"])
        except UnusableImage as exc:
            return failures + [f"{rid}: the puzzle image cannot be read ({exc})"]
        basic = option_features(options, puzzle)
        picks.append((row["task"], rid, basic, row["answer_index"], set_inputs(options, basic) if learners else None))
    return failures


def audit(folder: Path, workers: int = 1, progress: bool = True, probes: str = "basic",
          cnn_epochs: int = CNN_EPOCHS, human: Path | None = None) -> dict[str, Any]:
    """``probes``: "basic" (the pickers and the audit's probe), "budget" or "full" (also the learners of
    ``vrforge.set_probes``: a rich conditional logit and boosted trees per task and level, and, with
    ``cnn_epochs`` > 0, the set CNN per task ("budget") or per task and level ("full"))."""
    if probes not in PROBE_MODES:
        raise AuditError(f"--probes must be one of {', '.join(PROBE_MODES)}, got {probes!r}")
    human_section = _human_section(human) if human is not None else ""
    folder = Path(folder)
    manifest_path = folder / MANIFEST_FILE
    if not manifest_path.exists():
        raise AuditError(f"{folder} has no {MANIFEST_FILE} (not a built dataset folder)")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    problems: list[str] = []

    card = (folder / CARD).read_text(encoding="utf-8") if (folder / CARD).exists() else ""

    # The card: configs, data_files globs, features and split sizes against the files.
    metadata = card_metadata(card) if card else {}
    configs = card_configs(card) if card else {}
    if not configs:
        problems.append("README.md card lists no configs")
    expected_rows = manifest.get("rows", {})
    if set(configs) != set(expected_rows):
        problems.append(f"card configs {sorted(configs)} differ from manifest {sorted(expected_rows)}")
    infos = {info["config_name"]: info for info in metadata.get("dataset_info", [])}
    counted: dict[str, dict[str, int]] = defaultdict(dict)
    shard_paths: dict[str, list[Path]] = {}
    for config, splits in configs.items():
        info = infos.get(config)
        if info is None:
            problems.append(f"card has no dataset_info for config {config}")
        declared = {s["name"]: s["num_examples"] for s in info.get("splits", [])} if info else {}
        for split, pattern in splits.items():
            files = sorted(folder.glob(pattern))
            if not files:
                problems.append(f"card glob {pattern} matches no file")
            counted[config][split] = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
            shard_paths[f"{config}/{split}"] = files
            if info and declared.get(split) != counted[config][split]:
                problems.append(f"{config}/{split}: card declares {declared.get(split)} rows, files hold {counted[config][split]}")
            if info and files:
                import datasets  # here, not at the top: the audit's workers never need it

                stored = datasets.Features.from_arrow_schema(pq.read_schema(files[0]))
                if stored != datasets.Features._from_yaml_list(info["features"]):
                    problems.append(f"{config}/{split}: card features differ from the parquet schema")
    for config, splits in expected_rows.items():
        for split, count in splits.items():
            if counted.get(config, {}).get(split) != count:
                problems.append(f"{config}/{split}: {counted.get(config, {}).get(split)} rows, manifest says {count}")

    # Every row, every resolution: one job per shard, its resolutions side by side. The jobs also
    # hash the parquet files they read, so the manifest check reads only the other files again.
    with _Workers(workers) as pool:
        results = pool.map(partial(_audit_shard, learners=probes != "basic"), _shard_jobs(manifest, shard_paths), progress)
        digests = {Path(path).relative_to(folder).as_posix(): digest for r in results for path, digest in r["sha256"].items()}
        problems[:0] = [p for p in manifest_file_problems(folder, manifest, digests)
                        if not (p == f"sha256 mismatch: {CARD}" and _card_differs_only_in_audit(card, manifest))]
        report = _judge(folder, manifest, manifest_path, problems, results, probes, cnn_epochs, pool, progress)
    if human_section:
        report["human_performance"] = human_section
    if report["passed"]:
        _write_audit_into_card(folder, manifest, card, report)
        report["manifest_sha256"] = sha256_file(manifest_path)
    write_json_atomic(folder / AUDIT_FILE, report)
    return report


def _judge(folder: Path, manifest: dict[str, Any], manifest_path: Path, problems: list[str], results: list[dict[str, Any]],
           probes: str, cnn_epochs: int, pool: _Workers, progress: bool) -> dict[str, Any]:
    """The release-level figures (pickers, probe and learners, answer positions, difficulty
    growth) from the shard jobs' results, and the report."""
    row_failures = [f for r in results for f in r["failures"]]
    by_task: dict[str, list[tuple[str, np.ndarray, int]]] = defaultdict(list)
    inputs: dict[str, SetInputs] = {}
    for result in results:
        for task, rid, features, answer, extra in result["picks"]:
            by_task[task].append((rid, features, answer))
            if extra is not None:
                inputs[rid] = extra
    recipe_tasks = manifest.get("recipe", {}).get("tasks", {})
    answers: dict[str, list[int]] = {}
    pickers: dict[str, dict[str, float | None]] = {}  # None: too few puzzles for the probe
    pickers_by_level: dict[str, dict[str, dict[str, float | None]]] = {}
    jobs: list[tuple[str, str | None, list, dict[str, SetInputs], int]] = []
    for task in sorted(by_task):  # sorted by id: the probe's halves do not depend on the worker count
        rows = sorted(by_task[task], key=lambda item: item[0])
        answers[task] = [answer for _, _, answer in rows]
        learned = {rid: inputs[rid] for rid, _, _ in rows if rid in inputs}
        jobs.append((task, None, rows, learned, cnn_epochs))
        levels = recipe_tasks.get(task, {}).get("difficulties") or sorted({level_of(rid) for rid, _, _ in rows})
        if len(levels) > 1:
            for level in levels:
                # "budget" trains the set CNN on each task's whole set only; "full" on every level too
                jobs += [(task, level, [r for r in rows if level_of(r[0]) == level], learned,
                          cnn_epochs if probes == "full" else 0)]
    for (task, level, _, _, _), figures in zip(jobs, pool.map(_gate_job, jobs, progress, "audit gate")):
        if level is None:
            pickers[task] = figures
        else:
            pickers_by_level.setdefault(task, {})[level] = figures
    for task, accuracy in pickers.items():
        judged = [(task, accuracy, len(answers[task]))]
        judged += [(f"{task} {level}", figures, sum(1 for rid, _, _ in by_task[task] if level_of(rid) == level))
                   for level, figures in pickers_by_level.get(task, {}).items()]
        for where, figures, puzzles in judged:
            if puzzles < PICKER_MIN_PUZZLES:
                continue
            for name, value in figures.items():
                if value is not None and value > PICKER_LIMIT:
                    what = ("the learned context-blind probe" if name == PROBE else f"the context-blind learner {name}"
                            if name in LEARNERS else f"context-blind picker {name}")
                    problems.append(f"{where}: {what} scores {value:.3f} > {PICKER_LIMIT}")
    positions = Counter(a for values in answers.values() for a in values)
    counts = [positions.get(i, 0) for i in range(5)]
    statistic, p_value = chi_square_uniform(counts)
    if p_value < UNIFORM_P_MIN:
        problems.append(f"answer positions {counts} are not uniform (chi2={statistic:.2f}, p={p_value:.4f})")

    difficulty = {}
    for task, by_level in manifest.get("difficulty_stats", {}).items():
        order = recipe_tasks.get(task, {}).get("difficulties") or sorted(by_level, key=difficulty_rank)
        levels = [d for d in order if d in by_level]
        values = {stat: [by_level[d][stat] for d in levels] for stat in sorted(by_level[levels[0]])} if levels else {}
        growing = sorted(stat for stat, v in values.items() if all(a < b for a, b in zip(v, v[1:])))
        headline = get_task(task).difficulty_stat
        difficulty[task] = {"values": values, "growing": growing, "headline": headline}
        difficulty[task]["levels"] = levels
        count = recipe_tasks.get(task, {}).get("count", 0)
        if count >= GROWTH_MIN_PER_DIFFICULTY and len(levels) > 1 and (headline not in growing if headline else not growing):
            what = f"its difficulty statistic {headline!r}" if headline else "no difficulty statistic"
            problems.append(f"{task}: {what} does not grow from level to level ({' < '.join(levels)})")

    rows_checked = sum(r["rows"] for r in results)
    aspects = aspect_distribution([a for r in results for a in r.get("aspects", [])], recipe_tasks)
    report = {
        "passed": not problems and not row_failures,
        "manifest_sha256": sha256_file(manifest_path),
        "config_hash": manifest.get("config_hash"),
        "files_checked": len(manifest.get("files", {})),
        "rows_checked": rows_checked,
        "row_failures": len(row_failures),
        "row_failure_examples": row_failures[:MAX_LISTED_FAILURES],
        "problems": problems,
        "pickers": pickers,
        "pickers_by_level": pickers_by_level,
        "picker_limit": PICKER_LIMIT,
        "picker_min_puzzles": PICKER_MIN_PUZZLES,
        "answer_positions": {"counts": counts, "chi2": round(statistic, 4), "p_value": round(p_value, 6)},
        "difficulty_stats": difficulty,
        "aspects_in_play": aspects,
        "rejections": manifest.get("rejections", {}),
    }
    return report


def aspect_distribution(values: list[tuple[str, str, int]], recipe_tasks: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """task -> level -> {"counts": {aspects: puzzles}, "mean", "least"}: how many aspects a solver
    must check to rule out all four distractors, over the puzzles of each level (levels in recipe order)."""
    by_level: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for task, level, count in values:
        by_level[task][level][count] += 1
    out: dict[str, dict[str, Any]] = {}
    for task in sorted(by_level):
        order = recipe_tasks.get(task, {}).get("difficulties") or sorted(by_level[task], key=difficulty_rank)
        out[task] = {}
        for level in [lv for lv in order if lv in by_level[task]]:
            counts = by_level[task][level]
            total = sum(counts.values())
            out[task][level] = {"counts": {str(k): counts[k] for k in sorted(counts)},
                                "mean": round(sum(k * v for k, v in counts.items()) / total, 3), "least": min(counts)}
    return out


def _card_differs_only_in_audit(card: str, manifest: dict[str, Any]) -> bool:
    """True when ``card`` (README.md) is the card as built but for its audit section (an audit
    that was stopped between writing the card and the manifest)."""
    built = manifest.get("card_unaudited_sha256")
    return bool(built and card and _sha256_text(with_audit_section(card, AUDIT_PENDING)) == built)


def _write_audit_into_card(folder: Path, manifest: dict[str, Any], card: str, report: dict[str, Any]) -> None:
    """The figures of a passed audit into ``card``, and the card's new sha256 into the manifest
    (each file replaced atomically), so the published card states them."""
    audited = with_audit_section(card, audit_section(report) + ("\n\n" + report["human_performance"].rstrip()
                                                                if report.get("human_performance") else ""))
    digest = _sha256_text(audited)
    if manifest["files"].get(CARD, {}).get("sha256") == digest and audited == card:
        return
    data = audited.encode("utf-8")
    write_bytes_atomic(folder / CARD, data)
    manifest["files"][CARD] = {"sha256": digest, "bytes": len(data)}
    write_json_atomic(folder / MANIFEST_FILE, manifest)


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _shard_jobs(manifest: dict[str, Any], shard_paths: dict[str, list[Path]]) -> list[list[tuple[str, bool]]]:
    """The card's parquet files grouped by shard: a task's files of one name (``hard-00001-of-00002``)
    across its resolution configs, each marked True when it is the smallest resolution's, where
    pickers are measured once per puzzle. A file of a config the recipe does not name stands alone."""
    recipe = manifest.get("recipe", {})
    resolutions = sorted(recipe.get("resolutions", [MAIN_RESOLUTION]))
    owner = {config_name(task, res): (task, res) for task in recipe.get("tasks", {}) for res in resolutions}
    groups: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for key, files in shard_paths.items():
        config = key.split("/")[0]
        for path in files:
            task, res = owner.get(config, (config, -1))
            groups[(task, path.name if res >= 0 else str(path))].append((res, str(path)))
    # Picks come from each shard's smallest resolution (a level may not be released at the recipe's smallest).
    return [[(path, rank == 0) for rank, (res, path) in enumerate(sorted(members))] for _, members in sorted(groups.items())]


def _human_section(path: Path) -> str:
    """The card's "Human performance" table from a ``vrforge study report`` report.json; AuditError (one line)."""
    from vrforge.runners.study.report import human_performance_markdown

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        section = human_performance_markdown(data)
    except FileNotFoundError:
        raise AuditError(f"--human: no such file {path}") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise AuditError(f"--human: {path} is not a `vrforge study report` report.json ({type(exc).__name__}: {exc})") from None
    if not section:
        raise AuditError(f"--human: {path} holds no TACIT study accuracy (tacit-choice or tacit-draw)")
    return section.replace("## Human performance", "### Human performance", 1)


def level_of(row_id: str) -> str:
    """The level of a row id ``<task>-<level>-<index>``."""
    return row_id.rsplit("-", 2)[-2]


def _gate_job(job: tuple[str, str | None, list, dict[str, SetInputs], int]) -> dict[str, float | None]:
    _, _, rows, inputs, cnn_epochs = job
    return _gate(rows, inputs, cnn_epochs)


def _gate(rows: list[tuple[str, np.ndarray, int]], inputs: dict[str, SetInputs] | None = None,
          cnn_epochs: int = 0) -> dict[str, float | None]:
    """Every picker's and the probe's accuracy on ``rows`` (sorted by id), and the learners' where
    ``inputs`` holds the rows' set inputs; None where too few sets to learn from."""
    answers = [answer for _, _, answer in rows]
    figures = gate_figures(np.stack([features for _, features, _ in rows]), answers)
    if inputs and all(rid in inputs for rid, _, _ in rows):
        figures.update(learner_figures([inputs[rid] for rid, _, _ in rows], answers, cnn_epochs=cnn_epochs or None))
    return {name: round(value, 4) if value == value else None for name, value in figures.items()}


class _Workers:
    """The audit's processes: one pool (started on first use) for the shard jobs and then the gate
    jobs, or this process for one worker."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.pool: Any = None

    def __enter__(self) -> _Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()

    def map(self, function: Any, items: list, progress: bool, label: str = "audit shards") -> list[dict[str, Any]]:
        bar = tqdm(total=len(items), desc=label, unit="job" if label != "audit shards" else "shard", disable=not progress,
                   dynamic_ncols=True)
        results = []
        try:
            if self.workers <= 1:
                reuse_large_buffers()
                for item in items:
                    results.append(function(item))
                    bar.update(1)
            else:
                if self.pool is None:
                    self.pool = multiprocessing.get_context("forkserver").Pool(self.workers, initializer=_init_worker)
                for result in self.pool.imap(function, items):
                    results.append(result)
                    bar.update(1)
        finally:
            bar.close()
        return results


def _init_worker() -> None:
    reuse_large_buffers()
    one_thread_per_process()  # the pool is the parallelism


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def summary(report: dict[str, Any]) -> str:
    """The readable summary printed by ``vrforge audit``: every figure in the report."""
    lines = [f"audit {'PASSED' if report['passed'] else 'FAILED'}: {report['rows_checked']} rows, "
             f"{report['files_checked']} files checked, {report['row_failures']} row failures"]
    for task, accuracy in report["pickers"].items():
        lines.append(f"  {task}: context-blind pickers " + ", ".join(f"{k} {_figure(v)}" for k, v in accuracy.items())
                     + f" (limit {report['picker_limit']}, judged from {PICKER_MIN_PUZZLES} puzzles)")
    positions = report["answer_positions"]
    lines.append(f"  answer positions {positions['counts']}: chi2 {positions['chi2']}, p {positions['p_value']}")
    for task, stats in report["difficulty_stats"].items():
        lines.append(f"  {task}: " + "; ".join(f"{k} {' / '.join(str(v) for v in values)}" for k, values in stats["values"].items())
                     + f" (growing: {', '.join(stats['growing']) or 'none'})")
    for task, levels in report.get("aspects_in_play", {}).items():
        lines.append(f"  {task}: aspects in play " + "; ".join(
            f"{level} " + " ".join(f"{k}:{v}" for k, v in figures["counts"].items()) + f" (mean {figures['mean']})"
            for level, figures in levels.items()))
    for task, reasons in report["rejections"].items():
        lines.append(f"  {task}: {sum(reasons.values())} rejected attempts")
    lines += [f"  problem: {p}" for p in report["problems"]]
    lines += [f"  row: {f}" for f in report["row_failure_examples"]]
    return "\n".join(lines)
