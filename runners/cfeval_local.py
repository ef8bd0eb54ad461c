"""CF-Eval's local judge: a transformers vision-language model in place of an OpenAI-compatible endpoint.

``LocalJudgeClient`` answers the very requests ``cfeval_judge`` builds for an endpoint (the
persona as the system message, the image and every question of the level as the user
message, the answer's JSON Schema and the per-question check), so everything around it
(gating, ``--skip-gated``, records, metrics, outputs) is shared. The model and processor are
loaded by ``vlm_backends.load_vlm``, the loader of the multiple-choice runner, on the first
image that is not in the cache, so a fully cached rerun loads nothing.

The messages are rendered with the processor's chat template (a plain ``ROLE: ...`` layout
when the model has none) and answered with greedy decoding up to ``max_new_tokens``.
Decoding is unconstrained: the answer is parsed as the first JSON object in the text (a
Markdown fence is dropped first) and checked against the schema and the per-question check
exactly as an endpoint's answer is. Greedy decoding gives the same text on every attempt, so
an unusable answer is not retried: the image is recorded as failed with the reason.

Every generated text is cached (one JSON file per request hash, written atomically), valid
or not, and re-checked when read, so a rerun generates nothing. The key is the backend, the
judge model and revision, the dtype, the messages (persona, questions, image bytes), the
schema and ``max_new_tokens``; the device is not part of it. Usage counts the prompt tokens
the processor produced (image tokens included) and the generated tokens.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from vrforge.openai_client import ChatError, ChatResult, Usage, answer_problem, canonical_json, strip_fences, write_cache_entry
from vrforge.runners.cfeval_judge import CFEvalError

CACHE_FORMAT = 1
DEFAULT_MAX_NEW_TOKENS = 1024
_SHOWN_CHARS = 80


@dataclass(frozen=True)
class LocalJudgeConfig:
    """Which model judges and how it generates (``model``: a hub id or a local folder)."""

    model: str
    revision: str | None = None
    dtype: str = "auto"
    device: str = "auto"
    trust_remote_code: bool = False
    local_files_only: bool = False
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS


def local_request_hash(config: LocalJudgeConfig, messages: list[dict], schema_name: str, schema: dict) -> str:
    """The cache key: what determines the generated text (not the device it runs on)."""
    key = {
        "backend": "transformers", "format": CACHE_FORMAT, "model": config.model, "revision": config.revision,
        "dtype": config.dtype, "decoding": "greedy", "max_new_tokens": config.max_new_tokens,
        "messages": messages, "schema_name": schema_name, "schema": schema,
    }
    return hashlib.sha256(canonical_json(key).encode("utf-8")).hexdigest()


def local_messages(messages: list[dict]) -> tuple[list[dict], list[bytes]]:
    """OpenAI chat messages as chat-template messages (every content a list of parts) and the image bytes in order."""
    converted, images = [], []
    for message in messages:
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else []
        if not isinstance(content, str):
            for part in content:
                if part["type"] == "image_url":
                    url = part["image_url"]["url"]
                    if not url.startswith("data:") or ";base64," not in url:
                        raise ChatError("invalid", "a local judge needs images as base64 data URLs")
                    images.append(base64.b64decode(url.split(",", 1)[1]))
                    parts.append({"type": "image"})
                else:
                    parts.append({"type": "text", "text": part["text"]})
        converted.append({"role": message["role"], "content": parts})
    return converted, images


def first_json_object(text: str) -> dict:
    """The first JSON object in a model's text (after dropping a Markdown fence); ChatError("malformed") if none.

    Prose before the object and after it is ignored; an object cut off at the end of the text is no object.
    """
    body = strip_fences(text.strip())
    decoder = json.JSONDecoder()
    start = body.find("{")
    while start >= 0:
        try:
            data, _ = decoder.raw_decode(body, start)
        except json.JSONDecodeError as exc:
            if exc.pos >= len(body):  # cut off: every later brace lies inside this unfinished object
                break
            start = body.find("{", start + 1)
            continue
        if isinstance(data, dict):
            return data
        start = body.find("{", start + 1)
    raise ChatError("malformed", f"answer holds no complete JSON object: {text[:_SHOWN_CHARS]!r}")


def check_data(data: dict, validator: Any, validate: Callable[[dict], Any] | None) -> dict:
    """The endpoint path's checks (``answer_problem``), as a ChatError."""
    problem = answer_problem(data, validator, validate)
    if problem:
        raise ChatError("invalid", problem)
    return data


class LocalJudgeClient:
    """The ``ChatClient`` surface ``cfeval_judge`` uses (``config.model``, ``complete_json``, ``usage``), answered locally.

    One generation at a time (a lock around the model); the cache and usage totals are thread-safe.
    """

    def __init__(self, config: LocalJudgeConfig, cache_dir: Path | None = None) -> None:
        from vrforge.runners.vlm_backends import check_model_options
        from vrforge.runners.vlm_choice import BackendError

        if config.max_new_tokens < 1:
            raise CFEvalError(f"--max-new-tokens must be at least 1, got {config.max_new_tokens}")
        try:
            check_model_options(config.model, config.dtype)
        except BackendError as exc:
            raise CFEvalError(str(exc)) from None
        self.config = config
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.usage = Usage()
        self._usage_lock = threading.Lock()
        self._model_lock = threading.Lock()
        self.model: Any = None

    # -- loading ----------------------------------------------------------------------------------

    def load(self) -> None:
        """Processor and model, with the multiple-choice runner's loader (a loading failure is a CFEvalError)."""
        if self.model is not None:
            return
        from vrforge.runners.vlm_backends import load_vlm
        from vrforge.runners.vlm_choice import BackendError

        c = self.config
        try:
            self.processor, self.tokenizer, self.model = load_vlm(
                c.model, revision=c.revision, dtype=c.dtype, device=c.device,
                trust_remote_code=c.trust_remote_code, local_files_only=c.local_files_only)
        except BackendError as exc:
            raise CFEvalError(str(exc)) from None

    def close(self) -> None:
        self.model = None

    def __enter__(self) -> LocalJudgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one request ------------------------------------------------------------------------------

    def complete_json(self, messages: list[dict], schema: dict, schema_name: str,
                      validate: Callable[[dict], Any] | None = None) -> ChatResult:
        """A checked answer to one request, from the cache or one greedy generation; ChatError when unusable."""
        validator = jsonschema.validators.validator_for(schema)(schema)
        digest = local_request_hash(self.config, messages, schema_name, schema)
        entry = self._read_cache(digest)
        if entry is not None:
            usage = Usage(cache_hits=1)
            cached = True
        else:
            chat, images = local_messages(messages)
            with self._model_lock:
                self.load()
                entry = self._answer(chat, images)
            usage = Usage(prompt_tokens=entry["prompt_tokens"], completion_tokens=entry["completion_tokens"], requests=1)
            self._write_cache(digest, entry)
            cached = False
        with self._usage_lock:
            self.usage.add(usage)
        try:
            data = check_data(first_json_object(entry["raw"]), validator, validate)
        except ChatError as exc:
            if entry.get("completion_tokens", 0) >= self.config.max_new_tokens:
                raise ChatError(exc.kind, f"{exc.message} (the answer stopped at --max-new-tokens "
                                          f"{self.config.max_new_tokens})") from None
            raise
        return ChatResult(data=data, raw=entry["raw"], usage=usage, cached=cached, request_hash=digest, model=self.config.model)

    def prompt_text(self, chat: list[dict]) -> str:
        """The messages through the processor's chat template (system text folded into the user turn when refused)."""
        from vrforge.runners.vlm_backends import chat_prompt

        try:
            return chat_prompt(self.processor, chat)
        except Exception:  # noqa: BLE001 - some templates reject a system turn; retry without it
            if not chat or chat[0]["role"] != "system":
                raise
        system, rest = chat[0], [dict(m) for m in chat[1:]]
        if rest and rest[0]["role"] == "user":
            rest[0]["content"] = [*system["content"], *rest[0]["content"]]
        return chat_prompt(self.processor, rest)

    def _answer(self, chat: list[dict], images: list[bytes]) -> dict[str, Any]:
        """Render, tokenize and generate: the cache entry (raw text and token counts)."""
        from PIL import Image

        pictures = [Image.open(io.BytesIO(data)).convert("RGB") for data in images]
        try:
            prompt = self.prompt_text(chat)
            inputs = self.processor(images=pictures or None, text=prompt, return_tensors="pt")
            inputs = inputs.to(self.model.device, dtype=self.model.dtype)
            text, completion_tokens = self._generate(inputs)
        except Exception as exc:  # noqa: BLE001 - a failed generation fails this image, in one line
            raise ChatError("generation", f"{exc.__class__.__name__}: {exc}") from None
        return {"format": CACHE_FORMAT, "raw": text, "prompt_tokens": int(inputs["input_ids"].shape[-1]),
                "completion_tokens": completion_tokens}

    def _generate(self, inputs: Any) -> tuple[str, int]:
        """Greedy decoding: (generated text without special tokens, number of generated tokens)."""
        import torch

        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        with torch.inference_mode():
            output = self.model.generate(**inputs, max_new_tokens=self.config.max_new_tokens, do_sample=False,
                                         num_beams=1, pad_token_id=pad)
        new = output[0, inputs["input_ids"].shape[-1]:].tolist()
        return self.tokenizer.decode(new, skip_special_tokens=True), len(new)

    # -- cache ------------------------------------------------------------------------------------

    def _cache_path(self, digest: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / digest[:2] / f"{digest}.json"

    def _read_cache(self, digest: str) -> dict[str, Any] | None:
        path = self._cache_path(digest)
        if path is None or not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return entry if isinstance(entry, dict) and isinstance(entry.get("raw"), str) else None

    def _write_cache(self, digest: str, entry: dict[str, Any]) -> None:
        path = self._cache_path(digest)
        if path is not None:
            write_cache_entry(path, entry)
