"""TACIT discriminative track: a vision-language model picks the solution among five option images.

Each puzzle is shown as its picture followed by the five options labelled A-E (the four
distractors in order with the solution inserted at ``answer_index``) and a question asking for
one letter. A backend answers with a letter (``vlm_backends``: option-letter log-likelihood for
transformers models, a parsed text answer for OpenAI-compatible endpoints).

Circular evaluation (MMBench's CircularEval): each puzzle is asked once per rotation of the
options, rotation ``r`` presenting original option ``(p + r) % 5`` at position ``p``. A puzzle
counts as circular-correct only if every rotation picks the solution, which cancels a model's
preference for a position. The report gives single-pass accuracy (rotation 0, the original
order), circular accuracy, how often each letter was chosen, and how often all rotations chose
the same original option.

Output folder:
- ``samples.jsonl``: one line per puzzle with every rotation's answer (order shown, letter,
  original index, scores or raw text) and the circular verdict; appended line by line
  (flush + fsync) as puzzles finish, so an interrupted run resumes where it stopped;
- ``run_manifest.json``: what produced the samples (backend, model, resolution, sha256 of the
  question texts), written before the first question; a resume with other settings is refused
  with the differences named instead of mixing answers (a ``run.json`` of an older version is
  read the same way);
- ``results.json``: the reference format ``{"results": [{puzzle_id, task, difficulty,
  correct_index, selected_index}]}`` with the single-pass selections (what
  ``vrforge score discriminative`` reads), plus a ``summary`` with both accuracies and the
  histograms and ``counts`` of failed puzzles; written atomically at the end. The layout of all
  three files is ``runners/outputs.py``.

Data parallelism: launched as several processes (``torchrun``/``accelerate launch``, which set
``RANK`` and ``WORLD_SIZE``), process r asks the puzzles at positions r, r + W, ... of the
planned list and appends them to its own ``samples.rank<r>.jsonl``; when it is done it leaves
``.rank<r>.done``. Process 0 waits for every process, merges the rank files into
``samples.jsonl`` (the same bytes as one process would write) and writes ``results.json``. A
run interrupted in between resumes from the rank files, with any number of processes.

Failures are per puzzle: an answer that cannot be had for this puzzle alone (an HTTP 4xx
such as a request over the server's context, an image that cannot be decoded, a local model
error) is a sample with ``status: failed`` and its ``error``; the run goes on, the failed
puzzles are left out of the accuracies and counted by reason, and the exit code is 1. The run
stops (resumably) only on what concerns every puzzle: no connection, 401/403/404, 429 or 5xx
left after the retries, or ten failed puzzles in a row (a timeout fails its puzzle). A resume keeps failed
samples unless ``--retry-failed``. A refusal or an answer naming no letter is not a failure:
it is the model's answer, counted as no answer (wrong).
"""

from __future__ import annotations

import io
import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from vrforge.errors import UserError
from vrforge.fileio import write_bytes_atomic
from vrforge.runners.concurrency import bounded_map

# one answer parser, shared with the lmms-eval export (that file imports nothing from vrforge)
from vrforge.runners.lmms_eval_utils import LETTERS as LETTERS
from vrforge.runners.lmms_eval_utils import parse_choice as parse_choice
from vrforge.runners.outputs import FORMAT_VERSION, MANIFEST_FILE, SettingsMismatch, check_settings, failure_counts, text_sha256
from vrforge.runners.scoring import ScoringError, aggregate, dataset_configs, dataset_info, read_rows
from vrforge.schemas.layout import MAIN_RESOLUTION, difficulty_rank
from vrforge.types import OPTION_COUNT

PROMPT_VERSION = 1
RESULTS_FILE = "results.json"
SAMPLES_FILE = "samples.jsonl"
RUN_FILE = MANIFEST_FILE
LEGACY_RUN_FILE = "run.json"
MAX_CONSECUTIVE_FAILURES = 10  # that many failed puzzles in a row concern every puzzle: the run stops

GENERIC_HINT = "the puzzle completed correctly"


def task_hint(task: str) -> str:
    """What the answer image shows (the pictures carry no words, so the question says it): the
    task's ``TaskSpec.answer_hint``, or a generic hint for a task this installation does not know."""
    from vrforge.registry import UnknownTask, get_task

    try:
        return get_task(task).answer_hint
    except UnknownTask:
        return GENERIC_HINT


class ChoiceError(UserError):
    """A user mistake (bad dataset, bad option, conflicting resume): one line, exit 2."""


class BackendError(UserError):
    """The model cannot be loaded or the endpoint cannot answer at all: one line, the run stops (resumable)."""


# --------------------------------------------------------------------------- items and questions


@dataclass(frozen=True)
class Item:
    """One puzzle: its picture and the five options in the original order (distractors with the solution inserted)."""

    id: str
    task: str
    difficulty: str
    index: int
    answer_index: int
    puzzle: bytes
    options: tuple[bytes, ...]


@dataclass(frozen=True)
class Question:
    """What a backend is asked: text and PNG parts in order; ``options`` are as presented (A first)."""

    task: str
    puzzle: bytes
    options: tuple[bytes, ...]

    @property
    def intro(self) -> str:
        hint = task_hint(self.task)
        return (f"The first image is a visual puzzle. Each of the next {len(self.options)} images, labelled "
                f"{LETTERS[0]} to {LETTERS[len(self.options) - 1]}, is a candidate answer: {hint}. Exactly one is correct.")

    @property
    def ask(self) -> str:
        letters = ", ".join(LETTERS[: len(self.options) - 1]) + f" or {LETTERS[len(self.options) - 1]}"
        return f"Which option is correct? Answer with the option's letter ({letters}) only."

    def parts(self) -> list[tuple[str, str | bytes]]:
        """("text", str) and ("image", png bytes) in reading order: 1 + len(options) images."""
        parts: list[tuple[str, str | bytes]] = [("text", self.intro), ("text", "Puzzle:"), ("image", self.puzzle)]
        for letter, option in zip(LETTERS, self.options):
            parts += [("text", f"Option {letter}:"), ("image", option)]
        parts.append(("text", self.ask))
        return parts

    def images(self) -> list[bytes]:
        """The PNGs of ``parts()`` in the same order: the puzzle, then the options."""
        return [self.puzzle, *self.options]

    def texts(self) -> list[str]:
        """The texts of ``parts()`` in the same order."""
        return [value for kind, value in self.parts() if kind == "text" and isinstance(value, str)]


def rotation_order(rotation: int, count: int = OPTION_COUNT) -> list[int]:
    """Original option indices in presented order: position p shows original option (p + rotation) % count."""
    return [(position + rotation) % count for position in range(count)]


def question_for(item: Item, rotation: int) -> tuple[Question, list[int]]:
    order = rotation_order(rotation, len(item.options))
    return Question(item.task, item.puzzle, tuple(item.options[i] for i in order)), order


# --------------------------------------------------------------------------- answers


@dataclass
class Answer:
    """A backend's answer to one question: the presented position chosen (None: no usable answer)."""

    position: int | None
    raw: str | None = None
    scores: list[float] | None = None
    error: str | None = None
    failed: bool = False  # no answer could be had for this question alone (HTTP 4xx, decode error)


class Backend(Protocol):
    def describe(self) -> dict[str, Any]:
        """The settings that determine the answers (compared on resume)."""

    def answer(self, question: Question) -> Answer:
        """Raises BackendError only when no further question can be answered either."""


def ask_item(item: Item, backend: Backend, rotations: int) -> dict[str, Any]:
    """Every rotation's answer for one puzzle, mapped back to original option indices, as a samples.jsonl record."""
    records = []
    failure = None
    asked = [question_for(item, rotation) for rotation in range(rotations)]
    many = getattr(backend, "answer_many", None)
    # A backend that batches gets every rotation at once (one padded batch); others are asked in turn.
    answers = iter(many([q for q, _ in asked])) if many is not None else (backend.answer(q) for q, _ in asked)
    for rotation, ((_, order), answer) in enumerate(zip(asked, answers)):
        if answer.failed:
            failure = (rotation, answer.error or "failed")
            break
        position = answer.position if answer.position is not None and 0 <= answer.position < len(order) else None
        selected = order[position] if position is not None else None
        record: dict[str, Any] = {
            "rotation": rotation,
            "order": order,
            "correct_letter": LETTERS[order.index(item.answer_index)],
            "answer": LETTERS[position] if position is not None else None,
            "selected_index": selected,
            "correct": selected == item.answer_index,
        }
        if answer.scores is not None:
            record["scores"] = [round(float(s), 6) if math.isfinite(s) else None for s in answer.scores]
        if answer.raw is not None:
            record["raw"] = answer.raw
        if answer.error is not None:
            record["error"] = answer.error
        records.append(record)
    base = {"id": item.id, "task": item.task, "difficulty": item.difficulty, "index": item.index,
            "correct_index": item.answer_index}
    if failure is not None:
        return {**base, "status": "failed", "error": failure[1], "failed_rotation": failure[0], "selected_index": None,
                "correct": False, "circular_correct": None, "consistent": None, "rotations": records}
    single = records[0]["selected_index"]
    picks = {r["selected_index"] for r in records}
    return {
        **base, "status": "ok",
        "selected_index": single,
        "correct": single == item.answer_index,
        "circular_correct": all(r["correct"] for r in records) if rotations > 1 else None,
        "consistent": (len(picks) == 1 and None not in picks) if rotations > 1 else None,
        "rotations": records,
    }


# --------------------------------------------------------------------------- aggregation


def _histogram(letters: Iterable[str | None], count: int = OPTION_COUNT) -> dict[str, int]:
    counts = Counter(letter if letter is not None else "none" for letter in letters)
    return {key: counts.get(key, 0) for key in [*LETTERS[:count], "none"]}


def summarise(samples: Sequence[dict[str, Any]], rotations: int) -> dict[str, Any]:
    """Single-pass and circular accuracy (overall, per task, per difficulty), position histograms, consistency.

    Failed puzzles are left out of every figure and counted under ``failed``."""
    counts = failure_counts(samples)
    samples = [s for s in samples if s.get("status", "ok") == "ok"]
    def histograms(group: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {
            "single_pass": _histogram(s["rotations"][0]["answer"] for s in group),
            "all_rotations": _histogram(r["answer"] for s in group for r in s["rotations"]),
            "solution_position_single_pass": _histogram(s["rotations"][0]["correct_letter"] for s in group),
        }

    tasks = sorted({s["task"] for s in samples})
    answers = [r for s in samples for r in s["rotations"]]
    return {
        "puzzles": len(samples),
        "rotations": rotations,
        "single_pass": aggregate((s["task"], s["difficulty"], s["correct"]) for s in samples),
        "circular": aggregate((s["task"], s["difficulty"], bool(s["circular_correct"])) for s in samples)
        if rotations > 1 else None,
        # Every rotation's answer counts once: position bias averages out without CircularEval's all-or-nothing.
        "rotation_averaged": aggregate((s["task"], s["difficulty"], bool(r["correct"])) for s in samples for r in s["rotations"])
        if rotations > 1 else None,
        "consistent": {"n": len(samples), "count": sum(bool(s["consistent"]) for s in samples)} if rotations > 1 else None,
        "no_answer": {"single_pass": sum(s["selected_index"] is None for s in samples),
                      "all_rotations": sum(r["selected_index"] is None for r in answers), "answers": len(answers)},
        "position_histogram": {**histograms(samples),
                               "per_task": {t: histograms([s for s in samples if s["task"] == t]) for t in tasks}},
        "chance": {"single_pass": round(1 / OPTION_COUNT, 6),
                   "circular": round((1 / OPTION_COUNT) ** rotations, 6) if rotations > 1 else None},
        "failed": {"count": counts["failed"], "reasons": counts["reasons"]},
    }


def reference_results(samples: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The single-pass selections in the reference results format (failed puzzles are left out: not answered)."""
    return [{"puzzle_id": s["id"], "task": s["task"], "difficulty": s["difficulty"],
             "correct_index": s["correct_index"], "selected_index": s["selected_index"]}
            for s in samples if s.get("status", "ok") == "ok"]


# --------------------------------------------------------------------------- dataset


def _sort_key(row: dict[str, Any]) -> tuple:
    return row["task"], difficulty_rank(row["difficulty"]), row["difficulty"], row["index"]


def plan_rows(dataset: Path, resolution: int | None, tasks: Sequence[str] | None, difficulties: Sequence[str] | None,
              limit: int | None) -> tuple[int, list[dict[str, Any]]]:
    """(resolution used, the rows to ask) — ordered by task, difficulty, index; ``limit`` per task x difficulty."""
    try:
        configs = dataset_configs(dataset) if dataset.is_dir() else {}
        if resolution is None and configs:
            resolution = MAIN_RESOLUTION if MAIN_RESOLUTION in configs else min(configs)
        rows = read_rows(dataset, resolution, tasks)
    except ScoringError as exc:
        raise ChoiceError(str(exc)) from None
    if difficulties is not None:
        present = {r["difficulty"] for r in rows}
        unknown = sorted(set(difficulties) - present)
        if unknown:
            raise ChoiceError(f"difficulty not in {dataset}: {', '.join(unknown)} (present: {', '.join(sorted(present))})")
        rows = [r for r in rows if r["difficulty"] in difficulties]
    if limit is not None:
        taken: Counter = Counter()
        kept = []
        for row in rows:
            key = (row["task"], row["difficulty"])
            if taken[key] < limit:
                taken[key] += 1
                kept.append(row)
        rows = kept
    assert resolution is not None  # read_rows refused a folder without configs
    return resolution, rows


def load_items(dataset: Path, resolution: int, wanted: set[str]) -> Iterator[Item]:
    """Stream the wanted rows with their images, shard by shard (a release never sits in memory at once)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    configs = dataset_configs(dataset)[resolution]
    columns = ["id", "task", "difficulty", "index", "answer_index", "puzzle", "solution", "distractors"]
    for task in sorted(configs):
        shards = sorted(configs[task].glob("*.parquet"),
                        key=lambda p: (difficulty_rank(p.name.split("-")[0]), p.name))
        for shard in shards:
            try:
                ids = pq.read_table(shard, columns=["id"]).column("id").to_pylist()
                if not wanted.intersection(ids):
                    continue
                batches = pq.ParquetFile(shard).iter_batches(batch_size=10, columns=columns)
                rows = [row for batch in batches for row in batch.to_pylist() if row["id"] in wanted]
            except (pa.ArrowException, OSError, KeyError) as exc:
                raise ChoiceError(f"cannot read {shard} ({exc.__class__.__name__}: {str(exc).splitlines()[0]})") from None
            for row in sorted(rows, key=_sort_key):
                yield _item(row, shard)


def _item(row: dict[str, Any], shard: Path) -> Item:
    def png(image: Any, what: str) -> bytes:
        data = image.get("bytes") if isinstance(image, dict) else None
        if not data:
            raise ChoiceError(f"{shard}: row {row['id']} has no embedded {what} image")
        return bytes(data)

    distractors = row.get("distractors") or []
    answer_index = row.get("answer_index")
    if len(distractors) != OPTION_COUNT - 1:
        raise ChoiceError(f"{shard}: row {row['id']} has {len(distractors)} distractors, expected {OPTION_COUNT - 1}")
    if not isinstance(answer_index, int) or not 0 <= answer_index < OPTION_COUNT:
        raise ChoiceError(f"{shard}: row {row['id']} has answer_index {answer_index!r}, expected 0..{OPTION_COUNT - 1}")
    options = [png(d, f"distractor {k}") for k, d in enumerate(distractors)]
    options.insert(answer_index, png(row["solution"], "solution"))
    return Item(row["id"], row["task"], row["difficulty"], row["index"], answer_index,
                png(row["puzzle"], "puzzle"), tuple(options))


def pil_image(png: bytes) -> Any:
    """Decode one option PNG to RGB (what processors expect)."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return image.convert("RGB")


# --------------------------------------------------------------------------- samples log (resume)


class SampleLog:
    """``samples.jsonl`` as an append-only log: one complete line per finished puzzle, flushed and fsynced."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.samples: dict[str, dict[str, Any]] = {}
        self.dropped = 0
        if path.exists():
            self._load()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - held open for the whole run

    def _load(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ChoiceError(f"cannot read {self.path} ({exc.__class__.__name__})") from None
        good = []
        for line in text.splitlines():
            try:
                sample = json.loads(line)
            except json.JSONDecodeError:
                sample = None
            if isinstance(sample, dict) and isinstance(sample.get("id"), str) and isinstance(sample.get("rotations"), list):
                self.samples[sample["id"]] = sample
                good.append(line)
            elif line.strip():
                self.dropped += 1
        if self.dropped or (text and not text.endswith("\n")):
            # A torn last line (killed mid-write) is dropped, so the next append starts on a fresh line.
            write_bytes_atomic(self.path, "".join(f"{line}\n" for line in good).encode("utf-8"))

    def append(self, sample: dict[str, Any]) -> None:
        self._handle.write(json.dumps(sample, sort_keys=True, ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self.samples[sample["id"]] = sample

    def close(self) -> None:
        self._handle.close()

    def rewrite_sorted(self) -> None:
        """Same content in dataset order, so a resumed run ends with the same bytes as an uninterrupted one."""
        ordered = sorted(self.samples.values(), key=lambda s: (*_sort_key(s), s["id"]))
        write_bytes_atomic(self.path, "".join(json.dumps(s, sort_keys=True, ensure_ascii=False) + "\n"
                                              for s in ordered).encode("utf-8"))


def previous_settings(out: Path) -> dict[str, Any] | None:
    """The settings recorded in ``out`` (run_manifest.json, or an older version's run.json), None when absent."""
    for name, legacy in ((RUN_FILE, False), (LEGACY_RUN_FILE, True)):
        path = out / name
        if not path.exists():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ChoiceError(f"cannot read {path} ({exc.__class__.__name__}); delete it or use another --out") from None
        if not isinstance(data, dict):
            raise ChoiceError(f"{path} is not a run manifest; delete it or use another --out")
        return data if legacy else data.get("settings")
    return None


def check_run(out: Path, run: dict[str, Any], has_samples: bool) -> None:
    """Refuse to mix answers from different settings in one folder; record the settings (before any question)."""
    previous = previous_settings(out)
    if has_samples and previous is None:
        raise ChoiceError(f"{out} holds {SAMPLES_FILE} but no {RUN_FILE} saying how it was made; use another --out")
    try:
        check_settings(out, previous if has_samples else None, run)
    except SettingsMismatch as exc:
        raise ChoiceError(str(exc)) from None
    write_manifest(out, run, completed=False, counts=None)


def write_manifest(out: Path, run: dict[str, Any], *, completed: bool, counts: dict[str, Any] | None) -> None:
    manifest = {"format_version": FORMAT_VERSION, "kind": "tacit-choice", "settings": run,
                "runs": [{"completed": completed}], "counts": counts or {}}
    write_bytes_atomic(out / RUN_FILE, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    (out / LEGACY_RUN_FILE).unlink(missing_ok=True)


def prompt_hash(tasks: Iterable[str]) -> str:
    """sha256 of the question texts for these tasks: a changed hint or wording is a changed setting."""
    texts = {}
    for task in sorted(tasks):
        question = Question(task, b"", (b"",) * OPTION_COUNT)
        texts[task] = question.texts()
    return text_sha256(texts)


# --------------------------------------------------------------------------- the run


@dataclass
class RunResult:
    out: Path
    summary: dict[str, Any]
    asked: int
    skipped: int
    notes: list[str] = field(default_factory=list)


class _FailureGuard:
    """Counts failed puzzles in a row; too many in a row concern every puzzle (a broken model or endpoint)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit, self.row = limit or MAX_CONSECUTIVE_FAILURES, 0

    def see(self, sample: dict[str, Any]) -> None:
        self.row = self.row + 1 if sample.get("status") == "failed" else 0
        if self.row >= self.limit:
            raise BackendError(f"{self.row} puzzles in a row failed (last: {sample.get('error')}); "
                               "finished puzzles are kept, fix the cause and run the same command to resume")


def process_ranks() -> tuple[int, int]:
    """(rank, world size) from the launcher's environment; (0, 1) for a plain run."""
    try:
        rank, world = int(os.environ.get("RANK", "0") or 0), int(os.environ.get("WORLD_SIZE", "1") or 1)
    except ValueError:
        raise ChoiceError("RANK and WORLD_SIZE must be integers") from None
    if world < 1 or not 0 <= rank < world:
        raise ChoiceError(f"RANK {rank} is not within WORLD_SIZE {world}")
    return rank, world


def _run_token() -> str:
    """Names one launch, so that process 0 never takes a finish marker left by an earlier launch."""
    return os.environ.get("TORCHELASTIC_RUN_ID") or f"{os.environ.get('MASTER_ADDR', '')}:{os.environ.get('MASTER_PORT', '')}"


def _rank_files(out: Path) -> list[Path]:
    return sorted(out.glob("samples.rank*.jsonl"))


def _read_samples(path: Path) -> dict[str, dict[str, Any]]:
    """A samples file read without touching it (a torn last line is skipped)."""
    found: dict[str, dict[str, Any]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return found
    for line in lines:
        try:
            sample = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(sample, dict) and isinstance(sample.get("id"), str) and isinstance(sample.get("rotations"), list):
            found[sample["id"]] = sample
    return found


def run_choice(dataset: str | Path, backend: Backend, out: str | Path, *, rotations: int = OPTION_COUNT,
               resolution: int | None = None, tasks: Sequence[str] | None = None,
               difficulties: Sequence[str] | None = None, limit: int | None = None, workers: int = 1,
               progress: bool = False, retry_failed: bool = False, rank: int | None = None, world: int | None = None,
               merge_timeout_s: float = 6 * 3600) -> RunResult:
    """Ask every selected puzzle (skipping those already in ``out/samples.jsonl``), then write ``results.json``.

    With ``world`` > 1 (default from RANK/WORLD_SIZE) this process asks its share; process 0 merges and reports."""
    import time


    if rank is None or world is None:
        rank, world = process_ranks()

    dataset, out = Path(dataset), Path(out)
    if rotations not in (1, OPTION_COUNT):
        raise ChoiceError(f"rotations must be 1 (single pass) or {OPTION_COUNT} (circular), got {rotations}")
    if limit is not None and limit < 1:
        raise ChoiceError(f"--limit must be at least 1, got {limit}")
    if workers < 1:
        raise ChoiceError(f"--workers must be at least 1, got {workers}")
    if out.exists() and not out.is_dir():
        raise ChoiceError(f"--out {out} is a file, not a folder")
    resolution, rows = plan_rows(dataset, resolution, tasks, difficulties, limit)
    run = {"prompt_version": PROMPT_VERSION, "prompt_sha256": prompt_hash(dataset_configs(dataset)[resolution]),
           "rotations": rotations, "resolution": resolution, "dataset": dataset_info(dataset), **backend.describe()}
    if world > 1:
        return _run_rank(dataset, backend, out, run, rows, rotations, resolution, workers, progress, retry_failed,
                         rank, world, merge_timeout_s, time.monotonic)
    log = SampleLog(out / SAMPLES_FILE)
    try:
        leftovers = _rank_files(out)
        check_run(out, run, has_samples=bool(log.samples) or bool(leftovers))
        for leftover in leftovers:  # an interrupted data-parallel run: its answers are kept
            for sample in _read_samples(leftover).values():
                log.append(sample)
            leftover.unlink()
        pending = {r["id"] for r in rows
                   if r["id"] not in log.samples or (retry_failed and log.samples[r["id"]].get("status") == "failed")}
        _ask(dataset, resolution, pending, backend, rotations, workers, log, tqdm_bar(len(pending), "tacit-choice", progress))
        log.rewrite_sorted()
    finally:
        log.close()
    return _report(out, dataset, backend, run, rows, rotations, resolution, log, asked=len(pending))


def _report(out: Path, dataset: Path, backend: Backend, run: dict[str, Any], rows: Sequence[dict[str, Any]], rotations: int,
            resolution: int, log: SampleLog, asked: int) -> RunResult:
    samples = [log.samples[r["id"]] for r in rows]
    summary = {"dataset": dataset_info(dataset), "resolution": resolution, "prompt_version": PROMPT_VERSION,
               **backend.describe(), **summarise(samples, rotations)}
    counts = {"items": len(samples), **failure_counts(samples)}
    payload = {"format_version": FORMAT_VERSION, "kind": "tacit-choice", "results": reference_results(samples),
               "summary": summary, "counts": counts}
    write_bytes_atomic(out / RESULTS_FILE, (json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode())
    write_manifest(out, run, completed=True, counts=counts)
    notes = [f"dropped {log.dropped} unreadable line(s) from {SAMPLES_FILE}"] if log.dropped else []
    return RunResult(out, summary, asked=asked, skipped=len(rows) - asked, notes=notes)


def _run_rank(dataset: Path, backend: Backend, out: Path, run: dict[str, Any], rows: Sequence[dict[str, Any]],
              rotations: int, resolution: int, workers: int, progress: bool, retry_failed: bool, rank: int, world: int,
              merge_timeout_s: float, clock: Callable[[], float]) -> RunResult:
    """One process of a data-parallel run: its share into samples.rank<r>.jsonl; process 0 then merges."""
    import time

    marker = out / f".rank{rank}.done"
    marker.unlink(missing_ok=True)
    done = _read_samples(out / SAMPLES_FILE)
    previous = previous_settings(out)
    if done and previous is None:
        raise ChoiceError(f"{out} holds samples but no {RUN_FILE} saying how they were made; use another --out")
    # Rank files are only written by a launch whose process 0 records the settings, maybe a moment later.
    for path in _rank_files(out):
        done.update(_read_samples(path))
    try:
        check_settings(out, previous, run)
    except SettingsMismatch as exc:
        raise ChoiceError(str(exc)) from None
    if rank == 0:
        write_manifest(out, run, completed=False, counts=None)
    mine = [r["id"] for i, r in enumerate(rows) if i % world == rank]
    pending = {pid for pid in mine if pid not in done or (retry_failed and done[pid].get("status") == "failed")}
    log = SampleLog(out / f"samples.rank{rank}.jsonl")
    try:
        _ask(dataset, resolution, pending, backend, rotations, workers, log,
             tqdm_bar(len(pending), f"tacit-choice (process {rank} of {world})", progress))
    finally:
        log.close()
    write_bytes_atomic(marker, json.dumps({"rank": rank, "world": world, "run": _run_token()}).encode("utf-8"))
    if rank != 0:
        return RunResult(out, {}, asked=len(pending), skipped=len(mine) - len(pending),
                         notes=[f"process {rank} of {world} done; process 0 writes {RESULTS_FILE}"])
    deadline = clock() + merge_timeout_s
    markers = [out / f".rank{k}.done" for k in range(world)]
    while not all(_marker_is_current(m, world) for m in markers):
        if clock() > deadline:
            missing = [k for k, m in enumerate(markers) if not _marker_is_current(m, world)]
            raise BackendError(f"process(es) {', '.join(map(str, missing))} did not finish within {merge_timeout_s:g} s; "
                               "the answers so far are kept, run the same command to resume")
        time.sleep(0.5)
    merged = SampleLog(out / SAMPLES_FILE)
    try:
        for path in _rank_files(out):
            for sample in _read_samples(path).values():
                merged.append(sample)
        merged.rewrite_sorted()
    finally:
        merged.close()
    for path in [*_rank_files(out), *markers]:
        path.unlink(missing_ok=True)
    return _report(out, dataset, backend, run, rows, rotations, resolution, merged, asked=len(pending))


def _marker_is_current(path: Path, world: int) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("world") == world and data.get("run") == _run_token()


def _ask(dataset: Path, resolution: int, pending: set[str], backend: Backend, rotations: int, workers: int,
         log: SampleLog, bar: Any) -> None:
    """Asks the pending puzzles (``workers`` at once), each answer appended to ``log`` as it comes; a run of
    failed puzzles stops the run (``_FailureGuard``)."""
    guard = _FailureGuard()
    try:
        items = load_items(dataset, resolution, pending) if pending else iter(())
        for sample in bounded_map(lambda item: ask_item(item, backend, rotations), items, workers):
            log.append(sample)
            bar.update()
            guard.see(sample)
    finally:
        bar.close()


def tqdm_bar(total: int, desc: str, progress: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="puzzle", disable=not progress, dynamic_ncols=True)
