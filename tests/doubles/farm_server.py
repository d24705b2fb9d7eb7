"""FarmDouble: a local HTTP server (127.0.0.1, port 0) that answers as the device farms'
REST APIs do, from recorded responses (tests/doubles/farm_recordings.py builds them from the
samples the farms document, docs/farms.md).

A route is ``(method, path)``; its replies are played in order and the last one repeats
(``404`` then ``200`` is "not processed yet, then ready"). A reply can be a callable of the
request (query and JSON body), as AWS's JSON-1.1 API needs (``POST /`` with
``X-Amz-Target: DeviceFarm_20150623.<Operation>``). Every request is kept in ``calls``
with its ``Authorization`` header, so a test can check what the kit sent.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qsl, urlsplit


@dataclasses.dataclass(frozen=True)
class Reply:
    """One recorded answer: ``status``, ``body`` (bytes, text, or a JSON value) and
    ``headers``."""

    status: int = 200
    body: Any = b""
    headers: dict[str, str] = dataclasses.field(default_factory=dict)

    def encoded(self) -> tuple[bytes, str]:
        if isinstance(self.body, bytes):
            return self.body, "application/octet-stream"
        if isinstance(self.body, str):
            return self.body.encode(), "text/plain; charset=utf-8"
        return json.dumps(self.body).encode(), "application/json"


@dataclasses.dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


class FarmDouble:
    """The server; use as a context manager. ``url`` is its base (``http://127.0.0.1:P``)."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[Reply | Callable[[Request], Reply]]] = {}
        self.played: dict[tuple[str, str], int] = {}
        self.calls: list[Request] = []
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.port = int(self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FarmDouble":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def add(self, path: str, *replies: Reply | Callable[[Request], Reply],
            method: str = "GET") -> None:
        """Answer ``method path`` with ``replies`` in order (the last repeats)."""
        self.routes[(method, path)] = list(replies)

    def add_aws(self, operation: str, reply: Callable[[Request], Reply]) -> None:
        """Answer the Device Farm JSON-1.1 ``operation`` with ``reply(request)``."""
        self.routes[("AWS", operation)] = [reply]

    def count(self, path: str, method: str = "GET") -> int:
        return sum(1 for c in self.calls if c.method == method and c.path == path)

    def _answer(self, req: Request) -> Reply:
        key = (req.method, req.path)
        target = req.headers.get("x-amz-target", "")
        if target.startswith("DeviceFarm_20150623."):
            key = ("AWS", target.split(".", 1)[1])
        with self._lock:
            self.calls.append(req)
            replies = self.routes.get(key)
            if not replies:
                return Reply(404, {"message": "no route in the double"})
            n = self.played.get(key, 0)
            self.played[key] = n + 1
            reply = replies[min(n, len(replies) - 1)]
        return reply(req) if callable(reply) else reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _do(self, method: str) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                req = Request(method, parts.path, dict(parse_qsl(parts.query)),
                              {k.lower(): v for k, v in self.headers.items()}, body)
                reply = double._answer(req)
                data, ctype = reply.encoded()
                if req.headers.get("x-amz-target"):
                    ctype = "application/x-amz-json-1.1"
                self.send_response(reply.status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._do("GET")

            def do_POST(self) -> None:
                self._do("POST")

        return Handler
