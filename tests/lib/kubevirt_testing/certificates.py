"""Self-signed serving certificates (what virt-api and the webhooks serve until an operator rotates them),
and a CA issuing client and serving certificates (KubeVirt's CA signs virt-api's and virt-handler's)."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, PEM-encoded, plus the certificate's DER bytes."""

    cert_pem: bytes
    key_pem: bytes
    cert_der: bytes


class PemPair(Protocol):
    """A certificate and key as PEM: this module's :class:`KeyPair` or the operator's."""

    @property
    def cert_pem(self) -> bytes: ...

    @property
    def key_pem(self) -> bytes: ...


def write_pair(pair: PemPair, directory: Path, name: str = "tls") -> tuple[Path, Path]:
    """Writes ``name.crt`` and ``name.key`` into ``directory`` (the key first, as a renewal lands);
    returns (certificate file, key file)."""
    cert_file, key_file = directory / f"{name}.crt", directory / f"{name}.key"
    key_file.write_bytes(pair.key_pem)
    cert_file.write_bytes(pair.cert_pem)
    return cert_file, key_file


def serving_context(pair: PemPair, directory: Path, name: str = "tls") -> ssl.SSLContext:
    """A server's context presenting ``pair``, written into ``directory`` first (``ssl`` loads a
    certificate chain from files only)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*write_pair(pair, directory, name))
    return context


def self_signed(
    common_name: str,
    *,
    dns_names: tuple[str, ...] = ("localhost",),
    ip_addresses: tuple[str, ...] = ("127.0.0.1",),
    valid_for: datetime.timedelta = DAY,
) -> KeyPair:
    """A self-signed EC P-256 certificate for ``dns_names`` and ``ip_addresses``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = _common_name(common_name)
    alt_names: list[x509.GeneralName] = [x509.DNSName(dns) for dns in dns_names]
    alt_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    cert = (
        _builder(name, name, key, valid_for)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return _pair(cert, key)


@dataclass(frozen=True)
class CertificateAuthority:
    """A CA that issues leaf certificates (KubeVirt's own CA signs virt-api's and virt-handler's)."""

    pair: KeyPair
    _key: ec.EllipticCurvePrivateKey
    _name: x509.Name

    @classmethod
    def create(cls, common_name: str = "kubevirt.io") -> CertificateAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        name = _common_name(common_name)
        cert = (
            _builder(name, name, key, DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        return cls(_pair(cert, key), key, name)

    def issue(
        self,
        common_name: str,
        *,
        client: bool = False,
        ip_addresses: tuple[str, ...] = ("127.0.0.1",),
    ) -> KeyPair:
        """A leaf certificate for client authentication (``client``) or for serving."""
        key = ec.generate_private_key(ec.SECP256R1())
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = _builder(_common_name(common_name), self._name, key, DAY).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False
        )
        if ip_addresses:
            alt_names = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
            builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        return _pair(builder.sign(self._key, hashes.SHA256()), key)


def _common_name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey, valid_for: datetime.timedelta
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))  # tolerate small clock skew
        .not_valid_after(now + valid_for)
    )


def _pair(cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> KeyPair:
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return KeyPair(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key_pem,
        cert_der=cert.public_bytes(serialization.Encoding.DER),
    )
