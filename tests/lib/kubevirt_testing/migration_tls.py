"""Mutual-TLS contexts for a node's migration proxy, from certificates a test CA issues."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kubevirt.service.tls import HANDLER_CLIENT_NAME, HANDLER_SERVER_NAME
from kubevirt.virt_config.tls import TLSConfiguration
from kubevirt.virt_handler.migration_proxy import TLSContexts, TLSFiles, TLSProvider
from kubevirt_testing.certificates import CertificateAuthority


def migration_tls(
    directory: Path,
    ca: CertificateAuthority,
    node: str,
    tls_config: Callable[[], TLSConfiguration] = TLSConfiguration,
) -> TLSContexts:
    """The contexts virt-handler on ``node`` loads, its server and client pairs (virt-handler's
    identities, as virt-operator issues them) written to ``directory``."""
    del node  # every node's handler has the same identities; the directory tells them apart
    server, client = ca.issue(HANDLER_SERVER_NAME), ca.issue(HANDLER_CLIENT_NAME, client=True)
    directory.mkdir(parents=True, exist_ok=True)
    files = TLSFiles(
        directory / "tls.crt", directory / "tls.key", directory / "client.crt", directory / "client.key"
    )
    for path, data in zip(
        (files.cert_file, files.key_file, files.client_cert_file, files.client_key_file),
        (server.cert_pem, server.key_pem, client.cert_pem, client.key_pem),
        strict=True,
    ):
        path.write_bytes(data)
    contexts = TLSProvider(
        files, ca_bundle=lambda: ca.pair.cert_pem.decode(), disabled=lambda: False, tls_config=tls_config
    )()
    assert contexts is not None
    return contexts
