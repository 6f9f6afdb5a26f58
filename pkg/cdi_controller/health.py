"""A plain-HTTP ``/healthz`` (alive) and ``/readyz`` (caches synced) for the controller's probes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class HealthServer:
    def __init__(self, address: str, port: int, ready: Callable[[], bool]) -> None:
        handler = _handler(ready)
        self._server = ThreadingHTTPServer((address, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="health", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(ready: Callable[[], bool]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/healthz":
                self._answer(200, b"ok")
            elif self.path == "/readyz":
                self._answer(*((200, b"ok") if ready() else (503, b"caches not synced")))
            else:
                self._answer(404, b"not found")

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # probes every few seconds would drown the log

    return Handler
