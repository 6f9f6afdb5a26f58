"""virt-api, virt-controller and virt-handler, each run in-process against a real kube-apiserver, report
the KubeVirt CR's resourceVersion as ``config-resource-version`` on ``/healthz`` and follow a change of
the CR within 10 s; their listeners follow the CR's ``tlsConfiguration`` without a restart."""

from __future__ import annotations

import shutil
import socket
import ssl
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubevirt.client import KUBEVIRTS, NODES, KubeClient
from kubevirt.service.probes import ProbeServer
from kubevirt.virt_api import app as virt_api
from kubevirt.virt_api.webhooks.server import ServerLimits
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_controller import app as virt_controller
from kubevirt.virt_handler import app as virt_handler
from kubevirt_testing.inprocess import https_json, virt_api_running, write_certificate
from kubevirt_testing.process import free_port

pytestmark = pytest.mark.timeout(180)

JSON = dict[str, Any]


def _https_get(port: int, path: str) -> tuple[int, JSON]:
    return https_json(port, "GET", path)


@dataclass(frozen=True)
class Healthz:
    """A component's HTTPS port; calling it asks its ``/healthz``."""

    port: int

    def __call__(self) -> tuple[int, JSON]:
        return _https_get(self.port, "/healthz")


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    return write_certificate(tmp_path, "healthz")


@pytest.fixture
def kubevirt_cr(kube: KubeClient, namespace: str) -> JSON:
    return kube.create(
        KUBEVIRTS,
        namespace,
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "KubeVirt",
            "metadata": {"name": "kubevirt"},
            "spec": {"configuration": {"developerConfiguration": {"featureGates": []}}},
        },
    )


@pytest.fixture
def virt_api_healthz(apiserver: Any, namespace: str, certificate: tuple[Path, Path]) -> Iterator[Healthz]:
    port = free_port()
    options = virt_api.Options(
        listen="127.0.0.1",
        port=port,
        tls_cert_file=certificate[0],
        tls_key_file=certificate[1],
        config=ClusterConfig(),
        limits=ServerLimits(),
        kubeconfig=str(apiserver.kubeconfig),
        config_refresh_interval=1.0,
        namespace=namespace,
        handler_namespace=namespace,
    )
    with virt_api_running(options):
        yield Healthz(port)


@pytest.fixture
def virt_controller_healthz(
    kube: KubeClient, namespace: str, certificate: tuple[Path, Path]
) -> Iterator[Healthz]:
    options = virt_controller.Options(tls_cert_file=certificate[0], tls_key_file=certificate[1])
    controller = virt_controller.VirtController(options, kube, namespace)
    probes = ProbeServer(  # as virt-controller's run() serves them
        "127.0.0.1",
        0,
        cert_file=certificate[0],
        key_file=certificate[1],
        probes=controller.probes(),
        tls_config=controller.tls_config,
    )
    probes.start()
    runner = threading.Thread(target=controller.run, daemon=True)
    runner.start()
    try:
        yield Healthz(probes.port)
    finally:
        controller.stop()
        runner.join(30)
        probes.stop()


@pytest.fixture
def virt_handler_healthz(
    kube: KubeClient, namespace: str, certificate: tuple[Path, Path], tmp_path: Path
) -> Iterator[Healthz]:
    node = f"healthz-{uuid.uuid4().hex[:8]}"
    kube.create(NODES, None, {"metadata": {"name": node}})
    plugins_dir = Path(tempfile.mkdtemp(prefix="dp", dir="/tmp"))  # short: unix socket paths
    port = free_port()
    options = virt_handler.Options(
        node_name=node,
        pods_dir=tmp_path / "pods",
        device_plugins_dir=plugins_dir,
        node_labeller_dir=tmp_path / "no-labeller",
        listen="127.0.0.1",
        port=port,
        console_server_port=free_port(),
        tls_cert_file=certificate[0],
        tls_key_file=certificate[1],
        namespace=namespace,
        share_dir=plugins_dir / "share",
    )
    handler = virt_handler.VirtHandler(options, kube)
    runner = threading.Thread(target=handler.run, daemon=True)
    runner.start()
    try:
        yield Healthz(port)
    finally:
        handler.stop()
        runner.join(30)
        shutil.rmtree(plugins_dir, ignore_errors=True)
        kube.delete(NODES, None, node)


def _reports(healthz: Healthz, resource_version: str, timeout: float) -> JSON:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            status, body = healthz()
        except OSError as err:  # not listening yet
            last = err
        else:
            last = (status, body)
            if status == 200 and body.get("config-resource-version") == resource_version:
                return body
        time.sleep(0.1)
    raise AssertionError(f"config-resource-version {resource_version} not reported in {timeout}s: {last}")


def _change_the_cr(kube: KubeClient, namespace: str) -> str:
    changed = kube.patch(
        KUBEVIRTS,
        namespace,
        "kubevirt",
        {"spec": {"configuration": {"developerConfiguration": {"featureGates": ["Snapshot"]}}}},
        patch_type="merge",
    )
    return str(changed["metadata"]["resourceVersion"])


@pytest.mark.parametrize("component", ["virt_api_healthz", "virt_controller_healthz", "virt_handler_healthz"])
def test_healthz_reports_the_kubevirt_cr_version_in_force(
    request: pytest.FixtureRequest, kube: KubeClient, namespace: str, kubevirt_cr: JSON, component: str
) -> None:
    healthz: Healthz = request.getfixturevalue(component)
    body = _reports(healthz, kubevirt_cr["metadata"]["resourceVersion"], timeout=60)
    assert body["apiserver"]["connectivity"] == "ok"
    assert body["apiserver"]["version"]["major"] == "1"

    changed_at = time.monotonic()
    resource_version = _change_the_cr(kube, namespace)
    _reports(healthz, resource_version, timeout=10)
    assert time.monotonic() - changed_at < 10


def _set_min_tls_version(kube: KubeClient, namespace: str, version: str) -> str:
    changed = kube.patch(
        KUBEVIRTS,
        namespace,
        "kubevirt",
        {"spec": {"configuration": {"tlsConfiguration": {"minTLSVersion": version}}}},
        patch_type="merge",
    )
    return str(changed["metadata"]["resourceVersion"])


def _tls_version(port: int, maximum: ssl.TLSVersion) -> str | None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.maximum_version = maximum
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, context.wrap_socket(raw) as tls:
        return tls.version()


@pytest.mark.parametrize("component", ["virt_api_healthz", "virt_controller_healthz", "virt_handler_healthz"])
def test_the_listener_follows_the_cr_s_minimum_tls_version(
    request: pytest.FixtureRequest, kube: KubeClient, namespace: str, kubevirt_cr: JSON, component: str
) -> None:
    healthz: Healthz = request.getfixturevalue(component)
    _reports(healthz, kubevirt_cr["metadata"]["resourceVersion"], timeout=60)
    assert _tls_version(healthz.port, ssl.TLSVersion.TLSv1_2) == "TLSv1.2"

    _reports(healthz, _set_min_tls_version(kube, namespace, "VersionTLS13"), timeout=10)
    with pytest.raises(ssl.SSLError):
        _tls_version(healthz.port, ssl.TLSVersion.TLSv1_2)
    assert _tls_version(healthz.port, ssl.TLSVersion.TLSv1_3) == "TLSv1.3"

    _reports(healthz, _set_min_tls_version(kube, namespace, "VersionTLS12"), timeout=10)
    assert _tls_version(healthz.port, ssl.TLSVersion.TLSv1_2) == "TLSv1.2"


def test_a_standby_virt_controller_follows_the_configuration_too(
    kube: KubeClient,
    namespace: str,
    kubevirt_cr: JSON,
    certificate: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    options = virt_controller.Options(tls_cert_file=certificate[0], tls_key_file=certificate[1])
    replicas = []
    for pod_name in ("virt-controller-a", "virt-controller-b"):  # the lease holder's identity is the pod's
        monkeypatch.setattr(virt_controller.socket, "gethostname", lambda name=pod_name: name)
        replicas.append(virt_controller.VirtController(options, kube, namespace))
    runners = [threading.Thread(target=replica.run, daemon=True) for replica in replicas]
    for runner in runners:
        runner.start()
    try:
        probes = [replica.probes() for replica in replicas]
        deadline = time.monotonic() + 60
        while sum(p["/leader"]()[1]["apiserver"]["leader"] == "true" for p in probes) != 1:
            assert time.monotonic() < deadline, "no leader elected"
            time.sleep(0.2)
        resource_version = _change_the_cr(kube, namespace)
        for probe in probes:
            _reports(probe["/healthz"], resource_version, timeout=10)
    finally:
        for replica in replicas:
            replica.stop()
        for runner in runners:
            runner.join(30)
