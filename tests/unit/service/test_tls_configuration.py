"""The cluster's ``tlsConfiguration`` on real listeners: the minimum version and the cipher suites apply
to the threaded probe port (virt-handler's 8443, virt-controller's and virt-operator's metrics) and to
the asyncio listeners (virt-api, virt-handler's 8186 and migration targets), and a change reaches a
running listener at its next connection, as KubeVirt's per-handshake ``GetConfigForClient``."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubevirt.service.probes import ProbeServer
from kubevirt.service.tls import HANDLER_SERVER_NAME, ReloadingCertificate, TLSPolicy, tls_policy
from kubevirt.virt_config.tls import TLSConfiguration
from kubevirt_testing.certificates import CertificateAuthority, write_pair

pytestmark = pytest.mark.timeout(60)

TLS13_ONLY = TLSConfiguration("VersionTLS13")
CHACHA = "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"


@dataclass
class Setting:
    """The configuration in force, as a component's cluster configuration holds it."""

    value: TLSConfiguration = field(default_factory=TLSConfiguration)

    def __call__(self) -> TLSConfiguration:
        return self.value


@dataclass
class Listener:
    port: int
    ca: CertificateAuthority


def _probe_listener(cert: Path, key: Path, setting: Setting) -> Iterator[int]:
    server = ProbeServer("127.0.0.1", 0, cert_file=cert, key_file=key, probes={}, tls_config=setting)
    server.start()
    try:
        yield server.port
    finally:
        server.stop()


def _asyncio_listener(cert: Path, key: Path, setting: Setting) -> Iterator[int]:
    certificate = ReloadingCertificate(cert, key, tls_config=setting)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def answer(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"ok")
        await writer.drain()
        writer.close()

    async def start() -> asyncio.Server:
        return await asyncio.start_server(answer, "127.0.0.1", 0, ssl=certificate.server_context)

    server = asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        loop.call_soon_threadsafe(server.close)  # on its loop's thread: asyncio's server is not thread-safe
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


LISTENERS: dict[str, Callable[[Path, Path, Setting], Iterator[int]]] = {
    "probe-port": _probe_listener,
    "asyncio": _asyncio_listener,
}


@pytest.fixture(params=sorted(LISTENERS))
def listener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Listener, Setting]]:
    ca = CertificateAuthority.create()
    cert, key = write_pair(ca.issue(HANDLER_SERVER_NAME), tmp_path)
    setting = Setting()
    with contextlib.contextmanager(LISTENERS[request.param])(cert, key, setting) as port:
        yield Listener(port, ca), setting


def handshake(
    server: Listener, *, maximum: ssl.TLSVersion | None = None, ciphers: str | None = None
) -> tuple[str | None, str]:
    """The version and cipher a client agrees with ``server``; raises ssl.SSLError when refused."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.load_verify_locations(cadata=server.ca.pair.cert_pem.decode())
    if maximum is not None:
        context.maximum_version = maximum
    if ciphers is not None:
        context.set_ciphers(ciphers)
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw,
        context.wrap_socket(raw) as tls,
    ):
        cipher = tls.cipher()
        assert cipher is not None
        return tls.version(), cipher[0]


def test_min_tls_version_13_refuses_a_client_that_speaks_only_tls_1_2(
    listener: tuple[Listener, Setting],
) -> None:
    server, setting = listener
    setting.value = TLS13_ONLY
    # Refused in the handshake (asyncio closes without flushing OpenSSL's alert: the client sees EOF).
    with pytest.raises(ssl.SSLError):
        handshake(server, maximum=ssl.TLSVersion.TLSv1_2)
    assert handshake(server)[0] == "TLSv1.3"


def test_ciphers_restrict_what_tls_1_2_negotiates(listener: tuple[Listener, Setting]) -> None:
    server, setting = listener
    setting.value = TLSConfiguration("VersionTLS12", (CHACHA,))
    assert handshake(server, maximum=ssl.TLSVersion.TLSv1_2) == ("TLSv1.2", "ECDHE-ECDSA-CHACHA20-POLY1305")
    # A client offering only suites the configuration leaves out finds none in common.
    with pytest.raises(ssl.SSLError):
        handshake(server, maximum=ssl.TLSVersion.TLSv1_2, ciphers="ECDHE-ECDSA-AES128-GCM-SHA256")
    # Go lets no TLS 1.3 suite be configured: TLS 1.3 clients are served as before.
    assert handshake(server)[0] == "TLSv1.3"


def test_a_changed_configuration_reaches_the_running_listener(listener: tuple[Listener, Setting]) -> None:
    server, setting = listener
    assert handshake(server, maximum=ssl.TLSVersion.TLSv1_2)[0] == "TLSv1.2"  # KubeVirt's default
    setting.value = TLS13_ONLY
    with pytest.raises(ssl.SSLError):
        handshake(server, maximum=ssl.TLSVersion.TLSv1_2)
    setting.value = TLSConfiguration("VersionTLS12", (CHACHA,))
    assert handshake(server, maximum=ssl.TLSVersion.TLSv1_2)[1] == "ECDHE-ECDSA-CHACHA20-POLY1305"
    setting.value = TLSConfiguration()
    assert handshake(server, maximum=ssl.TLSVersion.TLSv1_2)[1] != "ECDHE-ECDSA-CHACHA20-POLY1305"


def test_suites_that_leave_nothing_for_tls_1_2_leave_only_tls_1_3(listener: tuple[Listener, Setting]) -> None:
    server, setting = listener
    # Known to Go, but TLS 1.3 suites (not configurable) and RC4 (which this OpenSSL lacks).
    setting.value = TLSConfiguration("VersionTLS12", ("TLS_AES_128_GCM_SHA256", "TLS_RSA_WITH_RC4_128_SHA"))
    with pytest.raises(ssl.SSLError):
        handshake(server, maximum=ssl.TLSVersion.TLSv1_2)
    assert handshake(server)[0] == "TLSv1.3"


def test_the_configuration_is_read_as_kubevirt_reads_it() -> None:
    assert tls_policy(TLSConfiguration()) == TLSPolicy(ssl.TLSVersion.TLSv1_2, None)
    assert tls_policy(TLS13_ONLY).minimum == ssl.TLSVersion.TLSv1_3
    # Go's names become OpenSSL's, in the configured order, each once.
    names = ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", CHACHA, "TLS_AES_128_GCM_SHA256", CHACHA)
    assert tls_policy(TLSConfiguration("VersionTLS12", names)) == TLSPolicy(
        ssl.TLSVersion.TLSv1_2, "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305"
    )
    # Names Go does not know are skipped; with none known, the defaults stay.
    assert tls_policy(TLSConfiguration("VersionTLS12", ("NOT_A_SUITE", CHACHA))).ciphers == (
        "ECDHE-ECDSA-CHACHA20-POLY1305"
    )
    assert tls_policy(TLSConfiguration("VersionTLS12", ("NOT_A_SUITE",))) == TLSPolicy()
    # TLS 1.0 and 1.1 are never offered (OpenSSL 3's security level): the floor stays at TLS 1.2.
    assert tls_policy(TLSConfiguration("VersionTLS10")).minimum == ssl.TLSVersion.TLSv1_2
