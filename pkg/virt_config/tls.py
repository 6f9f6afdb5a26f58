"""``spec.configuration.tlsConfiguration``: the minimum TLS version and the cipher suites of every
KubeVirt listener, named as Go's ``crypto/tls`` names them (KubeVirt's ``pkg/util/tls``).

Pure data, shared by the admission check (which refuses names Go does not know) and the listeners
(:mod:`kubevirt.service.tls` turns it into OpenSSL settings).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubevirt_api.view import View

VERSION_TLS10: Final = "VersionTLS10"
VERSION_TLS11: Final = "VersionTLS11"
VERSION_TLS12: Final = "VersionTLS12"
VERSION_TLS13: Final = "VersionTLS13"
# The CRD's enum for minTLSVersion; Go's mapping treats anything else (and "") as TLS 1.2.
MIN_TLS_VERSIONS: Final = (VERSION_TLS10, VERSION_TLS11, VERSION_TLS12, VERSION_TLS13)

# Every name in Go's tls.CipherSuites() and tls.InsecureCipherSuites() (the names KubeVirt accepts),
# with OpenSSL's name for the same suite. The TLS 1.3 suites map to None: Go lets none of them be
# configured (its CipherSuites setting applies to TLS 1.2 and lower only), so they restrict nothing.
GO_CIPHER_SUITES: Final[Mapping[str, str | None]] = {
    "TLS_AES_128_GCM_SHA256": None,
    "TLS_AES_256_GCM_SHA384": None,
    "TLS_CHACHA20_POLY1305_SHA256": None,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
}

_FIELD = "spec.configuration.tlsConfiguration"


class InvalidTLSConfigurationError(ValueError):
    """A ``tlsConfiguration`` of the wrong shape; the message names the field."""


@dataclass(frozen=True)
class TLSConfiguration:
    """The CR's values as written ("" and no ciphers when unset: TLS 1.2 and the default suites)."""

    min_tls_version: str = ""
    ciphers: tuple[str, ...] = ()

    @classmethod
    def from_configuration(cls, tls: View) -> TLSConfiguration:
        """Reads ``tlsConfiguration``; raises :class:`InvalidTLSConfigurationError` for what the CRD's
        schema refuses (wrong types, a version outside its enum). Unknown cipher names are kept: the
        listeners skip them, as KubeVirt's do."""
        tls = tls.reporting(InvalidTLSConfigurationError)
        version = tls.string("minTLSVersion")
        if version and version not in MIN_TLS_VERSIONS:
            raise tls.fail(
                "minTLSVersion", f"unsupported value {version!r}, expected one of {list(MIN_TLS_VERSIONS)}"
            )
        return cls(min_tls_version=version, ciphers=tuple(tls.strings("ciphers")))


def validate_tls_configuration(value: Mapping[str, Any]) -> list[tuple[str, str]]:
    """KubeVirt's update admission of ``tlsConfiguration``: (field, message) per refusal. Ciphers are
    refused with TLS 1.3 or no minimum (Go cannot apply them there), and so is a name Go does not know."""
    version = value.get("minTLSVersion") or ""
    # Anything but a list of strings is refused by the CRD's schema before admission runs.
    listed = value.get("ciphers")
    ciphers: list[Any] = listed if isinstance(listed, list) else []
    if version in ("", VERSION_TLS13):
        if ciphers:
            return [
                (
                    f"{_FIELD}.ciphers",
                    "You cannot specify ciphers when spec.configuration.tlsConfiguration.minTLSVersion "
                    "is empty or VersionTLS13",
                )
            ]
        return []
    return [
        (f"{_FIELD}.ciphers#{index}", f"{name} is not a valid cipher")
        for index, name in enumerate(ciphers)
        if not isinstance(name, str) or name not in GO_CIPHER_SUITES
    ]
