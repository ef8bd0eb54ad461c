"""The visual-reliance golden release: verified scenes with counterfactuals, as one Hugging Face dataset folder.

recipe (TOML, ``kind = "reliance"``) -> per question type ``count`` items, each from a seed
derived from (recipe seed, type, index), generated and verified by ``generators/reliance`` ->
one config per question type (``data/<type>/test-00000-of-00001.parquet``; an evaluation set,
so the single split ``test``) -> README.md card -> manifest.json (version, recipe, config hash,
rows, rejected attempts, answer balance, sha256 of every file). Items are independent, so any
number of workers gives the same bytes; files are written under hidden names and renamed.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

import vrforge
from vrforge.builds.recipe import RecipeError, holds_build, read_recipe_toml, recipe_header
from vrforge.errors import UserError
from vrforge.fileio import atomic_target, sha256_file, write_bytes_atomic, write_json_atomic
from vrforge.generators.reliance.scenes import GENERATOR_VERSION, QUESTION_TYPES, generate_item, item_from_row, item_row, verify_item

KIND = "reliance"
SPLIT = "test"
KNOWN_KEYS = {"kind", "name", "version", "license", "seed", "count", "question_types"}
MIN_COUNT = 1


class RelianceBuildError(UserError):
    """A malformed recipe or an unusable output folder; the message is the one line the user sees."""


@dataclass(frozen=True)
class RelianceRecipe:
    name: str
    version: str
    license: str
    seed: int
    count: int
    question_types: tuple[str, ...]

    def normalised(self) -> dict[str, Any]:
        return {"kind": KIND, "name": self.name, "version": self.version, "license": self.license, "seed": self.seed,
                "count": self.count, "question_types": list(self.question_types)}


def is_reliance_recipe(path: str | Path) -> bool:
    try:
        return read_recipe_toml(path).get("kind") == KIND
    except RecipeError:
        return False


def load_reliance_recipe(path: str | Path) -> RelianceRecipe:
    path = Path(path)
    try:
        data = read_recipe_toml(path)
    except RecipeError as exc:
        raise RelianceBuildError(str(exc)) from None
    source = str(path)
    try:
        name, version, license_ = recipe_header(data, source, KIND, KNOWN_KEYS)
    except RecipeError as exc:
        raise RelianceBuildError(str(exc)) from None
    seed, count = data.get("seed", 0), data.get("count", 120)
    for key, value in (("seed", seed), ("count", count)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if key == "seed" else MIN_COUNT):
            raise RelianceBuildError(f"{source}: '{key}' must be a {'non-negative' if key == 'seed' else 'positive'} integer")
    types = data.get("question_types", list(QUESTION_TYPES))
    if not isinstance(types, list) or not types or any(t not in QUESTION_TYPES for t in types) or len(set(types)) != len(types):
        raise RelianceBuildError(f"{source}: 'question_types' must be a non-empty list of distinct {', '.join(QUESTION_TYPES)}")
    return RelianceRecipe(name=name, version=version, license=license_, seed=seed,
                          count=count, question_types=tuple(t for t in QUESTION_TYPES if t in types))


def config_hash(recipe: RelianceRecipe) -> str:
    data = {"recipe": recipe.normalised(), "generator_version": GENERATOR_VERSION}
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def features():
    import datasets

    string, int32 = datasets.Value("string"), datasets.Value("int32")
    return datasets.Features({
        "id": string, "qtype": string, "index": int32, "seed": datasets.Value("int64"), "question": string,
        "options": datasets.List(string), "answer_index": int32, "answer": string, "image": datasets.Image(),
        "counterfactual": datasets.Image(), "counterfactual_answer_index": int32, "counterfactual_answer": string,
        "mask": datasets.Image(), "meta": string, "generator_version": string, "config_hash": string,
    })


def data_path(qtype: str) -> str:
    return f"data/{qtype}/{SPLIT}-00000-of-00001.parquet"


def _generate(job: tuple[str, int, int]) -> dict[str, Any]:
    qtype, index, seed = job
    item = generate_item(qtype, index, seed)
    return {"row": item_row(item), "rejections": item.rejections}


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    feats = features()
    table = pa.Table.from_pylist([feats.encode_example(row) for row in rows], schema=feats.arrow_schema)
    with atomic_target(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def card_metadata(recipe: RelianceRecipe, counts: dict[str, int], sizes: dict[str, int]) -> dict[str, Any]:
    from vrforge.cards.card import card_configs, size_category

    configs, infos = card_configs(((qtype, features()._to_yaml_list(), (SPLIT,)) for qtype in recipe.question_types),
                                  {q: {SPLIT: n} for q, n in counts.items()}, {q: {SPLIT: n} for q, n in sizes.items()})
    return {"license": recipe.license, "pretty_name": f"vrforge visual-reliance golden set {recipe.version}",
            "task_categories": ["visual-question-answering"], "language": ["en"],
            "size_categories": [size_category(sum(counts.values()))],
            "tags": ["visual-reliance", "counterfactual", "vlm-evaluation", "synthetic"], "configs": configs, "dataset_info": infos}


def render_card(recipe: RelianceRecipe, hash_: str, counts: dict[str, int], sizes: dict[str, int],
                balance: dict[str, dict[str, int]]) -> str:
    table = "\n".join(f"| `{q}` | {counts[q]} | " + ", ".join(f"{a} {n}" for a, n in sorted(balance[q].items())) + " |"
                      for q in recipe.question_types)
    template = Template((resources.files("vrforge.cards") / "templates" / "reliance.md").read_text(encoding="utf-8"))
    return template.substitute(
        yaml=yaml.safe_dump(card_metadata(recipe, counts, sizes), sort_keys=False, allow_unicode=True).rstrip("\n"),
        pretty_name=f"vrforge visual-reliance golden set {recipe.version}", recipe_name=recipe.name, version=recipe.version,
        config_hash=hash_, config_table=table, license=recipe.license)


def _check_out(out: Path, hash_: str) -> bool:
    """True when ``out`` already holds this build; refuses a different build or a non-empty foreign folder."""
    try:
        if holds_build(out, hash_):
            return True
    except RecipeError as exc:
        raise RelianceBuildError(str(exc)) from None
    if out.exists():
        # An interrupted build leaves only its own files (no manifest yet): it is simply built again.
        ours = {data_path(q) for q in QUESTION_TYPES} | {"README.md", "audit.json"}
        present = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")}
        if present - ours:
            raise RelianceBuildError(f"{out} exists and holds other files; choose another --out")
        (out / "audit.json").unlink(missing_ok=True)  # it audited files about to be rewritten
    return False


def build_reliance(recipe: RelianceRecipe, out: str | Path, *, workers: int = 1, progress: bool = False) -> Path:
    """Build the release into ``out`` (same recipe -> byte-identical files, whatever ``workers``)."""
    from tqdm import tqdm

    out = Path(out)
    if workers < 1:
        raise RelianceBuildError(f"--workers must be at least 1, got {workers}")
    hash_ = config_hash(recipe)
    if _check_out(out, hash_):
        return out
    jobs = [(q, i, recipe.seed) for q in recipe.question_types for i in range(recipe.count)]
    bar = tqdm(total=len(jobs), desc="reliance", unit="item", disable=not progress, dynamic_ncols=True)
    if workers == 1:
        results = []
        for job in jobs:
            results.append(_generate(job))
            bar.update()
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = []
            for result in pool.map(_generate, jobs, chunksize=8):
                results.append(result)
                bar.update()
    bar.close()
    counts, sizes, balance, rejections = {}, {}, {}, {}
    for qtype in recipe.question_types:
        rows = [dict(r["row"], config_hash=hash_) for r in results if r["row"]["qtype"] == qtype]
        path = out / data_path(qtype)
        _write_parquet(rows, path)
        counts[qtype], sizes[qtype] = len(rows), path.stat().st_size
        balance[qtype] = dict(sorted(Counter(r["answer"] for r in rows).items()))
        total: Counter = Counter()
        for r in results:
            if r["row"]["qtype"] == qtype:
                total.update(r["rejections"])
        rejections[qtype] = dict(sorted(total.items()))
    write_bytes_atomic(out / "README.md", render_card(recipe, hash_, counts, sizes, balance).encode("utf-8"))
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name not in ("manifest.json", "audit.json")
                   and not p.name.startswith("."))
    manifest = {
        "kind": KIND, "name": recipe.name, "version": recipe.version, "package_version": vrforge.__version__,
        "generator_version": GENERATOR_VERSION, "config_hash": hash_, "recipe": recipe.normalised(),
        "rows": {q: {SPLIT: counts[q]} for q in recipe.question_types}, "answer_balance": balance,
        "rejected_attempts": rejections,
        "files": {p.relative_to(out).as_posix(): {"sha256": sha256_file(p), "bytes": p.stat().st_size} for p in files},
    }
    write_json_atomic(out / "manifest.json", manifest)
    return out


def read_rows(folder: Path, qtypes: list[str] | None = None) -> list[dict[str, Any]]:
    """Every row of a built golden folder (or only some question types), in type then index order."""
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    rows = []
    for qtype in manifest.get("rows", {}):
        if qtypes is not None and qtype not in qtypes:
            continue
        for path in sorted((folder / "data" / qtype).glob("*.parquet")):
            rows += pq.read_table(path).to_pylist()
    return rows


def audit_reliance(folder: Path) -> dict[str, Any]:
    """Re-check a built folder from its files: sha256 against the manifest, card configs and sizes, every item verified."""
    from vrforge.builds.audit import AuditError, card_configs, manifest_file_problems
    from vrforge.builds.audit import card_metadata as read_card_metadata

    folder = Path(folder)
    manifest_path = folder / "manifest.json"
    if not manifest_path.exists():
        raise RelianceBuildError(f"{folder} has no manifest.json (not a built dataset folder)")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    problems = manifest_file_problems(folder, manifest)
    card = (folder / "README.md").read_text(encoding="utf-8") if (folder / "README.md").exists() else ""
    try:
        metadata, configs = (read_card_metadata(card), card_configs(card)) if card else ({}, {})
    except AuditError as exc:
        raise RelianceBuildError(str(exc)) from None
    expected = manifest.get("rows", {})
    if set(configs) != set(expected):
        problems.append(f"card configs {sorted(configs)} differ from manifest {sorted(expected)}")
    declared = {i["config_name"]: {s["name"]: s["num_examples"] for s in i["splits"]} for i in metadata.get("dataset_info", [])}
    checked = 0
    for qtype, splits in sorted(configs.items()):
        for split, pattern in splits.items():
            try:
                rows = [row for f in sorted(folder.glob(pattern)) for row in pq.read_table(f).to_pylist()]
            except (OSError, pa.ArrowException) as exc:
                problems.append(f"{qtype}/{split}: unreadable parquet ({' '.join(str(exc).split())[:200]})")
                continue
            if expected.get(qtype, {}).get(split) != len(rows) or declared.get(qtype, {}).get(split) != len(rows):
                problems.append(f"{qtype}/{split}: {len(rows)} rows; manifest {expected.get(qtype, {}).get(split)}, "
                                f"card {declared.get(qtype, {}).get(split)}")
            for row in rows:
                checked += 1
                try:
                    item_problems = verify_item(item_from_row(row))
                except (KeyError, TypeError, ValueError) as exc:
                    item_problems = [f"unreadable row ({exc.__class__.__name__})"]
                problems += [f"{row.get('id')}: {p}" for p in item_problems]
    report = {"passed": not problems, "kind": KIND, "manifest_sha256": sha256_file(manifest_path),
              "config_hash": manifest.get("config_hash"), "files_checked": len(manifest.get("files", {})),
              "rows_checked": checked, "problems": problems[:200]}
    write_json_atomic(folder / "audit.json", report)
    return report
