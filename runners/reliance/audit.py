"""The visual-reliance audit of one model on a golden release (or a TACIT release), with its gate.

For every item the model's answer distribution is taken on the original image, on the
counterfactual (golden items), and on every rung of the perturbation ladder (stochastic rungs
repeated with derived seeds). Requests of one item share a prompt, so a transformers model
answers them in batches. Internals (transformers backends, ``internals_items`` per question
type): encoder/projector zero and noise, the layer sweep and causal mediation.

Output folder:
- ``samples.jsonl``: one line per finished item (inputs: question, options, image digests;
  outputs: every distribution, internals), appended and fsynced, so a run resumes where it
  stopped; ``run.json`` holds the settings, and a resume with other settings is refused;
- ``timing.json``: wall time and items x perturbations per second of this invocation;
- ``report.json``: model id and revision, preprocessing, package versions, seeds, settings,
  thresholds, per-type metrics, internals curves, the gate verdict and every item;
- ``tables.md``: one table per question type and the gate; ``ladder.png``, ``layers.png``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vrforge.errors import UserError
from vrforge.fileio import write_bytes_atomic
from vrforge.runners.outputs import check_settings
from vrforge.runners.reliance import perturb
from vrforge.runners.reliance.backends import LETTERS, Request, Scorer, TransformersScorer, golden_prompt
from vrforge.runners.reliance.metrics import finite, mean, summarise_type

SAMPLES_FILE, RUN_FILE, REPORT_FILE, TABLES_FILE = "samples.jsonl", "run.json", "report.json", "tables.md"
TIMING_FILE = "timing.json"
REPORT_VERSION = 1
DEFAULT_THRESHOLDS = {"avr": 0.4, "cfc": 0.7, "vss": 0.05, "accuracy": 0.9}
METRICS = tuple(DEFAULT_THRESHOLDS)


class AuditError(UserError):
    """Bad dataset, settings or resume: one line, exit 2."""


@dataclass
class AuditItem:
    id: str
    qtype: str
    text: str
    options: tuple[str, ...]
    answer_index: int
    image: Image.Image
    counterfactual: Image.Image | None = None
    counterfactual_answer_index: int | None = None
    mask: np.ndarray | None = None
    meta: dict[str, Any] | None = None
    extra_images: tuple[Image.Image, ...] = ()
    digests: dict[str, str] = field(default_factory=dict)

    def request(self, image: Image.Image) -> Request:
        return Request(image=image, text=self.text, n_options=len(self.options), extra_images=self.extra_images,
                       meta=self.meta, options=self.options)


@dataclass
class Settings:
    perturbations: tuple[str, ...] = tuple(perturb.ladder())
    repeats: int = 3
    seed: int = 0
    min_confidence: float = 0.5
    internals: bool = False
    internals_items: int = 5
    noise_scale: float = 3.0
    limit: int | None = None
    question_types: tuple[str, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"perturbations": list(self.perturbations), "repeats": self.repeats, "seed": self.seed,
                "min_confidence": self.min_confidence, "internals": self.internals, "internals_items": self.internals_items,
                "noise_scale": self.noise_scale, "limit": self.limit,
                "question_types": list(self.question_types) if self.question_types else None}


# ----------------------------------------------------------------------------- items


def _image(data: Any) -> Image.Image:
    raw = bytes(data["bytes"]) if isinstance(data, dict) else bytes(data)
    with Image.open(io.BytesIO(raw)) as image:
        return image.convert("RGB")


def _digest(data: Any) -> str:
    raw = bytes(data["bytes"]) if isinstance(data, dict) else bytes(data)
    return hashlib.sha256(raw).hexdigest()


def dataset_kind(folder: Path) -> str:
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise AuditError(f"{folder} is not a built dataset folder (no readable manifest.json)") from None
    return str(manifest.get("kind", "tacit")) if isinstance(manifest, dict) else "tacit"


@dataclass
class Source:
    """What to audit: the items' ids and types in order, a streaming loader, and unrelated images for ``replace``."""

    kind: str
    info: dict[str, Any]
    order: list[tuple[str, str]]  # (id, question type)
    load: Callable[[set[str]], Iterator[AuditItem]]
    pool: dict[str, list[Image.Image]]  # a few images per question type

    def replacements(self, item: AuditItem) -> list[Image.Image]:
        """Images of other question types where there are any, else other images of the same type."""
        others = [image for qtype, images in self.pool.items() if qtype != item.qtype for image in images]
        if not others:
            others = [image for image in self.pool.get(item.qtype, []) if image.tobytes() != item.image.tobytes()]
        return others or [Image.new("RGB", item.image.size, (0, 0, 0))]


POOL_PER_TYPE = 2


def open_source(folder: str | Path, settings: Settings) -> Source:
    """Golden items with counterfactual and mask, or TACIT puzzles (ladder only); images decoded one item at a time."""
    folder = Path(folder)
    if not folder.is_dir():
        raise AuditError(f"no such dataset folder: {folder}")
    kind = dataset_kind(folder)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    info = {"path": folder.name, "kind": kind, "name": manifest.get("name"), "version": manifest.get("version"),
            "config_hash": manifest.get("config_hash")}
    types = list(settings.question_types) if settings.question_types else None
    if kind == "reliance":
        present = list(manifest.get("rows", {}))
        unknown = sorted(set(types or []) - set(present))
        if unknown:
            raise AuditError(f"question type not in {folder}: {', '.join(unknown)} (present: {', '.join(present)})")
        rows = _golden_rows(folder, types, settings.limit)  # a golden release is small (PNG bytes of 256 px scenes)
        pool: dict[str, list[Image.Image]] = {}
        for row in rows:
            if len(pool.setdefault(row["qtype"], [])) < POOL_PER_TYPE:
                pool[row["qtype"]].append(_image(row["image"]))
        by_id = {row["id"]: row for row in rows}
        return Source(kind, info, [(r["id"], r["qtype"]) for r in rows],
                      lambda wanted: (_golden_item(by_id[i]) for i in by_id if i in wanted), pool)
    if kind != "tacit":
        raise AuditError(f"{folder} is a {kind} release; the reliance audit reads golden (reliance) or TACIT releases")
    from vrforge.runners.vlm_choice import ChoiceError, load_items, plan_rows

    try:
        resolution, planned = plan_rows(folder, None, types, None, settings.limit)
    except ChoiceError as exc:
        raise AuditError(str(exc)) from None
    info["resolution"] = resolution

    def load(wanted: set[str]) -> Iterator[AuditItem]:
        try:
            for item in load_items(folder, resolution, wanted):
                yield _tacit_item(item)
        except ChoiceError as exc:
            raise AuditError(str(exc)) from None

    firsts: dict[str, list[str]] = {}
    for row in planned:
        if len(firsts.setdefault(row["task"], [])) < POOL_PER_TYPE:
            firsts[row["task"]].append(row["id"])
    pool = {}
    for item in load({i for ids in firsts.values() for i in ids}):
        pool.setdefault(item.qtype, []).append(item.image)
    return Source(kind, info, [(r["id"], r["task"]) for r in planned], load, pool)


def _golden_rows(folder: Path, types: list[str] | None, limit: int | None) -> list[dict[str, Any]]:
    from vrforge.builds.reliance_build import read_rows

    taken: dict[str, int] = {}
    rows = []
    for row in read_rows(folder, types):
        if limit is not None and taken.get(row["qtype"], 0) >= limit:
            continue
        taken[row["qtype"]] = taken.get(row["qtype"], 0) + 1
        rows.append(row)
    return rows


def _golden_item(row: dict[str, Any]) -> AuditItem:
    with Image.open(io.BytesIO(bytes(row["mask"]["bytes"]))) as mask:
        mask_array = np.asarray(mask.convert("L")) > 127
    return AuditItem(
        id=row["id"], qtype=row["qtype"], text=golden_prompt(row["question"], row["options"]), options=tuple(row["options"]),
        answer_index=row["answer_index"], image=_image(row["image"]), counterfactual=_image(row["counterfactual"]),
        counterfactual_answer_index=row["counterfactual_answer_index"], mask=mask_array, meta=json.loads(row["meta"]),
        digests={"image": _digest(row["image"]), "counterfactual": _digest(row["counterfactual"])})


def _tacit_item(item: Any) -> AuditItem:
    from vrforge.runners.vlm_choice import Question

    question = Question(item.task, item.puzzle, item.options)
    text = (f"{question.intro} The first image is the puzzle; the next {len(item.options)} are options "
            f"{LETTERS[0]} to {LETTERS[len(item.options) - 1]} in order. {question.ask}")
    return AuditItem(id=item.id, qtype=item.task, text=text, options=tuple(LETTERS[:len(item.options)]),
                     answer_index=item.answer_index, image=_image(item.puzzle),
                     extra_images=tuple(_image(o) for o in item.options), digests={"image": _digest(item.puzzle)})


# ----------------------------------------------------------------------------- one item


def ask_item(item: AuditItem, scorer: Scorer, settings: Settings, pool: Sequence[Image.Image]) -> dict[str, Any]:
    """Every distribution for one item (and its internals when asked), as a samples.jsonl record."""
    keys: list[tuple[str, int]] = [("original", 0)]
    images: list[Image.Image] = [item.image]
    if item.counterfactual is not None:
        keys.append(("counterfactual", 0))
        images.append(item.counterfactual)
    for name in settings.perturbations:
        for repeat in range(perturb.repeats_for(name, settings.repeats)):
            rng = perturb.perturb_rng(settings.seed, item.id, name, repeat)
            keys.append((name, repeat))
            images.append(perturb.apply(name, item.image, rng, item.mask, pool))
    before = dict(getattr(scorer, "sources", {}))
    distributions = scorer.distributions([item.request(image) for image in images])
    record: dict[str, Any] = {
        "distribution_source": _item_source(scorer, before),
        "id": item.id, "qtype": item.qtype, "answer_index": item.answer_index,
        "counterfactual_answer_index": item.counterfactual_answer_index,
        "inputs": {"prompt": item.text, "options": list(item.options), **{f"{k}_sha256": v for k, v in item.digests.items()}},
        "original": None, "counterfactual": None, "perturbed": {},
    }
    for (name, _), probs in zip(keys, distributions):
        rounded = [round(float(p), 6) for p in probs]
        if name in ("original", "counterfactual"):
            record[name] = rounded
        else:
            record["perturbed"].setdefault(name, []).append(rounded)
    return record


def _item_source(scorer: Scorer, before: dict[str, int]) -> str:
    """How this item's distributions were obtained (an endpoint may serve logprobs for some requests only)."""
    counts = getattr(scorer, "sources", None)
    if counts is None:
        return scorer.source
    used = sorted(name for name, count in counts.items() if count > before.get(name, 0))
    if used == ["samples"]:
        return f"samples (n={getattr(scorer, 'samples', '?')})"
    return used[0] if len(used) == 1 else "mixed"


def overall_source(samples: Sequence[dict[str, Any]]) -> str:
    found = sorted({s.get("distribution_source", "unknown") for s in samples})
    return found[0] if len(found) == 1 else "mixed: " + ", ".join(found)


# ----------------------------------------------------------------------------- resume


class SampleLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.samples: dict[str, dict[str, Any]] = {}
        if path.exists():
            good = []
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    sample = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line from an interrupted run
                if isinstance(sample, dict) and isinstance(sample.get("id"), str):
                    self.samples[sample["id"]] = sample
                    good.append(line)
            write_bytes_atomic(path, "".join(f"{line}\n" for line in good).encode("utf-8"))
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - held open for the whole run

    def append(self, sample: dict[str, Any]) -> None:
        self._handle.write(json.dumps(sample, sort_keys=True) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self.samples[sample["id"]] = sample

    def close(self, order: Sequence[str]) -> None:
        self._handle.close()
        write_bytes_atomic(self.path, "".join(json.dumps(self.samples[i], sort_keys=True) + "\n"
                                              for i in order if i in self.samples).encode("utf-8"))


def _check_run(out: Path, run: dict[str, Any], has_samples: bool) -> None:
    path = out / RUN_FILE
    if path.exists() and has_samples:
        try:
            previous = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise AuditError(f"cannot read {path}; delete it or use another --out") from None
        check_settings(out, previous, run)  # SettingsMismatch: a UserError naming each change
    write_bytes_atomic(path, (json.dumps(run, indent=2, sort_keys=True) + "\n").encode("utf-8"))


# ----------------------------------------------------------------------------- the gate


def parse_thresholds(specs: Sequence[str] | None) -> dict[str, Any]:
    """``metric=value`` (every type) or ``type.metric=value`` (one type) over the defaults."""
    table: dict[str, Any] = {"default": dict(DEFAULT_THRESHOLDS), "per_type": {}}
    for spec in specs or []:
        key, sep, value = spec.partition("=")
        qtype, _, metric = key.rpartition(".")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or metric not in METRICS or not np.isfinite(number):
            raise AuditError(f"--threshold {spec!r}: expected [TYPE.]METRIC=NUMBER with METRIC one of {', '.join(METRICS)}")
        if qtype:
            table["per_type"].setdefault(qtype, {})[metric] = number
        else:
            table["default"][metric] = number
    return table


def gate(per_type: dict[str, dict[str, Any]], thresholds: dict[str, Any], gate_perturbation: str, golden: bool) -> list[str]:
    """One line per failed (metric, type); [] when every threshold holds."""
    failures = []
    for qtype, summary in per_type.items():
        limits = {**thresholds["default"], **thresholds["per_type"].get(qtype, {})}
        values = {"accuracy": summary["accuracy"], "vss": summary["vss"].get(gate_perturbation)}
        if golden:
            values.update(avr=summary["avr"], cfc=summary["cfc"])
        for metric in METRICS:
            if metric not in values:
                continue
            value = values[metric]
            label = f"VSS[{gate_perturbation}]" if metric == "vss" else metric.upper() if metric != "accuracy" else "accuracy"
            if not finite(value):
                failures.append(f"{label} n/a < {limits[metric]:.2f} on {qtype} (no items above the confidence filter)")
            elif value < limits[metric]:
                failures.append(f"{label} {value:.3f} < {limits[metric]:.2f} on {qtype}")
    return failures


# ----------------------------------------------------------------------------- the run


@dataclass
class AuditResult:
    out: Path
    report: dict[str, Any]
    failures: list[str]
    asked: int
    skipped: int
    throughput: dict[str, Any] = field(default_factory=dict)


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("vrforge", "torch", "transformers", "numpy", "pillow", "openai", "datasets"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def run_audit(dataset: str | Path, scorer: Scorer, out: str | Path, settings: Settings, *, thresholds: dict[str, Any] | None = None,
              gate_perturbation: str | None = None, progress: bool = False, plots: bool = True) -> AuditResult:
    from tqdm import tqdm

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise AuditError(f"--out {out} is a file, not a folder")
    if settings.repeats < 1:
        raise AuditError(f"--repeats must be at least 1, got {settings.repeats}")
    if settings.limit is not None and settings.limit < 1:
        raise AuditError(f"--limit must be at least 1, got {settings.limit}")
    if not 0.0 <= settings.min_confidence <= 1.0:
        raise AuditError(f"--min-confidence must be within 0..1, got {settings.min_confidence}")
    for name in settings.perturbations:
        try:
            perturb.split_name(name)
        except ValueError as exc:
            raise AuditError(str(exc)) from None
    if not settings.perturbations:
        raise AuditError("no perturbations to run")
    if gate_perturbation is None:  # the blank image where it is run, else the last (strongest) rung given
        gate_perturbation = "blank" if "blank" in settings.perturbations else settings.perturbations[-1]
    if gate_perturbation not in settings.perturbations:
        raise AuditError(f"--gate-perturbation {gate_perturbation!r} is not among the perturbations run")
    if settings.internals and not isinstance(scorer, TransformersScorer):
        raise AuditError("--internals needs a transformers backend (an endpoint exposes no activations)")
    thresholds = thresholds or parse_thresholds(None)
    source = open_source(dataset, settings)
    if not source.order:
        raise AuditError(f"{dataset}: no items to audit")
    order = [item_id for item_id, _ in source.order]
    run = {"report_version": REPORT_VERSION, "dataset": source.info, **scorer.describe(), **settings.as_dict()}
    log = SampleLog(out / SAMPLES_FILE)
    started = time.perf_counter()
    asked = 0
    internals_done: dict[str, int] = {}
    for sample in log.samples.values():
        if sample.get("internals"):
            internals_done[sample["qtype"]] = internals_done.get(sample["qtype"], 0) + 1
    try:
        _check_run(out, run, has_samples=bool(log.samples))
        pending = {item_id for item_id in order if item_id not in log.samples}
        bar = tqdm(total=len(pending), desc="reliance audit", unit="item", disable=not progress, dynamic_ncols=True)
        try:
            for item in source.load(pending) if pending else iter(()):
                record = ask_item(item, scorer, settings, source.replacements(item))
                if settings.internals and internals_done.get(item.qtype, 0) < settings.internals_items:
                    record["internals"] = item_internals(item, scorer, settings)
                    internals_done[item.qtype] = internals_done.get(item.qtype, 0) + 1
                log.append(record)
                asked += 1
                bar.update()
        finally:
            bar.close()
    finally:
        log.close(order)
    wall = time.perf_counter() - started
    samples = [log.samples[item_id] for item_id in order]
    report = build_report(samples, source.kind, source.info, scorer, settings, thresholds, gate_perturbation)
    requests_per_item = mean([1 + (s["counterfactual"] is not None) + sum(len(v) for v in s["perturbed"].values())
                              for s in samples]) or 0
    rate = round(asked * len(settings.perturbations) / wall, 3) if asked and wall else None
    # Timings live apart from the report, so the same run on the same inputs writes the same report bytes.
    throughput = {"items_asked": asked, "wall_s": round(wall, 3), "items_x_perturbations_per_s": rate,
                  "forward_requests_per_item": requests_per_item, "internals": settings.internals}
    failures = report["gate"]["failures"]
    write_bytes_atomic(out / REPORT_FILE, (json.dumps(report, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    write_bytes_atomic(out / TIMING_FILE, (json.dumps(throughput, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    write_bytes_atomic(out / TABLES_FILE, tables(report).encode("utf-8"))
    if plots:
        from vrforge.runners.reliance.plots import plot_ladder, plot_layers

        plot_ladder(report, out / "ladder.png")
        if report["internals"]:
            plot_layers(report, out / "layers.png")
    return AuditResult(out=out, report=report, failures=failures, asked=asked, skipped=len(order) - len(pending),
                       throughput=throughput)


def item_internals(item: AuditItem, scorer: Scorer, settings: Settings) -> dict[str, Any]:
    from vrforge.runners.reliance.internals import Probe
    from vrforge.seeding import derive_seed

    probe = Probe(scorer)  # type: ignore[arg-type]
    seed = derive_seed(settings.seed, item.id, "internals", 0) % (2 ** 31)
    request = item.request(item.image)
    result: dict[str, Any] = {"sites": probe.site_effects(request, noise_scale=settings.noise_scale, seed=seed),
                              "layer_sweep": probe.layer_sweep(request, noise_scale=settings.noise_scale, seed=seed)}
    if item.counterfactual is not None and item.counterfactual_answer_index is not None:
        mediation = probe.mediation(request, item.request(item.counterfactual), item.counterfactual_answer_index)
        result["mediation"] = {k: mediation[k] for k in ("total_effect", "indirect_effect", "all_layers_js_to_counterfactual")}
    return result


def build_report(samples: Sequence[dict[str, Any]], kind: str, info: dict[str, Any], scorer: Scorer, settings: Settings,
                 thresholds: dict[str, Any], gate_perturbation: str) -> dict[str, Any]:
    types = sorted({s["qtype"] for s in samples}, key=lambda t: [s["qtype"] for s in samples].index(t))
    per_type = {t: summarise_type([s for s in samples if s["qtype"] == t], settings.perturbations, settings.min_confidence)
                for t in types}
    internals: dict[str, Any] = {}
    for t in types:
        found = [s["internals"] for s in samples if s["qtype"] == t and s.get("internals")]
        if not found:
            continue
        entry: dict[str, Any] = {"items": len(found),
                                 "sites": {k: mean([f["sites"][k] for f in found]) for k in found[0]["sites"]},
                                 "layer_sweep": np.mean([f["layer_sweep"] for f in found], axis=0).round(6).tolist()}
        mediated = [f["mediation"] for f in found if "mediation" in f]
        if mediated:
            entry["mediation"] = {"total_effect": mean([m["total_effect"] for m in mediated]),
                                  "indirect_effect": np.mean([m["indirect_effect"] for m in mediated], axis=0).round(6).tolist()}
        internals[t] = entry
    failures = gate(per_type, thresholds, gate_perturbation, golden=kind == "reliance")
    details = scorer.details() if hasattr(scorer, "details") else {}
    return {
        "report_version": REPORT_VERSION, "dataset": info, "model": {**scorer.describe(), **details},
        "distribution_source": overall_source(samples), "versions": _versions(), "settings": settings.as_dict(),
        "seeds": {"audit": settings.seed, "perturbation_seed": "derive_seed(audit seed, item id, perturbation, repeat)"},
        "thresholds": thresholds, "gate_perturbation": gate_perturbation,
        "per_type": per_type, "internals": internals,
        "gate": {"passed": not failures, "failures": failures}, "items": list(samples),
    }


def _fmt(value: Any) -> str:
    return "n/a" if not finite(value) else f"{value:.3f}"


def tables(report: dict[str, Any]) -> str:
    """Markdown: per question type, accuracy, AVR, CFC and VSS / flip rate per perturbation; then the gate."""
    lines = [f"# Visual-reliance audit: {report['model'].get('model')}", "",
             f"Dataset `{report['dataset'].get('name')}` {report['dataset'].get('version')}; answer distribution from "
             f"{report['distribution_source']}; min confidence {report['settings']['min_confidence']}.", ""]
    for qtype, summary in report["per_type"].items():
        low = summary["low_confidence"]
        lines += [f"## {qtype}", "",
                  f"items {summary['items']}, accuracy {_fmt(summary['accuracy'])}, AVR {_fmt(summary['avr'])}, "
                  f"CFC {_fmt(summary['cfc'])} (over {summary['confident_items']} confident items; "
                  f"{low['items']} low-confidence items apart: AVR {_fmt(low['avr'])}, CFC {_fmt(low['cfc'])}), "
                  f"counterfactual VSS {_fmt(summary['counterfactual_vss'])}", "",
                  "| perturbation | VSS | flip rate |", "|---|---|---|"]
        lines += [f"| {name} | {_fmt(summary['vss'][name])} | {_fmt(summary['flip_rate'][name])} |" for name in summary["vss"]]
        lines.append("")
    for qtype, entry in report["internals"].items():
        sites = ", ".join(f"{k} {_fmt(v)}" for k, v in entry["sites"].items())
        lines += [f"## internals: {qtype} ({entry['items']} items)", "", f"JS divergence when editing: {sites}", "",
                  "| hidden index | noise JS | indirect effect |", "|---|---|---|"]
        effects = entry.get("mediation", {}).get("indirect_effect", [])
        for index, value in enumerate(entry["layer_sweep"]):
            lines.append(f"| {index} | {_fmt(value)} | {_fmt(effects[index]) if index < len(effects) else 'n/a'} |")
        lines.append("")
    verdict = report["gate"]
    lines += ["## gate", "", "passed" if verdict["passed"] else "FAILED:", *[f"- {f}" for f in verdict["failures"]], ""]
    return "\n".join(lines)
