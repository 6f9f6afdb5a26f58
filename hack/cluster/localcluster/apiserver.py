"""etcd and kube-apiserver alone on loopback, for integration tests of API clients (no node, no kubelet).

The API server runs its aggregator with a front-proxy CA and client certificate (``pki/front-proxy-*``),
so an aggregated API server started beside it can be reached through an APIService.

Everything lives in one temporary directory on free ports, so any number of these can run beside the
local cluster and each other. The certificates, process handling and readiness checks are the cluster's.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import pki, processes
from .layout import REPO
from .readiness import url_ok, wait_for

GENERATED_CRDS = REPO / "manifests" / "generated"
BUILD_KUBERNETES = REPO / "hack" / "cluster" / "build-kubernetes"
SERVICE_SUBNET = "10.96.0.0/16"
FRONT_PROXY_CLIENT = "front-proxy-client"


@dataclass(frozen=True)
class ApiServer:
    url: str
    kubeconfig: Path
    directory: Path
    bin_dir: Path
    etcd_url: str

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin_dir / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True,
            text=True,
            check=check,
            timeout=120,
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def kubernetes_bin() -> Path:
    """The built Kubernetes binaries (builds them once; a cached build returns at once)."""
    result = subprocess.run([str(BUILD_KUBERNETES)], capture_output=True, text=True, check=True)
    return Path(result.stdout.strip().splitlines()[-1])


def _kubeconfig(url: str, pki_dir: Path) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "test", "cluster": {"server": url, "certificate-authority": str(pki_dir / "ca.crt")}}
        ],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate": str(pki_dir / "admin.crt"),
                    "client-key": str(pki_dir / "admin.key"),
                },
            }
        ],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin"}}],
        "current-context": "test",
    }


@contextmanager
def running_apiserver(directory: Path, *, install_crds: bool = True) -> Iterator[ApiServer]:
    """Starts etcd and kube-apiserver in ``directory``, installs the project's CRDs, and stops both
    (and removes nothing: the directory is the caller's) when the block ends."""
    bin_dir = kubernetes_bin()
    pki_dir, logs, pids = directory / "pki", directory / "logs", directory / "pids"
    pki.generate(
        pki_dir,
        [
            pki.Leaf(
                "apiserver",
                "kube-apiserver",
                dns_names=("localhost",),
                ip_addresses=("127.0.0.1",),
                server=True,
                client=False,
            ),
            pki.Leaf("admin", "kubernetes-admin", ("system:masters",)),
            # The aggregator's identity towards aggregated APIs (virt-api's subresources).
            pki.Leaf("front-proxy-client", FRONT_PROXY_CLIENT, ca="front-proxy-ca"),
        ],
        ("ca", "front-proxy-ca"),
    )
    etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
    etcd_url = f"http://127.0.0.1:{etcd_port}"
    url = f"https://127.0.0.1:{api_port}"
    started: list[processes.Record] = []

    def start(name: str, argv: list[str], ready_url: str, timeout: float) -> None:
        record = processes.start(name, argv, pid_dir=pids, log_dir=logs)
        started.append(record)
        wait_for(
            name, lambda: url_ok(ready_url, pki_dir), timeout=timeout, alive=lambda: processes.alive(record)
        )

    try:
        start(
            "etcd",
            [
                "etcd",
                "--name=test",
                f"--data-dir={directory / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-cluster=test=http://127.0.0.1:{peer_port}",
                "--listen-metrics-urls=",
            ],
            f"{etcd_url}/health",
            timeout=30,
        )
        start(
            "kube-apiserver",
            [
                str(bin_dir / "kube-apiserver"),
                f"--etcd-servers={etcd_url}",
                f"--secure-port={api_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--service-cluster-ip-range={SERVICE_SUBNET}",
                f"--tls-cert-file={pki_dir / 'apiserver.crt'}",
                f"--tls-private-key-file={pki_dir / 'apiserver.key'}",
                f"--client-ca-file={pki_dir / 'ca.crt'}",
                f"--service-account-key-file={pki_dir / 'sa.pub'}",
                f"--service-account-signing-key-file={pki_dir / 'sa.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",  # as the local cluster: virt-handler's DaemonSet is privileged
                f"--requestheader-client-ca-file={pki_dir / 'front-proxy-ca.crt'}",
                f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={pki_dir / 'front-proxy-client.crt'}",
                f"--proxy-client-key-file={pki_dir / 'front-proxy-client.key'}",
            ],
            f"{url}/readyz",
            timeout=120,
        )
        kubeconfig = directory / "admin.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(_kubeconfig(url, pki_dir), sort_keys=False))
        server = ApiServer(
            url=url, kubeconfig=kubeconfig, directory=directory, bin_dir=bin_dir, etcd_url=etcd_url
        )
        if install_crds:
            server.kubectl("apply", "--server-side", "-f", str(GENERATED_CRDS))
            server.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        yield server
    finally:
        for record in reversed(started):
            processes.stop(record)
