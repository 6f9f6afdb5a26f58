"""virt-api calls virt-handler by its pod IP with the certificates virt-operator issues: the handler's
serving certificate names only the ``virt-handler`` Service, so its common name, not the host name,
identifies it (before the fix every pause and soft reboot on a cluster failed with "hostname ... doesn't
match"); the CA alone is not enough, since it signs every KubeVirt component's certificate."""

from __future__ import annotations

import datetime
import http.server
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt.virt_api.rest.handler import HandlerCallError, TLSHandlerTransport
from kubevirt.virt_api.rest.wiring import HandlerTLS
from kubevirt.virt_operator.certificates import KeyPair, component_certificates, new_ca, new_certificate
from kubevirt_testing.certificates import write_pair

NOW = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1)
LIFE = datetime.timedelta(hours=1)
HANDLER_SERVER_CERT = "kubevirt-virt-handler-server-certs"
API_SERVER_CERT = "kubevirt-virt-api-certs"


class _Recorder(http.server.BaseHTTPRequestHandler):
    calls: list[tuple[str, str]] = []

    def do_PUT(self) -> None:  # http.server names it so
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.calls.append(("PUT", self.path))
        self.send_response(202)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


def _serve(tmp_path: Path, secret: str) -> Iterator[tuple[int, KeyPair]]:
    """An HTTPS server on 127.0.0.1 with the serving certificate of ``secret`` as the operator issues it."""
    ca = new_ca("kubevirt.io@1", NOW, LIFE)
    (spec,) = [s for s in component_certificates("kubevirt") if s.secret == secret]
    cert, key = write_pair(new_certificate(spec, ca, "kubevirt", NOW, LIFE), tmp_path, "server")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Recorder.calls = []
    try:
        yield server.server_address[1], ca
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def handler_server(tmp_path: Path) -> Iterator[tuple[int, KeyPair]]:
    yield from _serve(tmp_path, HANDLER_SERVER_CERT)


@pytest.fixture
def api_server(tmp_path: Path) -> Iterator[tuple[int, KeyPair]]:
    """virt-api's serving certificate: the same CA as virt-handler's, another identity."""
    yield from _serve(tmp_path, API_SERVER_CERT)


def _transport(tmp_path: Path, ca: KeyPair, *, externally_managed: bool = False) -> TLSHandlerTransport:
    tls = HandlerTLS(tmp_path / "client.crt", tmp_path / "client.key", externally_managed=externally_managed)
    return TLSHandlerTransport(tls.contexts(lambda: ca.cert_pem.decode()).current)


def test_the_handler_is_reached_by_pod_ip_although_its_certificate_names_only_the_service(
    tmp_path: Path, handler_server: tuple[int, KeyPair]
) -> None:
    port, ca = handler_server
    url = f"https://127.0.0.1:{port}/v1/namespaces/ns/virtualmachineinstances/vm/pause"
    _transport(tmp_path, ca).put(url, b"{}")
    assert _Recorder.calls == [("PUT", "/v1/namespaces/ns/virtualmachineinstances/vm/pause")]


def test_a_handler_certificate_of_another_ca_is_refused(
    tmp_path: Path, handler_server: tuple[int, KeyPair]
) -> None:
    port, _ = handler_server
    stranger = new_ca("someone-else", NOW, LIFE)
    url = f"https://127.0.0.1:{port}/v1/namespaces/ns/virtualmachineinstances/vm/pause"
    with pytest.raises(HandlerCallError, match="CERTIFICATE_VERIFY_FAILED"):
        _transport(tmp_path, stranger).put(url, b"{}")
    assert _Recorder.calls == []


def test_a_certificate_the_same_ca_issued_to_another_component_is_refused(
    tmp_path: Path, api_server: tuple[int, KeyPair]
) -> None:
    port, ca = api_server
    url = f"https://127.0.0.1:{port}/v1/namespaces/ns/virtualmachineinstances/vm/pause"
    with pytest.raises(HandlerCallError, match="common name is invalid"):
        _transport(tmp_path, ca).put(url, b"{}")
    assert _Recorder.calls == []
    # Externally managed certificates (the cluster's PKI) carry names of their own, as in KubeVirt.
    _transport(tmp_path, ca, externally_managed=True).put(url, b"{}")
    assert _Recorder.calls == [("PUT", "/v1/namespaces/ns/virtualmachineinstances/vm/pause")]
