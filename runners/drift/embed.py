"""Embedders for MCD, chosen by config, with an on-disk cache.

- text -> text: a sentence-transformers model (MPNet, ``sentence-transformers/all-mpnet-base-v2``,
  as the paper);
- image -> image: DINO through transformers ``AutoModel`` (``facebook/dino-vitb16``, the ViT-B/16
  DINO the paper uses; DINOv2 ids work too): the CLS token of the last layer;
- text <-> image: CLIP through transformers ``CLIPModel`` (``openai/clip-vit-base-patch32``).

open-clip and timm are not used: they pull torchvision and a CUDA torch. Every embedding is
L2-normalised float32; the cache (SQLite, one row per model key and content digest) makes a
re-score of a finished run, or the original's embedding at every step, free.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vrforge.errors import UserError


def resolve_device(name: str) -> str:
    if name != "auto":
        return name
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_error(role: str, model: str, exc: BaseException) -> UserError:
    first = (str(exc).strip().splitlines() or [""])[0]
    return UserError(f"cannot load the {role} {model!r} ({exc.__class__.__name__}: {first})")


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def text_digest(text: str) -> str:
    return hashlib.sha256(b"text\0" + text.encode("utf-8")).hexdigest()


def image_digest(image: Image.Image) -> str:
    rgb = image.convert("RGB")
    return hashlib.sha256(b"image\0" + f"{rgb.size}".encode() + rgb.tobytes()).hexdigest()


class EmbeddingCache:
    """Vectors by (model key, content digest) in one SQLite file; None keeps them in memory only."""

    def __init__(self, path: Path | None) -> None:
        self.memory: dict[tuple[str, str], np.ndarray] = {}
        self.db = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(path))
            self.db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT, digest TEXT, vector BLOB, PRIMARY KEY (model, digest))")

    def lookup(self, model: str, digests: Sequence[str], compute: Callable[[list[int]], np.ndarray]) -> np.ndarray:
        """The vectors of ``digests``; ``compute(indices)`` embeds the missing ones (in one call)."""
        found: dict[int, np.ndarray] = {}
        for index, digest in enumerate(digests):
            vector = self.memory.get((model, digest))
            if vector is None and self.db is not None:
                row = self.db.execute("SELECT vector FROM vectors WHERE model = ? AND digest = ?", (model, digest)).fetchone()
                if row is not None:
                    vector = np.frombuffer(row[0], dtype=np.float32)
                    self.memory[(model, digest)] = vector
            if vector is not None:
                found[index] = vector
        missing = [i for i in range(len(digests)) if i not in found]
        if missing:
            fresh = _normalise(compute(missing))
            for index, vector in zip(missing, fresh):
                found[index] = vector
                self.memory[(model, digests[index])] = vector
                if self.db is not None:
                    self.db.execute("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", (model, digests[index], vector.tobytes()))
            if self.db is not None:
                self.db.commit()
        return np.stack([found[i] for i in range(len(digests))]) if digests else np.zeros((0, 0), np.float32)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


class _Model:
    """Lazy loading (nothing loads for a run with nothing to score) and batched, cached embedding."""

    role = "embedder"

    def __init__(self, model: str, *, device: str = "auto", local_files_only: bool = False, batch_size: int = 32,
                 cache: EmbeddingCache | None = None) -> None:
        self.model_id, self.device_name, self.local_files_only, self.batch_size = model, device, local_files_only, batch_size
        self.cache = cache or EmbeddingCache(None)
        self.model: Any = None

    def key(self, kind: str) -> str:
        return f"{type(self).__name__}:{self.model_id}:{kind}"

    def _batched(self, items: list[Any], fn: Callable[[list[Any]], np.ndarray]) -> np.ndarray:
        parts = [fn(items[i:i + self.batch_size]) for i in range(0, len(items), self.batch_size)]
        return np.concatenate(parts) if parts else np.zeros((0, 0), np.float32)

    def _load(self, loader: Callable[[], None]) -> None:
        if self.model is not None:
            return
        import torch

        self._torch = torch
        self.device = resolve_device(self.device_name)
        try:
            loader()
        except UserError:
            raise
        except Exception as exc:  # noqa: BLE001 - one line for the user
            raise load_error(self.role, self.model_id, exc) from None
        model: Any = self.model  # what loader() set
        if hasattr(model, "eval"):
            model.eval()


class SentenceEmbedder(_Model):
    role = "text embedder"

    def load(self) -> None:
        def loader() -> None:
            from sentence_transformers import SentenceTransformer

            self.model = SentenceTransformer(self.model_id, device=self.device, local_files_only=self.local_files_only)

        self._load(loader)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        def compute(indices: list[int]) -> np.ndarray:
            self.load()
            return self.model.encode([texts[i] for i in indices], batch_size=self.batch_size, convert_to_numpy=True,
                                     show_progress_bar=False)

        return self.cache.lookup(self.key("text"), [text_digest(t) for t in texts], compute)


class DinoEmbedder(_Model):
    role = "image embedder"

    def load(self) -> None:
        def loader() -> None:
            from transformers import AutoImageProcessor, AutoModel

            self.processor = AutoImageProcessor.from_pretrained(self.model_id, local_files_only=self.local_files_only)
            self.model = AutoModel.from_pretrained(self.model_id, local_files_only=self.local_files_only).to(self.device)

        self._load(loader)

    def embed_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        def one_batch(batch: list[Image.Image]) -> np.ndarray:
            inputs = self.processor(images=[im.convert("RGB") for im in batch], return_tensors="pt").to(self.device)
            with self._torch.inference_mode():
                hidden = self.model(**inputs).last_hidden_state
            return hidden[:, 0].float().cpu().numpy()  # the CLS token

        def compute(indices: list[int]) -> np.ndarray:
            self.load()
            return self._batched([images[i] for i in indices], one_batch)

        return self.cache.lookup(self.key("image"), [image_digest(im) for im in images], compute)


def _features(output: Any) -> Any:
    """``get_*_features`` returns a tensor in transformers 4 and an output with ``pooler_output`` in 5."""
    return output if not hasattr(output, "pooler_output") else output.pooler_output


class ClipEmbedder(_Model):
    role = "CLIP model"

    def load(self) -> None:
        def loader() -> None:
            from transformers import CLIPModel, CLIPProcessor

            self.processor = CLIPProcessor.from_pretrained(self.model_id, local_files_only=self.local_files_only)
            model = CLIPModel.from_pretrained(self.model_id, local_files_only=self.local_files_only)
            # transformers wraps PreTrainedModel.to in a decorator whose annotation drops the bound self
            self.model = model.to(self.device)  # type: ignore[arg-type]

        self._load(loader)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        def one_batch(batch: list[str]) -> np.ndarray:
            inputs = self.processor.tokenizer(batch, padding=True, truncation=True, return_tensors="pt").to(self.device)
            with self._torch.inference_mode():
                return _features(self.model.get_text_features(**inputs)).float().cpu().numpy()

        def compute(indices: list[int]) -> np.ndarray:
            self.load()
            return self._batched([texts[i] for i in indices], one_batch)

        return self.cache.lookup(self.key("text"), [text_digest(t) for t in texts], compute)

    def embed_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        def one_batch(batch: list[Image.Image]) -> np.ndarray:
            inputs = self.processor.image_processor(images=[im.convert("RGB") for im in batch], return_tensors="pt")
            with self._torch.inference_mode():
                return _features(self.model.get_image_features(pixel_values=inputs["pixel_values"].to(self.device))
                                 ).float().cpu().numpy()

        def compute(indices: list[int]) -> np.ndarray:
            self.load()
            return self._batched([images[i] for i in indices], one_batch)

        return self.cache.lookup(self.key("image"), [image_digest(im) for im in images], compute)
