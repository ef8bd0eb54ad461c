"""The study server: Starlette on uvicorn, plain HTML and JavaScript, one study file.

Every address starts with the participant's token (``/s/<token>/...``); a request without a
known token gets 404. A participant reaches only their own items, and only the item they are
to answer now; option images are addressed by their place on the page, so the original order
(and the solution's place) never reaches the browser, nor does any solution, answer key,
distractor label or other participant's answer. Item ids are opaque. The page's files are held
in memory and served by name: no request path reaches the filesystem.

An answer is acknowledged only after its transaction has committed (WAL, ``synchronous=FULL``),
so a server killed between answers loses nothing it acknowledged. A malformed, stale or
replayed request gets a 4xx with a one-line reason and changes nothing.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import sys
import time
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from vrforge.answer_tools import AnswerError
from vrforge.errors import UserError
from vrforge.runners.study import answers
from vrforge.runners.study.store import Item, Study, StudyError

WELCOME = "__welcome__"  # the welcome page counts as read once the participant starts
MAX_BODY = {"answer": answers.MAX_UPLOAD_BYTES * 4 // 3 + 65536, "seen": 4096}
STATIC = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",  # the token is in the address: never send it on
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": ("default-src 'self'; img-src 'self' data:; script-src 'self'; style-src 'self'; "
                                "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
}


class Refused(Exception):
    """A request turned down: its status and one line."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def _files() -> dict[str, bytes]:
    folder = resources.files("vrforge.runners.study") / "static"
    return {name: (folder / name).read_bytes() for name in ("index.html", *STATIC)}


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def make_app(study: Study) -> Starlette:
    files = _files()
    kind = study.kind
    resolution = int(study.info.get("resolution") or 1024)
    title = str(study.info.get("title") or "A short study")

    def refuse(status: int, reason: str) -> PlainTextResponse:
        return PlainTextResponse(reason + "\n", status_code=status, headers=HEADERS)

    def participant(request: Request) -> int:
        pid = study.participant(request.path_params["token"])
        if pid is None:
            raise Refused(404, "unknown link: ask the researcher for yours")
        return pid

    async def body_json(request: Request, limit: int) -> Any:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            raise Refused(415, "send the answer as application/json")
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            raise Refused(413, "the request is too large")
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > limit:
                raise Refused(413, "the request is too large")
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: arrays nested beyond reason
            raise Refused(400, "the request body is not JSON") from None

    def image_url(token: str, item: Item, name: str) -> str:
        return f"/s/{token}/img/{item.id}/{name}"

    def block_page(token: str, name: str) -> dict[str, Any]:
        block = dict(study.blocks()[name])
        images = block.pop("images", {})
        block["images"] = {key: f"/s/{token}/example/{name}/{key}" for key in images}
        block["name"] = name
        return block

    def public_item(token: str, item: Item) -> dict[str, Any]:
        out: dict[str, Any] = {"id": item.id, "block": item.block, "task": item.task}
        if kind == "tacit-choice":
            out["puzzle"] = image_url(token, item, "puzzle")
            out["options"] = [image_url(token, item, f"option-{p}") for p in range(answers.OPTION_COUNT)]
        elif kind == "tacit-draw":
            out["puzzle"] = image_url(token, item, "puzzle")
            out["tools"] = item.public["tools"]
        elif kind == "cfeval-rate":
            out["image"] = image_url(token, item, "image")
            out["questions"] = item.public["questions"]
        else:
            out["source_kind"] = item.public["kind"]
            out["source_text"] = item.public["source_text"]
            out["source_image"] = image_url(token, item, "source") if item.public["source_text"] is None else None
            out["candidates"] = [{"text": c["text"], "image": None if c["text"] is not None else
                                  image_url(token, item, f"candidate-{k}")} for k, c in enumerate(item.public["candidates"])]
        return out

    def state(token: str, pid: int) -> dict[str, Any]:
        assigned = study.assignment(pid)
        done = study.answered(pid)
        seen = set(study.seen(pid))
        out: dict[str, Any] = {"kind": kind, "title": title, "total": len(assigned), "answered": len(done)}
        current = study.current(pid)
        if current is None:
            return {**out, "page": "done"}
        item, _ = current
        out["block"] = block_page(token, item.block)
        if WELCOME not in seen:
            blocks = study.blocks()
            mine = sorted({study.items()[i].block for i, _ in assigned})
            return {**out, "page": "welcome", "blocks": [blocks[b]["title"] for b in mine]}
        if item.block not in seen:
            return {**out, "page": "instructions"}
        study.mark_shown(pid, item.id)
        return {**out, "page": "item", "item": public_item(token, item)}

    async def page(request: Request) -> Response:
        try:
            participant(request)
        except Refused as exc:
            return refuse(exc.status, exc.reason)
        # The token is checked above and URL-safe (letters, digits, - and _): it can stand in the page as is.
        base = f"/s/{request.path_params['token']}".encode()
        return Response(files["index.html"].replace(b"{{BASE}}", base), media_type="text/html; charset=utf-8", headers=HEADERS)

    async def static(request: Request) -> Response:
        try:
            participant(request)
        except Refused as exc:
            return refuse(exc.status, exc.reason)
        name = request.path_params["name"]
        if name not in STATIC:
            return refuse(404, "not found")
        return Response(files[name], media_type=STATIC[name], headers=HEADERS)

    async def get_state(request: Request) -> Response:
        try:
            pid = participant(request)
        except Refused as exc:
            return refuse(exc.status, exc.reason)
        data = await run_in_threadpool(state, request.path_params["token"], pid)
        return JSONResponse(data, headers=HEADERS)

    async def post_seen(request: Request) -> Response:
        try:
            pid = participant(request)
            body = await body_json(request, MAX_BODY["seen"])
            block = body.get("block") if isinstance(body, dict) else None
            mine = {WELCOME} | {study.items()[i].block for i, _ in study.assignment(pid)}
            if not isinstance(block, str) or block not in mine:
                raise Refused(422, "'block' must name one of your instruction pages")
        except Refused as exc:
            return refuse(exc.status, exc.reason)
        await run_in_threadpool(study.mark_seen, pid, block)
        return JSONResponse(await run_in_threadpool(state, request.path_params["token"], pid), headers=HEADERS)

    def accept(pid: int, body: Any) -> None:
        if not isinstance(body, dict):
            raise Refused(422, "the request body must be a JSON object")
        item_id = body.get("item")
        assigned = dict(study.assignment(pid))
        if not isinstance(item_id, str) or item_id not in assigned:
            raise Refused(404, "no such item")
        item = study.items()[item_id]
        if item_id in study.answered(pid):
            raise Refused(409, "this item is answered already")
        current = study.current(pid)
        if current is None or current[0].id != item_id:
            raise Refused(409, "this is not the item to answer now")
        elapsed = body.get("elapsed_ms")
        if elapsed is not None and (isinstance(elapsed, bool) or not isinstance(elapsed, int) or not 0 <= elapsed <= 10**9):
            raise Refused(422, "'elapsed_ms' must be a whole number of milliseconds")
        try:
            answer, result, image = answers.score(kind, item, assigned[item_id], body.get("answer"), resolution)
        except AnswerError as exc:
            raise Refused(422, str(exc)) from None
        try:
            study.save_answer(pid, item, answer, result, image, elapsed)
        except StudyError as exc:  # a second request for the same item that raced the first
            raise Refused(409, str(exc)) from None

    async def post_answer(request: Request) -> Response:
        try:
            pid = participant(request)
            body = await body_json(request, MAX_BODY["answer"])
            await run_in_threadpool(accept, pid, body)
        except Refused as exc:
            return refuse(exc.status, exc.reason)
        # Saved: only now does the page move on.
        return JSONResponse({"saved": True, **await run_in_threadpool(state, request.path_params["token"], pid)},
                            headers=HEADERS)

    async def item_image(request: Request) -> Response:
        try:
            pid = participant(request)
            current = study.current(pid)
            if current is None or current[0].id != request.path_params["item"]:
                raise Refused(404, "not found")
            item, rotation = current
            name = request.path_params["name"]
            if kind == "tacit-choice" and name.startswith("option-"):
                try:
                    position = int(name.removeprefix("option-"))
                except ValueError:
                    raise Refused(404, "not found") from None
                if not 0 <= position < answers.OPTION_COUNT:
                    raise Refused(404, "not found")
                name = f"option-{answers.presented(rotation, position)}"
            digest = item.images.get(name)
            blob = study.blob(digest) if digest else None
            if blob is None:
                raise Refused(404, "not found")
        except Refused as exc:
            return refuse(exc.status, exc.reason)
        return Response(blob[0], media_type=blob[1], headers=HEADERS)

    async def example_image(request: Request) -> Response:
        try:
            pid = participant(request)
            block = request.path_params["block"]
            if block not in {study.items()[i].block for i, _ in study.assignment(pid)}:
                raise Refused(404, "not found")
            digest = study.blocks()[block].get("images", {}).get(request.path_params["name"])
            blob = study.blob(digest) if digest else None
            if blob is None:
                raise Refused(404, "not found")
        except Refused as exc:
            return refuse(exc.status, exc.reason)
        return Response(blob[0], media_type=blob[1], headers=HEADERS)

    async def not_found(request: Request, exc: Exception) -> Response:
        return refuse(404, "not found")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return refuse(405, "method not allowed")

    routes = [
        Route("/s/{token}", page, methods=["GET"]),
        Route("/s/{token}/", page, methods=["GET"]),
        Route("/s/{token}/static/{name}", static, methods=["GET"]),
        Route("/s/{token}/api/state", get_state, methods=["GET"]),
        Route("/s/{token}/api/seen", post_seen, methods=["POST"]),
        Route("/s/{token}/api/answer", post_answer, methods=["POST"]),
        Route("/s/{token}/img/{item}/{name}", item_image, methods=["GET"]),
        Route("/s/{token}/example/{block}/{name}", example_image, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_allowed})


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free port), so the address is known before serving."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(study: Study, host: str = "127.0.0.1", port: int = 8000, public: bool = False) -> None:
    """Serve ``study`` until interrupted; binds only loopback unless ``public``."""
    import uvicorn

    if not is_loopback(host) and not public:
        raise UserError(f"{host} is not a loopback address: add --public to let other machines reach the study")
    study.check_integrity()
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    counts = study.counts()
    print(f"serving {study.path.name} ({study.kind}, {counts['items']} items, {counts['participants']} participants, "
          f"{counts['answers']} answers) on http://{shown}:{bound}/s/<token>; Ctrl-C to stop", flush=True)
    config = uvicorn.Config(make_app(study), log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    started = time.time()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        print(f"stopped after {time.time() - started:.0f} s", file=sys.stderr)
