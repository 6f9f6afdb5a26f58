"""virt-api calls virt-handler by pod IP while virt-handler's certificate names its Service: the call is
trusted through the CA that signed it, not through the name."""

from __future__ import annotations

import datetime
import http.server
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt.virt_api.rest.handler import HandlerCallError, TLSHandlerTransport
from kubevirt.virt_operator.certificates import component_certificates, new_ca, new_certificate

NOW = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1)
DAY = datetime.timedelta(days=1)


class _Answer(http.server.BaseHTTPRequestHandler):
    def do_PUT(self) -> None:
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def handler_server(tmp_path: Path) -> Iterator[tuple[int, str]]:
    """An HTTPS server with virt-handler's server certificate; yields (port, the CA's PEM)."""
    ca = new_ca("kubevirt.io", NOW, DAY)
    (spec,) = [
        c for c in component_certificates("kubevirt") if c.secret == "kubevirt-virt-handler-server-certs"
    ]
    pair = new_certificate(spec, ca, "kubevirt", NOW, DAY)
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], ca.cert_pem.decode()
    finally:
        server.shutdown()
        server.server_close()


def _client_context(ca_pem: str) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=ca_pem)
    context.check_hostname = False
    return context


def test_a_call_by_ip_is_trusted_through_the_ca(handler_server: tuple[int, str]) -> None:
    port, ca_pem = handler_server
    context = _client_context(ca_pem)
    TLSHandlerTransport(lambda: context).put(f"https://127.0.0.1:{port}/v1/pause", b"{}")


def test_a_server_signed_by_another_ca_is_refused(handler_server: tuple[int, str]) -> None:
    port, _ = handler_server
    other = _client_context(new_ca("kubevirt.io", NOW, DAY).cert_pem.decode())
    with pytest.raises(HandlerCallError, match="CERTIFICATE_VERIFY_FAILED"):
        TLSHandlerTransport(lambda: other).put(f"https://127.0.0.1:{port}/v1/pause", b"{}")
