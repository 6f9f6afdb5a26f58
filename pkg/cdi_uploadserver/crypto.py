"""TLS_CIPHERS and TLS_MIN_VERSION as CDI's controller fills them from the CDI config's TLS security
profile: OpenSSL-style names (``ECDHE-RSA-AES128-GCM-SHA256``) or Go's (``TLS_ECDHE_...``), comma
separated, and ``VersionTLS12``-style versions. Names not known are skipped and none known leaves the
defaults, as CDI's ``CipherSuitesIDs`` does."""

from __future__ import annotations

import ssl
from typing import Final

from kubevirt.log import get_logger
from kubevirt.service.tls import TLSPolicy
from kubevirt.virt_config.tls import GO_CIPHER_SUITES, VERSION_TLS13

# The OpenSSL names CDI translates (its tls-crypto-watch table); Go's own names come on top.
OPENSSL_CIPHER_SUITES: Final = frozenset(
    {
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "ECDHE-RSA-CHACHA20-POLY1305",
        "ECDHE-ECDSA-AES128-SHA256",
        "ECDHE-RSA-AES128-SHA256",
        "AES128-GCM-SHA256",
        "AES256-GCM-SHA384",
        "AES128-SHA256",
        "ECDHE-ECDSA-AES128-SHA",
        "ECDHE-RSA-AES128-SHA",
        "ECDHE-ECDSA-AES256-SHA",
        "ECDHE-RSA-AES256-SHA",
        "AES128-SHA",
        "AES256-SHA",
        "DES-CBC3-SHA",
    }
)

__all__ = ["OPENSSL_CIPHER_SUITES", "TLSPolicy", "tls_policy"]


def tls_policy(ciphers: str, min_version: str) -> TLSPolicy:
    """The OpenSSL settings of the two variables. TLS 1.2 is the floor whatever the minimum says (Go's
    server default; OpenSSL 3 refuses older versions at its default security level anyway)."""
    minimum = ssl.TLSVersion.TLSv1_3 if min_version == VERSION_TLS13 else ssl.TLSVersion.TLSv1_2
    names = [_openssl_name(name.strip()) for name in ciphers.split(",")]
    known = [name for name in names if name is not None]
    if not known:
        return TLSPolicy(minimum)
    # Go's TLS 1.3 suites are not configurable: named alone, they leave the TLS 1.2 defaults.
    listed = ":".join(dict.fromkeys(name for name in known if name))
    if not listed:
        return TLSPolicy(minimum)
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).set_ciphers(listed)
    except ssl.SSLError:
        get_logger().warning("no configured cipher suite is available for TLS 1.2", ciphers=ciphers)
        return TLSPolicy(ssl.TLSVersion.TLSv1_3)
    return TLSPolicy(minimum, listed)


def _openssl_name(name: str) -> str | None:
    """The OpenSSL name, "" for a known suite that cannot be configured (TLS 1.3), None if unknown."""
    if name in OPENSSL_CIPHER_SUITES:
        return name
    if name in GO_CIPHER_SUITES:
        return GO_CIPHER_SUITES[name] or ""
    return None
