"""The cluster's processes: their certificates, configuration files and command lines, in start order."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from .layout import (
    APISERVER_PORT,
    BRIDGE,
    ETCD_CLIENT_PORT,
    ETCD_PEER_PORT,
    KUBERNETES_SERVICE_IP,
    NODE_IP,
    PAUSE_IMAGE,
    POD_SUBNET,
    SERVICE_SUBNET,
    Layout,
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
        Leaf("kubelet-client", f"system:node:{node}", ("system:nodes",)),
        Leaf(
            "kubelet-serving",
            f"system:node:{node}",
            ("system:nodes",),
            dns_names=(node, "localhost"),
            ip_addresses=(NODE_IP, "127.0.0.1"),
            server=True,
            client=False,
        ),
        # Aggregated APIs (subresources.kubevirt.io) trust requests that carry this front-proxy identity.
        Leaf("front-proxy-client", "front-proxy-client", ca="front-proxy-ca"),
    ]


AUTHORITIES = ("ca", "front-proxy-ca")
CNI_NETWORK = "kubevirt-py"
KUBECONFIG_USERS = {
    "admin": "admin",
    "controller-manager": "controller-manager",
    "scheduler": "scheduler",
    "kubelet": "kubelet-client",
    "kube-proxy": "kube-proxy",
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


def containerd_config(layout: Layout) -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{layout.containerd_root}"
state = "{layout.containerd_state}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{layout.containerd_socket}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{layout.containerd_state}/opt"

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
        Root = "{layout.containerd_state}/runc"
  [{cri}.cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{layout.cni_config_dir}"
"""


def cni_config(layout: Layout) -> str:
    gateway = NODE_IP
    network = {
        "cniVersion": "0.4.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                # Pods only talk to the host and each other: no masquerading, so no iptables rules.
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET, "gateway": gateway}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(layout.cni_ipam_dir),
                },
            }
        ],
    }
    return json.dumps(network, indent=2)


def kubelet_config(layout: Layout) -> str:
    pki = layout.pki
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": NODE_IP,
        "healthzBindAddress": "127.0.0.1",
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": str(pki / "kubelet-serving.crt"),
        "tlsPrivateKeyFile": str(pki / "kubelet-serving.key"),
        "cgroupDriver": "cgroupfs",
        "containerRuntimeEndpoint": f"unix://{layout.containerd_socket}",
        "failSwapOn": False,
        "podLogsDir": str(layout.pod_logs),
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
        "clusterDomain": "cluster.local",
        "hairpinMode": "hairpin-veth",
        "podCIDR": POD_SUBNET,
        "maxPods": 110,
    }
    return yaml.safe_dump(config, sort_keys=False)


def kube_proxy_config(layout: Layout) -> str:
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(layout.kubeconfig("kube-proxy"))},
        "hostnameOverride": layout.node_name,
        "bindAddress": NODE_IP,
        "healthzBindAddress": "127.0.0.1:10256",
        "metricsBindAddress": "127.0.0.1:10249",
        "mode": "iptables",
        "clusterCIDR": POD_SUBNET,
        # Pods and the Service's endpoints share one bridge: without br_netfilter a reply would bypass
        # the host's connection tracking unless the request is masqueraded.
        "iptables": {"masqueradeAll": True, "localhostNodePorts": False},
        "nodePortAddresses": [f"{NODE_IP}/32"],
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
        Component(
            "containerd",
            ["containerd", f"--config={layout.containerd_config}"],
            ready_socket=layout.containerd_socket,
        ),
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
        Component(
            "kubelet",
            [
                str(bin_dir / "kubelet"),
                f"--config={layout.run / 'kubelet.yaml'}",
                f"--kubeconfig={layout.kubeconfig('kubelet')}",
                f"--root-dir={layout.kubelet_root}",
                f"--volume-plugin-dir={layout.run / 'kubelet-plugins'}",
                f"--node-ip={NODE_IP}",
                f"--hostname-override={layout.node_name}",
            ],
            ready_url="http://127.0.0.1:10248/healthz",
        ),
        Component(
            "kube-proxy",
            [str(bin_dir / "kube-proxy"), f"--config={layout.run / 'kube-proxy.yaml'}"],
            ready_url="http://127.0.0.1:10256/healthz",
        ),
    ]


def write_configuration(layout: Layout) -> None:
    """Every file the processes read, except the certificates (see pki.generate)."""
    layout.kubeconfigs.mkdir(parents=True, exist_ok=True)
    for user, cert_stem in KUBECONFIG_USERS.items():
        layout.kubeconfig(user).write_text(yaml.safe_dump(kubeconfig(layout, cert_stem), sort_keys=False))
    layout.admin_kubeconfig.write_text(yaml.safe_dump(kubeconfig(layout, "admin"), sort_keys=False))
    layout.admin_kubeconfig.chmod(0o600)
    layout.containerd_config.write_text(containerd_config(layout))
    layout.cni_config_dir.mkdir(parents=True, exist_ok=True)
    (layout.cni_config_dir / "10-kubevirt-py.conflist").write_text(cni_config(layout))
    (layout.run / "kubelet.yaml").write_text(kubelet_config(layout))
    (layout.run / "kube-proxy.yaml").write_text(kube_proxy_config(layout))
