"""The VM and status webhooks check volume requests against the VM's running VMI, as KubeVirt does."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubevirt.admission.review import UPDATE, AdmissionRequest, GroupVersionResource
from kubevirt.admission.state import NoClusterState, StaticClusterState
from kubevirt.virt_api.app import build_context
from kubevirt.virt_api.webhooks.routes import STATUS_VALIDATE, VM_VALIDATE, webhook_handlers
from kubevirt.virt_config import ClusterConfig

MIGRATING = "Cannot handle volume requests while VMI migration is in progress"
HOTPLUG = {
    "addVolumeOptions": {
        "name": "hp",
        "disk": {"name": "hp", "disk": {"bus": "scsi"}},
        "volumeSource": {"persistentVolumeClaim": {"claimName": "c"}},
    }
}


def _vm(*, ready: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm1", "namespace": "ns"},
        "spec": {
            "runStrategy": "Always",
            "template": {"spec": {"domain": {"memory": {"guest": "128Mi"}, "devices": {}}}},
        },
        "status": {"ready": ready, "volumeRequests": [HOTPLUG]},
    }


def _vmi(**metadata: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "vm1", "namespace": "ns", **metadata},
        "spec": {"domain": {"memory": {"guest": "128Mi"}, "devices": {}}},
        "status": {"migrationState": {"startTimestamp": "2026-01-01T00:00:00Z"}},
    }


def _answer(path: str, vm: dict[str, Any], state: Any, old: dict[str, Any] | None = None) -> dict[str, Any]:
    handler = webhook_handlers(build_context(ClusterConfig(), state))[path]
    request = AdmissionRequest(
        uid="u",
        operation=UPDATE,
        resource=GroupVersionResource("kubevirt.io", "v1", "virtualmachines"),
        sub_resource="status" if path == STATUS_VALIDATE else "",
        name="vm1",
        namespace="ns",
        object=vm,
        old_object=vm if old is None else old,
    )
    return handler(request).to_dict("u")


@pytest.mark.parametrize("path", [VM_VALIDATE, STATUS_VALIDATE])
def test_a_migrating_vmi_refuses_volume_requests(path: str) -> None:
    answer = _answer(path, _vm(), StaticClusterState(vmis=[_vmi()]))
    assert answer["allowed"] is False
    assert answer["status"]["message"] == MIGRATING


@pytest.mark.parametrize("path", [VM_VALIDATE, STATUS_VALIDATE])
def test_a_vmi_being_deleted_or_a_vm_not_ready_is_not_consulted(path: str) -> None:
    deleting = StaticClusterState(vmis=[_vmi(deletionTimestamp="2026-01-01T00:00:00Z")])
    assert _answer(path, _vm(), deleting)["allowed"] is True
    # Not ready: the VMI is not read at all (a cluster-less context would fail the read).
    assert _answer(path, _vm(ready=False), NoClusterState())["allowed"] is True


@pytest.mark.parametrize("path", [VM_VALIDATE, STATUS_VALIDATE])
def test_an_unreadable_vmi_refuses_with_the_reason(path: str) -> None:
    answer = _answer(path, _vm(), NoClusterState())
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 400
    assert answer["status"]["message"] == "no Kubernetes API configured to look up VirtualMachineInstances"


def test_the_status_webhook_also_checks_a_restore_in_progress() -> None:
    old = _vm(ready=False)
    new = _vm(ready=False)
    new["status"] = {"restoreInProgress": "restore-1"}
    new["spec"]["runStrategy"] = "Halted"
    answer = _answer(STATUS_VALIDATE, new, NoClusterState(), old=old)
    assert answer["allowed"] is False
    assert answer["status"]["message"] == 'Cannot update VM runStrategy until restore "restore-1" completes'
    # Any other change passes.
    same_strategy = copy.deepcopy(new)
    same_strategy["spec"]["runStrategy"] = "Always"
    same_strategy["spec"]["template"]["spec"]["domain"]["memory"]["guest"] = "256Mi"
    assert _answer(STATUS_VALIDATE, same_strategy, NoClusterState(), old=old)["allowed"] is True


def test_the_status_webhook_checks_a_snapshot_in_progress_even_on_a_vm_being_deleted() -> None:
    old = _vm(ready=False)
    new = _vm(ready=False)
    new["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    new["status"] = {"snapshotInProgress": "snap-1"}
    new["spec"]["template"]["spec"]["volumes"] = [{"name": "d", "emptyDisk": {"capacity": "1Gi"}}]
    answer = _answer(STATUS_VALIDATE, new, NoClusterState(), old=old)
    assert answer["allowed"] is False
    assert (
        answer["status"]["message"] == 'Cannot update vm disks or volumes until snapshot "snap-1" completes'
    )
    # The VM webhook lets a VM being deleted through.
    assert _answer(VM_VALIDATE, new, NoClusterState(), old=old)["allowed"] is True
