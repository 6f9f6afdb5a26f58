"""The HTTPS endpoint of the node and cluster agents: health, leadership and Prometheus metrics.

KubeVirt's controllers serve ``/healthz``, ``/leader`` and ``/metrics`` on one TLS port (8443 in the
install manifests). The agents here are thread-based, so this is a small threaded ``http.server``
rather than an event loop of its own; the certificate follows its files as virt-api's does
(:class:`~kubevirt.service.tls.ReloadingCertificate`), checked from a thread of its own.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

from kubevirt.service.tls import ReloadingCertificate
from kubevirt.virt_config.tls import TLSConfiguration
from kubevirt_api.view import JSON

# A probe answers a status code and a JSON body.
Probe = Callable[[], tuple[int, JSON]]


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
        cert_reload_interval: float = 2.0,
        tls_config: Callable[[], TLSConfiguration] = TLSConfiguration,
    ) -> None:
        # KubeVirt's metrics listeners follow the cluster's tlsConfiguration too.
        self._certificate = ReloadingCertificate(
            cert_file, key_file, interval=cert_reload_interval, tls_config=tls_config
        )
        handler = _handler_class(dict(probes), registry)
        self._server = ThreadingHTTPServer((address, port), handler)
        self._server.daemon_threads = True
        self._server.socket = self._certificate.server_context.wrap_socket(
            self._server.socket, server_side=True
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name="probe-server", daemon=True)
        self._stopped = threading.Event()
        self._reloader = threading.Thread(target=self._follow_certificate, name="probe-cert", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()
        self._reloader.start()

    def stop(self) -> None:
        self._stopped.set()
        self._server.shutdown()
        self._server.server_close()

    def _follow_certificate(self) -> None:
        while not self._stopped.wait(self._certificate.interval):
            self._certificate.reload_if_changed()


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
