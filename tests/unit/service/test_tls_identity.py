"""Clients of virt-handler take only virt-handler's serving identity: the KubeVirt CA signs every
component's certificate (virt-api's, virt-controller's, the operator's), so a chain to it is not enough.
Checked with the certificates virt-operator issues, on blocking sockets (virt-api's lifecycle calls) and
on asyncio connections (virt-api's console and VNC streams, migration sources)."""

from __future__ import annotations

import asyncio
import datetime
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt.service.tls import client_context, handler_server_identity
from kubevirt.virt_operator.certificates import KeyPair, component_certificates, new_ca, new_certificate
from kubevirt_testing.certificates import write_pair
from kubevirt_testing.tls_recorder import TLSRecorder

pytestmark = pytest.mark.timeout(60)

NOW = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1)
LIFE = datetime.timedelta(hours=1)
HANDLER_SERVER_CERT = "kubevirt-virt-handler-server-certs"
API_SERVER_CERT = "kubevirt-virt-api-certs"


@pytest.fixture
def ca() -> KeyPair:
    return new_ca("kubevirt.io@1", NOW, LIFE)


def serving(ca: KeyPair, secret: str, directory: Path) -> Iterator[TLSRecorder]:
    (spec,) = [s for s in component_certificates("kubevirt") if s.secret == secret]
    cert, key = write_pair(new_certificate(spec, ca, "kubevirt", NOW, LIFE), directory, secret)
    recorder = TLSRecorder(cert, key)
    yield recorder
    recorder.close()


@pytest.fixture
def handler(ca: KeyPair, tmp_path: Path) -> Iterator[TLSRecorder]:
    yield from serving(ca, HANDLER_SERVER_CERT, tmp_path)


@pytest.fixture
def impostor(ca: KeyPair, tmp_path: Path) -> Iterator[TLSRecorder]:
    """virt-api's serving certificate: the same CA, another identity."""
    yield from serving(ca, API_SERVER_CERT, tmp_path)


def call_blocking(context: ssl.SSLContext, port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, context.wrap_socket(raw) as tls:
        tls.sendall(b"secret")
        return tls.recv(10)


def call_asyncio(context: ssl.SSLContext, port: int) -> bytes:
    async def call() -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="")
        try:
            writer.write(b"secret")
            await writer.drain()
            return await reader.read(10)
        finally:
            writer.close()

    return asyncio.run(call())


CALLS = {"blocking": call_blocking, "asyncio": call_asyncio}


@pytest.mark.parametrize("how", sorted(CALLS))
def test_virt_handler_s_serving_certificate_is_accepted(ca: KeyPair, handler: TLSRecorder, how: str) -> None:
    context = client_context(ca.cert_pem.decode(), peer=handler_server_identity())
    assert CALLS[how](context, handler.port) == b"ok"
    assert handler.received == b"secret"


@pytest.mark.parametrize("how", sorted(CALLS))
def test_another_component_s_certificate_from_the_same_ca_is_refused_before_a_byte_is_sent(
    ca: KeyPair, impostor: TLSRecorder, how: str
) -> None:
    context = client_context(ca.cert_pem.decode(), peer=handler_server_identity())
    with pytest.raises(ssl.SSLCertVerificationError, match="common name is invalid"):
        CALLS[how](context, impostor.port)
    assert impostor.received == b""


def test_externally_managed_certificates_are_not_held_to_kubevirt_s_names(
    ca: KeyPair, impostor: TLSRecorder
) -> None:
    context = client_context(ca.cert_pem.decode(), peer=handler_server_identity(externally_managed=True))
    assert call_blocking(context, impostor.port) == b"ok"
