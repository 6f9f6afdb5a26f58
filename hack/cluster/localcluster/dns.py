"""Cluster DNS on the local cluster: CoreDNS behind the ``kube-dns`` Service, as on a real cluster.

Pods resolve ``<service>.<namespace>.svc`` (KubeVirt's export proxy dials exporter Services by that name)
through the Service ``kube-system/kube-dns`` at ``10.96.0.10``, the address the kubelets hand to every pod
(``clusterDNS``). CoreDNS, built from its Go module by ``hack/cluster/build-dns``, runs as a cluster
process on the host like the CSI controllers (no image to build), bound to node 1's address; the Service
has no selector, and an EndpointSlice names that address, so kube-proxy on every node forwards to it.
Names outside ``cluster.local`` go to the host's resolvers. Its kubeconfig is a certificate of its own in
system:masters, like the cluster's other clients.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import yaml

from .components import Component, run_build_script
from .layout import CLUSTER_DOMAIN, DNS_SERVICE_IP, NODE_IP, REPO, Layout

PROCESS = "coredns"
KUBECONFIG_USER = "coredns"  # components.certificates makes its certificate
READY_PORT = 19853
MODULE = REPO / "hack" / "cluster" / "dns"


def build_dir(layout: Layout) -> Path:
    """Where hack/cluster/build-dns puts the pinned CoreDNS."""
    key = hashlib.sha256((MODULE / "go.mod").read_bytes() + (MODULE / "go.sum").read_bytes()).hexdigest()
    return layout.cache / "coredns" / key[:16]


def build(layout: Layout) -> Path:
    """Builds the pinned CoreDNS into the cache unless it is there (minutes cold, nothing when warm)."""
    run_build_script(layout, "build-dns")
    return build_dir(layout)


def corefile(layout: Layout) -> str:
    """The cluster zone from the API (pod names too, as kubeadm's CoreDNS answers them), the rest upstream."""
    kubeconfig = layout.kubeconfig(KUBECONFIG_USER)
    return f""".:53 {{
    bind {NODE_IP}
    errors
    ready 127.0.0.1:{READY_PORT}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} ""
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }}
    forward . /etc/resolv.conf
    cache 30
    loop
}}
"""


def corefile_path(layout: Layout) -> Path:
    return layout.run / "Corefile"


def process(layout: Layout) -> Component:
    """CoreDNS, ready once its kubernetes plugin has synced with the API."""
    binary = build_dir(layout) / "bin" / "coredns"
    return Component(
        PROCESS,
        [str(binary), "-conf", str(corefile_path(layout))],
        ready_url=f"http://127.0.0.1:{READY_PORT}/ready",
    )


def objects() -> list[dict[str, object]]:
    """The selector-less kube-dns Service and the EndpointSlice that points it at CoreDNS."""
    ports = [("dns", "UDP"), ("dns-tcp", "TCP")]
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kube-dns",
                "namespace": "kube-system",
                "labels": {"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"},
            },
            "spec": {
                "clusterIP": DNS_SERVICE_IP,
                "ports": [{"name": name, "port": 53, "protocol": proto} for name, proto in ports],
            },
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "kube-dns-coredns",
                "namespace": "kube-system",
                "labels": {
                    "kubernetes.io/service-name": "kube-dns",
                    "endpointslice.kubernetes.io/managed-by": "localcluster",
                },
            },
            "addressType": "IPv4",
            "endpoints": [{"addresses": [NODE_IP], "conditions": {"ready": True}}],
            "ports": [{"name": name, "port": 53, "protocol": proto} for name, proto in ports],
        },
    ]


def prepare(layout: Layout) -> None:
    corefile_path(layout).write_text(corefile(layout))


def install_objects(layout: Layout) -> None:
    result = subprocess.run(
        [*layout.kubectl(), "apply", "--server-side", "--filename=-"],
        input=yaml.safe_dump_all(objects()),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"kubectl apply (cluster DNS): {result.stderr.strip()}")
