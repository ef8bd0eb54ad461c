"""Atomic file writes and file digests: the one place every layer writes files through.

A file is written beside its target under a hidden name (never matched by a dataset's
``data_files`` globs), flushed to disk, then renamed over the target, so a reader sees the
old file or the new one and an interrupted write leaves no partial file behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def temporary_path(path: Path) -> Path:
    """The hidden sibling a write goes to first (a fixed name: one writer per target)."""
    return path.with_name(f".{path.name}.tmp")


@contextmanager
def atomic_target(path: Path, unique: bool = False) -> Iterator[Path]:
    """A temporary path to write ``path``'s content to; renamed over ``path`` when the block ends.

    ``unique`` gives each writer its own hidden name, for targets several threads may write at
    once (a shared cache). On an exception the temporary file is removed and nothing changes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if unique:
        handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(handle)
        tmp = Path(name)
    else:
        tmp = temporary_path(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: Path, data: bytes, unique: bool = False) -> None:
    with atomic_target(path, unique) as tmp, open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def write_text_atomic(path: Path, text: str, unique: bool = False) -> None:
    write_bytes_atomic(path, text.encode("utf-8"), unique)


def json_text(data: Any, ensure_ascii: bool = True) -> str:
    """The one JSON layout of written files: indented, sorted keys, a final newline."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=ensure_ascii) + "\n"


def jsonl_text(records: Iterable[Any], ensure_ascii: bool = False) -> str:
    """The one JSON Lines layout: one sorted-key object per line."""
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=ensure_ascii) + "\n" for r in records)


def write_json_atomic(path: Path, data: Any, ensure_ascii: bool = True, unique: bool = False) -> None:
    write_text_atomic(path, json_text(data, ensure_ascii), unique)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
