"""Where everything lives and which addresses the cluster uses; one place so up, down and tests agree."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

# The pod network is a bridge on the host; the host's address on it doubles as the node address, so
# the control plane reaches the kubelet and the pods without loopback (which Kubernetes rejects there).
BRIDGE = "kvpy0"
POD_SUBNET = "10.244.0.0/24"
NODE_IP = "10.244.0.1"
# Node 1's pods take addresses up to here; the addresses above it on the bridge's subnet are the other
# nodes' (node N has 10.244.0.(248+N) and routes the pod subnet 10.244.(N-1).0/24).
POD_RANGE_END = "10.244.0.239"
MAX_NODES = 4
# How many nodes cluster-up brings up (or adds to a running cluster): hack/cluster-up --nodes N sets it.
NODES_ENV = "KUBEVIRT_CLUSTER_NODES"
SERVICE_SUBNET = "10.96.0.0/16"
KUBERNETES_SERVICE_IP = "10.96.0.1"
DNS_SERVICE_IP = "10.96.0.10"  # the kube-dns Service (localcluster.dns)
CLUSTER_DOMAIN = "cluster.local"

KUBELET_ROOT = Path("/var/lib/kubelet")
# Where virt-handler shares sockets and mounts with launcher pods (a Bidirectional host path, like the
# kubelet's root): both are shared mounts on the node.
KUBEVIRT_SHARE_DIR = Path("/run/kubevirt")
SHARED_MOUNTS = (KUBELET_ROOT, KUBEVIRT_SHARE_DIR)

APISERVER_PORT = 6443
ETCD_CLIENT_PORT = 32379
ETCD_PEER_PORT = 32380

# Images are never pulled: hack/build-images makes them and imports them under these names.
IMAGE_PREFIX = "localhost/kubevirt"
IMAGE_TAG = "devel"
PAUSE_IMAGE = f"{IMAGE_PREFIX}/pause:3.10"


def image_name(binary: str) -> str:
    return f"{IMAGE_PREFIX}/{binary}:{IMAGE_TAG}"


@dataclass(frozen=True)
class Layout:
    """The state directory: ``run/`` is wiped by cluster-down, ``images/`` (containerd's store) is kept."""

    state: Path
    cache: Path

    @classmethod
    def from_environment(cls) -> Layout:
        state = Path(os.environ.get("KUBEVIRT_CLUSTER_STATE", "/var/lib/kubevirt-py-cluster"))
        cache = Path(os.environ.get("KUBEVIRT_CACHE", "/var/cache/kubevirt-py"))
        return cls(state=state, cache=cache)

    @property
    def node_name(self) -> str:
        return socket.gethostname().lower()

    @property
    def run(self) -> Path:
        return self.state / "run"

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    @property
    def pids(self) -> Path:
        return self.run / "pids"

    @property
    def pki(self) -> Path:
        return self.run / "pki"

    @property
    def kubeconfigs(self) -> Path:
        return self.run / "kubeconfig"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.state / "admin.kubeconfig"

    @property
    def root_made_shared(self) -> Path:
        """Present while the cluster keeps ``/`` shared that was private before it came up."""
        return self.state / "root-made-shared"

    @property
    def host_before(self) -> Path:
        """What the host looked like before cluster-up changed it (read back by cluster-down)."""
        return self.state / "host-before.json"

    @property
    def etcd_data(self) -> Path:
        return self.run / "etcd"

    @property
    def containerd_root(self) -> Path:
        return self.state / "images"

    @property
    def containerd_state(self) -> Path:
        return self.run / "containerd"

    @property
    def containerd_socket(self) -> Path:
        return self.run / "containerd.sock"

    @property
    def containerd_config(self) -> Path:
        return self.run / "containerd.toml"

    @property
    def cni_config_dir(self) -> Path:
        return self.run / "cni" / "net.d"

    @property
    def cni_ipam_dir(self) -> Path:
        return self.run / "cni" / "ipam"

    @property
    def kubelet_root(self) -> Path:
        """The kubelet's standard root: KubeVirt's virt-handler finds pods' sockets under its pods/
        folder, and device plugins register in its device-plugins/ folder (a fixed path in the kubelet)."""
        return KUBELET_ROOT

    @property
    def pod_logs(self) -> Path:
        return self.run / "pod-logs"

    @property
    def kubernetes_module(self) -> Path:
        return REPO / "hack" / "cluster" / "kubernetes"

    @property
    def kubernetes_version(self) -> str:
        for line in (self.kubernetes_module / "go.mod").read_text().splitlines():
            if line.startswith("require k8s.io/kubernetes "):
                return line.split()[-1]
        raise RuntimeError(f"{self.kubernetes_module / 'go.mod'}: no k8s.io/kubernetes requirement")

    @property
    def kubernetes_bin(self) -> Path:
        return self.cache / "kubernetes" / self.kubernetes_version / "bin"

    def kubectl(self) -> list[str]:
        """kubectl with the admin kubeconfig, its discovery cache kept in the state directory."""
        return [
            str(self.kubernetes_bin / "kubectl"),
            f"--kubeconfig={self.admin_kubeconfig}",
            f"--cache-dir={self.run / 'kubectl-cache'}",
        ]

    def kubeconfig(self, user: str) -> Path:
        return self.kubeconfigs / f"{user}.kubeconfig"

    def node(self, index: int) -> Node:
        if not 1 <= index <= MAX_NODES:
            raise ValueError(f"node {index}: this cluster has nodes 1 to {MAX_NODES}")
        return Node(self, index)

    def extra_nodes(self) -> list[Node]:
        """The nodes besides the first that have a directory under ``run/`` (started or half-started)."""
        return [self.node(i) for i in range(2, MAX_NODES + 1) if self.node(i).dir.exists()]


def requested_nodes() -> int:
    """How many nodes the environment asks for (default 1)."""
    value = os.environ.get(NODES_ENV, "1")
    if not value.isdigit() or not 1 <= int(value) <= MAX_NODES:
        raise ValueError(f"{NODES_ENV}={value!r}: expected a number of nodes from 1 to {MAX_NODES}")
    return int(value)


@dataclass(frozen=True)
class Node:
    """One node: node 1 runs on the host as always; node N > 1 runs its containerd, kubelet and kube-proxy
    in namespaces of its own (mount, network, PID) with its own copies of the node's host directories."""

    layout: Layout
    index: int

    @property
    def primary(self) -> bool:
        return self.index == 1

    @property
    def name(self) -> str:
        return self.layout.node_name if self.primary else f"{self.layout.node_name}-node{self.index}"

    @property
    def ip(self) -> str:
        return NODE_IP if self.primary else f"10.244.0.{248 + self.index}"

    @property
    def pod_subnet(self) -> str:
        return POD_SUBNET if self.primary else f"10.244.{self.index - 1}.0/24"

    @property
    def pod_gateway(self) -> str:
        """Where the node's pods send everything that leaves their subnet."""
        return NODE_IP if self.primary else f"10.244.{self.index - 1}.1"

    @property
    def bridge(self) -> str:
        """The CNI bridge (node N > 1: inside its network namespace)."""
        return BRIDGE if self.primary else f"kvpy{self.index - 1}"

    @property
    def host_veth(self) -> str:
        """The host's end of the point-to-point link into node N's network namespace."""
        return f"kvpy-node{self.index}"

    @property
    def dir(self) -> Path:
        return self.layout.run if self.primary else self.layout.run / f"node{self.index}"

    @property
    def pids(self) -> Path:
        return self.layout.pids if self.primary else self.dir / "pids"

    @property
    def logs(self) -> Path:
        return self.layout.logs if self.primary else self.layout.logs / f"node{self.index}"

    @property
    def host_dirs(self) -> Path:
        """Node N's own copies of the host directories the node's components use (bind-mounted over them
        in its mount namespace)."""
        return self.dir / "host"

    @property
    def containerd_root(self) -> Path:
        # Kept across cluster-down like node 1's, so imported images stay.
        return self.layout.containerd_root if self.primary else self.layout.state / f"images-node{self.index}"

    @property
    def containerd_state(self) -> Path:
        return self.dir / "containerd"

    @property
    def containerd_socket(self) -> Path:
        return self.dir / "containerd.sock"

    @property
    def containerd_config(self) -> Path:
        return self.dir / "containerd.toml"

    @property
    def cni_config_dir(self) -> Path:
        return self.dir / "cni" / "net.d"

    @property
    def cni_ipam_dir(self) -> Path:
        return self.dir / "cni" / "ipam"

    @property
    def pod_logs(self) -> Path:
        return self.dir / "pod-logs"

    @property
    def kubelet_plugins(self) -> Path:
        return self.dir / "kubelet-plugins"

    @property
    def kubelet_config(self) -> Path:
        return self.dir / "kubelet.yaml"

    @property
    def kube_proxy_config(self) -> Path:
        return self.dir / "kube-proxy.yaml"

    @property
    def cgroup_root(self) -> str:
        """The kubelet's --cgroup-root: node N's pods live below it (node 1 keeps the default, /)."""
        return "/" if self.primary else f"/kubevirt-py-node{self.index}"

    @property
    def cert_prefix(self) -> str:
        return "" if self.primary else f"node{self.index}-"

    @property
    def kubelet_user(self) -> str:
        """The kubeconfig (and certificate stem prefix) the node's kubelet uses."""
        return f"{self.cert_prefix}kubelet"

    @property
    def init_ready(self) -> Path:
        """Written by node N's init process once its mounts are in place."""
        return self.dir / "init-ready"
