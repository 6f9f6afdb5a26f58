"""The disruption-budget controller deletes PodDisruptionBudgets a VMI controls, and only those."""

from __future__ import annotations

import pytest

from kubevirt.client import POD_DISRUPTION_BUDGETS, VIRTUAL_MACHINE_INSTANCES
from kubevirt.client.errors import ForbiddenError
from kubevirt.virt_controller.watch.disruptionbudget import DisruptionBudgetController

from .fakes import JSON, Cluster, FakeEvents, FakeQueue

NS = "default"


def pdb(name: str, owner_kind: str, owner: str) -> JSON:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": name,
            "namespace": NS,
            "ownerReferences": [
                {
                    "apiVersion": "kubevirt.io/v1",
                    "kind": owner_kind,
                    "name": owner,
                    "uid": "u",
                    "controller": True,
                }
            ],
        },
        "spec": {"minAvailable": 2},
    }


def world() -> tuple[Cluster, DisruptionBudgetController, FakeEvents, FakeQueue]:
    cluster = Cluster()
    events = FakeEvents()
    queue = FakeQueue()
    pdbs = cluster.informer(POD_DISRUPTION_BUDGETS)
    vmis = cluster.informer(VIRTUAL_MACHINE_INSTANCES)
    controller = DisruptionBudgetController(
        api=cluster.api, events=events, pdb_store=pdbs.store, vmi_store=vmis.store, enqueue=queue.add
    )
    pdbs.add_event_handler(controller.on_pdb_add, controller.on_pdb_update, controller.on_pdb_delete)
    vmis.add_event_handler(controller.on_vmi_add, controller.on_vmi_update, controller.on_vmi_delete)
    cluster.api.put(
        VIRTUAL_MACHINE_INSTANCES,
        {"metadata": {"name": "vm1", "namespace": NS}, "spec": {"domain": {"devices": {}}}},
    )
    return cluster, controller, events, queue


def drain(cluster: Cluster, controller: DisruptionBudgetController, queue: FakeQueue) -> None:
    cluster.sync()
    while (key := queue.pop()) is not None:
        controller.reconcile(key)
        cluster.sync()


def test_a_pdb_controlled_by_a_vmi_is_deleted_with_an_event() -> None:
    cluster, controller, events, queue = world()
    cluster.api.put(
        POD_DISRUPTION_BUDGETS, pdb("kubevirt-disruption-budget-abcde", "VirtualMachineInstance", "vm1")
    )
    cluster.api.put(POD_DISRUPTION_BUDGETS, pdb("someone-elses", "Deployment", "vm1"))
    cluster.api.put(POD_DISRUPTION_BUDGETS, pdb("other-vmi", "VirtualMachineInstance", "vm2"))
    drain(cluster, controller, queue)
    # vm2's PDB goes too: its VMI is gone, the PDB is a leftover all the same.
    assert [p["metadata"]["name"] for p in cluster.api.find(POD_DISRUPTION_BUDGETS, NS)] == ["someone-elses"]
    assert (
        "default/vm1",
        "Normal",
        "SuccessfulDelete",
        "Deleted PodDisruptionBudget kubevirt-disruption-budget-abcde",
    ) in events.recorded


def test_a_failed_delete_is_reported_and_retried() -> None:
    cluster, controller, events, queue = world()
    cluster.api.put(
        POD_DISRUPTION_BUDGETS, pdb("kubevirt-disruption-budget-x", "VirtualMachineInstance", "vm1")
    )
    cluster.sync()
    cluster.api.fail_next[("delete", "poddisruptionbudgets")] = ForbiddenError(403, "Forbidden", "no")
    key = queue.pop()
    assert key == "default/vm1"
    with pytest.raises(RuntimeError, match="kubevirt-disruption-budget-x"):
        controller.reconcile(key)
    assert any(reason == "FailedDelete" for _, _, reason, _ in events.recorded)
    controller.reconcile(key)
    assert cluster.api.find(POD_DISRUPTION_BUDGETS, NS) == []
