"""A small chat client for any OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp server, hosted APIs).

It asks for JSON that follows a JSON Schema (``response_format`` ``json_schema``), checks the answer
with ``jsonschema`` and an optional caller check, retries what is worth retrying with exponential
backoff, caches validated answers on disk (one JSON file per request hash, written atomically) and
keeps token and request counts for reports. The ``openai`` package's own retries are off, so every
HTTP request is counted here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import jsonschema
import openai

from vrforge.fileio import write_json_atomic

log = logging.getLogger(__name__)

ERROR_KINDS = ("refusal", "malformed", "timeout", "http", "invalid")
_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?[ \t]*```\s*$", re.DOTALL)
_MAX_REASON = 300


@dataclass(frozen=True)
class ChatConfig:
    """Where to send requests and how to sample. ``max_retries`` counts retries: attempts = 1 + max_retries."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    max_retries: int = 3
    backoff_s: float = 0.5
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    cache_hits: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.requests += other.requests
        self.cache_hits += other.cache_hits

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class ChatResult:
    """One answer. ``usage`` is what this call cost (all its attempts; only ``cache_hits`` on a cache hit)."""

    data: dict
    raw: str
    usage: Usage
    cached: bool
    request_hash: str
    model: str = ""


class ChatError(Exception):
    """No usable answer after all attempts (or an error not worth retrying). The message is one line."""

    def __init__(self, kind: str, message: str, status: int | None = None) -> None:
        self.kind = kind
        self.message = _one_line(message)
        self.status = status  # the HTTP status of the last attempt, when the server answered one
        super().__init__(f"{kind}: {self.message}")

    def __reduce__(self):  # survives pickling across worker processes
        return (type(self), (self.kind, self.message, self.status))

    @property
    def concerns_every_request(self) -> bool:
        """True when no other request can succeed either: no connection, 401/403/404 (key,
        permission, model or URL), 429 or a 5xx left after the retries. Any other 4xx (a request
        too large, a bad image), a timeout and unusable answers concern this request only (callers
        stop after many such failures in a row)."""
        if self.kind != "http":
            return False
        return self.status is None or self.status in (401, 403, 404, 408, 429) or self.status >= 500


class _AttemptFailed(Exception):
    """One attempt's failure; ``retry`` says whether another attempt may succeed."""

    def __init__(self, kind: str, reason: str, retry: bool = True, status: int | None = None) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.retry = retry
        self.status = status


def image_part(png_bytes: bytes, mime: str = "image/png") -> dict:
    """An image as an OpenAI chat content part (a base64 data URL)."""
    encoded = base64.b64encode(png_bytes).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{encoded}"}}


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_hash(config: ChatConfig, messages: list[dict], schema_name: str | None, schema: dict | None) -> str:
    """The cache key: what determines the answer, not where it is served from (no base_url, no key)."""
    key = {
        "model": config.model,
        "messages": messages,
        "schema_name": schema_name,
        "schema": schema,
        "temperature": config.temperature,
        "seed": config.seed,
        "max_tokens": config.max_tokens,
    }
    return hashlib.sha256(canonical_json(key).encode("utf-8")).hexdigest()


def strip_fences(text: str) -> str:
    """Drop a Markdown code fence (```json ... ```) some models wrap JSON in."""
    match = _FENCE.match(text)
    return match.group(1) if match else text


def answer_problem(data: dict, validator: Any, validate: Callable[[dict], Any] | None) -> str | None:
    """Why a parsed answer is unusable (the schema first, then the caller's check, whose
    ValueError rejects), or None. Shared by every client that asks for JSON answers."""
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(root)"
        return f"answer violates the schema at {where}: {error.message}"
    if validate is not None:
        try:
            validate(data)
        except ValueError as exc:
            return f"answer rejected: {exc}"
    return None


def write_cache_entry(path: Path, entry: dict) -> None:
    """One cached answer as JSON, written atomically; a unique temporary name per writer, as two
    threads answering the same request may write the same entry at once."""
    write_json_atomic(path, entry, ensure_ascii=False, unique=True)


def _one_line(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= _MAX_REASON else line[: _MAX_REASON - 3] + "..."


class ChatClient:
    """Chat completions against one OpenAI-compatible endpoint, with retries, a response cache and usage totals.

    Thread-safe: the usage totals are guarded by a lock and cache files are replaced atomically.
    """

    def __init__(self, config: ChatConfig, cache_dir: Path | None = None, *,
                 sleep: Callable[[float], None] = time.sleep, strict: bool = True) -> None:
        self.config = config
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.strict = strict
        self._sleep = sleep
        self._lock = threading.Lock()
        self.usage = Usage()
        self._api_key = os.environ.get(config.api_key_env) or "EMPTY"  # local servers ignore the key
        self._client = openai.OpenAI(base_url=config.base_url, api_key=self._api_key,
                                     timeout=config.timeout_s, max_retries=0)

    # -- public API -------------------------------------------------------------------------------

    def complete_json(self, messages: list[dict], schema: dict, schema_name: str,
                      validate: Callable[[dict], Any] | None = None) -> ChatResult:
        """An answer that parses as JSON, follows ``schema`` and passes ``validate`` (which raises ValueError to reject)."""
        try:
            validator = jsonschema.validators.validator_for(schema)(schema)
            validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ChatError("invalid", f"schema {schema_name!r} is not a valid JSON Schema: {exc.message}") from None
        response_format = {"type": "json_schema",
                           "json_schema": {"name": schema_name, "schema": schema, "strict": self.strict}}

        def parse(content: str) -> dict:
            return self._parse_json(content, validator, validate)

        return self._complete(messages, request_hash(self.config, messages, schema_name, schema), parse, response_format)

    def complete_text(self, messages: list[dict]) -> ChatResult:
        """A plain text answer (``data={"text": ...}``) for endpoints without structured output."""
        return self._complete(messages, request_hash(self.config, messages, None, None), lambda content: {"text": content}, None)

    def usage_dict(self) -> dict[str, int]:
        with self._lock:
            return self.usage.as_dict()

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- one call: cache, attempts, backoff -------------------------------------------------------

    def _complete(self, messages: list[dict], digest: str, parse: Callable[[str], dict],
                  response_format: dict | None) -> ChatResult:
        cached = self._read_cache(digest, parse)
        if cached is not None:
            return cached
        call_usage = Usage()
        attempts = 1 + max(0, self.config.max_retries)
        failure = _AttemptFailed("http", "no attempt made")
        for attempt in range(attempts):
            try:
                content, model = self._request(messages, response_format, call_usage)
                data = parse(content)
            except _AttemptFailed as exc:
                failure = exc
                log.warning("chat attempt %d/%d failed (%s): %s", attempt + 1, attempts, exc.kind, self._redact(exc.reason))
                if not exc.retry:
                    raise ChatError(exc.kind, self._redact(exc.reason), exc.status) from None
                if attempt + 1 < attempts:
                    self._sleep(self.config.backoff_s * 2**attempt)
                continue
            self._write_cache(digest, {"data": data, "raw": content, "usage": call_usage.as_dict(), "model": model})
            return ChatResult(data=data, raw=content, usage=call_usage, cached=False, request_hash=digest, model=model)
        raise ChatError(failure.kind, self._redact(f"no usable answer after {attempts} attempts: {failure.reason}"),
                        failure.status)

    def _request(self, messages: list[dict], response_format: dict | None, call_usage: Usage) -> tuple[str, str]:
        """One HTTP request; returns (content, model) or raises _AttemptFailed. Counts usage either way."""
        kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages, "temperature": self.config.temperature}
        if response_format is not None:
            kwargs["response_format"] = response_format
        if self.config.seed is not None:
            kwargs["seed"] = self.config.seed
        if self.config.max_tokens is not None:
            kwargs["max_tokens"] = self.config.max_tokens
        self._count(call_usage, Usage(requests=1))
        try:
            response = self._client.chat.completions.create(**kwargs)
        except openai.APITimeoutError:
            raise _AttemptFailed("timeout", f"no response within {self.config.timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            raise _AttemptFailed("http", f"connection failed: {exc}") from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            retry = status == 429 or status >= 500
            raise _AttemptFailed("http", f"HTTP {status}: {_status_detail(exc)}", retry=retry, status=status) from None
        except openai.APIError as exc:  # e.g. a body that is not a chat completion
            raise _AttemptFailed("malformed", f"unreadable response: {exc}") from None
        if response.usage is not None:
            self._count(call_usage, Usage(prompt_tokens=response.usage.prompt_tokens or 0,
                                          completion_tokens=response.usage.completion_tokens or 0))
        if not response.choices:
            raise _AttemptFailed("malformed", "response has no choices")
        choice = response.choices[0]
        message = choice.message
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise _AttemptFailed("refusal", f"model refused: {refusal}")
        if choice.finish_reason == "content_filter":
            raise _AttemptFailed("refusal", "answer stopped by the content filter")
        content = message.content or ""
        if not content.strip():
            raise _AttemptFailed("refusal", f"empty answer (finish_reason {choice.finish_reason})")
        return content, response.model or self.config.model

    def _parse_json(self, content: str, validator: Any, validate: Callable[[dict], Any] | None) -> dict:
        try:
            data = json.loads(strip_fences(content))
        except json.JSONDecodeError as exc:
            raise _AttemptFailed("malformed", f"answer is not JSON ({exc.msg} at char {exc.pos}): {content[:80]!r}") from None
        if not isinstance(data, dict):
            raise _AttemptFailed("malformed", f"answer is JSON {type(data).__name__}, not an object")
        problem = answer_problem(data, validator, validate)
        if problem:
            raise _AttemptFailed("invalid", problem)
        return data

    # -- cache ------------------------------------------------------------------------------------

    def _cache_path(self, digest: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / digest[:2] / f"{digest}.json"

    def _read_cache(self, digest: str, parse: Callable[[str], dict]) -> ChatResult | None:
        path = self._cache_path(digest)
        if path is None or not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            # Re-check: the caller's validate() is not part of the key and may be stricter now.
            data = parse(entry["raw"])
        except (OSError, ValueError, KeyError, TypeError, _AttemptFailed) as exc:
            log.warning("ignoring cache entry %s: %s", path.name, _one_line(str(exc)))
            return None
        hit = Usage(cache_hits=1)
        self._count(None, hit)
        return ChatResult(data=data, raw=entry["raw"], usage=hit, cached=True, request_hash=digest,
                          model=str(entry.get("model", "")))

    def _write_cache(self, digest: str, entry: dict) -> None:
        path = self._cache_path(digest)
        if path is not None:
            write_cache_entry(path, entry)

    # -- bookkeeping ------------------------------------------------------------------------------

    def _count(self, call_usage: Usage | None, delta: Usage) -> None:
        if call_usage is not None:
            call_usage.add(delta)
        with self._lock:
            self.usage.add(delta)

    def _redact(self, text: str) -> str:
        """Error text never carries the API key, whatever the server echoed back."""
        key = self._api_key
        if key and key != "EMPTY":
            text = text.replace(key, "***")
        return _one_line(text)


def _status_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return str(message)
    return exc.message or "error"


__all__ = ["ChatClient", "ChatConfig", "ChatError", "ChatResult", "Usage", "image_part", "request_hash", "ERROR_KINDS"]
