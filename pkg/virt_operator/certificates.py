"""KubeVirt's self-signed PKI: a CA per purpose, the per-component certificates it signs, their rotation
per ``spec.certificateRotateStrategy.selfSigned`` and the CA bundle ConfigMap that keeps a replaced CA
trusted for an overlap period (KubeVirt's ``components/secrets.go`` and ``apply/certificates.go``).

Pure: the current Secrets and ConfigMaps and the time go in, the desired ones come out. Rotation never
breaks a connection: a new CA is first published beside the old one, and servers reload their files.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubevirt.service.durations import parse_duration
from kubevirt_api.core.v1.constants import APP_LABEL_PREFIX, MANAGED_BY_LABEL_OPERATOR_VALUE
from kubevirt_api.core.v1.kubevirt import KubeVirtSelfSignConfiguration
from kubevirt_api.view import JSON

CA_SECRET = "kubevirt-ca"
EXPORT_CA_SECRET = "kubevirt-export-ca"
CA_BUNDLE_KEY = "ca-bundle"
CERT_KEY = "tls.crt"
KEY_KEY = "tls.key"
DURATION_ANNOTATION = "kubevirt.io/duration"
CA_DURATION = datetime.timedelta(days=7)
CERT_DURATION = datetime.timedelta(days=1)
RENEW_FRACTION = 0.2
MAX_BUNDLE_CERTIFICATES = 50
CLUSTER_DOMAIN = "cluster.local"
_MANAGED = {f"{APP_LABEL_PREFIX}/managed-by": MANAGED_BY_LABEL_OPERATOR_VALUE}


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


def component_certificates(namespace: str) -> tuple[CertificateSpec, ...]:
    pod = f"{namespace}.pod.{CLUSTER_DOMAIN}"
    return (
        CertificateSpec("kubevirt-virt-api-certs", "server", f"virt-api.{pod}", "virt-api"),
        CertificateSpec("kubevirt-controller-certs", "server", f"virt-controller.{pod}", "virt-controller"),
        CertificateSpec(
            "kubevirt-virt-handler-server-certs",
            "server",
            "kubevirt.io:system:node:virt-handler",
            "virt-handler",
        ),
        CertificateSpec("kubevirt-virt-handler-certs", "client", "kubevirt.io:system:client:virt-handler"),
        CertificateSpec(
            "kubevirt-operator-certs",
            "server",
            f"kubevirt-operator-webhook.{pod}",
            "kubevirt-operator-webhook",
        ),
    )


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


def load_pair(secret: JSON | None) -> KeyPair | None:
    """The pair a Secret holds, or None when it is absent or unusable (it is then reissued)."""
    if secret is None:
        return None
    data = secret.get("data") or {}
    try:
        cert = x509.load_pem_x509_certificate(base64.b64decode(data[CERT_KEY]))
        key = serialization.load_pem_private_key(base64.b64decode(data[KEY_KEY]), password=None)
    except (KeyError, ValueError, TypeError):
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.public_key() != cert.public_key():
        return None
    return KeyPair(cert, key)


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def rotation_deadline(
    pair: KeyPair | None,
    ca: KeyPair | None,
    renew_before: datetime.timedelta,
    ca_renew_before: datetime.timedelta | None,
    now: datetime.datetime,
) -> datetime.datetime:
    """When ``pair`` must be replaced: now when missing or not signed by ``ca``; ``renew_before`` ahead
    of its expiry; and, if it would outlive its CA, midway through the CA's overlap period."""
    if pair is None:
        return now
    if ca is not None and not _signed_by(pair.cert, ca.cert):
        return now
    deadline = pair.cert.not_valid_after_utc - renew_before
    if ca is not None and ca.cert.not_valid_after_utc < pair.cert.not_valid_after_utc:
        deadline = ca.cert.not_valid_after_utc - (ca_renew_before or datetime.timedelta()) * 0.5
    return deadline


def merge_ca_bundle(
    current: x509.Certificate, bundle: bytes, overlap: datetime.timedelta, now: datetime.datetime
) -> bytes:
    """``current`` first, then the still-valid older CAs, newest first, for as long as each newer one has
    existed for less than ``overlap`` (clients keep trusting servers that still use an older CA)."""
    try:
        older = x509.load_pem_x509_certificates(bundle) if bundle.strip() else []
    except ValueError:
        older = []
    valid = sorted(
        (c for c in older if c.not_valid_after_utc >= now), key=lambda c: c.not_valid_before_utc, reverse=True
    )
    valid = valid[:MAX_BUNDLE_CERTIFICATES]
    kept: list[x509.Certificate] = []
    newer = current
    for cert in valid:
        if newer.not_valid_before_utc + overlap < now:
            break
        if cert != current:
            kept.append(cert)
        newer = cert
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in [current, *kept])


def tls_secret(name: str, namespace: str, pair: KeyPair, life: datetime.timedelta) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(_MANAGED),
            "annotations": {DURATION_ANNOTATION: _format_duration(life)},
        },
        "data": {
            CERT_KEY: base64.b64encode(pair.cert_pem).decode(),
            KEY_KEY: base64.b64encode(pair.key_pem).decode(),
        },
    }


def bundle_config_map(name: str, namespace: str, bundle: bytes) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(_MANAGED)},
        "data": {CA_BUNDLE_KEY: bundle.decode()},
    }


def _format_duration(value: datetime.timedelta) -> str:
    """Go's ``time.Duration.String()`` for whole seconds (``168h0m0s``, ``1m30s``, ``10s``)."""
    seconds = int(value.total_seconds())
    hours, minutes, rest = seconds // 3600, seconds % 3600 // 60, seconds % 60
    if hours:
        return f"{hours}h{minutes}m{rest}s"
    if minutes:
        return f"{minutes}m{rest}s"
    return f"{rest}s"


def _issued_for(secret: JSON | None, life: datetime.timedelta) -> bool:
    """Whether the Secret's certificate was issued for this lifetime (a changed one reissues it)."""
    annotations = ((secret or {}).get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(DURATION_ANNOTATION) == _format_duration(life))


@dataclass(frozen=True)
class Issued:
    """The desired certificate objects and the CA bundle to inject into webhooks and APIServices."""

    secrets: list[JSON]
    config_maps: list[JSON]
    ca_bundle: bytes
    next_rotation: datetime.datetime


def reconcile_certificates(
    namespace: str,
    policy: RotationPolicy,
    secrets: Mapping[str, JSON],
    config_maps: Mapping[str, JSON],
    now: datetime.datetime,
) -> Issued:
    """The CA Secrets, certificate Secrets and bundle ConfigMaps as they must be at ``now``, reusing
    every pair that is not due, and the earliest time any of them will be due."""
    out_secrets: list[JSON] = []
    out_maps: list[JSON] = []
    deadlines: list[datetime.datetime] = []
    cas: dict[str, KeyPair] = {}
    bundles: dict[str, bytes] = {}
    for ca_name, common_name in ((CA_SECRET, "kubevirt.io"), (EXPORT_CA_SECRET, "export.kubevirt.io")):
        ca = load_pair(secrets.get(ca_name))
        due = rotation_deadline(ca, None, policy.ca_renew_before, None, now)
        if due <= now or not _issued_for(secrets.get(ca_name), policy.ca_duration):
            ca = new_ca(common_name, now, policy.ca_duration)
        assert ca is not None
        cas[ca_name] = ca
        deadlines.append(rotation_deadline(ca, None, policy.ca_renew_before, None, now))
        out_secrets.append(tls_secret(ca_name, namespace, ca, policy.ca_duration))
        current = ((config_maps.get(ca_name) or {}).get("data") or {}).get(CA_BUNDLE_KEY, "")
        bundles[ca_name] = merge_ca_bundle(ca.cert, current.encode(), policy.ca_renew_before, now)
        out_maps.append(bundle_config_map(ca_name, namespace, bundles[ca_name]))
    for spec in component_certificates(namespace):
        ca = cas[spec.signer]
        pair = load_pair(secrets.get(spec.secret))
        due = rotation_deadline(pair, ca, policy.cert_renew_before, policy.ca_renew_before, now)
        if due <= now or pair is None or not _issued_for(secrets.get(spec.secret), policy.cert_duration):
            pair = new_certificate(spec, ca, namespace, now, policy.cert_duration)
            due = rotation_deadline(pair, ca, policy.cert_renew_before, policy.ca_renew_before, now)
        deadlines.append(due)
        out_secrets.append(tls_secret(spec.secret, namespace, pair, policy.cert_duration))
    return Issued(out_secrets, out_maps, bundles[CA_SECRET], min(deadlines))
