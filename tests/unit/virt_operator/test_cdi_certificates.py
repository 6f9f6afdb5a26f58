"""The upload path's certificates: CDI's cert factory names and lifetimes, issued in CDI's namespace by
the operator's machinery, kept until due, rotated with the old signer still trusted."""

from __future__ import annotations

import base64
import datetime
from typing import Any

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubevirt.virt_operator.cdi_certificates import CdiIssued, reconcile_cdi_certificates

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
HOUR = datetime.timedelta(hours=1)
JSON = dict[str, Any]
SIGNERS = {
    "cdi-apiserver-signer": "cdi-apiserver-signer-bundle",
    "cdi-uploadproxy-signer": "cdi-uploadproxy-signer-bundle",
    "cdi-uploadserver-signer": "cdi-uploadserver-signer-bundle",
    "cdi-uploadserver-client-signer": "cdi-uploadserver-client-signer-bundle",
}
TARGETS = {
    "cdi-apiserver-server-cert": "cdi-apiserver-signer",
    "cdi-uploadproxy-server-cert": "cdi-uploadproxy-signer",
    "cdi-uploadserver-client-cert": "cdi-uploadserver-client-signer",
}


def _by_name(issued: CdiIssued) -> tuple[dict[str, JSON], dict[str, JSON]]:
    return (
        {s["metadata"]["name"]: s for s in issued.secrets},
        {c["metadata"]["name"]: c for c in issued.config_maps},
    )


def _cert(secret: JSON) -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))


def _bundle(config_map: JSON) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(config_map["data"]["ca-bundle.crt"].encode())


def _life(cert: x509.Certificate) -> datetime.timedelta:
    return cert.not_valid_after_utc - cert.not_valid_before_utc


def test_cdis_names_in_cdis_namespace_with_cdis_lifetimes() -> None:
    issued = reconcile_cdi_certificates({}, {}, T0)
    secrets, maps = _by_name(issued)
    assert set(secrets) == {*SIGNERS, *TARGETS}
    assert set(maps) == set(SIGNERS.values())
    for obj in [*secrets.values(), *maps.values()]:
        assert obj["metadata"]["namespace"] == "cdi"
    for name, secret in secrets.items():
        assert secret["type"] == "kubernetes.io/tls", name
        assert set(secret["data"]) == {"tls.crt", "tls.key"}
    for signer, bundle in SIGNERS.items():
        assert _life(_cert(secrets[signer])) == datetime.timedelta(hours=48)
        assert _bundle(maps[bundle]) == [_cert(secrets[signer])]
    for target, signer in TARGETS.items():
        cert = _cert(secrets[target])
        assert _life(cert) == datetime.timedelta(hours=24)
        cert.verify_directly_issued_by(_cert(secrets[signer]))
    assert issued.api_ca_bundle.decode() == maps["cdi-apiserver-signer-bundle"]["data"]["ca-bundle.crt"]
    # The first due: a server or client certificate 12 h after it was made.
    assert issued.next_rotation == T0 + 12 * HOUR


def _dns_names(cert: x509.Certificate) -> list[str]:
    return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName
    )


def test_the_server_certificates_name_their_services_and_the_client_its_user() -> None:
    secrets, _ = _by_name(reconcile_cdi_certificates({}, {}, T0))
    api = _cert(secrets["cdi-apiserver-server-cert"])
    assert {"cdi-api", "cdi-api.cdi", "cdi-api.cdi.svc"} <= set(_dns_names(api))
    proxy = _cert(secrets["cdi-uploadproxy-server-cert"])
    assert {"cdi-uploadproxy", "cdi-uploadproxy.cdi", "cdi-uploadproxy.cdi.svc"} <= set(_dns_names(proxy))
    for cert in (api, proxy):
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    client = _cert(secrets["cdi-uploadserver-client-cert"])
    (common_name,) = client.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    assert common_name.value == "client.upload-server.cdi.kubevirt.io"
    usage = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_certificates_not_due_are_kept() -> None:
    secrets, maps = _by_name(reconcile_cdi_certificates({}, {}, T0))
    again, again_maps = _by_name(reconcile_cdi_certificates(secrets, maps, T0 + 11 * HOUR))
    assert again == secrets
    assert again_maps == maps


def test_targets_are_renewed_after_12_hours_and_signers_after_24_keeping_the_old_one_trusted() -> None:
    secrets, maps = _by_name(reconcile_cdi_certificates({}, {}, T0))
    renewed, renewed_maps = _by_name(reconcile_cdi_certificates(secrets, maps, T0 + 12 * HOUR))
    for target in TARGETS:
        assert renewed[target]["data"] != secrets[target]["data"], target
    for signer in SIGNERS:
        assert renewed[signer]["data"] == secrets[signer]["data"], signer
    rotated, rotated_maps = _by_name(reconcile_cdi_certificates(renewed, renewed_maps, T0 + 24 * HOUR))
    for signer, bundle in SIGNERS.items():
        new, old = _cert(rotated[signer]), _cert(secrets[signer])
        assert new != old
        assert _bundle(rotated_maps[bundle]) == [new, old]
    for target, signer in TARGETS.items():
        _cert(rotated[target]).verify_directly_issued_by(_cert(rotated[signer]))
