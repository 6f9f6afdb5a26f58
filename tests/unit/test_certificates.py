"""Self-signed serving certificates carry the names asked for and a matching key."""

from __future__ import annotations

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from kubevirt_testing.certificates import self_signed


def test_certificate_names_validity_and_key_match() -> None:
    pair = self_signed("virt-api", dns_names=("virt-api.kubevirt.svc",), ip_addresses=("127.0.0.1",))
    cert = x509.load_pem_x509_certificate(pair.cert_pem)
    assert cert.public_bytes(serialization.Encoding.DER) == pair.cert_der
    assert cert.subject.rfc4514_string() == "CN=virt-api"
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["virt-api.kubevirt.svc"]
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    now = datetime.datetime.now(datetime.UTC)
    assert cert.not_valid_before_utc <= now < cert.not_valid_after_utc
    key = serialization.load_pem_private_key(pair.key_pem, password=None)
    assert key.public_key().public_numbers() == cert.public_key().public_numbers()  # type: ignore[union-attr]
