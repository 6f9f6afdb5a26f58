"""VM admission with instance types and preferences: lookups, conflicts, requirements, matchers."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.admission import defaulting, pipeline
from kubevirt.admission.instancetypes import matcher_update_causes
from kubevirt.admission.schema import schema_check
from kubevirt.admission.state import NoClusterState, StaticClusterState
from kubevirt.virt_config import ClusterConfig

CONFIG = ClusterConfig()
GROUP = "instancetype.kubevirt.io/v1beta1"


def cluster_instancetype(name: str, cpus: int = 1, memory: str = "2Gi", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": name},
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": memory}, **extra},
    }


def namespaced(kind: str, name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def vm(domain: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm1", "namespace": "ns"},
        "spec": {
            "runStrategy": "Halted",
            "template": {"spec": {"domain": {"devices": {}, **(domain or {})}}},
            **spec,
        },
    }


OBJECTS = [
    cluster_instancetype("u1.small"),
    cluster_instancetype("huge", cpus=4, memory="8Gi", cpu={"guest": 4, "model": "Haswell"}),
    namespaced(
        "VirtualMachinePreference",
        "needs-two",
        "ns",
        {"requirements": {"cpu": {"guest": 2}}, "cpu": {"preferredCPUTopology": "cores"}},
    ),
    namespaced(
        "VirtualMachineClusterPreference",
        "spread",
        "",
        {"cpu": {"preferredCPUTopology": "spread"}},
    ),
]
STATE = StaticClusterState(instancetype_objects=OBJECTS)


def admit(manifest: dict[str, Any], state: Any = STATE) -> pipeline.Outcome:
    return pipeline.validate_vm(
        manifest, CONFIG, defaulter=defaulting.vm_defaults, schema=schema_check, state=state
    )


def causes(outcome: pipeline.Outcome) -> list[dict[str, str]]:
    return [cause.to_dict() for cause in outcome.causes]


def test_accepted_vm_is_validated_with_the_instancetype_applied() -> None:
    outcome = admit(vm(instancetype={"name": "huge"}))
    assert outcome.accepted
    assert outcome.defaulted is not None
    domain = outcome.defaulted["spec"]["template"]["spec"]["domain"]
    assert domain["memory"]["guest"] == "8Gi"
    assert (domain["cpu"]["sockets"], domain["cpu"]["cores"], domain["cpu"]["model"]) == (4, 1, "Haswell")


def test_template_fields_the_instancetype_owns_are_refused() -> None:
    outcome = admit(
        vm({"memory": {"guest": "1Gi"}, "cpu": {"sockets": 2}}, instancetype={"name": "u1.small"})
    )
    assert causes(outcome) == [
        {
            "type": "FieldValueInvalid",
            "message": "VM field(s) spec.template.spec.domain.cpu.sockets "
            "conflicts with selected instance type",
            "field": "spec.template.spec.domain.cpu.sockets",
        },
        {
            "type": "FieldValueInvalid",
            "message": "VM field(s) spec.template.spec.domain.memory conflicts with selected instance type",
            "field": "spec.template.spec.domain.memory",
        },
    ]


@pytest.mark.parametrize(
    "matcher",
    [
        {"name": "missing"},
        {"name": "u1.small", "kind": "VirtualMachineInstancetype"},  # only a cluster one exists
        {"name": "u1.small", "kind": "Unknown"},
    ],
)
def test_instancetypes_that_cannot_be_found_are_tolerated(matcher: dict[str, str]) -> None:
    # The template's own memory then stands, exactly as without an instance type.
    outcome = admit(vm({"memory": {"guest": "1Gi"}}, instancetype=matcher))
    assert outcome.accepted


def test_without_a_state_nothing_is_looked_up_and_no_lookup_error_refuses() -> None:
    assert admit(vm({"memory": {"guest": "1Gi"}}, instancetype={"name": "u1.small"}), state=None).accepted
    assert admit(
        vm({"memory": {"guest": "1Gi"}}, instancetype={"name": "u1.small"}), NoClusterState()
    ).accepted


def test_preference_requirements_are_checked_after_expansion() -> None:
    refused = admit(
        vm(
            instancetype={"name": "u1.small"},
            preference={"name": "needs-two", "kind": "VirtualMachinePreference"},
        )
    )
    assert causes(refused) == [
        {
            "type": "FieldValueNotFound",
            "message": "failure checking preference requirements: "
            "insufficient CPU resources of 1 vCPU provided by "
            "instance type, preference requires 2 vCPU",
            "field": "spec.instancetype",
        }
    ]
    accepted = admit(
        vm(
            instancetype={"name": "huge"},
            preference={"name": "needs-two", "kind": "virtualmachinepreferences"},
        )
    )
    assert accepted.accepted
    assert accepted.defaulted is not None
    assert accepted.defaulted["spec"]["template"]["spec"]["domain"]["cpu"]["cores"] == 4


def test_requirements_without_instancetype_count_the_template_cpus() -> None:
    outcome = admit(
        vm({"cpu": {"cores": 1}}, preference={"name": "needs-two", "kind": "VirtualMachinePreference"})
    )
    assert causes(outcome) == [
        {
            "type": "FieldValueNotFound",
            "message": "failure checking preference requirements: "
            "insufficient CPU resources of 1 vCPU provided by "
            "VirtualMachine, preference requires 2 vCPU provided as cores",
            "field": "spec.template.spec.domain.cpu.cores",
        }
    ]


def test_namespaced_objects_are_looked_up_in_the_vms_namespace() -> None:
    manifest = vm(preference={"name": "needs-two", "kind": "VirtualMachinePreference"})
    manifest["metadata"]["namespace"] = "elsewhere"
    assert admit(manifest).accepted  # not found there, so no requirements apply


def test_spread_preference_must_divide_the_instancetype_cpus() -> None:
    outcome = admit(vm(instancetype={"name": "huge"}, preference={"name": "spread"}))
    assert outcome.accepted
    three = StaticClusterState(instancetype_objects=[cluster_instancetype("three", cpus=3), *OBJECTS])
    outcome = admit(vm(instancetype={"name": "three"}, preference={"name": "spread"}), three)
    assert causes(outcome) == [
        {
            "type": "FieldValueInvalid",
            "message": "3 vCPUs provided by the instance type are not divisible by the "
            "Spec.PreferSpreadSocketToCoreRatio or Spec.CPU.PreferSpreadOptions.Ratio of 2 "
            "provided by the preference",
            "field": "instancetype.spec.cpu.guest",
        }
    ]


@pytest.mark.parametrize(
    ("matcher", "expected"),
    [
        (
            {},
            [
                {
                    "type": "FieldValueNotFound",
                    "message": "Either Name or InferFromVolume should be provided "
                    "within the InstancetypeMatcher",
                    "field": "spec.instancetype",
                }
            ],
        ),
        (
            {"name": "a", "kind": "b", "inferFromVolume": "root", "inferFromVolumeFailurePolicy": "Maybe"},
            [
                {
                    "type": "FieldValueNotFound",
                    "message": "Name should not be provided "
                    "when InferFromVolume is used within the InstancetypeMatcher",
                    "field": "spec.instancetype.name",
                },
                {
                    "type": "FieldValueNotFound",
                    "message": "Kind should not be provided "
                    "when InferFromVolume is used within the InstancetypeMatcher",
                    "field": "spec.instancetype.kind",
                },
                {
                    "type": "FieldValueInvalid",
                    "message": "Invalid value 'Maybe' for InferFromVolumeFailurePolicy",
                    "field": "spec.instancetype.inferFromVolumeFailurePolicy",
                },
            ],
        ),
    ],
)
def test_matchers_are_checked_first(matcher: dict[str, str], expected: list[dict[str, str]]) -> None:
    assert causes(admit(vm(instancetype=matcher))) == expected


def test_renaming_a_pinned_matcher_needs_a_new_revision() -> None:
    old = vm(instancetype={"name": "a", "revisionName": "a-rev"})
    renamed = vm(instancetype={"name": "b", "revisionName": "a-rev"})
    assert [c.to_dict() for c in matcher_update_causes(renamed, old)] == [
        {
            "type": "FieldValueInvalid",
            "message": "the Matcher Name has been updated without updating the RevisionName",
            "field": "spec.instancetype.revisionName",
        }
    ]
    assert matcher_update_causes(vm(instancetype={"name": "b", "revisionName": "b-rev"}), old) == []
