"""The VM controller's RestartRequired condition, as KubeVirt v1.6 sets it: a record of the spec each VMI
started from, compared with what the VM would start now, instance types and preferences expanded."""

from __future__ import annotations

from typing import Any

from kubevirt.client import PODS, VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES
from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_INSTANCETYPES,
)
from kubevirt.virt_config import ClusterConfig
from kubevirt.virt_controller.watch.restartrequired import (
    MEMORY_BELOW_BOOT,
    MEMORY_NOT_HOTPLUGGABLE,
    MEMORY_NOT_MIGRATABLE,
    NON_LIVE_UPDATABLE,
    SOCKETS_REDUCED,
)

from .fakes import JSON, Cluster
from .harness import NAMESPACE, Controllers, schedule_pod, set_vmi_phase, vm_manifest

GROUP = "instancetype.kubevirt.io/v1beta1"


def _instancetype(cluster: Cluster, name: str, cpus: int, memory: str, *, namespaced: bool = True) -> None:
    resource = VIRTUAL_MACHINE_INSTANCETYPES if namespaced else VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES
    body = {
        "apiVersion": GROUP,
        "kind": resource.kind,
        "metadata": {"name": name},
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": memory}},
    }
    cluster.api.create(resource, NAMESPACE if namespaced else None, body)


def _running(cluster: Cluster, **spec: Any) -> Controllers:
    vm = vm_manifest("testvm", runStrategy="Always", **spec)
    if "instancetype" in spec:
        del vm["spec"]["template"]["spec"]["domain"]["memory"]
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm)
    controllers.run()
    _to_running(controllers)
    return controllers


def _to_running(controllers: Controllers) -> None:
    """The scheduler and virt-handler's part: the newest launcher pod is scheduled, the VMI Running."""
    cluster = controllers.cluster
    pod = cluster.api.find(PODS, NAMESPACE)[-1]
    schedule_pod(cluster, pod["metadata"]["name"])
    controllers.run()
    set_vmi_phase(cluster, "testvm", "Running", conditions=[{"type": "Ready", "status": "True"}])
    controllers.run()


def _vm(cluster: Cluster) -> JSON:
    return cluster.api.get(VIRTUAL_MACHINES, NAMESPACE, "testvm")


def _restart_required(cluster: Cluster) -> JSON | None:
    for condition in _vm(cluster).get("status", {}).get("conditions", []):
        if condition["type"] == "RestartRequired":
            return dict(condition)
    return None


def _edit_vm(controllers: Controllers, patch: JSON) -> None:
    controllers.cluster.api.patch(VIRTUAL_MACHINES, NAMESPACE, "testvm", patch, patch_type="merge")
    controllers.run()


def _start_revisions(cluster: Cluster) -> list[JSON]:
    return [
        revision
        for revision in cluster.api.find(CONTROLLER_REVISIONS, NAMESPACE)
        if revision["metadata"]["name"].startswith("revision-start-vm-")
    ]


def _vmi(cluster: Cluster) -> JSON:
    [vmi] = cluster.api.find(VIRTUAL_MACHINE_INSTANCES, NAMESPACE)
    return vmi


def test_a_started_vmi_records_the_spec_with_the_revisions_it_used() -> None:
    cluster = Cluster()
    _instancetype(cluster, "small", 1, "1Gi")
    _running(cluster, instancetype={"kind": "VirtualMachineInstancetype", "name": "small"})
    vm = _vm(cluster)
    [record] = _start_revisions(cluster)
    assert record["metadata"]["name"] == f"revision-start-vm-{vm['metadata']['uid']}-1"
    assert record["metadata"]["ownerReferences"][0]["uid"] == vm["metadata"]["uid"]
    assert record["revision"] == 1
    assert _vmi(cluster)["status"]["virtualMachineRevisionName"] == record["metadata"]["name"]
    pinned = vm["status"]["instancetypeRef"]["controllerRevisionRef"]["name"]
    assert record["data"]["spec"]["instancetype"]["revisionName"] == pinned
    assert _restart_required(cluster) is None


def test_editing_the_instancetype_in_place_changes_nothing_for_the_vm() -> None:
    cluster = Cluster()
    _instancetype(cluster, "small", 1, "1Gi")
    controllers = _running(cluster, instancetype={"kind": "VirtualMachineInstancetype", "name": "small"})
    before = _vm(cluster)["status"]["instancetypeRef"]
    edit = {"spec": {"cpu": {"guest": 2}, "memory": {"guest": "512Mi"}}}
    cluster.api.patch(VIRTUAL_MACHINE_INSTANCETYPES, NAMESPACE, "small", edit, patch_type="merge")
    controllers.run()
    assert _vm(cluster)["status"]["instancetypeRef"] == before
    assert _restart_required(cluster) is None
    assert _vmi(cluster)["spec"]["domain"]["memory"]["guest"] == "1Gi"


def test_switching_to_an_instancetype_of_the_same_size_needs_no_restart() -> None:
    cluster = Cluster()
    _instancetype(cluster, "small", 1, "1Gi", namespaced=False)
    _instancetype(cluster, "also-small", 1, "1Gi")
    controllers = _running(cluster, instancetype={"name": "small"})
    _edit_vm(
        controllers, {"spec": {"instancetype": {"kind": "VirtualMachineInstancetype", "name": "also-small"}}}
    )
    assert _vm(cluster)["status"]["instancetypeRef"]["name"] == "also-small"
    assert _restart_required(cluster) is None


def test_less_memory_on_a_vmi_that_cannot_migrate_needs_a_restart_and_a_restart_clears_it() -> None:
    cluster = Cluster()
    _instancetype(cluster, "small", 1, "1Gi")
    _instancetype(cluster, "smaller", 1, "512Mi")
    controllers = _running(cluster, instancetype={"kind": "VirtualMachineInstancetype", "name": "small"})
    status = {"status": {"memory": {"guestAtBoot": "1Gi", "guestCurrent": "1Gi", "guestRequested": "1Gi"}}}
    cluster.api.patch(
        VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvm", status, patch_type="merge", subresource="status"
    )
    _edit_vm(controllers, {"spec": {"instancetype": {"name": "smaller"}}})
    condition = _restart_required(cluster)
    assert condition is not None
    assert (condition["status"], condition["message"]) == ("True", MEMORY_NOT_MIGRATABLE)
    assert _vmi(cluster)["spec"]["domain"]["memory"]["guest"] == "1Gi"

    # A restart (what virt-api's restart writes): the next VMI takes the new size, the condition goes.
    old_uid = _vmi(cluster)["metadata"]["uid"]

    def restart(vm: JSON) -> None:
        vm["status"]["stateChangeRequests"] = [{"action": "Stop", "uid": old_uid}, {"action": "Start"}]

    cluster.api.edit(VIRTUAL_MACHINES, NAMESPACE, "testvm", restart)
    controllers.run()
    vmi = _vmi(cluster)
    assert vmi["metadata"]["uid"] != old_uid
    assert vmi["spec"]["domain"]["memory"]["guest"] == "512Mi"
    assert _restart_required(cluster) is None
    [record] = _start_revisions(cluster)
    assert record["revision"] == _vm(cluster)["metadata"]["generation"]


def test_a_non_live_updatable_change_needs_a_restart_and_undoing_it_clears_it() -> None:
    cluster = Cluster()
    controllers = _running(cluster)
    disk = {"name": "extra", "disk": {"bus": "virtio"}}
    volume = {"name": "extra", "emptyDisk": {"capacity": "1Gi"}}
    template = {"spec": {"domain": {"devices": {"disks": [disk]}}, "volumes": [volume]}}
    _edit_vm(controllers, {"spec": {"template": template}})
    condition = _restart_required(cluster)
    assert condition is not None
    assert condition["message"] == NON_LIVE_UPDATABLE
    undo = {"spec": {"domain": {"devices": {"disks": None}}, "volumes": None}}
    _edit_vm(controllers, {"spec": {"template": undo}})
    assert _restart_required(cluster) is None


def test_live_updatable_fields_need_no_restart_unless_the_rollout_strategy_is_stage() -> None:
    cluster = Cluster()
    controllers = _running(cluster)
    _edit_vm(controllers, {"spec": {"template": {"spec": {"nodeSelector": {"disk": "ssd"}}}}})
    assert _restart_required(cluster) is None
    controllers.config = ClusterConfig.build(rollout_strategy="Stage")
    _edit_vm(controllers, {"spec": {"template": {"spec": {"nodeSelector": {"disk": "nvme"}}}}})
    condition = _restart_required(cluster)
    assert condition is not None
    assert condition["message"] == NON_LIVE_UPDATABLE


def test_fewer_cpu_sockets_need_a_restart() -> None:
    cluster = Cluster()
    _instancetype(cluster, "two", 2, "1Gi")
    _instancetype(cluster, "one", 1, "1Gi")
    controllers = _running(cluster, instancetype={"kind": "VirtualMachineInstancetype", "name": "two"})
    _edit_vm(controllers, {"spec": {"instancetype": {"name": "one"}}})
    condition = _restart_required(cluster)
    assert condition is not None
    assert condition["message"] == SOCKETS_REDUCED


def test_stopping_the_vm_drops_the_record_and_the_condition() -> None:
    cluster = Cluster()
    _instancetype(cluster, "two", 2, "1Gi")
    _instancetype(cluster, "one", 1, "1Gi")
    controllers = _running(cluster, instancetype={"kind": "VirtualMachineInstancetype", "name": "two"})
    _edit_vm(controllers, {"spec": {"instancetype": {"name": "one"}}})
    assert _restart_required(cluster) is not None
    _edit_vm(controllers, {"spec": {"runStrategy": "Halted"}})
    assert _restart_required(cluster) is None
    assert _start_revisions(cluster) == []


def test_taking_an_edited_instancetype_by_clearing_the_stored_revision_needs_a_restart() -> None:
    cluster = Cluster()
    _instancetype(cluster, "u1.small", 1, "2Gi", namespaced=False)
    _instancetype(cluster, "it-edit", 1, "2Gi")
    controllers = _running(
        cluster, instancetype={"kind": "VirtualMachineClusterInstancetype", "name": "u1.small"}
    )
    status = {"status": {"memory": {"guestAtBoot": "2Gi", "guestCurrent": "2Gi", "guestRequested": "2Gi"}}}
    cluster.api.patch(
        VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvm", status, patch_type="merge", subresource="status"
    )
    _edit_vm(
        controllers, {"spec": {"instancetype": {"kind": "VirtualMachineInstancetype", "name": "it-edit"}}}
    )
    pinned = _vm(cluster)["status"]["instancetypeRef"]["controllerRevisionRef"]["name"]
    assert _restart_required(cluster) is None
    edit = {"spec": {"memory": {"guest": "1Gi"}}}
    cluster.api.patch(VIRTUAL_MACHINE_INSTANCETYPES, NAMESPACE, "it-edit", edit, patch_type="merge")
    controllers.run()
    assert _restart_required(cluster) is None
    clear = [{"op": "remove", "path": "/status/instancetypeRef/controllerRevisionRef"}]
    cluster.api.patch(VIRTUAL_MACHINES, NAMESPACE, "testvm", clear, subresource="status")
    controllers.run()
    assert _vm(cluster)["status"]["instancetypeRef"]["controllerRevisionRef"]["name"] != pinned
    condition = _restart_required(cluster)
    assert condition is not None
    assert condition["message"] == MEMORY_NOT_MIGRATABLE


def _migratable_with_max_guest(cluster: Cluster, at_boot: str, max_guest: str) -> None:
    """What virt-api's defaults and virt-handler give a migratable VMI under LiveUpdate."""

    def change(vmi: JSON) -> None:
        vmi["spec"]["domain"]["memory"]["maxGuest"] = max_guest
        vmi["status"]["memory"] = {"guestAtBoot": at_boot, "guestCurrent": at_boot, "guestRequested": at_boot}
        vmi["status"].setdefault("conditions", []).append({"type": "LiveMigratable", "status": "True"})

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvm", change)


def test_memory_below_what_a_migratable_vmi_booted_with_needs_a_restart() -> None:
    cluster = Cluster()
    _instancetype(cluster, "small", 1, "2Gi")
    _instancetype(cluster, "smaller", 1, "1Gi")
    controllers = _running(cluster, instancetype={"kind": "VirtualMachineInstancetype", "name": "small"})
    _migratable_with_max_guest(cluster, "2Gi", "8Gi")
    _edit_vm(controllers, {"spec": {"instancetype": {"name": "smaller"}}})
    condition = _restart_required(cluster)
    assert condition is not None
    assert condition["message"] == MEMORY_BELOW_BOOT


def test_memory_above_max_guest_cannot_be_hotplugged() -> None:
    cluster = Cluster()
    _instancetype(cluster, "small", 1, "2Gi")
    _instancetype(cluster, "huge", 1, "16Gi")
    controllers = _running(cluster, instancetype={"kind": "VirtualMachineInstancetype", "name": "small"})
    _migratable_with_max_guest(cluster, "2Gi", "8Gi")
    _edit_vm(controllers, {"spec": {"instancetype": {"name": "huge"}}})
    condition = _restart_required(cluster)
    assert condition is not None
    assert condition["message"] == MEMORY_NOT_HOTPLUGGABLE.format(
        "Guest memory is greater than the configured maxGuest memory"
    )
