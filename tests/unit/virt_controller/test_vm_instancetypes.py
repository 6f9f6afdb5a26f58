"""The VM controller with instance types and preferences: expansion, status references, failures."""

from __future__ import annotations

from typing import Any

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES
from kubevirt.client.resources import VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES, VIRTUAL_MACHINE_PREFERENCES

from .fakes import JSON, Cluster
from .harness import NAMESPACE, Controllers, vm_manifest

GROUP = "instancetype.kubevirt.io/v1beta1"


def _cluster_instancetype(cluster: Cluster, name: str, cpus: int, memory: str, **extra: Any) -> JSON:
    body = {
        "apiVersion": GROUP,
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": name},
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": memory}, **extra},
    }
    return cluster.api.create(VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES, None, body)


def _preference(cluster: Cluster, name: str, spec: JSON) -> JSON:
    body = {"apiVersion": GROUP, "kind": "VirtualMachinePreference", "metadata": {"name": name}, "spec": spec}
    return cluster.api.create(VIRTUAL_MACHINE_PREFERENCES, NAMESPACE, body)


def _vm_without_size(name: str = "testvm", **spec: Any) -> JSON:
    vm = vm_manifest(name, runStrategy="Always", **spec)
    del vm["spec"]["template"]["spec"]["domain"]["memory"]
    vm["spec"]["template"]["spec"]["domain"]["devices"] = {"disks": [{"name": "root"}]}
    return vm


def _start(cluster: Cluster, vm: JSON) -> Controllers:
    controllers = Controllers(cluster)
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm)
    controllers.run()
    return controllers


def _vmis(cluster: Cluster) -> list[JSON]:
    return cluster.api.find(VIRTUAL_MACHINE_INSTANCES, NAMESPACE)


def _status(cluster: Cluster, name: str = "testvm") -> JSON:
    status: JSON = cluster.api.get(VIRTUAL_MACHINES, NAMESPACE, name).get("status", {})
    return status


def test_vmi_gets_the_instancetype_and_preference_and_the_vm_records_them() -> None:
    cluster = Cluster()
    instancetype = _cluster_instancetype(cluster, "u1.medium", 4, "4Gi", cpu={"guest": 4, "model": "Haswell"})
    preference = _preference(
        cluster,
        "fedora",
        {"cpu": {"preferredCPUTopology": "cores"}, "devices": {"preferredDiskBus": "virtio"}},
    )
    _start(
        cluster,
        _vm_without_size(
            instancetype={"name": "u1.medium", "kind": "virtualmachineclusterinstancetype"},
            preference={"name": "fedora", "kind": "VirtualMachinePreference"},
        ),
    )
    [vmi] = _vmis(cluster)
    domain = vmi["spec"]["domain"]
    assert domain["memory"] == {"guest": "4Gi"}
    assert (domain["cpu"]["sockets"], domain["cpu"]["cores"], domain["cpu"]["threads"]) == (1, 4, 1)
    assert domain["cpu"]["model"] == "Haswell"
    assert domain["devices"]["disks"] == [{"name": "root", "disk": {"bus": "virtio"}}]
    # The pod network is added before the preference applies, as virt-controller does.
    assert vmi["spec"]["networks"] == [{"name": "default", "pod": {}}]
    annotations = vmi["metadata"]["annotations"]
    assert annotations["kubevirt.io/cluster-instancetype-name"] == "u1.medium"
    assert annotations["kubevirt.io/preference-name"] == "fedora"
    status = _status(cluster)
    it_meta, pref_meta = instancetype["metadata"], preference["metadata"]
    assert status["instancetypeRef"] == {
        "name": "u1.medium",
        "kind": "virtualmachineclusterinstancetype",
        "controllerRevisionRef": {"name": f"testvm-u1.medium-v1beta1-{it_meta['uid']}-1"},
    }
    assert status["preferenceRef"] == {
        "name": "fedora",
        "kind": "VirtualMachinePreference",
        "controllerRevisionRef": {"name": f"testvm-fedora-v1beta1-{pref_meta['uid']}-1"},
    }


def test_a_missing_instancetype_fails_the_sync_without_starting() -> None:
    cluster = Cluster()
    controllers = _start(cluster, _vm_without_size(instancetype={"name": "absent"}))
    assert _vmis(cluster) == []
    failure = [c for c in _status(cluster).get("conditions", []) if c["type"] == "Failure"]
    assert failure
    assert failure[0]["reason"] == "FailedFindInstancetype"
    assert (
        failure[0]["message"]
        == 'virtualmachineclusterinstancetypes.instancetype.kubevirt.io "absent" not found'
    )
    # Once it exists, the next sync starts the VM.
    _cluster_instancetype(cluster, "absent", 1, "1Gi")
    controllers.requeue_failed()
    controllers.run()
    assert len(_vmis(cluster)) == 1


def test_a_missing_preference_has_its_own_reason() -> None:
    cluster = Cluster()
    _cluster_instancetype(cluster, "small", 1, "1Gi")
    _start(cluster, _vm_without_size(instancetype={"name": "small"}, preference={"name": "nope"}))
    assert _vmis(cluster) == []
    reasons = [c["reason"] for c in _status(cluster).get("conditions", []) if c["type"] == "Failure"]
    assert reasons == ["FailedFindPreference"]


def test_a_template_conflicting_with_its_instancetype_is_not_started() -> None:
    cluster = Cluster()
    _cluster_instancetype(cluster, "small", 1, "1Gi")
    vm = vm_manifest("testvm", runStrategy="Always", instancetype={"name": "small"})  # sets memory
    controllers = _start(cluster, vm)
    assert _vmis(cluster) == []
    messages = [m for _, _, reason, m in controllers.events.recorded if reason == "FailedCreate"]
    assert messages[0] == (
        "Error creating virtual machine instance: Failed to apply instancetype: "
        "VMI conflicts with instancetype spec in fields: [spec.domain.memory]"
    )


def test_renaming_the_instancetype_records_a_new_revision() -> None:
    cluster = Cluster()
    small = _cluster_instancetype(cluster, "small", 1, "1Gi")
    large = _cluster_instancetype(cluster, "large", 2, "2Gi")
    vm = _vm_without_size(instancetype={"name": "small"})
    vm["spec"]["runStrategy"] = "Halted"
    controllers = _start(cluster, vm)
    ref = _status(cluster)["instancetypeRef"]["controllerRevisionRef"]["name"]
    assert ref == f"testvm-small-v1beta1-{small['metadata']['uid']}-1"

    def rename(body: JSON) -> None:
        body["spec"]["instancetype"] = {"name": "large"}

    cluster.api.edit(VIRTUAL_MACHINES, NAMESPACE, "testvm", rename)
    controllers.run()
    assert _status(cluster)["instancetypeRef"] == {
        "name": "large",
        "controllerRevisionRef": {"name": f"testvm-large-v1beta1-{large['metadata']['uid']}-1"},
    }


def test_a_pinned_revision_name_is_recorded_as_given() -> None:
    cluster = Cluster()
    _cluster_instancetype(cluster, "small", 1, "1Gi")
    vm = _vm_without_size(instancetype={"name": "small", "revisionName": "pinned-rev"})
    _start(cluster, vm)
    assert _status(cluster)["instancetypeRef"]["controllerRevisionRef"] == {"name": "pinned-rev"}
