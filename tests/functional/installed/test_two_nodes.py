"""KubeVirt on the two-node cluster: virt-handler runs on both nodes, and a VMI of the test guest pinned to
the second node (masquerade on the pod network) reaches Running and serves HTTP to a pod on the first node.
That proves the second node's own kubelet, /var/lib/kubelet, /var/run/kubevirt* and containerDisk mounts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster import install
from localcluster import migration as mig
from localcluster.handle import Cluster

from kubevirt_testing.waiting import first_result

JSON = dict[str, Any]
RUNNING_TIMEOUT = 180.0
HANDLER_TIMEOUT = 240.0
GUEST = "node2-guest"
CLIENT = "client"
MARKER = "served-from-the-second-node"


def _pod_ready(pod: JSON) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _handler_nodes(cluster: Cluster) -> set[str]:
    pods = _items(cluster, "pods", "-n", install.NAMESPACE, "-l", f"kubevirt.io={install.HANDLER}")
    return {p["spec"].get("nodeName", "") for p in pods if _pod_ready(p)}


def _items(cluster: Cluster, *args: str) -> list[JSON]:
    items: list[JSON] = json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)["items"]
    return items


@pytest.fixture(scope="module")
def nodes(kubevirt: float, two_node_cluster: Cluster) -> tuple[str, str]:
    """Node names, once KubeVirt is installed (before the second node joins, when this module installs it:
    its Deployments then stay on the first node, which outlives the second) and the second node is there."""
    layout = two_node_cluster.layout
    return layout.node(1).name, layout.node(2).name


@pytest.fixture(scope="module")
def place(two_node_cluster: Cluster, nodes: tuple[str, str]) -> Iterator[str]:
    cluster = two_node_cluster
    namespace = f"ft-kv-two-nodes-{os.getpid() % 100000}"
    cluster.fresh_namespace(namespace)
    yield namespace
    cluster.kubectl("delete", "vmi", GUEST, "-n", namespace, "--timeout=120s", check=False)
    cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def _vmi(node: str) -> JSON:
    spec = mig.guest_vmi_spec(f"#!/bin/sh\necho {MARKER} > /www/marker\n")
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": GUEST},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, **spec},
    }


def _client(cluster: Cluster, node: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": CLIENT},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [
                {
                    "name": "client",
                    "image": cluster.image("virt-launcher"),
                    "imagePullPolicy": "Never",
                    "command": ["sleep", "3600"],
                }
            ],
            "terminationGracePeriodSeconds": 0,
        },
    }


@pytest.fixture(scope="module")
def guest(two_node_cluster: Cluster, nodes: tuple[str, str], place: str) -> JSON:
    """The VMI on the second node, Running (with the client pod on the first node started meanwhile)."""
    cluster = two_node_cluster
    first_result(
        f"virt-handler Ready on {nodes}", lambda: set(nodes) <= _handler_nodes(cluster), HANDLER_TIMEOUT, 2.0
    )
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(_vmi(nodes[1])))
    cluster.kubectl("create", "-n", place, "-f", "-", stdin=json.dumps(_client(cluster, nodes[0])))

    def running() -> JSON:
        found = cluster.find("vmi", GUEST, place) or {}
        phase = found.get("status", {}).get("phase")
        assert phase != "Failed", f"VMI {GUEST} failed: {json.dumps(found.get('status'))}"
        return found if phase == "Running" else {}

    vmi: JSON = first_result(f"VMI {GUEST} Running", running, RUNNING_TIMEOUT, 2.0)
    return vmi


def test_virt_handler_is_ready_on_both_nodes(two_node_cluster: Cluster, nodes: tuple[str, str]) -> None:
    found = first_result(
        "virt-handler Ready on both nodes",
        lambda: set(nodes) <= _handler_nodes(two_node_cluster),
        HANDLER_TIMEOUT,
        2.0,
    )
    assert found


def test_vmi_pinned_to_the_second_node_runs_there(guest: JSON, nodes: tuple[str, str]) -> None:
    assert guest["status"]["nodeName"] == nodes[1]


def test_guest_on_the_second_node_serves_http_to_a_pod_on_the_first(
    two_node_cluster: Cluster, nodes: tuple[str, str], place: str, guest: JSON
) -> None:
    cluster = two_node_cluster
    created_by = f"kubevirt.io/created-by={guest['metadata']['uid']}"
    launcher = _items(cluster, "pods", "-n", place, "-l", created_by)[0]
    assert launcher["spec"]["nodeName"] == nodes[1]
    cluster.kubectl("wait", "-n", place, "--for=condition=Ready", f"pod/{CLIENT}", "--timeout=120s")
    client = cluster.find("pod", CLIENT, place)
    assert client is not None
    assert client["spec"]["nodeName"] == nodes[0]
    url = f"http://{launcher['status']['podIP']}:80/marker"
    fetch = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=10).read().decode())"

    def attempt() -> str:
        result = cluster.kubectl("exec", "-n", place, CLIENT, "--", "python3", "-c", fetch, check=False)
        return result.stdout if result.returncode == 0 else ""

    body = first_result(f"{url} from {CLIENT} on {nodes[0]}", attempt, RUNNING_TIMEOUT, 2.0)
    assert body.strip() == MARKER
