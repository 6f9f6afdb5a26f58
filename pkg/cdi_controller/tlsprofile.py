"""CDIConfig's ``spec.tlsSecurityProfile`` turned into the cipher names (OpenSSL's spelling) and the
minimum version an upload server is started with (CDI's SelectCipherSuitesAndMinTLSVersion and the
profile table of its API, ``TLSProfiles``): Intermediate when unset, the custom lists when given."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

OLD: Final = "Old"
INTERMEDIATE: Final = "Intermediate"
MODERN: Final = "Modern"
_TLS13: Final = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")
_INTERMEDIATE_12: Final = (
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",
    "DHE-RSA-AES128-GCM-SHA256",
    "DHE-RSA-AES256-GCM-SHA384",
)
_OLD_EXTRA: Final = (
    "DHE-RSA-CHACHA20-POLY1305",
    "ECDHE-ECDSA-AES128-SHA256",
    "ECDHE-RSA-AES128-SHA256",
    "ECDHE-ECDSA-AES128-SHA",
    "ECDHE-RSA-AES128-SHA",
    "ECDHE-ECDSA-AES256-SHA384",
    "ECDHE-RSA-AES256-SHA384",
    "ECDHE-ECDSA-AES256-SHA",
    "ECDHE-RSA-AES256-SHA",
    "DHE-RSA-AES128-SHA256",
    "DHE-RSA-AES256-SHA256",
    "AES128-GCM-SHA256",
    "AES256-GCM-SHA384",
    "AES128-SHA256",
    "AES256-SHA256",
    "AES128-SHA",
    "AES256-SHA",
    "DES-CBC3-SHA",
)
PROFILES: Final[Mapping[str, tuple[tuple[str, ...], str]]] = {
    OLD: ((*_TLS13, *_INTERMEDIATE_12, *_OLD_EXTRA), "VersionTLS10"),
    INTERMEDIATE: ((*_TLS13, *_INTERMEDIATE_12), "VersionTLS12"),
    MODERN: (_TLS13, "VersionTLS13"),
}


def ciphers_and_min_version(profile: Mapping[str, Any] | None) -> tuple[list[str], str]:
    """The profile's ciphers and minimum version; a profile of an unknown type has neither (as CDI's
    lookup of a missing table entry)."""
    if not profile:
        profile = {"type": INTERMEDIATE}
    custom = profile.get("custom")
    if custom is not None:
        return [str(c) for c in custom.get("ciphers") or ()], str(custom.get("minTLSVersion") or "")
    named = PROFILES.get(str(profile.get("type") or ""))
    if named is None:
        return [], ""
    return list(named[0]), named[1]
