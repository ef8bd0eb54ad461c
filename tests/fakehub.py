"""A tiny in-process stand-in for the Hugging Face Hub HTTP API, on loopback only.

It speaks just the endpoints that ``HfApi.create_repo``, ``list_repo_refs``,
``upload_folder`` (preupload + NDJSON commit with inline files) and ``create_tag`` use,
and records what it received so tests can check the upload byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeHub:
    def __init__(self) -> None:
        self.repos: dict[str, dict] = {}  # repo_id -> {"files": {path: bytes}, "tags": {name: oid}, "commits": [oid]}
        self.requests: list[tuple[str, str, dict]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def _reply(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def do_GET(self) -> None:
                hub.requests.append(("GET", self.path, {k.lower(): v for k, v in self.headers.items()}))
                if m := re.match(r"^/api/datasets/([^/]+/[^/]+)/refs", self.path):
                    repo = hub.repos.get(m.group(1))
                    if repo is None:
                        return self._reply(404, {"error": "Repository not found"})
                    head = repo["commits"][-1] if repo["commits"] else "0" * 40
                    return self._reply(200, {
                        "branches": [{"name": "main", "ref": "refs/heads/main", "targetCommit": head}],
                        "tags": [{"name": t, "ref": f"refs/tags/{t}", "targetCommit": o} for t, o in repo["tags"].items()],
                        "converts": [],
                    })
                self._reply(404, {"error": f"not implemented: GET {self.path}"})

            def do_POST(self) -> None:
                body = self._body()
                hub.requests.append(("POST", self.path, {k.lower(): v for k, v in self.headers.items()}))
                if self.path == "/api/validate-yaml":
                    return self._reply(200, {"errors": [], "warnings": []})
                if self.path == "/api/repos/create":
                    payload = json.loads(body)
                    repo_id = f"{payload['organization']}/{payload['name']}" if payload.get("organization") else payload["name"]
                    hub.repos.setdefault(repo_id, {"files": {}, "tags": {}, "commits": []})
                    return self._reply(200, {"url": f"{hub.endpoint}/datasets/{repo_id}", "name": repo_id})
                if m := re.match(r"^/api/datasets/([^/]+/[^/]+)/preupload/([^/?]+)", self.path):
                    files = json.loads(body)["files"]
                    return self._reply(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                                       for f in files], "commitOid": None})
                if m := re.match(r"^/api/datasets/([^/]+/[^/]+)/commit/([^/?]+)", self.path):
                    repo = hub.repos[m.group(1)]
                    for line in body.decode().splitlines():
                        item = json.loads(line)
                        if item["key"] == "file":
                            repo["files"][item["value"]["path"]] = base64.b64decode(item["value"]["content"])
                    oid = hashlib.sha1(body).hexdigest()
                    repo["commits"].append(oid)
                    return self._reply(200, {"commitUrl": f"{hub.endpoint}/datasets/{m.group(1)}/commit/{oid}",
                                             "commitOid": oid, "success": True})
                if m := re.match(r"^/api/datasets/([^/]+/[^/]+)/tag/([^/?]+)", self.path):
                    repo = hub.repos[m.group(1)]
                    tag = json.loads(body)["tag"]
                    if tag in repo["tags"]:
                        return self._reply(409, {"error": "tag exists"})
                    repo["tags"][tag] = m.group(2)
                    return self._reply(200, {})
                self._reply(404, {"error": f"not implemented: POST {self.path}"})

        return Handler
