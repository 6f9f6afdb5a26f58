"""virt-controller in the cluster: two replicas of its image elect one leader, which turns VMs into VMIs and
VMIs into virt-launcher pods that the real scheduler binds to the node; replica sets and pools get their
members; a leader killed mid-flow is replaced without duplicates.

virt-handler runs on the node (labels, heartbeat, device plugins) and the KubeVirt CR asks for emulation,
so a scheduled VMI may go on to Running under QEMU's TCG; VMIs that must keep still select a label no node
has.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from localcluster import kubevirt
from localcluster.handle import Cluster
from localcluster.vmis import wait_vmi_phase

from kubevirt.virt_operator.resource.daemonset import handler_daemonset
from kubevirt.virt_operator.resource.rbac import controller_rbac, handler_rbac

LAUNCHER = "localhost/kubevirt/virt-launcher:devel"
# A label no node has: VMIs selecting it stay Scheduling, which keeps their objects still for counting.
NOWHERE = {"kubevirt.io/functional-test": "nowhere"}


@pytest.fixture(scope="module")
def node(cluster: Cluster, crds: list[str]) -> Iterator[str]:
    """The node with virt-handler on it (labels, heartbeat, device plugins), guests under QEMU's TCG."""
    kubevirt.apply_emulation_config(cluster)
    daemonset = handler_daemonset(kubevirt.INSTALL_NAMESPACE, cluster.image(kubevirt.VIRT_HANDLER))
    kubevirt.deploy_virt_handler(cluster, rbac=handler_rbac(kubevirt.INSTALL_NAMESPACE), daemonset=daemonset)
    name = kubevirt.node_name(cluster)
    cluster.wait_until(
        "virt-handler labels the node schedulable",
        lambda: (
            cluster.kubectl_json("get", "node", name)["metadata"]["labels"].get(  # type: ignore[index]
                "kubevirt.io/schedulable"
            )
            == "true"
        ),
    )
    yield name
    kubevirt.remove_virt_handler(cluster)
    kubevirt.remove_emulation_config(cluster)


@pytest.fixture(scope="module")
def virt_controller(cluster: Cluster, crds: list[str], node: str) -> Iterator[None]:
    rbac = controller_rbac(kubevirt.INSTALL_NAMESPACE)
    kubevirt.deploy_virt_controller(cluster, rbac=rbac, launcher_image=LAUNCHER)
    yield
    kubevirt.remove_virt_controller(cluster)


def _pods(cluster: Cluster, namespace: str, selector: str) -> list[dict[str, Any]]:
    items = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", selector)["items"]
    assert isinstance(items, list)
    return items


def _vm(name: str, run_strategy: str, *, node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "domain": {"resources": {"requests": {"memory": "128Mi"}}, "devices": {}},
        "terminationGracePeriodSeconds": 0,
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {
            "runStrategy": run_strategy,
            "template": {"metadata": {"labels": {"vm": name}}, "spec": spec},
        },
    }


def _items(cluster: Cluster, namespace: str, kind: str) -> list[dict[str, Any]]:
    items = cluster.kubectl_json("get", kind, "-n", namespace)["items"]
    assert isinstance(items, list)
    return items


def _apply(cluster: Cluster, namespace: str, *objects: dict[str, Any]) -> None:
    cluster.kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}),
    )


def test_two_replicas_elect_one_leader(cluster: Cluster, virt_controller: None) -> None:
    assert len(kubevirt.controller_leaders(cluster)) == 1
    lease = cluster.kubectl_json("get", "lease", "virt-controller", "-n", kubevirt.INSTALL_NAMESPACE)
    assert lease["spec"]["holderIdentity"] == kubevirt.controller_leaders(cluster)[0]  # type: ignore[index]


def test_vm_always_gets_a_vmi_and_a_scheduled_launcher_pod(
    cluster: Cluster, virt_controller: None, node: str, namespace: str
) -> None:
    _apply(cluster, namespace, _vm("always", "Always"))

    def scheduled() -> bool:
        pods = _pods(cluster, namespace, "kubevirt.io=virt-launcher,vm.kubevirt.io/name=always")
        return len(pods) == 1 and pods[0]["spec"].get("nodeName") == node

    cluster.wait_until("the launcher pod is bound to the node", scheduled)
    vmi = cluster.find("vmi", "always", namespace)
    assert vmi is not None
    owner = vmi["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("VirtualMachine", "always", True)
    pod = _pods(cluster, namespace, "kubevirt.io=virt-launcher")[0]
    assert pod["metadata"]["labels"]["kubevirt.io/created-by"] == vmi["metadata"]["uid"]
    assert pod["metadata"]["annotations"]["kubevirt.io/domain"] == "always"
    assert pod["spec"]["containers"][0]["image"] == LAUNCHER
    # Leaving Pending: the launcher pod was created and the scheduler took it.
    wait_vmi_phase(cluster, "always", namespace, "Scheduling", "Scheduled", "Running", timeout=90)
    vm = cluster.find("vm", "always", namespace)
    assert vm is not None
    assert vm["status"]["created"] is True
    assert vm["status"]["printableStatus"] in ("Starting", "Running")


def test_halted_deletes_the_vmi_and_rerun_on_failure_recreates_it(
    cluster: Cluster, virt_controller: None, namespace: str
) -> None:
    _apply(cluster, namespace, _vm("rerun", "RerunOnFailure"))
    cluster.wait_until(
        "a launcher pod", lambda: len(_pods(cluster, namespace, "kubevirt.io=virt-launcher")) == 1
    )
    first = cluster.find("vmi", "rerun", namespace)
    assert first is not None
    # The launcher pod vanishing fails the VMI; RerunOnFailure then starts a new one.
    cluster.kubectl(
        "delete", "pods", "-n", namespace, "-l", "kubevirt.io=virt-launcher", "--grace-period=0", "--force"
    )

    def replaced() -> bool:
        vmi = cluster.find("vmi", "rerun", namespace)
        return vmi is not None and vmi["metadata"]["uid"] != first["metadata"]["uid"]

    cluster.wait_until("a new VMI after the failure", replaced, timeout=120)

    cluster.kubectl(
        "patch", "vm", "rerun", "-n", namespace, "--type=merge", "-p", '{"spec":{"runStrategy":"Halted"}}'
    )
    cluster.wait_until("the VMI is gone", lambda: cluster.find("vmi", "rerun", namespace) is None)
    cluster.wait_until(
        "the VM reports Stopped",
        lambda: (
            (cluster.find("vm", "rerun", namespace) or {}).get("status", {}).get("printableStatus")
            == "Stopped"
        ),
    )


def test_replica_set_scales_up_and_down(cluster: Cluster, virt_controller: None, namespace: str) -> None:
    template = _vm("x", "Always", node_selector=NOWHERE)["spec"]["template"]
    template["metadata"]["labels"] = {"rs": "three"}
    replica_set = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstanceReplicaSet",
        "metadata": {"name": "three"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"rs": "three"}}, "template": template},
    }
    _apply(cluster, namespace, replica_set)
    cluster.wait_until("3 VMIs", lambda: len(_items(cluster, namespace, "vmi")) == 3)
    for vmi in _items(cluster, namespace, "vmi"):
        assert vmi["metadata"]["name"].startswith("three")
        assert vmi["metadata"]["ownerReferences"][0]["kind"] == "VirtualMachineInstanceReplicaSet"
    cluster.wait_until(
        "status.replicas 3",
        lambda: (cluster.find("vmirs", "three", namespace) or {}).get("status", {}).get("replicas") == 3,
    )
    cluster.kubectl(
        "patch", "vmirs", "three", "-n", namespace, "--type=merge", "-p", '{"spec":{"replicas":1}}'
    )
    cluster.wait_until(
        "1 VMI left",
        lambda: (
            len([v for v in _items(cluster, namespace, "vmi") if not v["metadata"].get("deletionTimestamp")])
            == 1
        ),
    )


def test_pool_creates_its_vms(cluster: Cluster, virt_controller: None, namespace: str) -> None:
    vm_template = _vm("x", "Halted")["spec"]
    vm_template["template"]["metadata"]["labels"] = {"pool": "two"}
    pool = {
        "apiVersion": "pool.kubevirt.io/v1alpha1",
        "kind": "VirtualMachinePool",
        "metadata": {"name": "two"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"pool": "two"}},
            "virtualMachineTemplate": {"metadata": {"labels": {"pool": "two"}}, "spec": vm_template},
        },
    }
    _apply(cluster, namespace, pool)
    cluster.wait_until(
        "VMs two-0 and two-1",
        lambda: (
            sorted(vm["metadata"]["name"] for vm in _items(cluster, namespace, "vm")) == ["two-0", "two-1"]
        ),
    )


def test_a_leader_killed_mid_flow_leaves_no_duplicates(
    cluster: Cluster, virt_controller: None, namespace: str
) -> None:
    names = [f"flow-{index}" for index in range(6)]
    _apply(cluster, namespace, *(_vm(name, "Always", node_selector=NOWHERE) for name in names))
    time.sleep(1.0)  # mid-flow: some VMIs and pods exist, others not yet
    (leader,) = kubevirt.controller_leaders(cluster)
    cluster.kubectl("delete", "pod", leader, "-n", kubevirt.INSTALL_NAMESPACE, "--grace-period=0", "--force")
    killed = time.monotonic()
    # The standby takes over once the dead leader's 15 s lease runs out.
    cluster.wait_until(
        "a new leader",
        lambda: [name for name in kubevirt.controller_leaders(cluster) if name != leader] != [],
        45,
    )
    print(f"new leader after {time.monotonic() - killed:.1f} s")

    def converged() -> bool:
        vmis = _items(cluster, namespace, "vmi")
        pods = _pods(cluster, namespace, "kubevirt.io=virt-launcher")
        return sorted(v["metadata"]["name"] for v in vmis) == names and len(pods) == len(names)

    cluster.wait_until("every VM has its VMI and pod under the new leader", converged, timeout=120)
    time.sleep(3.0)  # a duplicate would show up now if any controller acted on a stale cache
    pods = _pods(cluster, namespace, "kubevirt.io=virt-launcher")
    creators = [pod["metadata"]["labels"]["kubevirt.io/created-by"] for pod in pods]
    assert len(creators) == len(set(creators)) == len(names)
