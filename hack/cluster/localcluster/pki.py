"""The cluster's certificates: a cluster CA, a front-proxy CA for aggregated APIs, and their leaves."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class Leaf:
    """A certificate to issue: its file stem, subject, groups (O=) and, for servers, the names it serves."""

    stem: str
    common_name: str
    organizations: tuple[str, ...] = ()
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()
    server: bool = False
    client: bool = True
    ca: str = "ca"


@dataclass
class Authority:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _new_authority(common_name: str) -> Authority:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = _name(common_name)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + 10 * VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Authority(key=key, cert=cert)


def _issue(authority: Authority, leaf: Leaf) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    usages = []
    if leaf.server:
        usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
    if leaf.client:
        usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(leaf.common_name, leaf.organizations))
        .issuer_name(authority.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(authority.key.public_key()), critical=False
        )
    )
    if leaf.dns_names or leaf.ip_addresses:
        names: list[x509.GeneralName] = [x509.DNSName(n) for n in leaf.dns_names]
        names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in leaf.ip_addresses]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return key, builder.sign(authority.key, hashes.SHA256())


def generate(directory: Path, leaves: list[Leaf], authorities: tuple[str, ...]) -> None:
    """Writes ``<ca>.crt/.key`` per authority, ``<stem>.crt/.key`` per leaf and a service-account key."""
    directory.mkdir(parents=True, exist_ok=True)
    issued: dict[str, Authority] = {}
    for name in authorities:
        issued[name] = _new_authority(f"kubevirt-py-{name}")
        _write_key(directory / f"{name}.key", issued[name].key)
        _write_cert(directory / f"{name}.crt", issued[name].cert)
    for leaf in leaves:
        key, cert = _issue(issued[leaf.ca], leaf)
        _write_key(directory / f"{leaf.stem}.key", key)
        _write_cert(directory / f"{leaf.stem}.crt", cert)
    service_accounts = ec.generate_private_key(ec.SECP256R1())
    _write_key(directory / "sa.key", service_accounts)
    (directory / "sa.pub").write_bytes(
        service_accounts.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


def add_leaves(directory: Path, leaves: list[Leaf]) -> None:
    """Issues ``leaves`` from the authorities ``generate`` wrote there (a node joining a running cluster);
    a leaf whose files exist is kept."""
    for leaf in leaves:
        if (directory / f"{leaf.stem}.crt").exists() and (directory / f"{leaf.stem}.key").exists():
            continue
        key = serialization.load_pem_private_key((directory / f"{leaf.ca}.key").read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise RuntimeError(f"{directory / f'{leaf.ca}.key'}: not an EC key")
        cert = x509.load_pem_x509_certificate((directory / f"{leaf.ca}.crt").read_bytes())
        leaf_key, leaf_cert = _issue(Authority(key=key, cert=cert), leaf)
        _write_key(directory / f"{leaf.stem}.key", leaf_key)
        _write_cert(directory / f"{leaf.stem}.crt", leaf_cert)


def serving_pair(dns_name: str) -> tuple[bytes, bytes, bytes]:
    """A throwaway CA and a serving certificate for ``dns_name`` (a webhook's ``<svc>.<ns>.svc``):
    the CA bundle, the certificate and its key, in PEM."""
    authority = _new_authority(f"{dns_name}-ca")
    key, cert = _issue(authority, Leaf(dns_name, dns_name, dns_names=(dns_name,), server=True, client=False))
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return (
        authority.cert.public_bytes(serialization.Encoding.PEM),
        cert.public_bytes(serialization.Encoding.PEM),
        key_pem,
    )
