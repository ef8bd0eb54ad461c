"""A scripted stand-in for an OpenAI-compatible chat endpoint, on loopback only.

``FakeOpenAI(answers=[...])`` serves POST /v1/chat/completions from the script in order;
``FakeOpenAI(responder=fn)`` asks ``fn(request_json)`` for each answer. An answer is:

- a dict (or list): returned as JSON message content;
- a str: returned as raw message content (use it for malformed JSON);
- ``Refusal(text)``: ``message.refusal`` set, content null;
- ``Completion(content, finish_reason, refusal)``: full control of the choice;
- ``Delay(seconds, answer)``: waits, then answers (for client timeouts);
- ``HttpError(status, body="")``: that HTTP status;
- ``Raw(body)``: that whole chat.completion body as given (logprobs, several choices).

Every request body is kept in ``.requests`` (headers in ``.headers``). The server serves only while
the ``with`` block is open; a delayed answer still pending when it closes is dropped.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CREATED = 1_700_000_000  # a fixed timestamp keeps responses deterministic


@dataclass(frozen=True)
class Refusal:
    text: str


@dataclass(frozen=True)
class Completion:
    content: str | None
    finish_reason: str = "stop"
    refusal: str | None = None


@dataclass(frozen=True)
class Delay:
    seconds: float
    answer: Any


@dataclass(frozen=True)
class HttpError:
    status: int
    body: str = ""


@dataclass(frozen=True)
class Raw:
    body: dict


def _tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: about four characters per token."""
    return max(1, len(text) // 4)


class FakeOpenAI:
    def __init__(self, answers: list[Any] | None = None, responder: Callable[[dict], Any] | None = None) -> None:
        if (answers is None) == (responder is None):
            raise ValueError("give either answers or responder")
        self._answers = list(answers) if answers is not None else []
        self._responder = responder
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        # A short poll interval: shutdown() returns within 20 ms instead of the default 0.5 s.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def remaining(self) -> int:
        """Scripted answers not yet served."""
        with self._lock:
            return len(self._answers)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def _next_answer(self, request: dict) -> tuple[int, Any]:
        """The request's number (1-based) and its answer."""
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
            if self._responder is None:
                return number, (self._answers.pop(0) if self._answers else HttpError(500, "no scripted answer left"))
        return number, self._responder(request)

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.0: one request per connection, so nothing is served over a kept-alive socket after close.
            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def _reply(self, status: int, body: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._reply(200, json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model",
                                                                             "created": CREATED, "owned_by": "fake"}]}).encode())
                else:
                    self._reply(404, b'{"error": {"message": "not found", "type": "invalid_request_error"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._reply(404, b'{"error": {"message": "not found", "type": "invalid_request_error"}}')
                    return
                try:
                    request = json.loads(raw)
                except json.JSONDecodeError:
                    self._reply(400, b'{"error": {"message": "body is not JSON", "type": "invalid_request_error"}}')
                    return
                with fake._lock:
                    fake.headers.append({name.lower(): value for name, value in self.headers.items()})
                number, answer = fake._next_answer(request)
                while isinstance(answer, Delay):
                    if fake._closing.wait(answer.seconds):
                        return  # closed while waiting: bounded, no answer
                    answer = answer.answer
                if isinstance(answer, HttpError):
                    body = answer.body.encode() if answer.body else json.dumps(
                        {"error": {"message": f"fake error {answer.status}", "type": "server_error", "code": answer.status}}).encode()
                    self._reply(answer.status, body)
                    return
                if isinstance(answer, Raw):
                    self._reply(200, json.dumps(answer.body).encode())
                    return
                self._reply(200, json.dumps(completion_body(request, number, answer)).encode())

        return Handler


def completion_body(request: dict, number: int, answer: Any) -> dict:
    """A chat.completion object as OpenAI returns it, with deterministic ids and token counts."""
    refusal = None
    finish_reason = "stop"
    if isinstance(answer, Refusal):
        content, refusal = None, answer.text
    elif isinstance(answer, Completion):
        content, refusal, finish_reason = answer.content, answer.refusal, answer.finish_reason
    elif isinstance(answer, str):
        content = answer
    else:
        content = json.dumps(answer)
    prompt_tokens = _tokens(json.dumps(request.get("messages", []), sort_keys=True))
    completion_tokens = _tokens(content or refusal or "")
    return {
        "id": f"chatcmpl-fake-{number:06d}",
        "object": "chat.completion",
        "created": CREATED,
        "model": request.get("model", "fake-model"),
        "system_fingerprint": "fp_fake",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": refusal},
            "logprobs": None,
            "finish_reason": finish_reason,
        }],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }
