"""The cluster itself: its first node Ready, pods reach the apiserver through the kubernetes Service, and
resolve Service names through the cluster DNS."""

from __future__ import annotations

import json
import subprocess
import time

from localcluster import dns, processes
from localcluster.csi import deploy as csi_deploy
from localcluster.handle import Cluster
from localcluster.layout import DNS_SERVICE_IP, KUBERNETES_SERVICE_IP, MAX_NODES, REPO


def test_the_first_node_is_ready(cluster: Cluster) -> None:
    nodes = cluster.kubectl_json("get", "nodes")["items"]
    assert isinstance(nodes, list)
    # One node unless the cluster was brought up (or left) with more: hack/cluster-up --nodes N.
    by_name = {node["metadata"]["name"]: node for node in nodes}
    assert set(by_name) <= {cluster.layout.node(i).name for i in range(1, MAX_NODES + 1)}
    first = by_name[cluster.layout.node_name]
    conditions = {c["type"]: c["status"] for c in first["status"]["conditions"]}
    assert conditions["Ready"] == "True"
    assert first["status"]["nodeInfo"]["kubeletVersion"] == cluster.layout.kubernetes_version


def test_pod_reaches_apiserver_through_kubernetes_service(cluster: Cluster, namespace: str) -> None:
    # The image's own Python and kubernetes client, with the pod's service account, in-cluster config.
    script = (
        "from kubernetes import client, config; config.load_incluster_config(); "
        "print('server-version', client.VersionApi().get_code().git_version)"
    )
    cluster.kubectl(
        "run", "whoami", "-n", namespace, f"--image={cluster.image('virt-api')}", "--image-pull-policy=Never",
        "--restart=Never", "--command", "--", "/opt/kubevirt/bin/python", "-c", script,
    )  # fmt: skip
    deadline = time.monotonic() + 90
    phase = ""
    while time.monotonic() < deadline:
        phase = str(cluster.kubectl_json("get", "pod", "whoami", "-n", namespace)["status"].get("phase", ""))
        if phase in ("Succeeded", "Failed"):
            break
        time.sleep(0.5)
    logs = cluster.kubectl("logs", "whoami", "-n", namespace).stdout
    assert phase == "Succeeded", logs
    assert f"server-version {cluster.layout.kubernetes_version}" in logs


def test_pods_resolve_service_names_through_the_cluster_dns(cluster: Cluster, namespace: str) -> None:
    """The kubelet points pods at kube-dns; CoreDNS answers the cluster zone (a short name through the
    pod's search path too) and a Service made a moment ago."""
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "dns-probe"},
        "spec": {"selector": {"app": "none"}, "ports": [{"port": 80}]},
    }
    cluster.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(service))
    service_ip = (cluster.find("service", "dns-probe", namespace) or {})["spec"]["clusterIP"]
    script = (
        "import socket; "
        "print(open('/etc/resolv.conf').read()); "
        "print('kubernetes', socket.gethostbyname('kubernetes.default')); "
        f"print('probe', socket.gethostbyname('dns-probe.{namespace}.svc'))"
    )
    image = cluster.image("virt-api")
    cluster.kubectl(
        "run", "resolver", "-n", namespace, f"--image={image}", "--image-pull-policy=Never",
        "--restart=Never", "--command", "--", "/opt/kubevirt/bin/python", "-c", script,
    )  # fmt: skip

    def ended() -> bool:
        pod = cluster.find("pod", "resolver", namespace) or {}
        return pod.get("status", {}).get("phase") in ("Succeeded", "Failed")

    cluster.wait_until("the resolver pod ends", ended, 90)
    logs = cluster.kubectl("logs", "resolver", "-n", namespace).stdout
    assert f"nameserver {DNS_SERVICE_IP}" in logs
    assert f"kubernetes {KUBERNETES_SERVICE_IP}" in logs
    assert f"probe {service_ip}" in logs


def test_cluster_up_again_keeps_the_running_cluster(cluster: Cluster) -> None:
    before = {record.name: record.pid for record in processes.recorded(cluster.layout.pids)}
    result = subprocess.run([str(REPO / "hack" / "cluster-up")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "already running" in result.stdout
    after = {record.name: record.pid for record in processes.recorded(cluster.layout.pids)}
    assert after == before
    expected = {"etcd", "containerd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}
    storage = {component.name for component in csi_deploy.processes(cluster.layout)}  # the CSI driver's
    assert storage >= {"csi-provisioner", "csi-resizer", "csi-snapshotter", "snapshot-controller"}
    assert set(after) == expected | {"kubelet", "kube-proxy", dns.PROCESS} | storage


def test_exec_streams_through_apiserver_and_kubelet(cluster: Cluster, namespace: str) -> None:
    image = f"--image={cluster.image('virt-api')}"
    cluster.kubectl(
        "run", "sleeper", "-n", namespace, image, "--image-pull-policy=Never", "--restart=Never",
        "--command", "--", "sleep", "300",
    )  # fmt: skip
    cluster.kubectl("wait", "--for=condition=Ready", "pod/sleeper", "-n", namespace, "--timeout=90s")
    result = cluster.kubectl(
        "exec", "sleeper", "-n", namespace, "--", "/opt/kubevirt/bin/virt-api", "--version"
    )
    assert result.stdout.startswith("virt-api ")
