"""The VM controller with instance types and preferences: expansion, status references, failures."""

from __future__ import annotations

import dataclasses
from typing import Any

from kubevirt.client import VIRTUAL_MACHINE_INSTANCES, VIRTUAL_MACHINES
from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_PREFERENCES,
)
from kubevirt.instancetype.revision import build_revision
from kubevirt.virt_config import ClusterConfig

from .fakes import JSON, Cluster
from .harness import NAMESPACE, Controllers, vm_manifest

GROUP = "instancetype.kubevirt.io/v1beta1"
CLUSTER_KIND = "VirtualMachineClusterInstancetype"


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


def _instancetype_revisions(cluster: Cluster) -> list[JSON]:
    """The revisions of instance types and preferences (not the records of what VMIs started with)."""
    return [
        revision
        for revision in cluster.api.find(CONTROLLER_REVISIONS, NAMESPACE)
        if not revision["metadata"]["name"].startswith("revision-start-vm-")
    ]


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
    # KubeVirt checks once more before it stores the revision, so the VM fails there.
    messages = [m for _, _, reason, m in controllers.events.recorded if reason == "FailedCreate"]
    assert messages[0] == (
        "error encountered while storing instancetype.kubevirt.io controllerRevisions: "
        "VM field(s) spec.template.spec.domain.memory conflicts with selected instance type"
    )
    assert _instancetype_revisions(cluster) == []
    assert "instancetypeRef" not in _status(cluster)


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


def test_a_pinned_revision_name_is_recorded_and_used() -> None:
    cluster = Cluster()
    small = _cluster_instancetype(cluster, "small", 1, "1Gi")
    # A revision of an earlier, bigger version of "small" (as another VM may have stored it).
    older = {**small, "spec": {"cpu": {"guest": 3}, "memory": {"guest": "3Gi"}}}
    pinned = build_revision(
        {"metadata": {"name": "other", "namespace": NAMESPACE, "uid": "u"}}, older, CLUSTER_KIND
    )
    pinned["metadata"]["name"] = "pinned-rev"
    cluster.api.create(CONTROLLER_REVISIONS, NAMESPACE, pinned)
    vm = _vm_without_size(instancetype={"name": "small", "revisionName": "pinned-rev"})
    _start(cluster, vm)
    assert _status(cluster)["instancetypeRef"]["controllerRevisionRef"] == {"name": "pinned-rev"}
    [vmi] = _vmis(cluster)
    assert vmi["spec"]["domain"]["memory"] == {"guest": "3Gi"}
    # No copy of its own is stored while the VM is pinned (beside the record of what it started with).
    assert [r["metadata"]["name"] for r in _instancetype_revisions(cluster)] == ["pinned-rev"]


def test_a_missing_pinned_revision_fails_the_sync() -> None:
    cluster = Cluster()
    _cluster_instancetype(cluster, "small", 1, "1Gi")
    _start(cluster, _vm_without_size(instancetype={"name": "small", "revisionName": "gone"}))
    assert _vmis(cluster) == []
    [failure] = [c for c in _status(cluster).get("conditions", []) if c["type"] == "Failure"]
    assert (failure["reason"], failure["message"]) == (
        "FailedFindInstancetype",
        'controllerrevisions.apps "gone" not found',
    )


def test_the_stored_revision_copies_the_object_like_kubevirt() -> None:
    cluster = Cluster()
    it = _cluster_instancetype(cluster, "u1.small", 1, "2Gi")
    cluster.api.edit(
        VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
        None,
        "u1.small",
        lambda body: body["metadata"].update(labels={"a": "b"}, annotations={"c": "d"}),
    )
    _start(cluster, _vm_without_size(instancetype={"name": "u1.small"}))
    vm = cluster.api.get(VIRTUAL_MACHINES, NAMESPACE, "testvm")
    [revision] = _instancetype_revisions(cluster)
    uid = it["metadata"]["uid"]
    meta = revision["metadata"]
    assert meta["name"] == f"testvm-u1.small-v1beta1-{uid}-1"
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "name": "testvm",
            "uid": vm["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert meta["labels"] == {
        "instancetype.kubevirt.io/object-generation": "1",
        "instancetype.kubevirt.io/object-kind": CLUSTER_KIND,
        "instancetype.kubevirt.io/object-name": "u1.small",
        "instancetype.kubevirt.io/object-uid": uid,
        "instancetype.kubevirt.io/object-version": "v1beta1",
    }
    data = revision["data"]
    assert (data["apiVersion"], data["kind"], data["spec"]) == (GROUP, CLUSTER_KIND, it["spec"])
    assert data["metadata"]["name"] == "u1.small"
    assert "labels" not in data["metadata"]
    assert "annotations" not in data["metadata"]


def test_editing_the_instancetype_changes_nothing_until_the_user_clears_the_revision() -> None:
    cluster = Cluster()
    _cluster_instancetype(cluster, "u1.small", 1, "1Gi")
    controllers = _start(cluster, _vm_without_size(instancetype={"name": "u1.small"}))
    first = _status(cluster)["instancetypeRef"]["controllerRevisionRef"]["name"]

    def grow(body: JSON) -> None:
        body["spec"]["memory"]["guest"] = "4Gi"

    cluster.api.edit(VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES, None, "u1.small", grow)
    controllers.run()
    # A restart (the VMI goes away) builds the new VMI from the stored copy.
    cluster.api.remove(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvm")
    controllers.run()
    [vmi] = _vmis(cluster)
    assert vmi["spec"]["domain"]["memory"] == {"guest": "1Gi"}
    assert _status(cluster)["instancetypeRef"]["controllerRevisionRef"]["name"] == first

    # KubeVirt's way to take the newer version: drop the recorded revision, then restart.
    cluster.api.patch(
        VIRTUAL_MACHINES,
        NAMESPACE,
        "testvm",
        {"status": {"instancetypeRef": {"controllerRevisionRef": None}}},
        patch_type="merge",
        subresource="status",
    )
    controllers.run()
    second = _status(cluster)["instancetypeRef"]["controllerRevisionRef"]["name"]
    assert second != first
    assert second.endswith("-2")
    assert _vmis(cluster)[0]["spec"]["domain"]["memory"] == {"guest": "1Gi"}  # still running as it was
    cluster.api.remove(VIRTUAL_MACHINE_INSTANCES, NAMESPACE, "testvm")
    controllers.run()
    assert _vmis(cluster)[0]["spec"]["domain"]["memory"] == {"guest": "4Gi"}


def test_an_existing_revision_with_other_data_fails_the_store() -> None:
    cluster = Cluster()
    it = _cluster_instancetype(cluster, "u1.small", 1, "1Gi")
    vm = _vm_without_size(instancetype={"name": "u1.small"})
    clash = build_revision(
        vm, {**it, "spec": {"cpu": {"guest": 8}, "memory": {"guest": "8Gi"}}}, CLUSTER_KIND
    )
    cluster.api.create(CONTROLLER_REVISIONS, NAMESPACE, clash)
    controllers = _start(cluster, vm)
    assert _vmis(cluster) == []
    name = clash["metadata"]["name"]
    messages = [m for _, _, reason, m in controllers.events.recorded if reason == "FailedCreate"]
    assert messages[0] == (
        "error encountered while storing instancetype.kubevirt.io controllerRevisions: "
        f"found existing ControllerRevision with unexpected data: {name}"
    )


def test_an_existing_revision_with_the_same_data_is_taken() -> None:
    cluster = Cluster()
    it = _cluster_instancetype(cluster, "u1.small", 1, "1Gi")
    vm = _vm_without_size(instancetype={"name": "u1.small"})
    cluster.api.create(CONTROLLER_REVISIONS, NAMESPACE, build_revision(vm, it, CLUSTER_KIND))
    _start(cluster, vm)
    assert len(_vmis(cluster)) == 1
    assert len(_instancetype_revisions(cluster)) == 1


def _expand_policy(policy: str) -> ClusterConfig:
    return dataclasses.replace(ClusterConfig(), instancetype_reference_policy=policy)


def test_the_expand_policy_writes_the_instancetype_into_the_vm() -> None:
    cluster = Cluster()
    _cluster_instancetype(cluster, "u1.small", 1, "2Gi")
    _preference(cluster, "virtio", {"devices": {"preferredDiskBus": "virtio"}})
    controllers = Controllers(cluster, config=_expand_policy("expand"))
    vm = _vm_without_size(
        instancetype={"name": "u1.small"}, preference={"name": "virtio", "kind": "VirtualMachinePreference"}
    )
    cluster.api.create(VIRTUAL_MACHINES, NAMESPACE, vm)
    controllers.run()
    stored = cluster.api.get(VIRTUAL_MACHINES, NAMESPACE, "testvm")
    assert "instancetype" not in stored["spec"]
    assert "preference" not in stored["spec"]
    domain = stored["spec"]["template"]["spec"]["domain"]
    assert domain["memory"] == {"guest": "2Gi"}
    assert domain["devices"]["disks"] == [{"name": "root", "disk": {"bus": "virtio"}}]
    assert "instancetypeRef" not in stored.get("status", {})
    assert _instancetype_revisions(cluster) == []
    # The VM then runs as a plain VM.
    [vmi] = _vmis(cluster)
    assert vmi["spec"]["domain"]["memory"] == {"guest": "2Gi"}


def test_expand_leaves_vms_with_revisions_and_expand_all_does_not() -> None:
    cluster = Cluster()
    _cluster_instancetype(cluster, "u1.small", 1, "2Gi")
    vm = _vm_without_size(instancetype={"name": "u1.small"})
    vm["spec"]["runStrategy"] = "Halted"
    controllers = _start(cluster, vm)
    [revision] = _instancetype_revisions(cluster)
    controllers.config = _expand_policy("expand")
    controllers.queues["vm"].add(f"{NAMESPACE}/testvm")
    controllers.run()
    assert "instancetype" in cluster.api.get(VIRTUAL_MACHINES, NAMESPACE, "testvm")["spec"]
    controllers.config = _expand_policy("expandAll")
    controllers.queues["vm"].add(f"{NAMESPACE}/testvm")
    controllers.run()
    stored = cluster.api.get(VIRTUAL_MACHINES, NAMESPACE, "testvm")
    assert "instancetype" not in stored["spec"]
    assert stored["spec"]["template"]["spec"]["domain"]["memory"] == {"guest": "2Gi"}
    # The stored copy it no longer needs is deleted.
    assert revision["metadata"]["name"] not in [
        r["metadata"]["name"] for r in _instancetype_revisions(cluster)
    ]
