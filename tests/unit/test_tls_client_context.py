"""virt-api's client context towards virt-handler follows virt-operator's rotations: a renewed client
certificate or CA bundle gives a new context (looked at no more often than the interval), and a renewal
caught half-written keeps the context in use."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from kubevirt.service.tls import ReloadingClientContext
from kubevirt.virt_operator.certificates import CertificateSpec, KeyPair, new_ca, new_certificate
from kubevirt_testing.certificates import write_pair

NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
DAY = datetime.timedelta(days=1)
CLIENT = CertificateSpec("client-certs", "client", "kubevirt.io:system:client:virt-api")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _write_pair(directory: Path, ca: KeyPair, stamp: int) -> tuple[Path, Path]:
    cert, key = write_pair(new_certificate(CLIENT, ca, "kubevirt", NOW, DAY), directory)
    for path in (cert, key):
        os.utime(path, ns=(stamp, stamp))
    return cert, key


def _trusted_names(source: ReloadingClientContext) -> list[object]:
    return [cert["subject"] for cert in source.current().get_ca_certs()]


def test_renewed_files_and_bundle_give_a_new_context_after_the_interval(tmp_path: Path) -> None:
    ca = new_ca("kubevirt.io@1", NOW, DAY)
    cert, key = _write_pair(tmp_path, ca, 1_000)
    bundle = [ca.cert_pem.decode()]
    clock = Clock()
    source = ReloadingClientContext(cert, key, lambda: bundle[0], interval=10.0, clock=clock)
    first = source.current()
    assert _trusted_names(source) == [((("commonName", "kubevirt.io@1"),),)]

    rotated = new_ca("kubevirt.io@2", NOW, DAY)
    bundle[0] = rotated.cert_pem.decode() + ca.cert_pem.decode()
    _write_pair(tmp_path, rotated, 2_000)
    clock.now = 5.0
    assert source.current() is first, "looked at again before the interval passed"

    clock.now = 11.0
    second = source.current()
    assert second is not first
    assert len(second.get_ca_certs()) == 2

    clock.now = 30.0
    assert source.current() is second, "nothing changed: the same context"


def test_a_half_written_renewal_keeps_the_context_in_use(tmp_path: Path) -> None:
    ca = new_ca("kubevirt.io@1", NOW, DAY)
    cert, key = _write_pair(tmp_path, ca, 1_000)
    clock = Clock()
    source = ReloadingClientContext(cert, key, lambda: ca.cert_pem.decode(), interval=1.0, clock=clock)
    first = source.current()
    cert.write_bytes(b"-----BEGIN CERTIFICATE-----\ntruncated")
    clock.now = 2.0
    assert source.current() is first


def test_an_unreadable_bundle_keeps_trusting_the_last_one(tmp_path: Path) -> None:
    ca = new_ca("kubevirt.io@1", NOW, DAY)
    cert, key = _write_pair(tmp_path, ca, 1_000)
    answers: list[str | None] = [ca.cert_pem.decode(), None]
    clock = Clock()
    source = ReloadingClientContext(cert, key, lambda: answers.pop(0), interval=1.0, clock=clock)
    first = source.current()
    clock.now = 2.0
    assert source.current() is first
    assert _trusted_names(source) == [((("commonName", "kubevirt.io@1"),),)]
