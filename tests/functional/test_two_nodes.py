"""The two-node cluster (hack/cluster-up --nodes 2): both nodes Ready, pods on either node reach pods on
the other directly and through Services (kube-proxy on both nodes), and the apiserver's Service.

One web pod per node serves a page naming its node; the tests fetch across nodes with ``kubectl exec``
(which also streams through the second node's kubelet).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster.handle import Cluster
from localcluster.layout import KUBERNETES_SERVICE_IP

from kubevirt_testing.waiting import first_result

JSON = dict[str, Any]
PORT = 8000
READY_TIMEOUT = 120


def _web(cluster: Cluster, name: str, node: str) -> list[JSON]:
    serve = f"mkdir -p /w && echo {node} > /w/node && cd /w && exec python3 -m http.server {PORT}"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [
                {
                    "name": "web",
                    "image": cluster.image("virt-launcher"),
                    "imagePullPolicy": "Never",
                    "command": ["/bin/sh", "-c", serve],
                    "ports": [{"containerPort": PORT}],
                    "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 1},
                }
            ],
            "terminationGracePeriodSeconds": 0,
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": PORT, "targetPort": PORT}]},
    }
    return [pod, service]


@pytest.fixture(scope="module")
def node_names(two_node_cluster: Cluster) -> tuple[str, str]:
    layout = two_node_cluster.layout
    return layout.node(1).name, layout.node(2).name


@pytest.fixture(scope="module")
def web(two_node_cluster: Cluster, node_names: tuple[str, str]) -> Iterator[tuple[str, dict[str, JSON]]]:
    """The namespace and, per node name, its web pod (Ready)."""
    cluster = two_node_cluster
    namespace = f"ft-two-nodes-{os.getpid() % 100000}"
    cluster.fresh_namespace(namespace)
    objects = [obj for index, node in enumerate(node_names, 1) for obj in _web(cluster, f"web-{index}", node)]
    cluster.kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}),
    )
    try:
        for index in (1, 2):
            timeout = f"--timeout={READY_TIMEOUT}s"
            ready = "--for=condition=Ready"
            result = cluster.kubectl("wait", "-n", namespace, ready, f"pod/web-{index}", timeout, check=False)
            if result.returncode != 0:
                described = cluster.kubectl(
                    "describe", "pod", f"web-{index}", "-n", namespace, check=False
                ).stdout
                raise AssertionError(f"web-{index} not Ready: {result.stderr}\n{described[-3000:]}")
        pods: dict[str, JSON] = {
            node: cluster.kubectl_json("get", "pod", f"web-{i}", "-n", namespace)
            for i, node in enumerate(node_names, 1)
        }
        yield namespace, pods
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def _fetch(cluster: Cluster, namespace: str, pod: str, url: str) -> subprocess.CompletedProcess[str]:
    """An HTTP(S) GET from inside ``pod``: the body, or the error (certificates are not checked)."""
    fetch = (
        "import ssl, urllib.request; context = ssl._create_unverified_context(); "
        f"print(urllib.request.urlopen({url!r}, timeout=10, context=context).read().decode())"
    )
    return cluster.kubectl("exec", "-n", namespace, pod, "--", "python3", "-c", fetch, check=False)


def _fetched(cluster: Cluster, namespace: str, pod: str, url: str) -> str:
    """The body, retried for a while (kube-proxy programs a new Service within a second or two)."""
    last: list[str] = []

    def attempt() -> str:
        result = _fetch(cluster, namespace, pod, url)
        last[:] = [result.stderr[-500:]]
        return result.stdout if result.returncode == 0 else ""

    try:
        return first_result(f"{url} from {pod}", attempt, 30, 1.0)
    except AssertionError as error:
        raise AssertionError(f"{error}; last error: {last}") from None


def test_both_nodes_are_ready_with_their_own_addresses(
    two_node_cluster: Cluster, node_names: tuple[str, str]
) -> None:
    listed = json.loads(two_node_cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    nodes = {node["metadata"]["name"]: node for node in listed}
    assert set(node_names) <= set(nodes)
    addresses = set()
    for index, name in enumerate(node_names, 1):
        status = nodes[name]["status"]
        conditions = {c["type"]: c["status"] for c in status["conditions"]}
        assert conditions["Ready"] == "True", f"{name}: {status['conditions']}"
        internal = [a["address"] for a in status["addresses"] if a["type"] == "InternalIP"]
        assert internal == [two_node_cluster.layout.node(index).ip]
        addresses.add(internal[0])
    assert len(addresses) == 2


def test_pods_land_on_their_nodes_in_separate_subnets(
    two_node_cluster: Cluster, node_names: tuple[str, str], web: tuple[str, dict[str, JSON]]
) -> None:
    _, pods = web
    for index, name in enumerate(node_names, 1):
        node = two_node_cluster.layout.node(index)
        assert pods[name]["spec"]["nodeName"] == name
        prefix = node.pod_subnet.rsplit(".", 1)[0] + "."
        assert pods[name]["status"]["podIP"].startswith(prefix), (name, pods[name]["status"]["podIP"])


@pytest.mark.parametrize(("client", "server"), [(2, 1), (1, 2)], ids=["node2-to-node1", "node1-to-node2"])
def test_pod_reaches_a_pod_on_the_other_node(
    two_node_cluster: Cluster,
    node_names: tuple[str, str],
    web: tuple[str, dict[str, JSON]],
    client: int,
    server: int,
) -> None:
    namespace, pods = web
    server_ip = pods[node_names[server - 1]]["status"]["podIP"]
    body = _fetched(two_node_cluster, namespace, f"web-{client}", f"http://{server_ip}:{PORT}/node")
    assert body.strip() == node_names[server - 1]


@pytest.mark.parametrize(("client", "server"), [(2, 1), (1, 2)], ids=["node2-to-node1", "node1-to-node2"])
def test_pod_reaches_a_service_backed_on_the_other_node(
    two_node_cluster: Cluster,
    node_names: tuple[str, str],
    web: tuple[str, dict[str, JSON]],
    client: int,
    server: int,
) -> None:
    namespace, _ = web
    service = two_node_cluster.kubectl_json("get", "service", f"web-{server}", "-n", namespace)
    cluster_ip = service["spec"]["clusterIP"]  # type: ignore[index]
    body = _fetched(two_node_cluster, namespace, f"web-{client}", f"http://{cluster_ip}:{PORT}/node")
    assert body.strip() == node_names[server - 1]


def test_pod_on_node2_reaches_the_apiserver_through_the_kubernetes_service(
    two_node_cluster: Cluster, web: tuple[str, dict[str, JSON]]
) -> None:
    namespace, _ = web
    body = _fetched(two_node_cluster, namespace, "web-2", f"https://{KUBERNETES_SERVICE_IP}:443/version")
    assert json.loads(body)["gitVersion"] == two_node_cluster.layout.kubernetes_version
