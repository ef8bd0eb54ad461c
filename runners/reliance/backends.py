"""Answer distributions over a question's options, from a model.

- ``TransformersScorer``: a local transformers VLM (loaded by ``vlm_backends.load_vlm``, prompt by
  ``chat_prompt``): the next-token logits of the option letters after the prompt, softmaxed over
  the letters. Requests with the same prompt text run as one batch (no padding, so a batch gives
  what single passes give). Its model is what the internals probes hook into.
- ``OpenAIScorer``: any OpenAI-compatible endpoint: the first answer token's ``top_logprobs``
  where the server returns them (``source = "logprobs"``), else the share of each letter in
  ``samples`` sampled answers (``source = "samples"``); the report says which, per item and overall.
- ``BlindBaseline`` / ``LookingBaseline``: scripted reference models for the golden set. The
  blind one answers from the question text alone; the looking one reads the answer from the
  pixels (the golden set's pixel reader). They bound the metrics: what a model that ignores the
  image and one that reads it would score.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from PIL import Image

from vrforge.errors import UserError

LETTERS = "ABCDE"


class ScorerError(UserError):
    """The model cannot be loaded or the endpoint cannot answer: one line, the run stops (and resumes later)."""


@dataclass
class Request:
    """One question: the image to show (perturbed or not), the prompt text, and what a scripted model may know."""

    image: Image.Image
    text: str
    n_options: int
    extra_images: tuple[Image.Image, ...] = ()  # shown after ``image`` (a TACIT question's five options)
    meta: dict[str, Any] | None = field(default=None, repr=False)
    options: tuple[str, ...] = ()

    def images(self) -> list[Image.Image]:
        return [self.image, *self.extra_images]


class Scorer(Protocol):
    source: str

    def describe(self) -> dict[str, Any]:
        """What determines the answers (recorded in the report; a resume with other settings is refused)."""

    def distributions(self, requests: Sequence[Request]) -> list[list[float]]:
        """One probability list over the options per request."""


def golden_prompt(question: str, options: Sequence[str]) -> str:
    letters = LETTERS[:len(options)]
    listed = "\n".join(f"{letter}. {option}" for letter, option in zip(letters, options))
    return f"{question}\n{listed}\nAnswer with the option's letter ({', '.join(letters)}) only."


def _softmax(values: np.ndarray) -> np.ndarray:
    shifted = np.exp(values - values.max())
    return shifted / shifted.sum()


# ----------------------------------------------------------------------------- transformers


class TransformersScorer:
    """Option-letter logits of a local or hub transformers VLM."""

    source = "logits"

    def __init__(self, model: str, *, revision: str | None = None, dtype: str = "auto", device: str = "auto",
                 trust_remote_code: bool = False, local_files_only: bool = False, batch_size: int = 8,
                 loaded: tuple[Any, Any] | None = None) -> None:
        if batch_size < 1:
            raise ScorerError(f"--batch-size must be at least 1, got {batch_size}")
        self.model_id, self.revision, self.dtype_name, self.device_name = model, revision, dtype, device
        self.trust_remote_code, self.local_files_only, self.batch_size = trust_remote_code, local_files_only, batch_size
        self.processor: Any = None
        self.model: Any = None
        if loaded is not None:  # (processor, model) built in memory
            self.processor, self.model = loaded
            self._after_load()

    def load(self) -> None:
        if self.model is not None:
            return
        from vrforge.runners.vlm_backends import load_vlm
        from vrforge.runners.vlm_choice import BackendError

        try:
            self.processor, _, self.model = load_vlm(self.model_id, revision=self.revision, dtype=self.dtype_name,
                                                     device=self.device_name, trust_remote_code=self.trust_remote_code,
                                                     local_files_only=self.local_files_only)
        except BackendError as exc:
            raise ScorerError(str(exc)) from None
        self._after_load()

    def _after_load(self) -> None:
        import torch

        self.torch = torch
        tokenizer = self.processor.tokenizer
        firsts = []
        for letter in LETTERS:
            ids = tokenizer(letter, add_special_tokens=False).input_ids
            if not ids:
                raise ScorerError(f"{self.model_id}: the tokenizer gives no token for the letter {letter}")
            firsts.append(ids[0])
        if len(set(firsts)) != len(firsts):
            raise ScorerError(f"{self.model_id}: the option letters A-E do not start with distinct tokens")
        self.letter_ids = firsts

    def describe(self) -> dict[str, Any]:
        return {"backend": "transformers", "model": self.model_id, "revision": self.revision, "dtype": self.dtype_name,
                "distribution": self.source}

    def details(self) -> dict[str, Any]:
        """Model class, resolved revision and the image preprocessing settings (for the report)."""
        self.load()
        config = self.model.config
        image_processor = getattr(self.processor, "image_processor", None)
        settings = image_processor.to_dict() if image_processor is not None and hasattr(image_processor, "to_dict") else {}
        keep = ("image_processor_type", "size", "crop_size", "do_resize", "do_center_crop", "do_normalize", "image_mean",
                "image_std", "resample", "patch_size", "merge_size", "temporal_patch_size", "min_pixels", "max_pixels", "do_rescale",
                "rescale_factor")
        return {"model_class": type(self.model).__name__, "model_type": getattr(config, "model_type", None),
                "commit": getattr(config, "_commit_hash", None), "dtype": str(self.model.dtype),
                "preprocessing": {k: _jsonable(settings[k]) for k in keep if k in settings}}

    def prompt(self, request: Request) -> str:
        from vrforge.runners.vlm_backends import chat_prompt

        content: list[dict[str, str]] = [{"type": "image"} for _ in request.images()]
        content.append({"type": "text", "text": request.text})
        return chat_prompt(self.processor, [{"role": "user", "content": content}])

    def encode(self, requests: Sequence[Request]) -> Any:
        """Processor outputs for requests that share one prompt text (so no padding)."""
        self.load()
        texts = [self.prompt(r) for r in requests]
        images = [image for r in requests for image in r.images()]
        inputs = self.processor(images=images, text=texts, return_tensors="pt", padding=True)
        return inputs.to(self.model.device, dtype=self.model.dtype)

    def forward_probs(self, inputs: Any, n_options: int) -> list[list[float]]:
        torch = self.torch
        with torch.inference_mode():
            logits = self.model(**inputs).logits[:, -1, :].float()
        letters = logits[:, self.letter_ids[:n_options]]
        return torch.softmax(letters, dim=-1).double().cpu().tolist()

    def distributions(self, requests: Sequence[Request]) -> list[list[float]]:
        self.load()
        results: list[list[float] | None] = [None] * len(requests)
        groups: dict[tuple, list[int]] = {}
        for k, request in enumerate(requests):
            key = (request.text, request.n_options, tuple(im.size for im in request.images()))
            groups.setdefault(key, []).append(k)
        for indices in groups.values():
            for start in range(0, len(indices), self.batch_size):
                chunk = indices[start:start + self.batch_size]
                probs = self.forward_probs(self.encode([requests[k] for k in chunk]), requests[chunk[0]].n_options)
                for k, p in zip(chunk, probs):
                    results[k] = p
        return [r for r in results if r is not None]


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


# ----------------------------------------------------------------------------- OpenAI-compatible endpoints


class OpenAIScorer:
    """Answer distributions from an OpenAI-compatible chat endpoint (logprobs where served, else n samples)."""

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY", samples: int = 10,
                 mode: str = "auto", timeout_s: float = 120.0, max_retries: int = 3, seed: int = 0, workers: int = 1) -> None:
        import openai

        if mode not in ("auto", "logprobs", "samples"):
            raise ScorerError(f"--distribution must be auto, logprobs or samples, got {mode!r}")
        if samples < 1 or workers < 1:
            raise ScorerError("--samples and --workers must be at least 1")
        self.base_url, self.model_id, self.samples, self.mode, self.seed, self.workers = base_url, model, samples, mode, seed, workers
        self.client = openai.OpenAI(base_url=base_url, api_key=os.environ.get(api_key_env) or "not-needed",
                                    timeout=timeout_s, max_retries=max_retries)
        self.sources: dict[str, int] = {"logprobs": 0, "samples": 0}
        self._lock = threading.Lock()

    @property
    def source(self) -> str:
        used = [name for name, count in self.sources.items() if count]
        if used == ["samples"]:
            return f"samples (n={self.samples})"
        return "logprobs" if used == ["logprobs"] else f"mixed {self.sources}"

    def describe(self) -> dict[str, Any]:
        return {"backend": "openai", "model": self.model_id, "distribution_mode": self.mode, "samples": self.samples,
                "seed": self.seed}

    def messages(self, request: Request) -> list[dict[str, Any]]:
        from vrforge.openai_client import image_part

        content = [image_part(_png(image)) for image in request.images()]
        content.append({"type": "text", "text": request.text})
        return [{"role": "user", "content": content}]

    def _create(self, **kwargs: Any) -> Any:
        import openai

        try:
            return self.client.chat.completions.create(model=self.model_id, **kwargs)
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise ScorerError(f"{self.base_url} did not answer ({exc.__class__.__name__})") from None
        except openai.APIStatusError as exc:
            raise ScorerError(f"{self.base_url} answered HTTP {exc.status_code}") from None

    def one(self, request: Request) -> list[float]:
        messages = self.messages(request)
        if self.mode in ("auto", "logprobs"):
            response = self._create(messages=messages, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=20,
                                    seed=self.seed)
            probs = _from_logprobs(response, request.n_options)
            if probs is not None:
                with self._lock:
                    self.sources["logprobs"] += 1
                return probs
            if self.mode == "logprobs":
                raise ScorerError(f"{self.base_url} returned no logprobs for the option letters; use --distribution samples")
        from vrforge.runners.vlm_choice import parse_choice

        texts: list[str] = []
        attempt = 0
        while len(texts) < self.samples:  # servers that ignore n answer one choice per request
            response = self._create(messages=messages, max_tokens=16, temperature=1.0, n=self.samples - len(texts),
                                    seed=self.seed + attempt)
            texts += [choice.message.content or "" for choice in response.choices][: self.samples - len(texts)]
            attempt += 1
        counts = np.zeros(request.n_options)
        for text in texts:
            position = parse_choice(text, request.n_options)
            if position is not None:
                counts[position] += 1
        with self._lock:
            self.sources["samples"] += 1
        # Unparseable answers spread evenly: they carry no preference for any option.
        counts += (self.samples - counts.sum()) / request.n_options
        return (counts / counts.sum()).tolist()

    def distributions(self, requests: Sequence[Request]) -> list[list[float]]:
        if self.workers == 1:
            return [self.one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(self.one, requests))


def _from_logprobs(response: Any, n_options: int) -> list[float] | None:
    """Letter probabilities from the first generated token's top_logprobs; None when the server sent none."""
    choice = response.choices[0] if response.choices else None
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    probs = np.zeros(n_options)
    for entry in content[0].top_logprobs or []:
        token = entry.token.strip().strip(".):(").upper()
        if len(token) == 1 and token in LETTERS[:n_options]:
            probs[LETTERS.index(token)] += np.exp(entry.logprob)
    if probs.sum() <= 0:
        return None
    return (probs / probs.sum()).tolist()


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


# ----------------------------------------------------------------------------- scripted baselines


class BlindBaseline:
    """Answers from the question text alone: a fixed, fairly confident distribution per question."""

    source = "scripted"

    def describe(self) -> dict[str, Any]:
        return {"backend": "baseline", "model": "blind"}

    def distributions(self, requests: Sequence[Request]) -> list[list[float]]:
        out = []
        for request in requests:
            digest = hashlib.sha256(request.text.encode("utf-8")).digest()
            logits = np.array([digest[k] / 64.0 for k in range(request.n_options)])
            out.append(_softmax(logits).tolist())
        return out


class LookingBaseline:
    """Reads the answer from the pixels (golden items only): 0.85 on the option it sees, uniform when it sees none."""

    source = "scripted"

    def describe(self) -> dict[str, Any]:
        return {"backend": "baseline", "model": "looking"}

    def distributions(self, requests: Sequence[Request]) -> list[list[float]]:
        from vrforge.generators.reliance.scenes import read_answer

        out = []
        for request in requests:
            if request.meta is None:
                raise ScorerError("the looking baseline reads golden items only (it needs their scene description)")
            seen = read_answer(request.meta, request.image)
            n = request.n_options
            if seen in request.options:
                probs = np.full(n, 0.15 / (n - 1))
                probs[request.options.index(seen)] = 0.85
            else:
                probs = np.full(n, 1.0 / n)
            out.append(probs.tolist())
        return out
