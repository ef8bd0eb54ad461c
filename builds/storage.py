"""Where a release is written: a local folder or any fsspec URL (``s3://``, ``gs://``, ``memory://``).

Every file becomes visible complete or not at all. On a local disk a file is written under a
hidden name beside its target and renamed into place (rename is atomic). Object stores have no
rename, but a single upload is atomic (an object appears whole when the upload finishes), so a
file is staged in a local temporary file and uploaded once. Which shards are done is recorded
by commit markers written after a shard's files, exactly as on a local disk.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from vrforge.fileio import write_bytes_atomic
from vrforge.schemas.layout import CARD_FILE

TEMP_SUFFIX = ".tmp"


def is_url(location: str | os.PathLike) -> bool:
    return "://" in str(location)


def hidden_temporary_name(name: str) -> str:
    """A hidden sibling name, unique per attempt (two attempts at one shard never share a file);
    never matched by a dataset's ``data_files`` globs."""
    return f".{name}.{uuid.uuid4().hex[:12]}{TEMP_SUFFIX}"


class Store:
    """A release folder addressed by relative POSIX paths (``data/maze/easy-00000-of-00001.parquet``)."""

    def __init__(self, location: str | os.PathLike, storage_options: dict[str, Any] | None = None) -> None:
        self.location = str(location)
        self.storage_options = dict(storage_options or {})
        if is_url(location):
            self.fs, self.root = fsspec.core.url_to_fs(self.location, **self.storage_options)
            self.root = self.root.rstrip("/")
        else:
            self.fs, self.root = LocalFileSystem(), str(Path(location).resolve())
        self.local = isinstance(self.fs, LocalFileSystem)

    def __repr__(self) -> str:
        return f"Store({self.location!r})"

    def __reduce__(self):  # sent to distributed workers as its location, re-opened there
        return (Store, (self.location, self.storage_options))

    @property
    def local_path(self) -> Path:
        if not self.local:
            raise ValueError(f"{self.location} is not a local folder")
        return Path(self.root)

    def path(self, rel: str) -> str:
        return f"{self.root}/{rel}" if rel else self.root

    # ------------------------------------------------------------------ reading
    def exists(self, rel: str) -> bool:
        return self.fs.exists(self.path(rel))

    def read_bytes(self, rel: str) -> bytes:
        return self.fs.cat_file(self.path(rel))

    def read_json(self, rel: str) -> Any:
        return json.loads(self.read_bytes(rel).decode("utf-8"))

    def open(self, rel: str, mode: str = "rb") -> IO:
        return self.fs.open(self.path(rel), mode)

    def size(self, rel: str) -> int:
        return int(self.fs.size(self.path(rel)))

    def sha256(self, rel: str) -> str:
        digest = hashlib.sha256()
        with self.open(rel) as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()

    def is_empty(self) -> bool:
        if not self.fs.exists(self.root):
            return True
        return not self.fs.ls(self.root, detail=False)

    def files(self, under: str = "") -> list[str]:
        """Every file below ``under`` as a sorted relative path (hidden temporary files included)."""
        base = self.path(under)
        if not self.fs.exists(base):
            return []
        found = self.fs.find(base)
        return sorted(self._relative(p) for p in found)

    def names(self, under: str) -> set[str]:
        """The file names directly in folder ``under`` (empty when it does not exist)."""
        base = self.path(under)
        if not self.fs.exists(base):
            return set()
        return {self._relative(p).rsplit("/", 1)[-1] for p in self.fs.ls(base, detail=False)}

    def _relative(self, full: str) -> str:
        full = full.replace("\\", "/")
        root = self.root.replace("\\", "/")
        if self.fs.protocol and not self.local:
            for protocol in (self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)):
                full = full.removeprefix(f"{protocol}://")
        return full[len(root):].lstrip("/") if full.startswith(root) else full.lstrip("/")

    # ------------------------------------------------------------------ writing
    def write_bytes(self, rel: str, data: bytes) -> None:
        if self.local:
            write_bytes_atomic(Path(self.path(rel)), data)
            return
        self.fs.makedirs(self.path(rel).rsplit("/", 1)[0], exist_ok=True)
        self.fs.pipe_file(self.path(rel), data)  # one upload: the object appears whole or not at all

    def write_json(self, rel: str, data: Any) -> None:
        self.write_bytes(rel, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8"))

    def staging_path(self, rel: str) -> Path:
        """A local file to write ``rel`` into, then ``commit_staged``: a hidden sibling on a local
        disk (renamed into place), a temporary file for a remote store (uploaded once)."""
        if self.local:
            target = Path(self.path(rel))
            target.parent.mkdir(parents=True, exist_ok=True)
            return target.with_name(hidden_temporary_name(target.name))
        handle, name = tempfile.mkstemp(prefix=".vrforge-", suffix=TEMP_SUFFIX)
        os.close(handle)
        return Path(name)

    def commit_staged(self, staging: Path, rel: str) -> None:
        if self.local:
            os.replace(staging, self.path(rel))
            return
        self.fs.makedirs(self.path(rel).rsplit("/", 1)[0], exist_ok=True)
        self.fs.put_file(str(staging), self.path(rel))
        staging.unlink(missing_ok=True)

    def remove(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self.path(rel))

    def remove_tree(self, rel: str) -> None:
        if self.fs.exists(self.path(rel)):
            self.fs.rm(self.path(rel), recursive=True)

    def remove_stale_temporaries(self, under: str) -> None:
        """Hidden files left by a killed writer; their shard was never committed."""
        for rel in self.files(under):
            name = rel.rsplit("/", 1)[-1]
            if name.startswith(".") and name.endswith(TEMP_SUFFIX):
                self.remove(rel)


def open_store(location: str | os.PathLike | Store, storage_options: dict[str, Any] | None = None) -> Store:
    return location if isinstance(location, Store) else Store(location, storage_options)


@contextlib.contextmanager
def local_copy(store: Store, keep: tuple[str, ...] = ()) -> Iterator[Path]:
    """A local folder holding ``store``'s files; files named in ``keep`` are written back after the block.

    Tools that read a release with local file APIs (the audit) run on remote releases this way.
    """
    if store.local:
        yield store.local_path
        return
    with tempfile.TemporaryDirectory(prefix="vrforge-release-") as tmp:
        folder = Path(tmp)
        for rel in store.files():
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            store.fs.get_file(store.path(rel), str(target))
        yield folder
        for rel in keep:
            if (folder / rel).is_file():
                store.write_bytes(rel, (folder / rel).read_bytes())


def load_release(location: str | os.PathLike, config: str, split: str | None = None, **kwargs: Any):
    """``datasets.load_dataset`` for a release anywhere: a local folder as is, a remote one
    through the data files its card declares (``load_dataset`` takes fsspec URLs there)."""
    import datasets

    if not is_url(location):
        return datasets.load_dataset(str(location), config, split=split, **kwargs)
    from vrforge.builds.audit import card_configs

    store = Store(location)
    configs = card_configs(store.read_bytes(CARD_FILE).decode("utf-8"))
    if config not in configs:
        raise ValueError(f"{location} has no config {config!r} (configs: {', '.join(sorted(configs))})")
    files = {name: store.path(glob) if store.local else f"{str(location).rstrip('/')}/{glob}"
             for name, glob in configs[config].items()}
    return datasets.load_dataset("parquet", data_files=files, split=split,
                                 storage_options=store.storage_options or None, **kwargs)
