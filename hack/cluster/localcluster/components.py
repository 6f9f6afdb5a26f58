"""The cluster's processes: their certificates, configuration files and command lines, in start order."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from .layout import (
    APISERVER_PORT,
    CLUSTER_DOMAIN,
    DNS_SERVICE_IP,
    ETCD_CLIENT_PORT,
    ETCD_PEER_PORT,
    KUBELET_ROOT,
    KUBERNETES_SERVICE_IP,
    NODE_IP,
    PAUSE_IMAGE,
    POD_RANGE_END,
    REPO,
    SERVICE_SUBNET,
    Layout,
    Node,
)
from .pki import Leaf

ETCD_URL = f"http://127.0.0.1:{ETCD_CLIENT_PORT}"
# The apiserver listens only on the node address (the host's side of the pod bridge), never on the
# host's outside interfaces; the host, the node's components and the pods all reach it there.
APISERVER_URL = f"https://{NODE_IP}:{APISERVER_PORT}"


@dataclass(frozen=True)
class Component:
    name: str
    argv: list[str]
    # An HTTP(S) URL that answers 200 once the component serves, or None to wait for a socket file.
    ready_url: str | None = None
    ready_socket: Path | None = None


def run_build_script(layout: Layout, name: str) -> None:
    """Runs ``hack/cluster/<name>``, which builds pinned Go binaries into the cache (nothing when warm)."""
    script = REPO / "hack" / "cluster" / name
    env = {**os.environ, "KUBEVIRT_CACHE": str(layout.cache)}
    result = subprocess.run([str(script)], capture_output=True, text=True, check=False, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{script} failed:\n{result.stderr[-3000:]}")


def certificates(layout: Layout) -> list[Leaf]:
    node = layout.node_name
    return [
        Leaf(
            "apiserver",
            "kube-apiserver",
            dns_names=(
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
                "localhost",
                node,
            ),
            ip_addresses=("127.0.0.1", NODE_IP, KUBERNETES_SERVICE_IP),
            server=True,
            client=False,
        ),
        # The apiserver's identity towards kubelets; system:masters so the kubelet's webhook authorizer
        # lets it read logs and exec.
        Leaf("apiserver-kubelet-client", "kube-apiserver-kubelet-client", ("system:masters",)),
        Leaf("admin", "kubernetes-admin", ("system:masters",)),
        Leaf("controller-manager", "system:kube-controller-manager"),
        Leaf("scheduler", "system:kube-scheduler"),
        Leaf("kube-proxy", "system:kube-proxy"),
        # The hostpath CSI driver's controllers (localcluster.csi.deploy).
        Leaf("csi", "kubevirt-py:csi", ("system:masters",)),
        # CoreDNS behind kube-dns (localcluster.dns).
        Leaf("coredns", "kubevirt-py:coredns", ("system:masters",)),
        *node_certificates(layout.node(1)),
        # Aggregated APIs (subresources.kubevirt.io) trust requests that carry this front-proxy identity.
        Leaf("front-proxy-client", "front-proxy-client", ca="front-proxy-ca"),
    ]


def node_certificates(node: Node) -> list[Leaf]:
    """The kubelet's client identity towards the apiserver and its serving certificate."""
    identity = (f"system:node:{node.name}", ("system:nodes",))
    return [
        Leaf(f"{node.cert_prefix}kubelet-client", *identity),
        Leaf(
            f"{node.cert_prefix}kubelet-serving",
            *identity,
            dns_names=(node.name, "localhost"),
            ip_addresses=(node.ip, "127.0.0.1"),
            server=True,
            client=False,
        ),
    ]


AUTHORITIES = ("ca", "front-proxy-ca")
CNI_NETWORK = "kubevirt-py"
KUBECONFIG_USERS = {
    "admin": "admin",
    "controller-manager": "controller-manager",
    "scheduler": "scheduler",
    "kubelet": "kubelet-client",
    "kube-proxy": "kube-proxy",
    "csi": "csi",
    "coredns": "coredns",
}


def kubeconfig(layout: Layout, cert_stem: str) -> dict[str, object]:
    pki = layout.pki
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "kubevirt-py",
                "cluster": {"server": APISERVER_URL, "certificate-authority": str(pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": cert_stem,
                "user": {
                    "client-certificate": str(pki / f"{cert_stem}.crt"),
                    "client-key": str(pki / f"{cert_stem}.key"),
                },
            }
        ],
        "contexts": [{"name": "kubevirt-py", "context": {"cluster": "kubevirt-py", "user": cert_stem}}],
        "current-context": "kubevirt-py",
    }


def containerd_config(node: Node) -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{node.containerd_root}"
state = "{node.containerd_state}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{node.containerd_socket}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{node.containerd_state}/opt"

[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  # The VM withholds CAP_SYS_RESOURCE: runc cannot set negative OOM scores.
  restrict_oom_score_adj = true
  # Keeps pod network namespaces under the state directory, so cluster-down finds every mount.
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{node.containerd_state}/runc"
  [{cri}.cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{node.cni_config_dir}"
"""


def cni_config(node: Node) -> str:
    pod_range: dict[str, str] = {"subnet": node.pod_subnet, "gateway": node.pod_gateway}
    if node.primary:
        pod_range["rangeEnd"] = POD_RANGE_END  # the other nodes' addresses are above it
    network = {
        "cniVersion": "0.4.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": node.bridge,
                "isGateway": True,
                # Pods only talk to the host and each other: no masquerading, so no iptables rules.
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[pod_range]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(node.cni_ipam_dir),
                },
            }
        ],
    }
    return json.dumps(network, indent=2)


def kubelet_config(node: Node) -> str:
    pki = node.layout.pki
    config: dict[str, object] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.ip,
        # Node N's loopback is its own network namespace's: the host checks its health on the node address.
        "healthzBindAddress": "127.0.0.1" if node.primary else node.ip,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": str(pki / f"{node.cert_prefix}kubelet-serving.crt"),
        "tlsPrivateKeyFile": str(pki / f"{node.cert_prefix}kubelet-serving.key"),
        "cgroupDriver": "cgroupfs",
        "containerRuntimeEndpoint": f"unix://{node.containerd_socket}",
        "failSwapOn": False,
        "podLogsDir": str(node.pod_logs),
        "resolvConf": "/etc/resolv.conf",
        "serializeImagePulls": False,
        # Imported images cannot be pulled again: never garbage-collect them, never evict for disk.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [DNS_SERVICE_IP],
        "hairpinMode": "hairpin-veth",
        "podCIDR": node.pod_subnet,
        "maxPods": 110,
    }
    if not node.primary:
        # Its own pod cgroups, so the two kubelets never manage (or clean up) each other's kubepods.
        config["cgroupRoot"] = node.cgroup_root
    return yaml.safe_dump(config, sort_keys=False)


def kube_proxy_config(node: Node) -> str:
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(node.layout.kubeconfig("kube-proxy"))},
        "hostnameOverride": node.name,
        "bindAddress": node.ip,
        "healthzBindAddress": f"{_health_address(node)}:10256",
        "metricsBindAddress": "127.0.0.1:10249",
        "mode": "iptables",
        "clusterCIDR": node.pod_subnet,
        # Pods and the Service's endpoints share one bridge: without br_netfilter a reply would bypass
        # the host's connection tracking unless the request is masqueraded.
        "iptables": {"masqueradeAll": True, "localhostNodePorts": False},
        "nodePortAddresses": [f"{node.ip}/32"],
        # Leave the host's connection-tracking settings as they are.
        "conntrack": {"maxPerCore": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }
    return yaml.safe_dump(config, sort_keys=False)


def processes(layout: Layout) -> list[Component]:
    pki = layout.pki
    bin_dir = layout.kubernetes_bin
    return [
        Component(
            "etcd",
            [
                "etcd",
                "--name=kubevirt-py",
                f"--data-dir={layout.etcd_data}",
                f"--listen-client-urls={ETCD_URL}",
                f"--advertise-client-urls={ETCD_URL}",
                f"--listen-peer-urls=http://127.0.0.1:{ETCD_PEER_PORT}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{ETCD_PEER_PORT}",
                f"--initial-cluster=kubevirt-py=http://127.0.0.1:{ETCD_PEER_PORT}",
                "--listen-metrics-urls=",
            ],
            ready_url=f"{ETCD_URL}/health",
        ),
        containerd(layout.node(1)),
        Component(
            "kube-apiserver",
            [
                str(bin_dir / "kube-apiserver"),
                f"--etcd-servers={ETCD_URL}",
                f"--secure-port={APISERVER_PORT}",
                f"--bind-address={NODE_IP}",
                f"--advertise-address={NODE_IP}",
                f"--service-cluster-ip-range={SERVICE_SUBNET}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
                f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
                "--kubelet-preferred-address-types=InternalIP,Hostname",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                "--allow-privileged=true",
                # Webhooks and APIServices reach their Service's pods directly; there is no kube-proxy.
                "--enable-aggregator-routing=true",
                f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
                f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
            ],
            ready_url=f"{APISERVER_URL}/readyz",
        ),
        Component(
            "kube-controller-manager",
            [
                str(bin_dir / "kube-controller-manager"),
                f"--kubeconfig={layout.kubeconfig('controller-manager')}",
                f"--authentication-kubeconfig={layout.kubeconfig('controller-manager')}",
                f"--authorization-kubeconfig={layout.kubeconfig('controller-manager')}",
                "--bind-address=127.0.0.1",
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                f"--cluster-signing-cert-file={pki / 'ca.crt'}",
                f"--cluster-signing-key-file={pki / 'ca.key'}",
                f"--service-cluster-ip-range={SERVICE_SUBNET}",
                f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
                f"--flex-volume-plugin-dir={layout.run / 'kubelet-plugins'}",
                "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller",
            ],
            ready_url="https://127.0.0.1:10257/healthz",
        ),
        Component(
            "kube-scheduler",
            [
                str(bin_dir / "kube-scheduler"),
                f"--kubeconfig={layout.kubeconfig('scheduler')}",
                f"--authentication-kubeconfig={layout.kubeconfig('scheduler')}",
                f"--authorization-kubeconfig={layout.kubeconfig('scheduler')}",
                "--bind-address=127.0.0.1",
                "--leader-elect=false",
            ],
            ready_url="https://127.0.0.1:10259/healthz",
        ),
        *node_agents(layout.node(1)),
    ]


def _health_address(node: Node) -> str:
    return "127.0.0.1" if node.primary else node.ip


def containerd(node: Node) -> Component:
    return Component(
        "containerd",
        ["containerd", f"--config={node.containerd_config}"],
        ready_socket=node.containerd_socket,
    )


def node_agents(node: Node) -> list[Component]:
    """The kubelet and kube-proxy of a node (they start after the control plane)."""
    bin_dir = node.layout.kubernetes_bin
    health = _health_address(node)
    return [
        Component(
            "kubelet",
            [
                str(bin_dir / "kubelet"),
                f"--config={node.kubelet_config}",
                f"--kubeconfig={node.layout.kubeconfig(node.kubelet_user)}",
                f"--root-dir={KUBELET_ROOT}",
                f"--volume-plugin-dir={node.kubelet_plugins}",
                f"--node-ip={node.ip}",
                f"--hostname-override={node.name}",
            ],
            ready_url=f"http://{health}:10248/healthz",
        ),
        Component(
            "kube-proxy",
            [str(bin_dir / "kube-proxy"), f"--config={node.kube_proxy_config}"],
            ready_url=f"http://{health}:10256/healthz",
        ),
    ]


def write_configuration(layout: Layout) -> None:
    """Every file the processes read, except the certificates (see pki.generate)."""
    layout.kubeconfigs.mkdir(parents=True, exist_ok=True)
    for user, cert_stem in KUBECONFIG_USERS.items():
        layout.kubeconfig(user).write_text(yaml.safe_dump(kubeconfig(layout, cert_stem), sort_keys=False))
    layout.admin_kubeconfig.write_text(yaml.safe_dump(kubeconfig(layout, "admin"), sort_keys=False))
    layout.admin_kubeconfig.chmod(0o600)
    write_node_configuration(layout.node(1))


def write_node_configuration(node: Node) -> None:
    """The files a node's containerd, CNI plugins, kubelet and kube-proxy read."""
    node.dir.mkdir(parents=True, exist_ok=True)
    if not node.primary:
        stem = f"{node.kubelet_user}-client"
        config = kubeconfig(node.layout, stem)
        node.layout.kubeconfig(node.kubelet_user).write_text(yaml.safe_dump(config, sort_keys=False))
    node.containerd_config.write_text(containerd_config(node))
    node.cni_config_dir.mkdir(parents=True, exist_ok=True)
    (node.cni_config_dir / "10-kubevirt-py.conflist").write_text(cni_config(node))
    node.kubelet_config.write_text(kubelet_config(node))
    node.kube_proxy_config.write_text(kube_proxy_config(node))
