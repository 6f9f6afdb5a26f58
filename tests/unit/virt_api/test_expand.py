"""expand-vm-spec and expand-spec: KubeVirt's expansion, codes and messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubevirt.client import VIRTUAL_MACHINES
from kubevirt.client.resources import (
    CONTROLLER_REVISIONS,
    VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
    VIRTUAL_MACHINE_PREFERENCES,
)
from kubevirt.instancetype.revision import build_revision
from kubevirt.virt_api.rest.expand import VMExpander
from kubevirt.virt_api.rest.status import StatusError
from kubevirt_testing.fake_kube_api import FakeKubeApi

NS = "ns"
GROUP = "instancetype.kubevirt.io/v1beta1"


def vm(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm1"},
        "spec": {
            "runStrategy": "Halted",
            "template": {
                "spec": {
                    "domain": {"devices": {}},
                    "volumes": [{"name": "root", "containerDisk": {"image": "cirros"}}],
                }
            },
            **spec,
        },
    }


@pytest.fixture
def api() -> FakeKubeApi:
    fake = FakeKubeApi()
    fake.add(
        VIRTUAL_MACHINE_CLUSTER_INSTANCETYPES,
        {
            "apiVersion": GROUP,
            "kind": "VirtualMachineClusterInstancetype",
            "metadata": {"name": "u1.small"},
            "spec": {"cpu": {"guest": 1}, "memory": {"guest": "2Gi"}},
        },
    )
    fake.add(
        VIRTUAL_MACHINE_PREFERENCES,
        {
            "apiVersion": GROUP,
            "kind": "VirtualMachinePreference",
            "metadata": {"name": "virtio", "namespace": NS},
            "spec": {"devices": {"preferredDiskBus": "virtio", "preferredInterfaceModel": "virtio"}},
        },
    )
    return fake


def refusal(call: Any, *args: Any) -> StatusError:
    with pytest.raises(StatusError) as caught:
        call(*args)
    return caught.value


def test_a_given_vm_is_expanded_and_loses_its_matchers(api: FakeKubeApi) -> None:
    body = vm(
        instancetype={"name": "u1.small"}, preference={"name": "virtio", "kind": "VirtualMachinePreference"}
    )
    expanded = VMExpander(api).expand_given(NS, json.dumps(body).encode())
    assert "instancetype" not in expanded["spec"]
    assert "preference" not in expanded["spec"]
    assert expanded["metadata"]["namespace"] == NS
    template = expanded["spec"]["template"]["spec"]
    domain = template["domain"]
    assert domain["memory"] == {"guest": "2Gi"}
    assert (domain["cpu"]["sockets"], domain["cpu"]["cores"], domain["cpu"]["threads"]) == (1, 1, 1)
    assert domain["devices"]["disks"] == [{"name": "root", "disk": {"bus": "virtio"}}]
    assert domain["devices"]["interfaces"] == [{"name": "default", "bridge": {}, "model": "virtio"}]
    assert template["networks"] == [{"name": "default", "pod": {}}]
    # The VMI spec defaults follow the expansion.
    assert domain["machine"] == {"type": "q35"}
    assert template["volumes"][0]["containerDisk"]["imagePullPolicy"] == "Always"


def test_a_vm_without_matchers_comes_back_unexpanded(api: FakeKubeApi) -> None:
    expanded = VMExpander(api).expand_given(NS, json.dumps(vm()).encode())
    # Unchanged, in Go's encoding: the template's zero-valued structs show.
    template = vm()["spec"]["template"]
    template["metadata"] = {"creationTimestamp": None}
    template["spec"]["domain"]["resources"] = {}
    assert expanded["spec"]["template"] == template


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "Can not unmarshal Request body to struct, error: unexpected end of JSON input"),
        (b'{"spec": ', "Can not unmarshal Request body to struct, error: unexpected end of JSON input"),
        (
            b"x",
            "Can not unmarshal Request body to struct, error: "
            "invalid character 'x' looking for beginning of value",
        ),
        (
            b"[]",
            "Can not unmarshal Request body to struct, error: "
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
    ],
)
def test_bodies_that_are_no_json_object_are_bad_requests(api: FakeKubeApi, body: bytes, message: str) -> None:
    err = refusal(VMExpander(api).expand_given, NS, body)
    assert (err.code, err.reason, err.message) == (400, "BadRequest", message)


def test_a_body_that_is_no_valid_vm_lists_the_causes(api: FakeKubeApi) -> None:
    body = vm()
    body["spec"]["runStrategy"] = 5
    err = refusal(VMExpander(api).expand_given, NS, json.dumps(body).encode())
    assert (err.code, err.message) == (400, "Object is not a valid VirtualMachine")
    assert err.details is not None
    assert err.details["causes"]
    assert all(set(cause) == {"message"} for cause in err.details["causes"])


def test_a_vm_of_another_namespace_is_refused(api: FakeKubeApi) -> None:
    body = vm()
    body["metadata"]["namespace"] = "other"
    err = refusal(VMExpander(api).expand_given, NS, json.dumps(body).encode())
    assert (err.code, err.message) == (400, "VM namespace must be empty or ns")


def test_a_missing_instancetype_is_a_bad_request_for_a_given_vm(api: FakeKubeApi) -> None:
    err = refusal(VMExpander(api).expand_given, NS, json.dumps(vm(instancetype={"name": "nope"})).encode())
    assert (err.code, err.message) == (
        400,
        'virtualmachineclusterinstancetypes.instancetype.kubevirt.io "nope" not found',
    )


def test_a_conflict_is_a_bad_request_for_a_given_vm(api: FakeKubeApi) -> None:
    body = vm(instancetype={"name": "u1.small"})
    body["spec"]["template"]["spec"]["domain"]["memory"] = {"guest": "1Gi"}
    err = refusal(VMExpander(api).expand_given, NS, json.dumps(body).encode())
    assert (err.code, err.message) == (
        400,
        "VM field(s) spec.template.spec.domain.memory conflicts with selected instance type",
    )


def test_a_stored_vm_expands_from_its_controller_revision(api: FakeKubeApi) -> None:
    stored = vm(instancetype={"name": "u1.small"})
    stored["metadata"]["namespace"] = NS
    stored = api.add(VIRTUAL_MACHINES, stored)
    # The VM's copy was taken when the instance type was bigger.
    older = {
        "metadata": {"name": "u1.small", "uid": "it-uid", "generation": 1},
        "spec": {"cpu": {"guest": 2}, "memory": {"guest": "4Gi"}},
    }
    revision = api.add(
        CONTROLLER_REVISIONS, build_revision(stored, older, "VirtualMachineClusterInstancetype")
    )
    stored["status"] = {
        "instancetypeRef": {
            "name": "u1.small",
            "controllerRevisionRef": {"name": revision["metadata"]["name"]},
        }
    }
    api.update_status(VIRTUAL_MACHINES, NS, stored)
    expanded = VMExpander(api).expand_stored(NS, "vm1")
    assert expanded["spec"]["template"]["spec"]["domain"]["memory"] == {"guest": "4Gi"}
    assert "instancetypeRef" not in expanded.get("status", {})


def test_a_stored_vm_that_cannot_be_expanded_is_an_internal_error(api: FakeKubeApi) -> None:
    stored = vm(instancetype={"name": "gone"})
    stored["metadata"]["namespace"] = NS
    api.add(VIRTUAL_MACHINES, stored)
    err = refusal(VMExpander(api).expand_stored, NS, "vm1")
    assert (err.code, err.reason) == (500, "InternalError")
    assert err.message == (
        "Internal error occurred: "
        'virtualmachineclusterinstancetypes.instancetype.kubevirt.io "gone" not found'
    )


def test_an_absent_vm_is_not_found(api: FakeKubeApi) -> None:
    err = refusal(VMExpander(api).expand_stored, NS, "absent")
    assert (err.code, err.message) == (404, 'virtualmachine.kubevirt.io "absent" not found')
