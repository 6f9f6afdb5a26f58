"""Preference requirements, spread divisibility, matcher kinds and the name annotations."""

from __future__ import annotations

from typing import Any

import pytest

from kubevirt.instancetype import (
    RequirementError,
    check_requirements,
    check_spread_topology,
    set_name_annotations,
)
from kubevirt.instancetype.matcher import (
    UnexpectedKindError,
    instancetype_kind,
    not_found_message,
    preference_kind,
)
from kubevirt_api.core.v1.vm import VirtualMachine
from kubevirt_api.core.v1.vmi import VirtualMachineInstanceSpec
from kubevirt_api.instancetype.v1beta1 import VirtualMachineInstancetypeSpec, VirtualMachinePreferenceSpec
from kubevirt_api.k8s.meta_v1 import ObjectMeta


def it(guest_cpus: int = 2, memory: str = "1Gi") -> VirtualMachineInstancetypeSpec:
    return VirtualMachineInstancetypeSpec.from_dict(
        {"cpu": {"guest": guest_cpus}, "memory": {"guest": memory}}
    )


def pref(spec: dict[str, Any]) -> VirtualMachinePreferenceSpec:
    return VirtualMachinePreferenceSpec.from_dict(spec)


def domain(**fields: Any) -> VirtualMachineInstanceSpec:
    return VirtualMachineInstanceSpec.from_dict({"domain": {"devices": {}, **fields}})


def failure(
    instancetype: VirtualMachineInstancetypeSpec | None,
    preference: VirtualMachinePreferenceSpec,
    spec: VirtualMachineInstanceSpec,
) -> tuple[str, str]:
    with pytest.raises(RequirementError) as caught:
        check_requirements(instancetype, preference, spec)
    return str(caught.value), caught.value.field


def test_instancetype_short_of_required_cpus_and_memory() -> None:
    requires = pref({"requirements": {"cpu": {"guest": 4}, "memory": {"guest": "2Gi"}}})
    assert failure(it(2), requires, domain()) == (
        "insufficient CPU resources of 2 vCPU provided by instance type, preference requires 4 vCPU",
        "spec.instancetype",
    )
    assert failure(it(4, "1Gi"), requires, domain()) == (
        "insufficient Memory resources of 1Gi provided by instance type, preference requires 2Gi",
        "spec.instancetype",
    )
    check_requirements(it(4, "2Gi"), requires, domain())


def test_vm_memory_counts_over_the_instancetype_and_defaults_to_nothing() -> None:
    requires = pref({"requirements": {"memory": {"guest": "512Mi"}}})
    check_requirements(it(1, "256Mi"), requires, domain(memory={"guest": "1Gi"}))
    assert failure(None, requires, domain()) == (
        "insufficient Memory resources of 0 provided by VirtualMachine, preference requires 512Mi",
        "spec.template.spec.domain.memory",
    )


@pytest.mark.parametrize(
    ("cpu_preference", "cpu", "message_tail", "field"),
    [
        ({}, {"sockets": 1, "cores": 4}, "provided as sockets", "spec.template.spec.domain.cpu.sockets"),
        (
            {"preferredCPUTopology": "preferCores"},
            {"cores": 1},
            "provided as cores",
            "spec.template.spec.domain.cpu.cores",
        ),
        (
            {"preferredCPUTopology": "any"},
            {"sockets": 1, "cores": 1, "threads": 1},
            "provided as cores, sockets and threads",
            "spec.template.spec.domain.cpu.cores, spec.template.spec.domain.cpu.sockets, "
            "spec.template.spec.domain.cpu.threads",
        ),
        (
            {"preferredCPUTopology": "spread", "spreadOptions": {"across": "CoresThreads"}},
            {"cores": 1, "threads": 1, "sockets": 8},
            "provided as CoresThreads",
            "spec.template.spec.domain.cpu.cores, spec.template.spec.domain.cpu.threads",
        ),
    ],
)
def test_vm_cpus_counted_along_the_preferred_topology(
    cpu_preference: dict[str, Any], cpu: dict[str, int], message_tail: str, field: str
) -> None:
    requires = pref({"cpu": cpu_preference, "requirements": {"cpu": {"guest": 2}}})
    message, failed = failure(None, requires, domain(cpu=cpu))
    assert message.endswith("preference requires 2 vCPU " + message_tail)
    assert failed == field


def test_vm_without_cpu_cannot_meet_a_cpu_requirement() -> None:
    requires = pref({"requirements": {"cpu": {"guest": 1}}})
    assert failure(None, requires, domain()) == (
        "no CPU resources provided by VirtualMachine, preference requires 1 vCPU",
        "spec.template.spec.domain.cpu",
    )


@pytest.mark.parametrize(
    ("guest", "spread", "message"),
    [
        (
            3,
            {},
            "3 vCPUs provided by the instance type are not divisible by the "
            "Spec.PreferSpreadSocketToCoreRatio or Spec.CPU.PreferSpreadOptions.Ratio of 2 "
            "provided by the preference",
        ),
        (
            6,
            {"across": "CoresThreads", "ratio": 4},
            "6 vCPUs provided by the instance type are not divisible by the number of threads per core 4",
        ),
        (
            6,
            {"across": "SocketsCoresThreads", "ratio": 2},
            "6 vCPUs provided by the instance type are not divisible"
            " by the number of threads per core 2 and Spec.PreferSpreadSocketToCoreRatio or "
            "Spec.CPU.PreferSpreadOptions.Ratio of 2",
        ),
    ],
)
def test_spread_must_divide_the_instancetype_cpus(guest: int, spread: dict[str, Any], message: str) -> None:
    preference = pref({"cpu": {"preferredCPUTopology": "spread", "spreadOptions": spread}})
    conflict = check_spread_topology(it(guest), preference)
    assert conflict is not None
    assert (conflict.path, conflict.message) == ("instancetype.spec.cpu.guest", message)
    assert check_spread_topology(it(guest * 4), preference) is None
    assert check_spread_topology(it(guest), pref({"cpu": {"preferredCPUTopology": "cores"}})) is None


@pytest.mark.parametrize(
    ("spelled", "kind"),
    [
        (None, "VirtualMachineClusterInstancetype"),
        ("virtualmachineclusterinstancetype", "VirtualMachineClusterInstancetype"),
        ("VirtualMachineInstancetype", "VirtualMachineInstancetype"),
        ("VirtualMachineInstancetypes", "VirtualMachineInstancetype"),
    ],
)
def test_instancetype_matcher_kinds(spelled: str | None, kind: str) -> None:
    assert instancetype_kind(spelled) == kind


def test_unknown_matcher_kinds_are_refused() -> None:
    with pytest.raises(
        UnexpectedKindError, match=r"^got unexpected kind in PreferenceMatcher: VirtualMachineInstancetype$"
    ):
        preference_kind("VirtualMachineInstancetype")
    assert preference_kind("VirtualMachinePreferences") == "VirtualMachinePreference"
    assert not_found_message("VirtualMachineClusterPreference", "fedora") == (
        'virtualmachineclusterpreferences.instancetype.kubevirt.io "fedora" not found'
    )


def test_name_annotations_follow_the_matcher_kind() -> None:
    vm = VirtualMachine.from_dict(
        {
            "spec": {
                "instancetype": {"name": "u1.small"},
                "preference": {"name": "fedora", "kind": "VirtualMachinePreference"},
                "template": {"spec": {"domain": {"devices": {}}}},
            }
        }
    )
    meta = ObjectMeta(annotations={"keep": "me"})
    set_name_annotations(vm, meta)
    assert meta.annotations == {
        "keep": "me",
        "kubevirt.io/cluster-instancetype-name": "u1.small",
        "kubevirt.io/preference-name": "fedora",
    }
