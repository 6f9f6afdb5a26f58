"""virt-api's VM webhooks with instance types: the matcher checks and default kinds when mutating, the
lookup through the cluster state when validating."""

from __future__ import annotations

import copy
import uuid
from typing import Any

from kubevirt.admission import jsonpatch
from kubevirt.admission.review import AdmissionRequest, GroupVersionResource
from kubevirt.admission.state import StaticClusterState
from kubevirt.instancetype.revision import build_revision
from kubevirt.virt_api.app import build_context
from kubevirt.virt_api.webhooks.mutating_webhook.mutators.vm import mutator
from kubevirt.virt_api.webhooks.validating_webhook.admitters.vms import admitter
from kubevirt.virt_config import ClusterConfig

VMS = GroupVersionResource("kubevirt.io", "v1", "virtualmachines")
SMALL = {
    "apiVersion": "instancetype.kubevirt.io/v1beta1",
    "kind": "VirtualMachineClusterInstancetype",
    "metadata": {"name": "small"},
    "spec": {"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}},
}


def vm(domain: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": "default"},
        "spec": {
            "runStrategy": "Halted",
            "template": {"spec": {"domain": {"devices": {}, **domain}}},
            **spec,
        },
    }


def review(obj: dict[str, Any]) -> AdmissionRequest:
    return AdmissionRequest(uid="u", operation="CREATE", resource=VMS, namespace="default", object=obj)


def test_mutation_sets_the_default_kinds_and_refuses_empty_matchers() -> None:
    ctx = build_context(ClusterConfig())
    body = vm(
        {}, instancetype={"name": "small"}, preference={"name": "fedora", "kind": "VirtualMachinePreference"}
    )
    answer = mutator(ctx)(review(copy.deepcopy(body)))
    assert answer.allowed
    assert answer.patch is not None
    mutated = jsonpatch.apply(body, answer.patch)
    assert mutated["spec"]["instancetype"] == {"name": "small", "kind": "virtualmachineclusterinstancetype"}
    assert mutated["spec"]["preference"]["kind"] == "VirtualMachinePreference"
    refused = mutator(ctx)(review(vm({}, instancetype={})))
    assert not refused.allowed
    assert [c.field for c in refused.causes] == ["spec.instancetype"]


def test_validation_looks_the_instancetype_up_in_the_cluster_state() -> None:
    ctx = build_context(ClusterConfig(), StaticClusterState(instancetype_objects=[SMALL]))
    conflicting = admitter(ctx)(review(vm({"memory": {"guest": "2Gi"}}, instancetype={"name": "small"})))
    assert not conflicting.allowed
    assert [(c.field, c.message) for c in conflicting.causes] == [
        (
            "spec.template.spec.domain.memory",
            "VM field(s) spec.template.spec.domain.memory conflicts with selected instance type",
        )
    ]
    assert admitter(ctx)(review(vm({}, instancetype={"name": "small"}))).allowed
    # Without cluster state (or when the object is missing) nothing is applied and nothing refused.
    lonely = build_context(ClusterConfig())
    assert admitter(lonely)(review(vm({"memory": {"guest": "2Gi"}}, instancetype={"name": "small"}))).allowed


def test_mutation_takes_machine_type_and_storage_class_from_the_preference() -> None:
    preference = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachinePreference",
        "metadata": {"name": "legacy", "namespace": "default"},
        "spec": {
            "machine": {"preferredMachineType": "pc-q35-rhel8.6.0"},
            "volumes": {"preferredStorageClassName": "fast"},
        },
    }
    ctx = build_context(ClusterConfig(), StaticClusterState(instancetype_objects=[preference]))
    body = vm({}, preference={"name": "legacy", "kind": "VirtualMachinePreference"})
    body["spec"]["dataVolumeTemplates"] = [
        {"metadata": {"name": "a"}, "spec": {"storage": {}}},
        {"metadata": {"name": "b"}, "spec": {"pvc": {"storageClassName": "slow"}}},
    ]
    answer = mutator(ctx)(review(copy.deepcopy(body)))
    assert answer.patch is not None
    mutated = jsonpatch.apply(body, answer.patch)
    assert mutated["spec"]["template"]["spec"]["domain"]["machine"] == {"type": "pc-q35-rhel8.6.0"}
    classes = [
        t["spec"].get("storage", t["spec"].get("pvc"))["storageClassName"]
        for t in mutated["spec"]["dataVolumeTemplates"]
    ]
    assert classes == ["fast", "slow"]
    # A machine type the VM names wins; without the preference the cluster's default applies.
    body["spec"]["template"]["spec"]["domain"]["machine"] = {"type": "q35"}
    assert mutator(ctx)(review(copy.deepcopy(body))).patch is not None
    lonely = mutator(build_context(ClusterConfig()))(review(vm({}, preference={"name": "legacy"})))
    assert lonely.patch is not None
    assert jsonpatch.apply(vm({}), lonely.patch)["spec"]["template"]["spec"]["domain"]["machine"] == {
        "type": "q35"
    }


def test_validation_uses_the_vms_stored_revision_before_the_live_object() -> None:
    # The preference needs 2Gi; the live "small" has shrunk to 1Gi, the VM's stored copy has 2Gi.
    preference = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterPreference",
        "metadata": {"name": "big"},
        "spec": {"requirements": {"memory": {"guest": "2Gi"}}},
    }
    stored_copy = {**SMALL, "metadata": {"name": "small", "uid": "u1", "generation": 1}}
    stored_copy["spec"] = {"cpu": {"guest": 1}, "memory": {"guest": "2Gi"}}
    owner = {"metadata": {"name": "vm", "namespace": "default", "uid": "vm-uid"}}
    revision = build_revision(owner, stored_copy, "VirtualMachineClusterInstancetype")
    state = StaticClusterState(instancetype_objects=[SMALL, preference, revision])
    ctx = build_context(ClusterConfig(), state)
    live = vm({}, instancetype={"name": "small"}, preference={"name": "big"})
    refused = admitter(ctx)(review(live))
    assert not refused.allowed
    assert [c.field for c in refused.causes] == ["spec.instancetype"]  # 1Gi from the live object
    pinned = vm(
        {},
        instancetype={"name": "small", "revisionName": revision["metadata"]["name"]},
        preference={"name": "big"},
    )
    assert admitter(ctx)(review(pinned)).allowed
    recorded = copy.deepcopy(live)
    ref = {"name": "small", "controllerRevisionRef": {"name": revision["metadata"]["name"]}}
    recorded["status"] = {"instancetypeRef": ref}
    assert admitter(ctx)(review(recorded)).allowed


def _firmware(answer_patch: Any, body: dict[str, Any]) -> dict[str, Any]:
    mutated = jsonpatch.apply(body, answer_patch)
    firmware: dict[str, Any] = mutated["spec"]["template"]["spec"]["domain"]["firmware"]
    return firmware


def test_a_new_vm_gets_a_random_firmware_uuid_and_serial_and_keeps_its_own() -> None:
    ctx = build_context(ClusterConfig())
    body = vm({})
    first = _firmware(mutator(ctx)(review(copy.deepcopy(body))).patch, body)
    second = _firmware(mutator(ctx)(review(copy.deepcopy(body))).patch, body)
    for firmware in (first, second):
        assert uuid.UUID(firmware["uuid"]).version == 4
        assert uuid.UUID(firmware["serial"]).version == 4
    assert first["uuid"] != second["uuid"]
    assert first["serial"] != second["serial"]
    own = vm({"firmware": {"uuid": "0a1b2c3d-0000-4000-8000-000000000001", "serial": "s-1"}})
    assert (
        _firmware(mutator(ctx)(review(copy.deepcopy(own))).patch, own)
        == own["spec"]["template"]["spec"]["domain"]["firmware"]
    )


def test_an_updated_vm_gets_no_firmware_from_the_webhook() -> None:
    ctx = build_context(ClusterConfig())
    body = vm({})
    update = AdmissionRequest(uid="u", operation="UPDATE", resource=VMS, namespace="default", object=body)
    answer = mutator(ctx)(update)
    mutated = jsonpatch.apply(body, answer.patch) if answer.patch else body
    assert "firmware" not in mutated["spec"]["template"]["spec"]["domain"]


def test_the_stored_vm_holds_quantities_as_go_writes_them_and_keeps_the_rest() -> None:
    """KubeVirt's mutator writes back its decoded spec: Go clients then read back the quantities they
    compare (a revision's spec with the VM's) in one form."""
    body = vm({"resources": {"requests": {"memory": "4096Ki", "cpu": 2}, "limits": {"cpu": "2500m"}}})
    body["spec"]["template"]["metadata"] = {"annotations": {"size": "4096Ki"}}
    answer = mutator(build_context(ClusterConfig()))(review(copy.deepcopy(body)))
    assert answer.patch is not None
    mutated = jsonpatch.apply(body, answer.patch)
    resources = mutated["spec"]["template"]["spec"]["domain"]["resources"]
    assert resources == {"requests": {"memory": "4Mi", "cpu": "2"}, "limits": {"cpu": "2500m"}}  # 2500m stays
    # Text that only looks like a quantity stays as written.
    assert mutated["spec"]["template"]["metadata"] == {"annotations": {"size": "4096Ki"}}
    assert mutated["spec"]["runStrategy"] == "Halted"
