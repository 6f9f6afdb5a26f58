"""Who may call virt-handler's console server: a client certificate from the KubeVirt CA (checked in the
TLS handshake) that is meant for client authentication and names virt-handler's client identity.

The handshake can only check the chain; the usage and the common name are checked here, on the
certificate the connection presented, before any route runs. ``externally_managed`` certificates (issued
by the cluster's own PKI) are not held to KubeVirt's common name, as in KubeVirt.
"""

from __future__ import annotations

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CLIENT_COMMON_NAME = "kubevirt.io:system:client:virt-handler"


class PeerRefusedError(Exception):
    """The client's certificate may not call this server."""


def check_client_certificate(der: bytes | None, *, externally_managed: bool = False) -> None:
    if not der:
        raise PeerRefusedError("no client certificate provided.")
    try:
        cert = x509.load_der_x509_certificate(der)
    except ValueError as err:
        raise PeerRefusedError(f"failed to parse peer certificate: {err}") from None
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        usages = None  # no restriction: any usage, as Go's verifier reads it
    if usages is not None and not (
        ExtendedKeyUsageOID.CLIENT_AUTH in usages or ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in usages
    ):
        raise PeerRefusedError(
            "could not verify peer certificate: x509: certificate specifies an incompatible key usage"
        )
    if externally_managed:
        return
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    common_name = str(names[0].value) if names else ""
    if common_name != CLIENT_COMMON_NAME:
        raise PeerRefusedError(
            f"common name is invalid, expected {CLIENT_COMMON_NAME}, but got {common_name}"
        )
