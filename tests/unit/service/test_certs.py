"""A certificate and key read back from a TLS Secret or from its mounted files: both readers take only a
certificate with its own EC key."""

from __future__ import annotations

import base64
import datetime
from pathlib import Path

import pytest

from kubevirt.service.certs import (
    CERT_KEY,
    KEY_KEY,
    CertificateError,
    KeyPair,
    load_pair,
    load_pair_files,
    new_ca,
)

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
DAY = datetime.timedelta(days=1)


def _secret(cert_pem: bytes, key_pem: bytes) -> dict[str, object]:
    return {
        "data": {CERT_KEY: base64.b64encode(cert_pem).decode(), KEY_KEY: base64.b64encode(key_pem).decode()}
    }


def _files(directory: Path, cert_pem: bytes, key_pem: bytes) -> tuple[Path, Path]:
    cert_file, key_file = directory / "tls.crt", directory / "tls.key"
    cert_file.write_bytes(cert_pem)
    key_file.write_bytes(key_pem)
    return cert_file, key_file


@pytest.fixture
def pairs() -> tuple[KeyPair, KeyPair]:
    return new_ca("one", NOW, DAY), new_ca("two", NOW, DAY)


def test_a_matching_pair_is_read_from_a_secret_and_from_files(
    pairs: tuple[KeyPair, KeyPair], tmp_path: Path
) -> None:
    one, _ = pairs
    from_secret = load_pair(_secret(one.cert_pem, one.key_pem))
    from_files = load_pair_files(*_files(tmp_path, one.cert_pem, one.key_pem))
    assert from_secret is not None
    assert from_secret.cert == from_files.cert == one.cert


def test_another_certificates_key_is_refused(pairs: tuple[KeyPair, KeyPair], tmp_path: Path) -> None:
    one, two = pairs
    assert load_pair(_secret(one.cert_pem, two.key_pem)) is None
    cert_file, key_file = _files(tmp_path, one.cert_pem, two.key_pem)
    with pytest.raises(CertificateError, match=f"^{key_file} is not the EC key of {cert_file}$"):
        load_pair_files(cert_file, key_file)


def test_what_does_not_parse_is_refused(pairs: tuple[KeyPair, KeyPair], tmp_path: Path) -> None:
    one, _ = pairs
    assert load_pair(_secret(b"not a certificate", one.key_pem)) is None
    assert load_pair({"data": {CERT_KEY: "!!"}}) is None
    cert_file, key_file = _files(tmp_path, one.cert_pem, b"not a key")
    with pytest.raises(CertificateError, match=f"^{cert_file}, {key_file}: "):
        load_pair_files(cert_file, key_file)
