"""One drift run end to end: chains, scoring, report; and the scoring config (which embedders, which detector).

The scoring config is a TOML file (``--scoring-config``) whose keys are ``ScoringConfig``'s
fields; command-line flags override it. The defaults are the paper's models.
"""

from __future__ import annotations

import json
import time
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from vrforge.errors import UserError
from vrforge.fileio import write_bytes_atomic
from vrforge.runners.drift import chain, metrics, report
from vrforge.runners.drift.embed import ClipEmbedder, DinoEmbedder, EmbeddingCache, SentenceEmbedder
from vrforge.runners.drift.geneval import ClipColourClassifier, Owlv2Detector, PixelColourClassifier, vocabulary
from vrforge.runners.drift.inputs import GenEvalSample, PairSample

CACHE_FILE = "embeddings.sqlite"


@dataclass
class ScoringConfig:
    text_embedder: str = "sentence-transformers/all-mpnet-base-v2"
    image_embedder: str = "facebook/dino-vitb16"
    clip: str = "openai/clip-vit-base-patch32"
    detector: str = "google/owlv2-large-patch14-ensemble"
    detector_threshold: float = 0.1
    colour_classifier: str = "clip"  # "clip" (GenEval's zero-shot on the crop) or "pixels" (drawn scenes)
    vocabulary: str = "specs"  # "specs": every class in the run's specs; "none"; or a file with one name a line
    device: str = "auto"
    local_files_only: bool = False
    batch_size: int = 32
    cache: bool = True

    @classmethod
    def load(cls, path: Path | None, overrides: dict[str, Any]) -> ScoringConfig:
        values: dict[str, Any] = {}
        if path is not None:
            if not path.is_file():
                raise UserError(f"no such scoring config: {path}")
            try:
                values = tomllib.loads(path.read_text(encoding="utf-8"))
            except tomllib.TOMLDecodeError as exc:
                raise UserError(f"{path}: not valid TOML ({exc})") from None
            values = values.get("scoring", values)
        known = {f.name: f.type for f in fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise UserError(f"{path}: unknown scoring key {', '.join(unknown)} (known: {', '.join(known)})")
        values.update({k: v for k, v in overrides.items() if v is not None})
        config = cls(**values)
        config.validate()
        return config

    def validate(self) -> None:
        if self.colour_classifier not in ("clip", "pixels"):
            raise UserError(f"colour_classifier must be clip or pixels, got {self.colour_classifier!r}")
        if not 0 <= self.detector_threshold <= 1:
            raise UserError(f"detector_threshold must be in [0, 1], got {self.detector_threshold}")
        if self.batch_size < 1:
            raise UserError(f"batch_size must be at least 1, got {self.batch_size}")
        if self.vocabulary not in ("specs", "none") and not Path(self.vocabulary).is_file():
            raise UserError(f"vocabulary must be specs, none or a file of names, got {self.vocabulary!r}")


def build_scorers(config: ScoringConfig, out: Path | None, specs: dict[str, dict[str, Any]] | None = None,
                  progress: bool = False) -> metrics.Scorers:
    """The models the config names (loaded on first use) over one shared cache in ``out``."""
    cache = EmbeddingCache(out / CACHE_FILE if out is not None and config.cache else None)
    common: dict[str, Any] = {"device": config.device, "local_files_only": config.local_files_only, "batch_size": config.batch_size,
              "cache": cache}
    clip = ClipEmbedder(config.clip, **common)
    names: list[str] = []
    if config.vocabulary == "specs" and specs:
        from vrforge.runners.drift.geneval import spec_classes

        names = sorted({name for spec in specs.values() for name in spec_classes(spec)})
    elif config.vocabulary not in ("specs", "none"):
        names = vocabulary(Path(config.vocabulary))
    return metrics.Scorers(
        text=SentenceEmbedder(config.text_embedder, **common), image=DinoEmbedder(config.image_embedder, **common), clip=clip,
        detector=Owlv2Detector(config.detector, device=config.device, local_files_only=config.local_files_only,
                               threshold=config.detector_threshold, batch_size=min(8, config.batch_size)),
        colours=ClipColourClassifier(clip) if config.colour_classifier == "clip" else PixelColourClassifier(),
        vocabulary=names, threshold=config.detector_threshold, progress=progress)


def score_run(out: Path, scorers: metrics.Scorers, *, name: str | None = None, steps: int | None = None,
              specs: dict[str, dict[str, Any]] | None = None, scoring: dict[str, Any] | None = None,
              paper_table: Path | None = None, plots: bool = True) -> dict[str, Any]:
    """Score what is on disk in ``out`` (pairs/ and geneval/) and write the report files."""
    name = name or out.resolve().name
    manifest_path = out / chain.MANIFEST_FILE
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {}
    results: dict[str, Any] = {"name": name, "model": (manifest.get("settings") or {}).get("model"),
                               "scoring": scoring, "mcd": None, "mgg": None}
    samples: list[dict[str, Any]] = []
    lengths = []
    scorers.preload([*(["text", "image", "clip"] if (out / "pairs").is_dir() else []),
                     *(["detector", "clip"] if (out / "geneval").is_dir() else [])])
    if (out / "pairs").is_dir():
        summary, records = metrics.score_pairs(out / "pairs", scorers, steps)
        results["mcd"] = summary
        samples.extend(records[k] for k in sorted(records))
        lengths += [metrics.chain_length(out / "pairs", d) for d in (chain.TEXT_FIRST, chain.IMAGE_FIRST)
                    if (out / "pairs" / d).is_dir()]
    if (out / "geneval").is_dir():
        specs = specs if specs is not None else metrics.read_specs(out / "geneval")
        summary, records = metrics.score_geneval(out / "geneval", specs, scorers, steps)
        results["mgg"] = summary
        samples.extend(records[k] for k in sorted(records, key=lambda i: (len(i), i)))
        lengths.append(metrics.chain_length(out / "geneval", chain.TEXT_FIRST))
    if results["mcd"] is None and results["mgg"] is None:
        raise UserError(f"{out}: nothing to score (no pairs/ or geneval/ chain folder)")
    written = min(lengths) if lengths else 0
    results["steps"] = written if steps is None else min(steps, written)
    report.write_results(out, results, samples)
    reference = report.reference_rows(paper_table)
    write_bytes_atomic(out / report.REPORT_FILE, report.report_markdown(name, results, reference).encode("utf-8"))
    if plots:
        report.write_plots(out, name, results)
    chain.write_json(out / report.TIMINGS_FILE, {k: round(v, 4) for k, v in scorers.timings.items()})
    return results


def run_drift(out: Path, model: Any, *, pairs: list[PairSample] | None, geneval: list[GenEvalSample] | None, steps: int,
              seed: int, batch_size: int, progress: bool, model_settings: dict[str, Any],
              inputs: dict[str, Any]) -> tuple[dict[str, Any], chain.ChainTimings]:
    """Run (or resume) the chains; returns the manifest and this run's timings."""
    if not pairs and not geneval:
        raise UserError("give pairs (--pairs) and/or GenEval prompts (--geneval)")
    # The inputs are compared by content (a digest), not by the paths they were named with.
    settings = {"model": model_settings, "seed": seed, "inputs_digest": chain.inputs_digest(pairs, geneval),
                "samples": {"pairs": len(pairs or []), "geneval": len(geneval or [])}}
    previous = chain.check_manifest(out, settings)
    tracks = chain.plan_tracks(out, pairs, geneval)
    out.mkdir(parents=True, exist_ok=True)
    chain.write_origins(tracks, geneval)
    started = time.perf_counter()
    timings = chain.ChainTimings()
    try:
        chain.run_chains(tracks, model, steps=steps, seed=seed, batch_size=batch_size, progress=progress, timings=timings)
    finally:
        loaded = model.describe() if hasattr(model, "describe") else {}
        chain.write_manifest(out, settings, previous, steps=steps, model_info=loaded, timings=timings, tracks=tracks,
                             wall=time.perf_counter() - started, inputs=inputs)
    manifest = json.loads((out / chain.MANIFEST_FILE).read_text(encoding="utf-8"))
    return manifest, timings


def config_dict(config: ScoringConfig) -> dict[str, Any]:
    return asdict(config)
