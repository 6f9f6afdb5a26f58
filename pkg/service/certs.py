"""KubeVirt's self-signed certificates: key pairs, CAs, the server and client certificates they sign, and
the lifetimes ``spec.certificateRotateStrategy.selfSigned`` asks for (KubeVirt's ``certificates/triple``
and the duration rules of ``virt-operator/resource/apply/certificates.go``).

Shared by virt-operator, which issues the components' certificates, and virt-controller, which signs each
export server's certificate with the export CA. Pure: keys, certificates and times go in and come out.
"""

from __future__ import annotations

import base64
import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubevirt.service.durations import parse_duration
from kubevirt_api.core.v1.kubevirt import KubeVirtSelfSignConfiguration
from kubevirt_api.view import JSON

CA_SECRET = "kubevirt-ca"
EXPORT_CA_SECRET = "kubevirt-export-ca"
# The export CA's bundle (virt-exportproxy and the export links trust it) is named as its Secret.
EXPORT_CA_CONFIG_MAP = EXPORT_CA_SECRET
CERT_KEY = "tls.crt"
KEY_KEY = "tls.key"
CA_DURATION = datetime.timedelta(days=7)
CERT_DURATION = datetime.timedelta(days=1)
RENEW_FRACTION = 0.2
CLUSTER_DOMAIN = "cluster.local"


class CertificateError(ValueError):
    """A Secret that does not hold a usable certificate and key."""


@dataclass(frozen=True)
class CertificateSpec:
    """One certificate Secret: who signs it and what it says."""

    secret: str
    kind: Literal["server", "client"]
    common_name: str
    service: str | None = None
    signer: str = CA_SECRET


@dataclass(frozen=True)
class RotationPolicy:
    ca_duration: datetime.timedelta = CA_DURATION
    ca_renew_before: datetime.timedelta = CA_DURATION * RENEW_FRACTION
    cert_duration: datetime.timedelta = CERT_DURATION
    cert_renew_before: datetime.timedelta = CERT_DURATION * RENEW_FRACTION


def _go_duration(value: str | None, where: str) -> datetime.timedelta | None:
    if value is None:
        return None
    try:
        return datetime.timedelta(seconds=parse_duration(value))
    except ValueError as err:
        raise CertificateError(f"{where}: {err}") from None


def rotation_policy(config: KubeVirtSelfSignConfiguration | None) -> RotationPolicy:
    """The durations the CR asks for; unset ones default as KubeVirt's (7 d CA, 1 d certificates, each
    renewed when a fifth of its life is left)."""
    where = "spec.certificateRotateStrategy.selfSigned"
    ca = config.ca if config else None
    server = config.server if config else None

    def first(*candidates: tuple[str | None, str]) -> datetime.timedelta | None:
        # The deprecated *Interval fields come first, as in KubeVirt, for a smooth upgrade path.
        for value, field in candidates:
            parsed = _go_duration(value, f"{where}.{field}")
            if parsed is not None:
                return parsed
        return None

    ca_duration = first(
        (config.ca_rotate_interval if config else None, "caRotateInterval"),
        (ca.duration if ca else None, "ca.duration"),
    )
    ca_duration = ca_duration or CA_DURATION
    ca_renew = first(
        (config.ca_overlap_interval if config else None, "caOverlapInterval"),
        (ca.renew_before if ca else None, "ca.renewBefore"),
    )
    cert_duration = first(
        (config.cert_rotate_interval if config else None, "certRotateInterval"),
        (server.duration if server else None, "server.duration"),
    )
    cert_duration = cert_duration or CERT_DURATION
    cert_renew = first((server.renew_before if server else None, "server.renewBefore"))
    return RotationPolicy(
        ca_duration=ca_duration,
        ca_renew_before=ca_renew if ca_renew is not None else ca_duration * RENEW_FRACTION,
        cert_duration=cert_duration,
        cert_renew_before=cert_renew if cert_renew is not None else cert_duration * RENEW_FRACTION,
    )


@dataclass(frozen=True)
class KeyPair:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )


def _builder(
    common_name: str,
    issuer: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    now: datetime.datetime,
    life: datetime.timedelta,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + life)
    )


def new_ca(common_name: str, now: datetime.datetime, life: datetime.timedelta) -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        _builder(common_name, name, key, now, life)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, True, False, False, True, True, False, False), critical=True
        )
        # Every CA is named the same: after a rotation the bundle holds several, and only the key
        # identifiers tell a verifier which one signed a certificate (Go's x509 sets them as well).
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert, key)


def new_certificate(
    spec: CertificateSpec, ca: KeyPair, namespace: str, now: datetime.datetime, life: datetime.timedelta
) -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(spec.common_name, ca.cert.subject, key, now, life)
        .add_extension(
            x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
    )
    if spec.kind == "server":
        assert spec.service is not None
        qualified = f"{spec.service}.{namespace}"
        names = [spec.service, qualified, f"{qualified}.svc", f"{qualified}.svc.{CLUSTER_DOMAIN}"]
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    else:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    return KeyPair(builder.sign(ca.key, hashes.SHA256()), key)


def _pair_of(cert_pem: bytes, key_pem: bytes) -> KeyPair | None:
    """The pair the PEM holds, None when the key is not the certificate's EC key; ValueError when either
    does not parse."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    key = serialization.load_pem_private_key(key_pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.public_key() != cert.public_key():
        return None
    return KeyPair(cert, key)


def load_pair(secret: JSON | None) -> KeyPair | None:
    """The pair a Secret holds, or None when it is absent or unusable (it is then reissued)."""
    if secret is None:
        return None
    data = secret.get("data") or {}
    try:
        return _pair_of(base64.b64decode(data[CERT_KEY]), base64.b64decode(data[KEY_KEY]))
    except (KeyError, ValueError, TypeError):
        return None


def load_pair_files(cert_file: Path, key_file: Path) -> KeyPair:
    """The pair held in two PEM files (a mounted TLS Secret); raises :class:`CertificateError` when they
    hold no matching certificate and EC key, OSError when they cannot be read."""
    try:
        pair = _pair_of(cert_file.read_bytes(), key_file.read_bytes())
    except ValueError as err:
        raise CertificateError(f"{cert_file}, {key_file}: {err}") from None
    if pair is None:
        raise CertificateError(f"{key_file} is not the EC key of {cert_file}")
    return pair
