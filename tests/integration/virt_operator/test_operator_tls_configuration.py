"""virt-operator, run as its service account against a real kube-apiserver, follows the KubeVirt CR's
``tlsConfiguration`` on its probe port (``/metrics`` and ``/healthz``), as KubeVirt's does."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubevirt.client import KUBEVIRTS, KubeClient
from kubevirt.service.probes import ProbeServer
from kubevirt.virt_operator.app import VirtOperator
from kubevirt_testing.certificates import self_signed, write_pair
from kubevirt_testing.operator import NS, create_kubevirt, eventually, running_operator

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def operator(operator_kube: KubeClient) -> Iterator[VirtOperator]:
    with running_operator(operator_kube, wait_for_lead=False) as running:
        yield running


def _accepts(port: int, maximum: ssl.TLSVersion) -> bool:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.maximum_version = maximum
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, context.wrap_socket(raw):
            return True
    except ssl.SSLError:
        return False


def test_the_probe_port_follows_the_cr_s_minimum_tls_version(
    kube: KubeClient, operator: VirtOperator, tmp_path: Path
) -> None:
    cert, key = write_pair(self_signed("virt-operator"), tmp_path)
    # As virt-operator's run() serves it.
    probes = ProbeServer(
        "127.0.0.1", 0, cert_file=cert, key_file=key, probes=operator.probes(), tls_config=operator.tls_config
    )
    probes.start()
    try:
        assert _accepts(probes.port, ssl.TLSVersion.TLSv1_2)
        create_kubevirt(kube, spec={"configuration": {"tlsConfiguration": {"minTLSVersion": "VersionTLS13"}}})
        eventually("TLS 1.2 is refused", lambda: not _accepts(probes.port, ssl.TLSVersion.TLSv1_2))
        assert _accepts(probes.port, ssl.TLSVersion.TLSv1_3)
        kube.patch(
            KUBEVIRTS,
            NS,
            "kubevirt",
            {"spec": {"configuration": {"tlsConfiguration": {"minTLSVersion": "VersionTLS12"}}}},
            patch_type="merge",
        )
        eventually("TLS 1.2 is accepted again", lambda: _accepts(probes.port, ssl.TLSVersion.TLSv1_2))
    finally:
        probes.stop()
