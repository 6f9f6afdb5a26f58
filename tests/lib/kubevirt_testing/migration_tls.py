"""Mutual-TLS contexts for a node's migration proxy, from certificates a test CA issues."""

from __future__ import annotations

from pathlib import Path

from kubevirt.virt_handler.migration_proxy import TLSContexts, TLSFiles, TLSProvider
from kubevirt_testing.certificates import CertificateAuthority


def migration_tls(directory: Path, ca: CertificateAuthority, node: str) -> TLSContexts:
    """The contexts virt-handler on ``node`` loads, its server and client pairs written to ``directory``."""
    server, client = ca.issue(node), ca.issue(node, client=True)
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
    contexts = TLSProvider(files, ca_bundle=lambda: ca.pair.cert_pem.decode(), disabled=lambda: False)()
    assert contexts is not None
    return contexts
