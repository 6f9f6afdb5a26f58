"""KubeVirt's self-signed PKI: issuance under KubeVirt's names, reuse until due, rotation with overlap."""

from __future__ import annotations

import base64
import datetime
import ssl
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from kubevirt.virt_operator.certificates import (
    CertificateError,
    Issued,
    RotationPolicy,
    reconcile_certificates,
    rotation_policy,
)
from kubevirt_api.core.v1.kubevirt import KubeVirtSelfSignConfiguration

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
NS = "kubevirt"
JSON = dict[str, Any]


def _by_name(issued: Issued) -> tuple[dict[str, JSON], dict[str, JSON]]:
    return (
        {s["metadata"]["name"]: s for s in issued.secrets},
        {c["metadata"]["name"]: c for c in issued.config_maps},
    )


def _cert(secret: JSON) -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))


def _bundle(config_map: JSON) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(config_map["data"]["ca-bundle"].encode())


def test_first_issue_uses_kubevirts_names_and_signs_every_certificate_with_the_ca() -> None:
    issued = reconcile_certificates(NS, RotationPolicy(), {}, {}, T0)
    secrets, maps = _by_name(issued)
    assert set(secrets) == {
        "kubevirt-ca",
        "kubevirt-export-ca",
        "kubevirt-virt-api-certs",
        "kubevirt-controller-certs",
        "kubevirt-exportproxy-certs",
        "kubevirt-virt-handler-server-certs",
        "kubevirt-virt-handler-certs",
        "kubevirt-operator-certs",
    }
    assert set(maps) == {"kubevirt-ca", "kubevirt-export-ca"}
    ca = _cert(secrets["kubevirt-ca"])
    assert ca.not_valid_after_utc - ca.not_valid_before_utc == datetime.timedelta(days=7)
    api = _cert(secrets["kubevirt-virt-api-certs"])
    api.verify_directly_issued_by(ca)
    san = api.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "virt-api.kubevirt.svc" in san.get_values_for_type(x509.DNSName)
    assert api.not_valid_after_utc - api.not_valid_before_utc == datetime.timedelta(days=1)
    # The export proxy serves on its Service with a certificate from the KubeVirt CA, not the export CA.
    proxy = _cert(secrets["kubevirt-exportproxy-certs"])
    proxy.verify_directly_issued_by(ca)
    san = proxy.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "virt-exportproxy.kubevirt.svc" in san.get_values_for_type(x509.DNSName)
    assert secrets["kubevirt-virt-api-certs"]["type"] == "kubernetes.io/tls"
    assert secrets["kubevirt-ca"]["metadata"]["annotations"]["kubevirt.io/duration"] == "168h0m0s"
    assert _bundle(maps["kubevirt-ca"]) == [ca]
    assert issued.ca_bundle == maps["kubevirt-ca"]["data"]["ca-bundle"].encode()
    # The first rotation due: a certificate with a fifth of its day left.
    assert issued.next_rotation == T0 + datetime.timedelta(days=1) * 0.8


def test_certificates_not_due_are_kept_as_they_are() -> None:
    first = reconcile_certificates(NS, RotationPolicy(), {}, {}, T0)
    secrets, maps = _by_name(first)
    again = reconcile_certificates(NS, RotationPolicy(), secrets, maps, T0 + datetime.timedelta(hours=1))
    assert again.secrets == first.secrets
    assert again.config_maps == first.config_maps


def test_due_certificates_are_reissued_by_the_same_ca() -> None:
    first = reconcile_certificates(NS, RotationPolicy(), {}, {}, T0)
    secrets, maps = _by_name(first)
    later = T0 + datetime.timedelta(hours=20)  # past 80 % of the day
    rotated, _ = _by_name(reconcile_certificates(NS, RotationPolicy(), secrets, maps, later))
    assert rotated["kubevirt-ca"] == secrets["kubevirt-ca"]
    new_api = _cert(rotated["kubevirt-virt-api-certs"])
    assert new_api != _cert(secrets["kubevirt-virt-api-certs"])
    new_api.verify_directly_issued_by(_cert(secrets["kubevirt-ca"]))


def test_a_rotated_ca_stays_in_the_bundle_for_the_overlap_and_reissues_everything() -> None:
    first = reconcile_certificates(NS, RotationPolicy(), {}, {}, T0)
    secrets, maps = _by_name(first)
    old_ca = _cert(secrets["kubevirt-ca"])
    later = T0 + datetime.timedelta(days=6)  # past 80 % of the CA's week
    rotated = reconcile_certificates(NS, RotationPolicy(), secrets, maps, later)
    new_secrets, new_maps = _by_name(rotated)
    new_ca = _cert(new_secrets["kubevirt-ca"])
    assert new_ca != old_ca
    assert _bundle(new_maps["kubevirt-ca"]) == [new_ca, old_ca]
    _cert(new_secrets["kubevirt-virt-api-certs"]).verify_directly_issued_by(new_ca)
    # Once the new CA has been out for the overlap period, the old one is dropped.
    dropped = reconcile_certificates(
        NS, RotationPolicy(), new_secrets, new_maps, later + datetime.timedelta(days=1, hours=12)
    )
    assert _bundle(_by_name(dropped)[1]["kubevirt-ca"]) == [new_ca]


def test_a_tampered_secret_is_reissued() -> None:
    secrets, maps = _by_name(reconcile_certificates(NS, RotationPolicy(), {}, {}, T0))
    broken = dict(secrets)
    broken["kubevirt-controller-certs"] = {
        **secrets["kubevirt-controller-certs"],
        "data": {"tls.crt": "eA=="},
    }
    fixed, _ = _by_name(reconcile_certificates(NS, RotationPolicy(), broken, maps, T0))
    _cert(fixed["kubevirt-controller-certs"]).verify_directly_issued_by(_cert(secrets["kubevirt-ca"]))


def test_rotation_policy_follows_the_cr_and_kubevirts_defaults() -> None:
    assert rotation_policy(None) == RotationPolicy(
        ca_duration=datetime.timedelta(days=7),
        ca_renew_before=datetime.timedelta(days=7) * 0.2,
        cert_duration=datetime.timedelta(days=1),
        cert_renew_before=datetime.timedelta(days=1) * 0.2,
    )
    config = KubeVirtSelfSignConfiguration.model_validate(
        {"ca": {"duration": "48h"}, "server": {"duration": "2h", "renewBefore": "30m"}}
    )
    policy = rotation_policy(config)
    assert policy.ca_duration == datetime.timedelta(hours=48)
    assert policy.ca_renew_before == datetime.timedelta(hours=48) * 0.2
    assert policy.cert_renew_before == datetime.timedelta(minutes=30)


def test_a_bad_duration_names_its_field() -> None:
    config = KubeVirtSelfSignConfiguration.model_validate({"server": {"duration": "soon"}})
    with pytest.raises(CertificateError, match=r"selfSigned\.server\.duration"):
        rotation_policy(config)


def test_a_changed_duration_reissues_the_certificates_it_applies_to() -> None:
    secrets, maps = _by_name(reconcile_certificates(NS, RotationPolicy(), {}, {}, T0))
    shorter = RotationPolicy(
        cert_duration=datetime.timedelta(seconds=90), cert_renew_before=datetime.timedelta(seconds=30)
    )
    reissued, _ = _by_name(reconcile_certificates(NS, shorter, secrets, maps, T0))
    assert reissued["kubevirt-ca"] == secrets["kubevirt-ca"]
    api = reissued["kubevirt-virt-api-certs"]
    assert api["metadata"]["annotations"]["kubevirt.io/duration"] == "1m30s"
    assert _cert(api).not_valid_after_utc == T0 + datetime.timedelta(seconds=90)


def _handshake(server_secret: JSON, bundle: str, tmp_path: Path) -> None:
    """A TLS handshake in memory, with OpenSSL verifying the server's certificate against ``bundle``."""
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(base64.b64decode(server_secret["data"]["tls.crt"]))
    key.write_bytes(base64.b64decode(server_secret["data"]["tls.key"]))
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(str(cert), str(key))
    client_context = ssl.create_default_context(cadata=bundle)
    client_context.check_hostname = False
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_context.wrap_bio(to_client, to_server_buffer := ssl.MemoryBIO())
    server = server_context.wrap_bio(to_server, to_client_buffer := ssl.MemoryBIO(), server_side=True)
    done = {"client": False, "server": False}
    for _ in range(10):
        for side, end in (("client", client), ("server", server)):
            if not done[side]:
                try:
                    end.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
        to_server.write(to_server_buffer.read())
        to_client.write(to_client_buffer.read())
    assert done == {"client": True, "server": True}


@pytest.mark.parametrize("old_first", [False, True])
def test_openssl_finds_the_signer_among_same_named_cas_after_a_rotation(
    old_first: bool, tmp_path: Path
) -> None:
    # Every CA is "kubevirt.io": a verifier holding the old and the new one tells them apart by key id.
    # Certificates as long-lived as the CA: the ones the old CA signed are still valid after it rotated.
    policy = RotationPolicy(
        cert_duration=datetime.timedelta(days=7), cert_renew_before=datetime.timedelta(days=1)
    )
    now = datetime.datetime.now(datetime.UTC)
    first = reconcile_certificates(NS, policy, {}, {}, now - datetime.timedelta(days=6))
    secrets, maps = _by_name(first)
    rotated_secrets, rotated_maps = _by_name(reconcile_certificates(NS, policy, secrets, maps, now))
    cas = _bundle(rotated_maps["kubevirt-ca"])
    assert len(cas) == 2
    assert cas[0].subject == cas[1].subject
    ordered = list(reversed(cas)) if old_first else cas
    bundle = "".join(ca.public_bytes(serialization.Encoding.PEM).decode() for ca in ordered)
    _handshake(rotated_secrets["kubevirt-virt-handler-server-certs"], bundle, tmp_path)
    _handshake(secrets["kubevirt-virt-handler-server-certs"], bundle, tmp_path)
