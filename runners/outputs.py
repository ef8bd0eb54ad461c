"""The output files every runner writes, typed in one place, and the settings check shared by their resumes.

Every run folder holds:

- ``run_manifest.json`` (:class:`RunManifest`): written **before the first output** and again at
  the end. ``settings`` is everything that determines an output (model, call arguments, seed,
  inputs with their resolved defaults, prompt and instruction hashes); a rerun into the same
  folder whose settings differ is refused with the differing keys named. ``runs`` has one entry
  per invocation (``completed`` false while it runs or after a kill), ``counts`` the items done,
  failed (with the reasons) and missing.
- ``samples.jsonl`` (:class:`Sample`): one JSON object per item with at least ``id`` and
  ``status`` (``ok`` or ``failed``; a failed item carries ``error``), sorted by id order of the
  dataset; runners add their own fields.
- ``results.json`` (:class:`Results`): ``format_version``, ``kind`` (the runner), ``summary``
  (the metrics) and ``counts``; runners that follow an outside format keep it beside these keys
  (``results`` as the TACIT reference list for the discriminative track).

The image runners write images instead of ``samples.jsonl`` and list them under the
manifest's ``items``; ``vrforge cfeval judge`` writes ``judgements.jsonl`` as its samples file.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, NotRequired, TypedDict

from vrforge.errors import UserError

FORMAT_VERSION = 1
MANIFEST_FILE = "run_manifest.json"
RESULTS_FILE = "results.json"
SAMPLES_FILE = "samples.jsonl"
SAMPLE_STATUSES = ("ok", "failed")


class RunEntry(TypedDict):
    started: str
    completed: bool
    counts: NotRequired[dict[str, int]]
    failures: NotRequired[list[str]]


class RunManifest(TypedDict):
    format_version: int
    kind: str
    settings: dict[str, Any]
    runs: list[RunEntry]
    counts: dict[str, Any]
    versions: NotRequired[dict[str, str | None]]


class Sample(TypedDict):
    id: str
    status: str
    error: NotRequired[str]


class Results(TypedDict):
    format_version: int
    kind: str
    summary: dict[str, Any]
    counts: dict[str, Any]


class SettingsMismatch(UserError, ValueError):
    """A folder holds outputs made with other settings; the message names every differing key."""


def text_sha256(value: Any) -> str:
    """sha256 of sorted, compact JSON: the hash of prompts and instructions recorded in the settings."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping) and value:
        flat: dict[str, Any] = {}
        for key in value:
            flat.update(_flatten(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def settings_difference(previous: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """``key: old -> new`` for every (dotted, nested) key whose value differs, sorted."""
    old, new = _flatten(previous), _flatten(current)
    return [f"{key}: {_short(old.get(key))} -> {_short(new.get(key))}"
            for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def check_settings(folder: Any, previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> None:
    """Raise SettingsMismatch when ``previous`` (from the folder's manifest) differs from ``current``."""
    if previous is None:
        return
    changed = settings_difference(previous, current)
    if changed:
        raise SettingsMismatch(f"{folder} holds outputs made with other settings ({'; '.join(changed)}); "
                               "use another --out to keep both runs apart")


def failure_counts(samples: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"ok": n, "failed": n, "reasons": {reason kind: n}}`` over samples with a ``status``."""
    statuses: Counter = Counter()
    reasons: Counter = Counter()
    for sample in samples:
        status = sample.get("status", "ok")
        statuses[status] += 1
        if status == "failed":
            reasons[failure_kind(str(sample.get("error", "")))] += 1
    return {"ok": statuses.get("ok", 0), "failed": statuses.get("failed", 0), "reasons": dict(sorted(reasons.items()))}


def failure_kind(error: str) -> str:
    """The reason's kind: the text before the first colon (``http 400``, ``decode``, ``timeout``)."""
    head = error.split(":", 1)[0].strip()
    return head or "unknown"
