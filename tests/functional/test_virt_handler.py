"""virt-handler in the cluster: its DaemonSet's pod labels the node schedulable, keeps the heartbeat
annotation fresh, and its device plugins give the node the ``devices.kubevirt.io/*`` resources that
launcher pods request (``vhost-net`` without allocatable devices where the host has no /dev/vhost-net)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from localcluster import kubevirt
from localcluster.handle import Cluster

from kubevirt.virt_operator.resource.daemonset import handler_daemonset
from kubevirt.virt_operator.resource.rbac import handler_rbac


@pytest.fixture(scope="module")
def virt_handler(cluster: Cluster) -> Iterator[str]:
    daemonset = handler_daemonset(kubevirt.INSTALL_NAMESPACE, cluster.image(kubevirt.VIRT_HANDLER))
    kubevirt.deploy_virt_handler(cluster, rbac=handler_rbac(kubevirt.INSTALL_NAMESPACE), daemonset=daemonset)
    yield kubevirt.node_name(cluster)
    kubevirt.remove_virt_handler(cluster)


def _node(cluster: Cluster, name: str) -> dict[str, Any]:
    node = cluster.kubectl_json("get", "node", name)
    assert isinstance(node, dict)
    return node


def test_the_node_is_labelled_schedulable_with_a_heartbeat(cluster: Cluster, virt_handler: str) -> None:
    def labelled() -> bool:
        metadata = _node(cluster, virt_handler)["metadata"]
        return metadata.get("labels", {}).get(
            "kubevirt.io/schedulable"
        ) == "true" and "kubevirt.io/heartbeat" in metadata.get("annotations", {})

    cluster.wait_until("the node is labelled schedulable with a heartbeat", labelled)


def _count(quantity: str) -> int:
    """A resource quantity of whole devices ("1000" or the kubelet's "1k")."""
    return int(quantity[:-1]) * 1000 if quantity.endswith("k") else int(quantity)


def test_device_plugins_advertise_the_host_devices(cluster: Cluster, virt_handler: str) -> None:
    def advertised() -> bool:
        status = _node(cluster, virt_handler)["status"]
        return _count(status.get("allocatable", {}).get("devices.kubevirt.io/tun", "0")) == 1000

    cluster.wait_until("devices.kubevirt.io/tun is allocatable", advertised)
    status = _node(cluster, virt_handler)["status"]
    assert _count(status["capacity"]["devices.kubevirt.io/vhost-net"]) == 1000
    assert _count(status["allocatable"]["devices.kubevirt.io/vhost-net"]) == 0
