"""The HTTPS endpoint of the node and cluster agents: health, leadership and Prometheus metrics.

KubeVirt's controllers serve ``/healthz``, ``/leader`` and ``/metrics`` on one TLS port (8443 in the
install manifests). The agents here are thread-based, so this is a small threaded ``http.server``
rather than an event loop of its own. Each handshake checks the certificate files' modification times
and switches to a renewed pair once it loads, so a rotated certificate is served without a restart.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

from kubevirt.log import get_logger

JSON = dict[str, Any]
# A probe answers a status code and a JSON body.
Probe = Callable[[], tuple[int, JSON]]


def _load(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert_file), str(key_file))
    return context


class _FollowingCertificate:
    """A server context whose certificate follows the files on disk (checked on every handshake)."""

    def __init__(self, cert_file: Path, key_file: Path) -> None:
        self._files = (cert_file, key_file)
        self._stamp = self._mtimes()
        self._current = _load(cert_file, key_file)
        self.server_context = _load(cert_file, key_file)
        self.server_context.sni_callback = self._select
        self._log = get_logger(cert=str(cert_file))

    def _mtimes(self) -> tuple[int, ...]:
        return tuple(path.stat().st_mtime_ns for path in self._files)

    def _select(self, sock: ssl.SSLObject, _server_name: str | None, _ctx: ssl.SSLContext) -> None:
        try:
            stamp = self._mtimes()
            if stamp != self._stamp:
                self._current = _load(*self._files)
                self._stamp = stamp
                self._log.info("serving a renewed TLS certificate")
        except (OSError, ssl.SSLError) as err:  # mid-rotation: keep the pair that works
            self._log.warning("new certificate not loadable yet", reason=str(err))
        sock.context = self._current


class ProbeServer:
    """Serves the given probes (path → probe) and ``/metrics`` over TLS on a thread of its own."""

    def __init__(
        self,
        address: str,
        port: int,
        *,
        cert_file: Path,
        key_file: Path,
        probes: Mapping[str, Probe],
        registry: CollectorRegistry = REGISTRY,
    ) -> None:
        certificate = _FollowingCertificate(cert_file, key_file)
        handler = _handler_class(dict(probes), registry)
        self._server = ThreadingHTTPServer((address, port), handler)
        self._server.daemon_threads = True
        self._server.socket = certificate.server_context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, name="probe-server", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler_class(probes: dict[str, Probe], registry: CollectorRegistry) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._answer(200, generate_latest(registry), CONTENT_TYPE_LATEST)
                return
            probe = probes.get(path)
            if probe is None:
                self._answer(404, b'{"error":"not found"}', "application/json")
                return
            status, body = probe()
            self._answer(status, json.dumps(body).encode(), "application/json")

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # probes arrive every few seconds; access lines would drown the log

    return Handler
