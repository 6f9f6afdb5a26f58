"""virt-api behind the real API server's aggregator: an ExternalName Service and the APIServices point
at a virt-api process on loopback, which trusts the API server's front-proxy certificate.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from localcluster.apiserver import ApiServer, free_port

from kubevirt.apiservices import subresource_api_services
from kubevirt.client import AlreadyExistsError, ApiError, KubeClient, Resource
from kubevirt_testing.certificates import self_signed

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
SERVICES = Resource("", "v1", "services", "Service", namespaced=True)
API_SERVICES = Resource("apiregistration.k8s.io", "v1", "apiservices", "APIService", namespaced=False)
KUBEVIRT_NAMESPACE = "kubevirt"


@dataclass
class AggregatedVirtApi:
    port: int
    process: subprocess.Popen[bytes]
    log_file: Path
    pki_dir: Path
    ca_file: Path

    def log(self) -> str:
        return self.log_file.read_text(errors="replace")


def _available(kube: KubeClient, name: str) -> bool:
    try:
        service = kube.get(API_SERVICES, None, name)
    except ApiError:
        return False
    conditions = (service.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions)


@pytest.fixture(scope="session")
def aggregated_virt_api(
    apiserver: ApiServer, kube: KubeClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AggregatedVirtApi]:
    workdir = tmp_path_factory.mktemp("aggregated-virt-api")
    pair = self_signed("virt-api", dns_names=(f"virt-api.{KUBEVIRT_NAMESPACE}.svc", "localhost"))
    cert_file, key_file = workdir / "tls.crt", workdir / "tls.key"
    key_file.write_bytes(pair.key_pem)
    cert_file.write_bytes(pair.cert_pem)
    exe = shutil.which("virt-api") or shutil.which("virt-api", path=str(Path(sys.executable).parent))
    assert exe, "virt-api is not installed"
    port = free_port()
    log_file = workdir / "virt-api.log"
    with log_file.open("wb") as log:
        process = subprocess.Popen(
            [
                exe,
                "--listen=127.0.0.1",
                f"--port={port}",
                f"--tls-cert-file={cert_file}",
                f"--tls-key-file={key_file}",
                f"--kubeconfig={apiserver.kubeconfig}",
                f"--handler-namespace={KUBEVIRT_NAMESPACE}",
                "--config-refresh-interval=1",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    api = AggregatedVirtApi(port, process, log_file, apiserver.directory / "pki", cert_file)
    try:
        with contextlib.suppress(AlreadyExistsError):  # another fixture made it
            kube.create(NAMESPACES, None, {"metadata": {"name": KUBEVIRT_NAMESPACE}})
        kube.create(
            SERVICES,
            KUBEVIRT_NAMESPACE,
            {"metadata": {"name": "virt-api"}, "spec": {"type": "ExternalName", "externalName": "localhost"}},
        )
        for service in subresource_api_services(KUBEVIRT_NAMESPACE, pair.cert_pem, port=port):
            kube.create(API_SERVICES, None, service)
        deadline = time.monotonic() + 60
        while not all(_available(kube, f"{v}.subresources.kubevirt.io") for v in ("v1", "v1alpha3")):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the subresource API did not become available:\n{api.log()}")
            time.sleep(0.2)
        yield api
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
