"""The VM controller's RestartRequired condition, as KubeVirt v1.6 sets it: a record of the spec each VMI
started from, compared with what the VM would start now, instance types and preferences expanded."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.client import PODS, VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES
from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_INSTANCETYPES,
)
from kubevirt.virt_config import ClusterConfig, LauncherSettings
from kubevirt.virt_controller.watch.common import SyncError
from kubevirt.virt_controller.watch.liveupdate import (
    MEMORY_BELOW_BOOT,
    MEMORY_HOTPLUG_FAILED,
    MEMORY_NOT_HOTPLUGGABLE,
    MEMORY_NOT_MIGRATABLE,
    SOCKETS_REDUCED,
)
from kubevirt.virt_controller.watch.restartrequired import NON_LIVE_UPDATABLE

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

    def with_max_sockets(vmi: JSON) -> None:  # what virt-api's defaults give it under LiveUpdate
        vmi["spec"]["domain"]["cpu"]["maxSockets"] = 8

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvm", with_max_sockets)
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


# -- live updates (KubeVirt's CPU, affinity, tolerations and memory change handlers) ----------------------


def _running_with(
    cluster: Cluster,
    domain: JSON,
    *,
    vmi_cpu: JSON | None = None,
    vmi_memory: JSON | None = None,
    vmi_status: JSON | None = None,
) -> Controllers:
    """A running VM whose template has ``domain``; ``vmi_cpu`` and ``vmi_memory`` are what virt-api's
    defaults add to its VMI's (maxSockets, maxGuest), ``vmi_status`` what virt-handler reports."""
    vm = vm_manifest("testvm", runStrategy="Always")
    vm["spec"]["template"]["spec"]["domain"].update(domain)
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm)
    controllers.run()
    _to_running(controllers)

    def defaulted(vmi: JSON) -> None:
        vmi["spec"]["domain"].setdefault("cpu", {}).update(vmi_cpu or {})
        vmi["spec"]["domain"].setdefault("memory", {}).update(vmi_memory or {})
        vmi["status"].update(vmi_status or {})

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvm", defaulted)
    controllers.run()
    return controllers


def _edit_template(controllers: Controllers, spec: JSON) -> None:
    _edit_vm(controllers, {"spec": {"template": {"spec": spec}}})


def _vm_condition(cluster: Cluster, type_: str) -> JSON | None:
    return next((c for c in _vm(cluster)["status"].get("conditions", []) if c["type"] == type_), None)


def _virt_handler_done(cluster: Cluster, change: Any) -> None:
    """virt-handler's part of a hotplug: the guest took it, the condition goes."""

    def done(vmi: JSON) -> None:
        change(vmi["status"])
        vmi["status"]["conditions"] = [
            c for c in vmi["status"]["conditions"] if c["type"] not in ("HotVCPUChange", "HotMemoryChange")
        ]

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvm", done)


def test_more_cpu_sockets_are_hotplugged_one_change_at_a_time() -> None:
    cluster = Cluster()
    domain = {"cpu": {"sockets": 1, "cores": 1, "threads": 1}, "resources": {"requests": {"cpu": "500m"}}}
    topology = {"sockets": 1, "cores": 1, "threads": 1}
    controllers = _running_with(
        cluster, domain, vmi_cpu={"maxSockets": 4}, vmi_status={"currentCPUTopology": topology}
    )
    _edit_template(controllers, {"domain": {"cpu": {"sockets": 2}}})
    vmi = _vmi(cluster)
    assert vmi["spec"]["domain"]["cpu"]["sockets"] == 2
    assert vmi["spec"]["domain"]["resources"]["requests"]["cpu"] == "600m"  # one vCPU at ratio 10
    assert _restart_required(cluster) is None
    # The VMI controller flags the hotplug for virt-handler; the VM mirrors it.
    assert {"type": "HotVCPUChange", "status": "True"}.items() <= (
        _vm_condition(cluster, "HotVCPUChange") or {}
    ).items()

    # A further change waits for the running hotplug, reported on the VM and retried.
    _edit_template(controllers, {"domain": {"cpu": {"sockets": 3}}})
    assert _vmi(cluster)["spec"]["domain"]["cpu"]["sockets"] == 2
    failure = _vm_condition(cluster, "Failure")
    assert failure is not None
    assert (failure["reason"], failure["message"]) == (
        "HotPlugCPUError",
        "Error encountered while handling CPU change request: another CPU hotplug is in progress",
    )
    assert controllers.errors
    assert all(name == "vm" and isinstance(err, SyncError) for name, _, err in controllers.errors)

    _virt_handler_done(cluster, lambda status: status.update(currentCPUTopology={**topology, "sockets": 2}))
    controllers.requeue_failed()
    controllers.run()
    assert _vmi(cluster)["spec"]["domain"]["cpu"]["sockets"] == 3
    assert _vm_condition(cluster, "Failure") is None
    assert _restart_required(cluster) is None


def test_fewer_sockets_than_running_set_restart_required_from_the_live_update() -> None:
    cluster = Cluster()
    controllers = _running_with(cluster, {"cpu": {"sockets": 2}}, vmi_cpu={"maxSockets": 8})
    _edit_template(controllers, {"domain": {"cpu": {"sockets": 1}}})
    condition = _restart_required(cluster)
    assert condition is not None
    assert condition["message"] == SOCKETS_REDUCED
    assert _vmi(cluster)["spec"]["domain"]["cpu"]["sockets"] == 2
    # The same outcome again writes nothing: the condition stays as it was.
    cluster.api.writes.clear()
    cluster.api.clock.advance(60)
    controllers.queues["vm"].add(f"{NAMESPACE}/testvm")
    controllers.run()
    assert [w for w in cluster.api.writes if w[1] == VIRTUAL_MACHINES.plural] == []
    assert _restart_required(cluster) == condition


def test_node_selector_affinity_and_tolerations_follow_the_template() -> None:
    cluster = Cluster()
    controllers = _running(cluster)
    toleration = {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
    affinity: JSON = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    _edit_template(
        controllers, {"nodeSelector": {"disk": "ssd"}, "tolerations": [toleration], "affinity": affinity}
    )
    spec = _vmi(cluster)["spec"]
    assert (spec["nodeSelector"], spec["tolerations"], spec["affinity"]) == (
        {"disk": "ssd"},
        [toleration],
        affinity,
    )
    _edit_template(controllers, {"nodeSelector": None, "tolerations": None, "affinity": None})
    spec = _vmi(cluster)["spec"]
    assert not {"nodeSelector", "tolerations", "affinity"} & spec.keys()
    assert controllers.errors == []
    assert _restart_required(cluster) is None


def test_nothing_is_live_updated_while_a_restart_is_required_or_under_stage() -> None:
    cluster = Cluster()
    controllers = _running(cluster)
    disk = {"name": "extra", "disk": {"bus": "virtio"}}
    volume = {"name": "extra", "emptyDisk": {"capacity": "1Gi"}}
    template = {"domain": {"devices": {"disks": [disk]}}, "volumes": [volume], "nodeSelector": {"a": "b"}}
    _edit_template(controllers, template)
    condition = _restart_required(cluster)
    assert condition is not None
    assert condition["message"] == NON_LIVE_UPDATABLE
    assert "nodeSelector" not in _vmi(cluster)["spec"]

    cluster2 = Cluster()
    controllers2 = _running(cluster2)
    controllers2.config = ClusterConfig.build(rollout_strategy="Stage")
    _edit_template(controllers2, {"nodeSelector": {"a": "b"}})
    assert "nodeSelector" not in _vmi(cluster2)["spec"]


def test_a_patch_from_a_stale_cache_fails_and_is_retried() -> None:
    cluster = Cluster()
    controllers = _running(cluster)
    _edit_vm(controllers, {"spec": {"template": {"spec": {"nodeSelector": {"disk": "ssd"}}}}})
    # The template changes again while someone else changed the VMI, and the cache has not seen that yet.
    cluster.api.patch(
        VIRTUAL_MACHINES,
        NAMESPACE,
        "testvm",
        {"spec": {"template": {"spec": {"nodeSelector": {"disk": "nvme"}}}}},
        patch_type="merge",
    )
    controllers.cluster.sync()

    def other_writer(vmi: JSON) -> None:
        vmi["spec"]["nodeSelector"] = {"disk": "hdd"}

    cluster.api.edit(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvm", other_writer)
    with pytest.raises(SyncError, match="node affinity change request"):
        controllers.vm.reconcile(f"{NAMESPACE}/testvm")
    assert _vmi(cluster)["spec"]["nodeSelector"] == {"disk": "hdd"}
    controllers.run()
    assert _vmi(cluster)["spec"]["nodeSelector"] == {"disk": "nvme"}


def test_more_guest_memory_is_hotplugged_into_a_migratable_vmi() -> None:
    cluster = Cluster()
    memory = {"guestAtBoot": "2Gi", "guestCurrent": "2Gi", "guestRequested": "2Gi"}
    controllers = _running_with(
        cluster,
        {"memory": {"guest": "2Gi"}, "resources": {"requests": {"memory": "2Gi"}}},
        vmi_memory={"maxGuest": "8Gi"},
        vmi_status={"memory": memory, "conditions": [{"type": "Ready", "status": "True"}, MIGRATABLE]},
    )
    controllers.vmi._config = lambda: ClusterConfig(
        launcher=LauncherSettings(additional_guest_memory_overhead_ratio="1.5")
    )
    _edit_template(controllers, {"domain": {"memory": {"guest": "4Gi"}}})
    vmi = _vmi(cluster)
    assert vmi["spec"]["domain"]["memory"]["guest"] == "4Gi"
    assert vmi["spec"]["domain"]["resources"]["requests"]["memory"] == "4Gi"
    assert {"type": "HotMemoryChange", "status": "True"}.items() <= _condition(vmi, "HotMemoryChange").items()
    assert vmi["metadata"]["labels"]["kubevirt.io/memory-hotplug-overhead-ratio"] == "1.5"
    assert _restart_required(cluster) is None

    _edit_template(controllers, {"domain": {"memory": {"guest": "6Gi"}}})
    failure = _vm_condition(cluster, "Failure")
    assert failure is not None
    assert (failure["reason"], failure["message"]) == (
        "HotPlugMemoryError",
        "error encountered while handling memory hotplug requests: another memory hotplug is in progress",
    )
    _virt_handler_done(cluster, lambda status: status.update(memory={**memory, "guestRequested": "4Gi"}))
    controllers.requeue_failed()
    controllers.run()
    assert _vmi(cluster)["spec"]["domain"]["memory"]["guest"] == "6Gi"


def test_a_failed_memory_hotplug_needs_a_restart() -> None:
    cluster = Cluster()
    memory = {"guestAtBoot": "2Gi", "guestCurrent": "2Gi", "guestRequested": "2Gi"}
    failed = {"type": "HotMemoryChange", "status": "False"}
    controllers = _running_with(
        cluster,
        {"memory": {"guest": "2Gi"}},
        vmi_memory={"maxGuest": "8Gi"},
        vmi_status={
            "memory": memory,
            "conditions": [{"type": "Ready", "status": "True"}, MIGRATABLE, failed],
        },
    )
    condition = _restart_required(cluster)
    assert condition is not None
    assert condition["message"] == MEMORY_HOTPLUG_FAILED
    assert controllers.errors == []


MIGRATABLE = {"type": "LiveMigratable", "status": "True"}


def _condition(obj: JSON, type_: str) -> JSON:
    return next((c for c in obj["status"].get("conditions", []) if c["type"] == type_), {})


def test_dropping_the_guest_memory_from_the_template_needs_a_restart() -> None:
    # Only a guest size the template names is taken live; none at all is a change of another kind.
    cluster = Cluster()
    controllers = _running(cluster)
    _edit_template(controllers, {"domain": {"memory": {"guest": None}}})
    condition = _restart_required(cluster)
    assert condition is not None
    assert condition["message"] == NON_LIVE_UPDATABLE


def test_eviction_hints_and_the_backup_hook_switch_follow_the_vm_into_the_running_vmi() -> None:
    cluster = Cluster()
    controllers = _running(cluster)
    evict = "descheduler.alpha.kubernetes.io/evict"
    hooks = "kubevirt.io/skip-backup-hooks"
    _edit_vm(
        controllers,
        {
            "metadata": {"annotations": {hooks: "true", "other": "not synced"}},
            "spec": {"template": {"metadata": {"annotations": {evict: "true", "also": "not synced"}}}},
        },
    )
    annotations = _vmi(cluster)["metadata"].get("annotations") or {}
    assert (annotations.get(evict), annotations.get(hooks)) == ("true", "true")
    assert not {"other", "also"} & annotations.keys()  # only KubeVirt's list follows a running VM
    assert _restart_required(cluster) is None  # template annotations alone need no restart
    _edit_vm(
        controllers,
        {
            "metadata": {"annotations": {hooks: None}},
            "spec": {"template": {"metadata": {"annotations": {evict: None}}}},
        },
    )
    annotations = _vmi(cluster)["metadata"].get("annotations") or {}
    assert not {evict, hooks} & annotations.keys()
    assert controllers.errors == []
