"""virt-handler in the cluster: its DaemonSet's pod labels the node schedulable, keeps the heartbeat
annotation fresh, and its device plugins give the node the ``devices.kubevirt.io/*`` resources that
launcher pods request (``vhost-net`` without allocatable devices where the host has no /dev/vhost-net).
With virt-controller beside it, a VMI's launcher pod starts QEMU through the handler's sync and the VMI
turns Running; deleting the VMI takes the pod and QEMU away."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster import kubevirt
from localcluster.handle import Cluster

from kubevirt.virt_operator.resource.daemonset import handler_daemonset
from kubevirt.virt_operator.resource.rbac import controller_rbac, handler_rbac

LAUNCHER = "localhost/kubevirt/virt-launcher:devel"


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


@pytest.fixture(scope="module")
def virt_controller(cluster: Cluster, crds: list[str], virt_handler: str) -> Iterator[None]:
    kubevirt.apply_emulation_config(cluster)
    kubevirt.deploy_virt_controller(
        cluster, rbac=controller_rbac(kubevirt.INSTALL_NAMESPACE), launcher_image=LAUNCHER, replicas=1
    )
    yield
    kubevirt.remove_virt_controller(cluster)
    kubevirt.remove_emulation_config(cluster)


def _qemu_of(namespace: str, name: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", f"guest={namespace}_{name},"], capture_output=True, text=True)
    return found.stdout.split()


def test_a_vmi_runs_on_the_node_and_stops_when_deleted(
    cluster: Cluster, virt_controller: None, virt_handler: str, namespace: str
) -> None:
    # No disk: QEMU runs its firmware, which is all this test needs from a guest.
    vmi = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "bare"},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "domain": {"resources": {"requests": {"memory": "128Mi"}}, "devices": {}},
        },
    }
    cluster.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(vmi))
    cluster.wait_until(
        "the VMI is Running",
        lambda: (
            ((cluster.find("vmi", "bare", namespace) or {}).get("status") or {}).get("phase") == "Running"
        ),
        timeout=180,
    )
    status = (cluster.find("vmi", "bare", namespace) or {})["status"]
    assert status["nodeName"] == virt_handler
    assert [p["phase"] for p in status["phaseTransitionTimestamps"]][-2:] == ["Scheduled", "Running"]
    assert len(_qemu_of(namespace, "bare")) == 1

    cluster.kubectl("delete", "vmi", "bare", "-n", namespace, "--wait=true")
    cluster.wait_until(
        "the launcher pod is gone",
        lambda: not cluster.kubectl_json("get", "pods", "-n", namespace)["items"],
        timeout=120,
    )
    assert _qemu_of(namespace, "bare") == []
