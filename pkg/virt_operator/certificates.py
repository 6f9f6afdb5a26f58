"""KubeVirt's self-signed PKI: a CA per purpose, the per-component certificates it signs, their rotation
per ``spec.certificateRotateStrategy.selfSigned`` and the CA bundle ConfigMap that keeps a replaced CA
trusted for an overlap period (KubeVirt's ``components/secrets.go`` and ``apply/certificates.go``).

Pure: the current Secrets and ConfigMaps and the time go in, the desired ones come out. Rotation never
breaks a connection: a new CA is first published beside the old one, and servers reload their files.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

# The key pairs and the signing are shared with virt-controller (export servers' certificates); they
# live in kubevirt.service.certs and are re-exported here for the operator's callers.
from kubevirt.service.certs import CA_DURATION as CA_DURATION
from kubevirt.service.certs import CA_SECRET as CA_SECRET
from kubevirt.service.certs import CERT_DURATION as CERT_DURATION
from kubevirt.service.certs import CERT_KEY as CERT_KEY
from kubevirt.service.certs import CLUSTER_DOMAIN as CLUSTER_DOMAIN
from kubevirt.service.certs import EXPORT_CA_SECRET as EXPORT_CA_SECRET
from kubevirt.service.certs import KEY_KEY as KEY_KEY
from kubevirt.service.certs import RENEW_FRACTION as RENEW_FRACTION
from kubevirt.service.certs import CertificateError as CertificateError
from kubevirt.service.certs import CertificateSpec as CertificateSpec
from kubevirt.service.certs import KeyPair as KeyPair
from kubevirt.service.certs import RotationPolicy as RotationPolicy
from kubevirt.service.certs import load_pair as load_pair
from kubevirt.service.certs import new_ca as new_ca
from kubevirt.service.certs import new_certificate as new_certificate
from kubevirt.service.certs import rotation_policy as rotation_policy
from kubevirt.service.durations import SECOND, format_go_duration
from kubevirt_api.core.v1.constants import APP_LABEL_PREFIX, MANAGED_BY_LABEL_OPERATOR_VALUE
from kubevirt_api.view import JSON

CA_BUNDLE_KEY = "ca-bundle"
DURATION_ANNOTATION = "kubevirt.io/duration"
MAX_BUNDLE_CERTIFICATES = 50
_MANAGED = {f"{APP_LABEL_PREFIX}/managed-by": MANAGED_BY_LABEL_OPERATOR_VALUE}


def component_certificates(namespace: str) -> tuple[CertificateSpec, ...]:
    pod = f"{namespace}.pod.{CLUSTER_DOMAIN}"
    return (
        CertificateSpec("kubevirt-virt-api-certs", "server", f"virt-api.{pod}", "virt-api"),
        CertificateSpec("kubevirt-controller-certs", "server", f"virt-controller.{pod}", "virt-controller"),
        # Issued whether or not the VMExport gate runs the proxy, as KubeVirt does.
        CertificateSpec(
            "kubevirt-exportproxy-certs", "server", f"virt-exportproxy.{pod}", "virt-exportproxy"
        ),
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


def bundle_config_map(name: str, namespace: str, bundle: bytes, key: str = CA_BUNDLE_KEY) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(_MANAGED)},
        "data": {key: bundle.decode()},
    }


def _format_duration(value: datetime.timedelta) -> str:
    """The lifetime in whole seconds as Go writes a duration (``168h0m0s``, ``1m30s``, ``10s``)."""
    return format_go_duration(int(value.total_seconds()) * SECOND)


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


@dataclass(frozen=True)
class Authority:
    """A CA: its Secret, the name it signs as, and the ConfigMap (and key) publishing its bundle."""

    secret: str
    common_name: str
    bundle: str
    bundle_key: str = CA_BUNDLE_KEY


def issue(
    authorities: Sequence[Authority],
    certificates: Sequence[CertificateSpec],
    namespace: str,
    policy: RotationPolicy,
    secrets: Mapping[str, JSON],
    config_maps: Mapping[str, JSON],
    now: datetime.datetime,
) -> Issued:
    """The CA Secrets, certificate Secrets and bundle ConfigMaps of ``namespace`` as they must be at
    ``now``, reusing every pair that is not due, and the earliest time any of them will be due.
    ``Issued.ca_bundle`` is the first authority's bundle."""
    out_secrets: list[JSON] = []
    out_maps: list[JSON] = []
    deadlines: list[datetime.datetime] = []
    cas: dict[str, KeyPair] = {}
    bundles: dict[str, bytes] = {}
    for authority in authorities:
        ca_name = authority.secret
        ca = load_pair(secrets.get(ca_name))
        due = rotation_deadline(ca, None, policy.ca_renew_before, None, now)
        if due <= now or not _issued_for(secrets.get(ca_name), policy.ca_duration):
            ca = new_ca(authority.common_name, now, policy.ca_duration)
        assert ca is not None
        cas[ca_name] = ca
        deadlines.append(rotation_deadline(ca, None, policy.ca_renew_before, None, now))
        out_secrets.append(tls_secret(ca_name, namespace, ca, policy.ca_duration))
        published = (config_maps.get(authority.bundle) or {}).get("data") or {}
        current = published.get(authority.bundle_key, "")
        bundles[ca_name] = merge_ca_bundle(ca.cert, current.encode(), policy.ca_renew_before, now)
        out_maps.append(
            bundle_config_map(authority.bundle, namespace, bundles[ca_name], authority.bundle_key)
        )
    for spec in certificates:
        ca = cas[spec.signer]
        pair = load_pair(secrets.get(spec.secret))
        due = rotation_deadline(pair, ca, policy.cert_renew_before, policy.ca_renew_before, now)
        if due <= now or pair is None or not _issued_for(secrets.get(spec.secret), policy.cert_duration):
            pair = new_certificate(spec, ca, namespace, now, policy.cert_duration)
            due = rotation_deadline(pair, ca, policy.cert_renew_before, policy.ca_renew_before, now)
        deadlines.append(due)
        out_secrets.append(tls_secret(spec.secret, namespace, pair, policy.cert_duration))
    return Issued(out_secrets, out_maps, bundles[authorities[0].secret], min(deadlines))


# KubeVirt's two CAs; each bundle ConfigMap is named as its CA's Secret.
_KUBEVIRT_AUTHORITIES = (
    Authority(CA_SECRET, "kubevirt.io", CA_SECRET),
    Authority(EXPORT_CA_SECRET, "export.kubevirt.io", EXPORT_CA_SECRET),
)


def reconcile_certificates(
    namespace: str,
    policy: RotationPolicy,
    secrets: Mapping[str, JSON],
    config_maps: Mapping[str, JSON],
    now: datetime.datetime,
) -> Issued:
    """KubeVirt's CA Secrets, certificate Secrets and bundle ConfigMaps as they must be at ``now``;
    ``Issued.ca_bundle`` is the KubeVirt CA's bundle."""
    return issue(
        _KUBEVIRT_AUTHORITIES, component_certificates(namespace), namespace, policy, secrets, config_maps, now
    )
