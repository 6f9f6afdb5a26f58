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
SERVICE_SUBNET = "10.96.0.0/16"
KUBERNETES_SERVICE_IP = "10.96.0.1"

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
