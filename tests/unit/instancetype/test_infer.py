"""inferFromVolume: the chains KubeVirt follows, its failure policies and messages, and the VM
mutating webhook that runs it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubevirt.admission import jsonpatch
from kubevirt.admission.review import AdmissionRequest, GroupVersionResource
from kubevirt.admission.state import StaticClusterState
from kubevirt.instancetype.infer import InferenceError, infer_matchers
from kubevirt.virt_api.app import build_context
from kubevirt.virt_api.webhooks.mutating_webhook.mutators.vm import mutator
from kubevirt.virt_config import ClusterConfig

NS = "default"
IT_LABEL = "instancetype.kubevirt.io/default-instancetype"
IT_KIND_LABEL = "instancetype.kubevirt.io/default-instancetype-kind"
PREF_LABEL = "instancetype.kubevirt.io/default-preference"


def obj(
    kind: str, name: str, labels: dict[str, str] | None = None, namespace: str = NS, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
    }
    if spec:
        body["spec"] = spec
    return body


def pvc(name: str, labels: dict[str, str] | None = None, namespace: str = NS) -> dict[str, Any]:
    return obj("PersistentVolumeClaim", name, labels, namespace)


def vm(volume: dict[str, Any], policy: str | None = None, **spec: Any) -> dict[str, Any]:
    matcher: dict[str, Any] = {"inferFromVolume": "root"}
    if policy is not None:
        matcher["inferFromVolumeFailurePolicy"] = policy
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": NS},
        "spec": {
            "instancetype": dict(matcher),
            "preference": dict(matcher),
            "template": {
                "spec": {
                    "domain": {"devices": {}, "memory": {"guest": "512Mi"}},
                    "volumes": [{"name": "root", **volume}],
                }
            },
            **spec,
        },
    }


LABELLED = {IT_LABEL: "u1.medium", IT_KIND_LABEL: "VirtualMachineClusterInstancetype", PREF_LABEL: "fedora"}


def infer(body: dict[str, Any], *objects: dict[str, Any]) -> dict[str, Any]:
    inferred = copy.deepcopy(body)
    infer_matchers(inferred, StaticClusterState(instancetype_objects=list(objects)))
    return inferred


def test_from_a_pvcs_labels() -> None:
    inferred = infer(vm({"persistentVolumeClaim": {"claimName": "disk"}}), pvc("disk", LABELLED))
    assert inferred["spec"]["instancetype"] == {
        "name": "u1.medium",
        "kind": "VirtualMachineClusterInstancetype",
    }
    assert inferred["spec"]["preference"] == {"name": "fedora"}
    # Only the Ignore policy drops the template's guest memory.
    assert inferred["spec"]["template"]["spec"]["domain"]["memory"] == {"guest": "512Mi"}


def test_from_a_data_volume_template_through_a_data_source() -> None:
    body = vm(
        {"dataVolume": {"name": "root-dv"}},
        dataVolumeTemplates=[
            {
                "metadata": {"name": "root-dv"},
                "spec": {"sourceRef": {"kind": "DataSource", "name": "fedora", "namespace": "images"}},
            }
        ],
    )
    source = obj("DataSource", "fedora", LABELLED, namespace="images")
    assert infer(body, source)["spec"]["instancetype"]["name"] == "u1.medium"
    # A DataSource without the labels leads on to its PVC.
    unlabelled = obj(
        "DataSource", "fedora", namespace="images", source={"pvc": {"name": "golden", "namespace": "images"}}
    )
    assert infer(body, unlabelled, pvc("golden", LABELLED, "images"))["spec"]["preference"] == {
        "name": "fedora"
    }


def test_from_a_data_volume_object_or_a_pvc_of_that_name() -> None:
    body = vm({"dataVolume": {"name": "dv"}})
    assert infer(body, obj("DataVolume", "dv", LABELLED))["spec"]["instancetype"]["name"] == "u1.medium"
    assert infer(body, pvc("dv", LABELLED))["spec"]["instancetype"]["name"] == "u1.medium"
    via_source = obj("DataVolume", "dv", source={"pvc": {"name": "golden", "namespace": NS}})
    assert infer(body, via_source, pvc("golden", LABELLED))["spec"]["instancetype"]["name"] == "u1.medium"


@pytest.mark.parametrize(
    ("volume", "objects", "message"),
    [
        ({"persistentVolumeClaim": {"claimName": "disk"}}, [], 'persistentvolumeclaims "disk" not found'),
        (
            {"persistentVolumeClaim": {"claimName": "disk"}},
            [pvc("disk")],
            f"unable to find required {IT_LABEL} label on the volume",
        ),
        (
            {"containerDisk": {"image": "x"}},
            [],
            "unable to infer defaults from volume root as type is not supported",
        ),
    ],
)
def test_failures_are_refusals_by_default(
    volume: dict[str, Any], objects: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(InferenceError) as caught:
        infer(vm(volume), *objects)
    assert caught.value.message == message


def test_ignore_clears_the_matcher_on_ignorable_failures_only() -> None:
    inferred = infer(vm({"containerDisk": {"image": "x"}}, policy="Ignore"))
    assert "instancetype" not in inferred["spec"]
    assert "preference" not in inferred["spec"]
    # A missing PVC is no ignorable failure.
    with pytest.raises(InferenceError):
        infer(vm({"persistentVolumeClaim": {"claimName": "gone"}}, policy="Ignore"))


def test_ignore_drops_the_guest_memory_once_an_instancetype_is_inferred() -> None:
    inferred = infer(
        vm({"persistentVolumeClaim": {"claimName": "disk"}}, policy="Ignore"), pvc("disk", LABELLED)
    )
    assert "memory" not in inferred["spec"]["template"]["spec"]["domain"]
    assert inferred["spec"]["instancetype"] == {
        "name": "u1.medium",
        "kind": "VirtualMachineClusterInstancetype",
    }


def test_a_missing_volume_is_named() -> None:
    body = vm({"persistentVolumeClaim": {"claimName": "disk"}})
    body["spec"]["instancetype"]["inferFromVolume"] = "other"
    with pytest.raises(InferenceError) as caught:
        infer(body, pvc("disk", LABELLED))
    assert caught.value.message == "unable to find volume other to infer defaults"


def _review(body: dict[str, Any]) -> AdmissionRequest:
    resource = GroupVersionResource("kubevirt.io", "v1", "virtualmachines")
    return AdmissionRequest(uid="u", operation="CREATE", resource=resource, namespace=NS, object=body)


def test_the_mutating_webhook_patches_the_inferred_matchers_in() -> None:
    body = vm({"persistentVolumeClaim": {"claimName": "disk"}})
    ctx = build_context(ClusterConfig(), StaticClusterState(instancetype_objects=[pvc("disk", LABELLED)]))
    answer = mutator(ctx)(_review(copy.deepcopy(body)))
    assert answer.allowed
    assert answer.patch is not None
    mutated = jsonpatch.apply(body, answer.patch)
    assert mutated["spec"]["instancetype"] == {
        "name": "u1.medium",
        "kind": "VirtualMachineClusterInstancetype",
    }
    assert mutated["spec"]["preference"] == {"name": "fedora", "kind": "virtualmachineclusterpreference"}


def test_the_mutating_webhook_refuses_a_failed_inference_with_a_400() -> None:
    ctx = build_context(ClusterConfig(), StaticClusterState())
    answer = mutator(ctx)(_review(vm({"persistentVolumeClaim": {"claimName": "disk"}})))
    assert not answer.allowed
    assert answer.status is not None
    assert (answer.status["code"], answer.status["message"]) == (
        400,
        'persistentvolumeclaims "disk" not found',
    )
