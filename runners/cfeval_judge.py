"""CF-Eval: a VLM judge of generated CF-World images through any OpenAI-compatible endpoint or a local
transformers model (``--backend transformers``, see ``cfeval_local``).

Inputs: CF-World scenarios (a JSONL of scenario dicts, the folder ``vrforge cfworld import``
wrote, or the official release folder itself) and generated images laid out as
``<images>/<scenario_id>/<level>.png`` (the text-to-image runner's layout).

One request per image: the image goes in as a data URL beside all of that level's
questions, and the answer is a JSON object with one ``{"reasoning", "score"}`` per
question id (``q1``, ``q2``, ...), enforced by a strict JSON Schema. An answer that is not
JSON, misses a question or gives a non-numeric score is retried with backoff by the shared
client; when every attempt fails the image is recorded as ``failed`` with the reason and
left out of the means, and the run goes on. Errors that concern every request (no connection,
401/403/404, 429 or 5xx after the retries) or ten failed images in a row stop the run instead
(exit 2; the answers already received are cached, so the same command resumes). At most
2 x ``--workers`` requests are submitted at a time, so Ctrl-C stops the run after the
requests in flight. Scores are clipped into [0, 1] (the raw value is kept);
``--snap`` rounds them to the nearest of 0 / 0.5 / 1, the values the official questions use.

The judge persona is chosen per level (``--persona l1=balanced,l2=strict,l3=strict``, the
paper's setting). Responses are cached by the client under a hash of the judge model, the
messages (persona, questions, image bytes) and the sampling parameters, so a rerun sends no
request for anything already judged. ``--skip-gated`` judges every L1 image first and sends
no request for L2/L3 of a scenario whose S_L1 is below the threshold (they count as 0).

A missing image counts as S = 0 (the model produced nothing), as does an image that cannot
be decoded; both are counted apart.

Several images per prompt (``--images-per-prompt N``, the layout ``vrforge run t2i`` writes
with the same option: ``<scenario_id>/<level>_<k>.png``): every image is judged (records carry
``sample`` = k). The prompt's S is the mean of its images' S; ``summary`` (the main figures,
per prompt) gates and averages those, and ``per_image`` treats each image index as its own
draw of the scenario (image k of L1 gates image k of L2 and L3). Output: ``judgements.jsonl`` (one line per image:
scenario_id, domain, subdomain, level, image, status, questions [id, source_id, dimension,
weight, score, raw_score, reasoning], dimension_scores, S (before the gate), S_gated,
gated, judge, persona, usage, cached, request_hash, error, clipped) and ``results.json``
(counts, usage, failures, E[S_L1..3], PRR, RRR overall and per domain), written
atomically, sorted, without timestamps.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vrforge.errors import UserError
from vrforge.runners import cfeval_metrics as metrics
from vrforge.runners.cfeval_personas import DEFAULT_PERSONAS, Persona, get_persona
from vrforge.schemas.cfworld import LEVELS, Question, Scenario

FORMAT_VERSION = 1
RESULTS_FILE = "results.json"
JUDGEMENTS_FILE = "judgements.jsonl"
SCHEMA_NAME = "cfeval_scores"
STATUSES = ("ok", "failed", "missing_image", "unusable_image", "gated", "no_questions")
MAX_CONSECUTIVE_FAILURES = 10  # that many failed images in a row concern every request: the run stops


class CFEvalError(UserError):
    """Input the judge cannot use (missing folder, bad scenario file, bad option): one line for the user."""


# --------------------------------------------------------------------------- scenarios and images


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Scenarios sorted by id, from anything the runners read (``runners.items.read_scenarios``):
    a JSONL/JSON file, an import folder, a CF-World dataset folder or the official release."""
    from vrforge.runners.items import ItemsError, read_scenarios

    try:
        scenarios = read_scenarios(Path(path))
    except ItemsError as exc:
        raise CFEvalError(str(exc)) from None
    by_id: dict[str, Scenario] = {}
    for scenario in scenarios:
        if scenario.id in by_id:
            raise CFEvalError(f"{path}: scenario id {scenario.id} appears twice")
        by_id[scenario.id] = scenario
    if not by_id:
        raise CFEvalError(f"{path} holds no scenarios")
    return [by_id[k] for k in sorted(by_id)]


def image_path(images_dir: Path, scenario_id: str, level: str, sample: int | None = None) -> Path:
    return images_dir / scenario_id / (f"{level}.png" if sample is None else f"{level}_{sample}.png")


def _read_image(path: Path) -> tuple[bytes | None, str, str]:
    """(bytes, mime, status) of one image; bytes None when it is missing or unusable."""
    from PIL import Image

    from vrforge.imageio import UnusableImage, load_rgb

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, "", "missing_image"
    except OSError:
        return None, "", "unusable_image"
    try:
        load_rgb(data)
        with Image.open(io.BytesIO(data)) as image:
            mime = Image.MIME.get(image.format or "", "image/png")
    except (UnusableImage, OSError, ValueError):
        return None, "", "unusable_image"
    return data, mime, "ok"


# --------------------------------------------------------------------------- one request


def level_questions(scenario: Scenario, level: str) -> list[Question]:
    return [q for q in scenario.questions if q.level == level]


def response_schema(count: int) -> dict[str, Any]:
    """A strict schema that makes every question id required (q1 .. qN)."""
    answer = {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, "score": {"type": "number"}},
        "required": ["reasoning", "score"],
        "additionalProperties": False,
    }
    ids = [f"q{i}" for i in range(1, count + 1)]
    return {"type": "object", "properties": {qid: answer for qid in ids}, "required": ids, "additionalProperties": False}


def check_answer(count: int) -> Callable[[dict], None]:
    """The answer check beyond the schema: every score present and a finite number (ValueError -> retried)."""

    def check(data: dict) -> None:
        for i in range(1, count + 1):
            entry = data.get(f"q{i}")
            if not isinstance(entry, dict) or "score" not in entry:
                raise ValueError(f"no score for q{i}")
            score = entry["score"]
            if isinstance(score, bool) or not isinstance(score, int | float) or score != score or abs(score) == float("inf"):
                raise ValueError(f"score of q{i} is not a finite number: {score!r}")

    return check


def build_messages(persona: Persona, questions: Sequence[Question], image_bytes: bytes, mime: str = "image/png") -> list[dict]:
    """System = persona; user = the image (data URL) and every question with its criteria."""
    from vrforge.openai_client import image_part

    lines = [persona.instruction, "", "Questions:"]
    for i, q in enumerate(questions, 1):
        lines += ["", f"q{i}: {q.question}", f"Criteria: {q.criteria or '(none given)'}"]
    lines += ["", f"Answer with a JSON object with exactly the keys {', '.join(f'q{i}' for i in range(1, len(questions) + 1))}."]
    return [
        {"role": "system", "content": persona.system},
        {"role": "user", "content": [image_part(image_bytes, mime), {"type": "text", "text": "\n".join(lines)}]},
    ]


# --------------------------------------------------------------------------- judging


@dataclass(frozen=True)
class JudgeSettings:
    personas: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PERSONAS))
    threshold: float = metrics.DEFAULT_THRESHOLD
    snap: bool = False
    skip_gated: bool = False
    dimension_weights: dict[str, float] | None = None
    levels: tuple[str, ...] = LEVELS
    workers: int = 4
    images_per_prompt: int = 1


def _usage_dict(usage: Any) -> dict[str, int]:
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "requests": usage.requests, "cache_hits": usage.cache_hits}


_NO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0, "cache_hits": 0}


def _record(scenario: Scenario, level: str, status: str, judge: str, persona: str, sample: int | None = None,
            **extra: Any) -> dict[str, Any]:
    image = f"{scenario.id}/{level}.png" if sample is None else f"{scenario.id}/{level}_{sample}.png"
    base: dict[str, Any] = {
        "scenario_id": scenario.id, "domain": scenario.domain, "subdomain": scenario.subdomain, "level": level,
        "image": image, "status": status, "judge": judge, "persona": persona,
        "questions": [], "dimension_scores": {}, "S": None, "usage": dict(_NO_USAGE), "cached": False,
        "request_hash": "", "error": "", "clipped": 0,
    }
    if sample is not None:
        base["sample"] = sample
    base.update(extra)
    return base


def judge_image(client: Any, scenario: Scenario, level: str, images_dir: Path, settings: JudgeSettings,
                sample: int | None = None) -> dict[str, Any]:
    """Judge one image (image ``sample`` of several per prompt); never raises for a bad image or a bad answer
    (the record says what happened)."""
    from vrforge.openai_client import ChatError

    judge = client.config.model
    persona_name = settings.personas[level]
    persona = get_persona(persona_name)
    questions = level_questions(scenario, level)

    def record(status: str, **extra: Any) -> dict[str, Any]:
        return _record(scenario, level, status, judge, persona_name, sample, **extra)

    if not questions:
        return record("no_questions", error="the scenario has no questions at this level")
    data, mime, status = _read_image(image_path(images_dir, scenario.id, level, sample))
    if data is None:
        return record(status, S=0.0)
    messages = build_messages(persona, questions, data, mime)
    try:
        result = client.complete_json(messages, response_schema(len(questions)), SCHEMA_NAME, validate=check_answer(len(questions)))
    except ChatError as exc:
        if getattr(exc, "concerns_every_request", False):
            raise CFEvalError(f"the judge endpoint cannot answer ({exc.kind}: {exc.message}); "
                              "answers received so far are cached, run the same command to resume") from None
        return record("failed", error=f"{exc.kind}: {exc.message}")
    scored: list[dict[str, Any]] = []
    clipped = 0
    for i, q in enumerate(questions, 1):
        entry = result.data[f"q{i}"]
        raw = float(entry["score"])
        score = metrics.clip_score(raw)
        clipped += score != raw
        if settings.snap:
            score = metrics.snap_score(score)
        scored.append({"id": f"q{i}", "source_id": q.source_id, "dimension": q.dimension, "weight": q.weight,
                       "score": score, "raw_score": raw, "reasoning": str(entry.get("reasoning", ""))})
    parts = [metrics.ScoredQuestion(s["dimension"], s["weight"], s["score"]) for s in scored]
    dims = metrics.dimension_scores(parts)
    return record(
        "ok", questions=scored,
        dimension_scores={d: v["score"] for d, v in dims.items()},
        S=metrics.image_score(parts, settings.dimension_weights),
        usage=_usage_dict(result.usage), cached=result.cached, request_hash=result.request_hash, clipped=clipped,
    )


def _map(jobs: Sequence[tuple[Any, ...]], run: Callable[..., dict[str, Any]], workers: int,
         progress: bool, desc: str) -> list[dict[str, Any]]:
    """``run`` over the jobs with at most 2 x workers requests submitted (Ctrl-C stops after those in flight)."""
    from tqdm import tqdm

    from vrforge.runners.concurrency import bounded_map

    bar = tqdm(total=len(jobs), desc=desc, unit="image", disable=not progress, dynamic_ncols=True)
    results, in_a_row = [], 0
    try:
        for record in bounded_map(lambda job: run(*job), jobs, workers):
            results.append(record)
            bar.update()
            in_a_row = in_a_row + 1 if record["status"] == "failed" else 0
            if in_a_row >= MAX_CONSECUTIVE_FAILURES:
                raise CFEvalError(f"{in_a_row} images in a row failed (last: {record['error']}); answers received "
                                  "so far are cached, fix the cause and run the same command to resume")
        return results
    finally:
        bar.close()


def judge_run(client: Any, scenarios: Sequence[Scenario], images_dir: Path, settings: JudgeSettings,
              progress: bool = False) -> list[dict[str, Any]]:
    """Judge every (scenario, level) image; records sorted by scenario id and level."""
    def run(scenario: Scenario, level: str, sample: int | None) -> dict[str, Any]:
        return judge_image(client, scenario, level, images_dir, settings, sample)

    check_levels(settings.levels)
    if settings.images_per_prompt < 1:
        raise CFEvalError(f"--images-per-prompt must be at least 1, got {settings.images_per_prompt}")
    samples: list[int | None] = [None] if settings.images_per_prompt == 1 else list(range(settings.images_per_prompt))
    levels = [lvl for lvl in LEVELS if lvl in settings.levels]
    records: dict[tuple[str, str, int], dict[str, Any]] = {}

    def key(record: dict[str, Any]) -> tuple[str, str, int]:
        return record["scenario_id"], record["level"], record.get("sample") or 0

    first = ["l1"] if settings.skip_gated and "l1" in levels else []
    l1_jobs = [(s, "l1", k) for s in scenarios for k in samples] if first else []
    for record in _map(l1_jobs, run, settings.workers, progress, "judge L1"):
        records[key(record)] = record
    jobs: list[tuple[Scenario, str, int | None]] = []
    for scenario in scenarios:
        s1 = prompt_score([records.get((scenario.id, "l1", k or 0), {}).get("S") for k in samples])
        for level in levels:
            for k in samples:
                if (scenario.id, level, k or 0) in records:
                    continue
                if first and level != "l1" and metrics.is_gated(s1, settings.threshold):
                    records[(scenario.id, level, k or 0)] = _record(
                        scenario, level, "gated", client.config.model, settings.personas[level], k,
                        error=f"not judged: S_L1 {s1:.4f} < threshold {settings.threshold:g}")
                    continue
                jobs.append((scenario, level, k))
    for record in _map(jobs, run, settings.workers, progress, "judge"):
        records[key(record)] = record
    ordered = [records[k] for k in sorted(records, key=lambda k: (k[0], LEVELS.index(k[1]), k[2]))]
    _add_gated_scores(ordered, settings.threshold)
    return ordered


def prompt_score(scores: Sequence[float | None]) -> float | None:
    """A prompt's S from its images' S: their mean, leaving out the images that got no judgement."""
    known = [s for s in scores if s is not None]
    return sum(known) / len(known) if known else None


def prompt_rows(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One metrics row per (scenario, level) with the prompt's S (identity with one image per prompt)."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        grouped.setdefault((r["scenario_id"], r["level"]), []).append(r)
    return [{"scenario_id": sid, "domain": rows[0].get("domain", ""), "level": level,
             "S": prompt_score([r["S"] for r in rows])} for (sid, level), rows in grouped.items()]


def _add_gated_scores(records: Sequence[dict[str, Any]], threshold: float) -> None:
    """Each record's S after the L1 gate (``S_gated``) and whether the gate zeroed it (``gated``).

    The gate is the prompt's: with several images per prompt, the mean S_L1 of its images decides."""
    by_scenario: dict[str, dict[str, float | None]] = {}
    for row in prompt_rows(records):
        by_scenario.setdefault(row["scenario_id"], {})[row["level"]] = row["S"]
    for r in records:
        gated = r["level"] != "l1" and metrics.is_gated(by_scenario[r["scenario_id"]].get("l1"), threshold)
        if by_scenario[r["scenario_id"]].get("l1") is None and r["level"] != "l1":
            r["S_gated"] = None  # the gate cannot be decided
        else:
            r["S_gated"] = 0.0 if gated else r["S"]
        r["gated"] = gated


def summarize(records: Sequence[dict[str, Any]], settings: JudgeSettings, judge_info: dict[str, Any],
              label: str) -> dict[str, Any]:
    """results.json: configuration, counts, usage totals, failures and the metrics."""
    statuses = Counter(r["status"] for r in records)
    usage: Counter[str] = Counter()
    for r in records:
        usage.update(r["usage"])
    return {
        "format_version": FORMAT_VERSION,
        "kind": "cfeval",
        "model": label,
        "judge": judge_info,
        "personas": {level: settings.personas[level] for level in LEVELS},
        "threshold": settings.threshold,
        "snap": settings.snap,
        "skip_gated": settings.skip_gated,
        "dimension_weights": settings.dimension_weights or {},
        "judgements_file": JUDGEMENTS_FILE,
        "counts": {"images": len(records), **{s: statuses.get(s, 0) for s in STATUSES},
                   "cached": sum(1 for r in records if r["cached"]), "clipped_scores": sum(r["clipped"] for r in records)},
        "usage": {k: usage.get(k, 0) for k in _NO_USAGE},
        "failures": [{"scenario_id": r["scenario_id"], "level": r["level"], "error": r["error"]}
                     for r in records if r["status"] == "failed"],
        "failure_reasons": dict(sorted(Counter(failure_reason(r["error"]) for r in records if r["status"] == "failed").items())),
        "summary": metrics.model_summary(_metric_rows(records), settings.threshold),
        **({"images_per_prompt": settings.images_per_prompt,
            "per_image": metrics.model_summary(_per_image_rows(records), settings.threshold)}
           if settings.images_per_prompt > 1 else {}),
    }


def failure_reason(error: str) -> str:
    """What a failed image's error groups under: its kind, with the HTTP status for HTTP errors ("http 400")."""
    kind = error.split(":", 1)[0].strip() or "unknown"
    status = re.search(r"\bHTTP (\d{3})\b", error) if kind == "http" else None
    return f"http {status[1]}" if status else kind


def _metric_rows(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the metrics use, per prompt: gated-and-skipped images count as unjudged (the gate makes them 0)."""
    return prompt_rows(records)


def _per_image_rows(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each image index k as its own draw of the scenario (image k of L1 gates image k of L2/L3)."""
    return [{"scenario_id": f"{r['scenario_id']}#{r.get('sample', 0)}", "domain": r["domain"], "level": r["level"],
             "S": r["S"]} for r in records]


def manifest_settings(settings: JudgeSettings, judge_info: dict[str, Any], scenarios: Sequence[Scenario],
                      images_dir: Path, label: str) -> dict[str, Any]:
    """What the judgements depend on, for ``run_manifest.json`` (the texts as sha256)."""
    from vrforge.runners.outputs import text_sha256

    personas = {level: settings.personas[level] for level in LEVELS}
    persona_texts = {name: [get_persona(name).system, get_persona(name).instruction] for name in sorted(set(personas.values()))}
    return {"judge": judge_info, "personas": personas, "personas_sha256": text_sha256(persona_texts),
            "scenarios_sha256": text_sha256([s.to_dict() for s in scenarios]), "scenarios": len(scenarios),
            "levels": list(settings.levels), "threshold": settings.threshold, "snap": settings.snap,
            "skip_gated": settings.skip_gated, "dimension_weights": settings.dimension_weights or {},
            "images": str(images_dir), "model": label, "images_per_prompt": settings.images_per_prompt}


def write_manifest(out_dir: Path, run_settings: dict[str, Any], *, completed: bool, counts: dict[str, Any]) -> None:
    """``run_manifest.json``: written before the first request and again at the end. A rerun recomputes every
    judgement (answers come from the cache keyed by the request), so other settings never mix in."""
    from vrforge.fileio import write_bytes_atomic
    from vrforge.runners.outputs import FORMAT_VERSION, MANIFEST_FILE

    manifest = {"format_version": FORMAT_VERSION, "kind": "cfeval-judge", "settings": run_settings,
                "runs": [{"completed": completed}], "counts": counts}
    write_bytes_atomic(out_dir / MANIFEST_FILE, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def write_outputs(out_dir: Path, records: Sequence[dict[str, Any]], results: dict[str, Any]) -> tuple[Path, Path]:
    from vrforge.fileio import write_bytes_atomic

    lines = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)
    write_bytes_atomic(out_dir / JUDGEMENTS_FILE, lines.encode("utf-8"))
    write_bytes_atomic(out_dir / RESULTS_FILE, (json.dumps(results, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return out_dir / RESULTS_FILE, out_dir / JUDGEMENTS_FILE


# --------------------------------------------------------------------------- CLI


def parse_weights(spec: str | None) -> dict[str, float] | None:
    """``"visual_integrity=3,assessment_point=15,logic_consistency=8"`` -> dict (None when not given)."""
    if not spec:
        return None
    weights: dict[str, float] = {}
    for part in spec.split(","):
        name, sep, value = (p.strip() for p in part.partition("="))
        if not sep or name not in metrics.DIMENSIONS:
            known = ", ".join(metrics.DIMENSIONS)
            raise CFEvalError(f"--weights: {part.strip()!r} is not DIMENSION=WEIGHT with a dimension of {known}")
        try:
            weight = float(value)
        except ValueError:
            raise CFEvalError(f"--weights: {value!r} is not a number") from None
        if not weight > 0:
            raise CFEvalError(f"--weights: the weight of {name} must be positive, got {value}")
        weights[name] = weight
    return weights


def parse_levels(spec: str | None, need_l1: bool = False) -> tuple[str, ...]:
    if not spec:
        return LEVELS
    levels = tuple(p.strip().lower() for p in spec.split(",") if p.strip())
    unknown = [lvl for lvl in levels if lvl not in LEVELS]
    if unknown or not levels:
        raise CFEvalError(f"--levels: {', '.join(unknown) or spec!r} not among {', '.join(LEVELS)}")
    if need_l1:
        check_levels(levels)
    return levels


def check_levels(levels: Sequence[str]) -> None:
    """L2 and L3 are gated by S_L1: judging them without L1 would give metrics that cannot be computed."""
    if "l1" not in levels:
        raise CFEvalError(f"--levels {','.join(levels)} leaves out l1, whose score gates L2 and L3 "
                          "(S_L1 < threshold sets them to 0): add l1 (cached answers are reused)")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def format_summary_line(results: dict[str, Any]) -> str:
    overall = results["summary"]["overall"]
    counts, usage = results["counts"], results["usage"]
    return (f"{results['model']} judged by {results['judge']['model']}: L1 {_fmt(overall['l1'])}, L2 {_fmt(overall['l2'])}, "
            f"L3 {_fmt(overall['l3'])}, PRR {_fmt(overall['prr'])}, RRR {_fmt(overall['rrr'])}; "
            f"{counts['images']} images ({counts['ok']} judged, {counts['cached']} from cache, {counts['gated']} gated, "
            f"{counts['missing_image']} missing, {counts['unusable_image']} unusable, {counts['failed']} failed); "
            f"{usage['requests']} requests, {usage['prompt_tokens']}+{usage['completion_tokens']} tokens")
