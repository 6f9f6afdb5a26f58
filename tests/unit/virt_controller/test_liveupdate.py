"""The live-update rules of KubeVirt v1.6's VM controller (CPU, affinity, tolerations and memory change
handlers) and of its VMI controller (pending CPU and memory hotplugs), as pure functions."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubevirt.admission.jsonpatch import PatchError, apply
from kubevirt.virt_controller.watch.liveupdate import (
    AFFINITY_WHILE_MIGRATING,
    CPU_HOTPLUG_IN_PROGRESS,
    CPU_HOTPLUG_ON_ARM,
    CPU_HOTPLUG_WHILE_MIGRATING,
    MEMORY_BELOW_BOOT,
    MEMORY_HOTPLUG_FAILED,
    MEMORY_HOTPLUG_IN_PROGRESS,
    MEMORY_HOTPLUG_WHILE_MIGRATING,
    MEMORY_NO_MAX_GUEST,
    MEMORY_NOT_HOTPLUGGABLE,
    MEMORY_NOT_MIGRATABLE,
    NOTHING,
    SOCKETS_ABOVE_MAX,
    SOCKETS_REDUCED,
    TOLERATIONS_WHILE_MIGRATING,
    LiveUpdateError,
    Outcome,
    affinity_change,
    cpu_change,
    cpu_hotplug_pending,
    memory_change,
    memory_hotplug_pending,
    memory_hotplug_unsupported,
    tolerations_change,
)
from kubevirt_api.core.v1 import VirtualMachineInstance, VirtualMachineInstanceSpec
from kubevirt_api.resource import Quantity

JSON = dict[str, Any]


def _vmi(spec: JSON, status: JSON | None = None) -> VirtualMachineInstance:
    return VirtualMachineInstance.from_dict(
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstance",
            "metadata": {"name": "vm", "namespace": "default"},
            "spec": spec,
            "status": status or {"phase": "Running"},
        }
    )


def _spec(spec: JSON) -> VirtualMachineInstanceSpec:
    return VirtualMachineInstanceSpec.from_dict(spec)


def _applied(vmi: VirtualMachineInstance, outcome: Outcome) -> JSON:
    """The VMI as the server holds it after the outcome's patches (strict RFC 6902)."""
    document = vmi.to_dict()
    for patch in outcome.patches:
        document = apply(document, patch)
    return document


# -- CPU ----------------------------------------------------------------------------------------------------


def _cpu_vmi(*, conditions: list[JSON] | None = None, migration: JSON | None = None, **domain: Any) -> Any:
    spec = {"domain": {"devices": {}, **domain}}
    status: JSON = {"phase": "Running", "conditions": conditions or []}
    if migration is not None:
        status["migrationState"] = migration
    return _vmi(spec, status)


def _cpu(
    template: JSON, vmi: VirtualMachineInstance, *, migrating: bool = False, ratio: int = 10, arch: str = ""
) -> Outcome:
    return cpu_change(
        _spec({"domain": {"devices": {}, **template}, **({"architecture": arch} if arch else {})}),
        vmi,
        migrating=migrating,
        cpu_allocation_ratio=ratio,
        default_architecture="amd64",
    )


def test_the_same_sockets_or_no_cpu_on_either_side_change_nothing() -> None:
    vmi = _cpu_vmi(cpu={"sockets": 2, "maxSockets": 8})
    assert _cpu({"cpu": {"sockets": 2, "cores": 4}}, vmi) == NOTHING  # only sockets are hotplugged
    assert _cpu({}, vmi) == NOTHING
    assert _cpu({"cpu": {"sockets": 4}}, _cpu_vmi()) == NOTHING


def test_more_sockets_patch_the_vmi_with_a_test_of_the_old_count() -> None:
    vmi = _cpu_vmi(cpu={"sockets": 1, "cores": 2, "threads": 1, "maxSockets": 4})
    outcome = _cpu({"cpu": {"sockets": 3, "cores": 2, "threads": 1}}, vmi)
    assert outcome.restart_required is None
    assert outcome.patches == (
        [
            {"op": "test", "path": "/spec/domain/cpu/sockets", "value": 1},
            {"op": "replace", "path": "/spec/domain/cpu/sockets", "value": 3},
        ],
    )
    assert _applied(vmi, outcome)["spec"]["domain"]["cpu"]["sockets"] == 3


def test_cpu_requests_and_limits_grow_by_the_new_vcpus_at_the_allocation_ratio() -> None:
    resources = {"requests": {"cpu": "200m", "memory": "1Gi"}, "limits": {"cpu": "2"}}
    vmi = _cpu_vmi(cpu={"sockets": 1, "cores": 2, "maxSockets": 4}, resources=resources)
    # Two more sockets of two cores: four vCPUs, each 1000m / 10 = 100m.
    outcome = _cpu({"cpu": {"sockets": 3, "cores": 2}, "resources": resources}, vmi)
    [patch] = outcome.patches
    assert patch[2:] == [
        {"op": "test", "path": "/spec/domain/resources/requests/cpu", "value": "200m"},
        {"op": "replace", "path": "/spec/domain/resources/requests/cpu", "value": "600m"},
        {"op": "test", "path": "/spec/domain/resources/limits/cpu", "value": "2"},
        {"op": "replace", "path": "/spec/domain/resources/limits/cpu", "value": "2400m"},
    ]
    assert (
        outcome.summary == "hotplugging cpu to 3 sockets, setting requests to 600m, setting limits to 2400m"
    )
    # A ratio of one: a whole CPU per vCPU.
    [patch] = _cpu({"cpu": {"sockets": 3, "cores": 2}, "resources": resources}, vmi, ratio=1).patches
    assert patch[3]["value"] == "4200m"


def test_cpu_resources_the_template_does_not_set_are_left_alone() -> None:
    resources = {"requests": {"cpu": "1"}}
    vmi = _cpu_vmi(cpu={"sockets": 1, "maxSockets": 4}, resources=resources)
    [patch] = _cpu({"cpu": {"sockets": 2}}, vmi).patches
    assert [op["path"] for op in patch] == ["/spec/domain/cpu/sockets"] * 2


def test_a_stale_cpu_patch_fails_its_test_instead_of_overwriting() -> None:
    vmi = _cpu_vmi(cpu={"sockets": 1, "maxSockets": 4})
    outcome = _cpu({"cpu": {"sockets": 2}}, vmi)
    newer = copy.deepcopy(vmi.to_dict())
    newer["spec"]["domain"]["cpu"]["sockets"] = 3
    with pytest.raises(PatchError, match="test failed"):
        apply(newer, outcome.patches[0])


@pytest.mark.parametrize(
    ("vmi_cpu", "wanted", "message"),
    [
        ({"sockets": 2, "maxSockets": 4}, 5, SOCKETS_ABOVE_MAX),
        ({"sockets": 2}, 3, SOCKETS_ABOVE_MAX),  # no maxSockets: no socket to spare
        ({"sockets": 2, "maxSockets": 4}, 1, SOCKETS_REDUCED),
    ],
)
def test_socket_changes_that_cannot_be_hotplugged_need_a_restart(
    vmi_cpu: JSON, wanted: int, message: str
) -> None:
    outcome = _cpu({"cpu": {"sockets": wanted}}, _cpu_vmi(cpu=vmi_cpu))
    assert outcome == Outcome(restart_required=message)


def test_arm_vms_need_a_restart_for_more_sockets() -> None:
    vmi = _cpu_vmi(cpu={"sockets": 1, "maxSockets": 4})
    assert _cpu({"cpu": {"sockets": 2}}, vmi, arch="arm64") == Outcome(restart_required=CPU_HOTPLUG_ON_ARM)


def test_a_cpu_change_waits_for_a_running_hotplug_and_for_a_migration() -> None:
    busy = _cpu_vmi(
        cpu={"sockets": 1, "maxSockets": 4}, conditions=[{"type": "HotVCPUChange", "status": "True"}]
    )
    with pytest.raises(LiveUpdateError, match=CPU_HOTPLUG_IN_PROGRESS):
        _cpu({"cpu": {"sockets": 2}}, busy)
    # Before the restart checks: even a reduction waits.
    with pytest.raises(LiveUpdateError, match=CPU_HOTPLUG_WHILE_MIGRATING):
        _cpu({"cpu": {"sockets": 1}}, _cpu_vmi(cpu={"sockets": 2, "maxSockets": 4}), migrating=True)


def test_cpu_hotplug_is_pending_while_the_guest_has_another_vcpu_count() -> None:
    spec = {"domain": {"devices": {}, "cpu": {"sockets": 2, "cores": 2, "maxSockets": 4}}}
    running = {"phase": "Running", "currentCPUTopology": {"sockets": 1, "cores": 2}}
    assert cpu_hotplug_pending(_vmi(spec, running))
    done = {"phase": "Running", "currentCPUTopology": {"sockets": 2, "cores": 2}}
    assert not cpu_hotplug_pending(_vmi(spec, done))
    # Without maxSockets or a reported topology there is nothing to hotplug.
    assert not cpu_hotplug_pending(_vmi(spec, {"phase": "Running"}))
    no_max = {"domain": {"devices": {}, "cpu": {"sockets": 2, "cores": 2}}}
    assert not cpu_hotplug_pending(_vmi(no_max, running))


# -- node placement ---------------------------------------------------------------------------------------

AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
        }
    }
}
OTHER_AFFINITY: JSON = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}


def _placement(template: JSON, vmi_spec: JSON, *, migrating: bool = False) -> tuple[Outcome, JSON]:
    vmi = _vmi({"domain": {"devices": {}}, **vmi_spec})
    outcome = affinity_change(_spec({"domain": {"devices": {}}, **template}), vmi, migrating=migrating)
    return outcome, _applied(vmi, outcome)


def test_an_affinity_is_added_replaced_after_a_test_and_removed() -> None:
    outcome, vmi = _placement({"affinity": AFFINITY}, {})
    assert outcome.patches == ([{"op": "add", "path": "/spec/affinity", "value": AFFINITY}],)
    assert vmi["spec"]["affinity"] == AFFINITY

    outcome, vmi = _placement({"affinity": AFFINITY}, {"affinity": OTHER_AFFINITY})
    assert outcome.patches == (
        [
            {"op": "test", "path": "/spec/affinity", "value": OTHER_AFFINITY},
            {"op": "replace", "path": "/spec/affinity", "value": AFFINITY},
        ],
    )
    assert vmi["spec"]["affinity"] == AFFINITY

    outcome, vmi = _placement({}, {"affinity": AFFINITY})
    assert outcome.patches == ([{"op": "remove", "path": "/spec/affinity"}],)
    assert "affinity" not in vmi["spec"]


def test_a_node_selector_is_added_replaced_after_a_test_and_removed() -> None:
    outcome, vmi = _placement({"nodeSelector": {"disk": "ssd"}}, {})
    assert outcome.patches == ([{"op": "add", "path": "/spec/nodeSelector", "value": {"disk": "ssd"}}],)
    assert vmi["spec"]["nodeSelector"] == {"disk": "ssd"}

    outcome, vmi = _placement({"nodeSelector": {"disk": "nvme"}}, {"nodeSelector": {"disk": "ssd"}})
    assert outcome.patches == (
        [
            {"op": "test", "path": "/spec/nodeSelector", "value": {"disk": "ssd"}},
            {"op": "replace", "path": "/spec/nodeSelector", "value": {"disk": "nvme"}},
        ],
    )
    assert vmi["spec"]["nodeSelector"] == {"disk": "nvme"}

    outcome, vmi = _placement({}, {"nodeSelector": {"disk": "ssd"}})
    assert outcome.patches == ([{"op": "remove", "path": "/spec/nodeSelector"}],)
    assert "nodeSelector" not in vmi["spec"]


def test_affinity_and_node_selector_are_two_patches_affinity_first() -> None:
    outcome, vmi = _placement({"affinity": AFFINITY, "nodeSelector": {"disk": "ssd"}}, {})
    assert [patch[0]["path"] for patch in outcome.patches] == ["/spec/affinity", "/spec/nodeSelector"]
    assert (vmi["spec"]["affinity"], vmi["spec"]["nodeSelector"]) == (AFFINITY, {"disk": "ssd"})


def test_an_empty_node_selector_equals_none_and_sends_no_patch() -> None:
    # Go's semantic equality: an empty map is no map; a removal of an absent field would fail forever.
    assert _placement({"nodeSelector": {}}, {})[0] == NOTHING
    assert _placement({}, {"nodeSelector": {}})[0] == NOTHING
    assert _placement({"affinity": AFFINITY}, {"affinity": AFFINITY})[0] == NOTHING


def test_placement_changes_wait_for_a_migration() -> None:
    with pytest.raises(LiveUpdateError, match=AFFINITY_WHILE_MIGRATING):
        _placement({"nodeSelector": {"disk": "ssd"}}, {}, migrating=True)
    assert _placement({}, {}, migrating=True)[0] == NOTHING  # nothing changed: nothing waits


# -- tolerations ------------------------------------------------------------------------------------------

TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "vms", "effect": "NoSchedule"}


def _tolerations(template: JSON, vmi_spec: JSON, *, migrating: bool = False) -> tuple[Outcome, JSON]:
    vmi = _vmi({"domain": {"devices": {}}, **vmi_spec})
    outcome = tolerations_change(_spec({"domain": {"devices": {}}, **template}), vmi, migrating=migrating)
    return outcome, _applied(vmi, outcome)


def test_tolerations_are_added_replaced_after_a_test_and_removed() -> None:
    outcome, vmi = _tolerations({"tolerations": [TOLERATION]}, {})
    assert outcome.patches == ([{"op": "add", "path": "/spec/tolerations", "value": [TOLERATION]}],)
    assert vmi["spec"]["tolerations"] == [TOLERATION]

    other = {**TOLERATION, "value": "gpus"}
    outcome, vmi = _tolerations({"tolerations": [TOLERATION, other]}, {"tolerations": [other]})
    assert outcome.patches == (
        [
            {"op": "test", "path": "/spec/tolerations", "value": [other]},
            {"op": "replace", "path": "/spec/tolerations", "value": [TOLERATION, other]},
        ],
    )
    assert vmi["spec"]["tolerations"] == [TOLERATION, other]

    outcome, vmi = _tolerations({}, {"tolerations": [TOLERATION]})
    assert outcome.patches == ([{"op": "remove", "path": "/spec/tolerations"}],)
    assert "tolerations" not in vmi["spec"]


def test_empty_tolerations_equal_none_and_changes_wait_for_a_migration() -> None:
    assert _tolerations({"tolerations": []}, {})[0] == NOTHING
    assert _tolerations({}, {"tolerations": []})[0] == NOTHING
    with pytest.raises(LiveUpdateError, match=TOLERATIONS_WHILE_MIGRATING):
        _tolerations({"tolerations": [TOLERATION]}, {}, migrating=True)


# -- memory -----------------------------------------------------------------------------------------------

MIGRATABLE = {"type": "LiveMigratable", "status": "True"}


def _memory_vmi(
    *,
    guest: str = "2Gi",
    max_guest: str | None = "8Gi",
    current: str = "2Gi",
    at_boot: str = "2Gi",
    conditions: list[JSON] | None = None,
    resources: JSON | None = None,
) -> VirtualMachineInstance:
    memory: JSON = {"guest": guest, **({"maxGuest": max_guest} if max_guest else {})}
    domain: JSON = {"devices": {}, "memory": memory, **({"resources": resources} if resources else {})}
    status = {
        "phase": "Running",
        "conditions": [MIGRATABLE] if conditions is None else conditions,
        "memory": {"guestAtBoot": at_boot, "guestCurrent": current, "guestRequested": current},
    }
    return _vmi({"domain": domain}, status)


def _memory(
    guest: str,
    vmi: VirtualMachineInstance,
    *,
    migrating: bool = False,
    resources: JSON | None = None,
    **spec: Any,
) -> Outcome:
    domain = {"devices": {}, "memory": {"guest": guest}, **({"resources": resources} if resources else {})}
    return memory_change(
        _spec({"domain": domain, **spec}), vmi, migrating=migrating, default_architecture="amd64"
    )


def test_more_guest_memory_is_patched_with_a_test_of_the_old_size() -> None:
    vmi = _memory_vmi()
    outcome = _memory("4Gi", vmi)
    assert outcome.patches == (
        [
            {"op": "test", "path": "/spec/domain/memory/guest", "value": "2Gi"},
            {"op": "replace", "path": "/spec/domain/memory/guest", "value": "4Gi"},
        ],
    )
    assert _applied(vmi, outcome)["spec"]["domain"]["memory"]["guest"] == "4Gi"
    assert outcome.summary == "hotplugging memory to 4Gi"


def test_memory_request_and_limit_follow_by_the_difference_to_the_current_guest() -> None:
    resources = {"requests": {"memory": "2Gi"}, "limits": {"memory": "3Gi"}}
    vmi = _memory_vmi(resources=resources)
    outcome = _memory("4Gi", vmi, resources={"limits": {"memory": "3Gi"}})
    [patch] = outcome.patches
    assert patch[2:] == [
        {"op": "test", "path": "/spec/domain/resources/requests/memory", "value": "2Gi"},
        {"op": "replace", "path": "/spec/domain/resources/requests/memory", "value": "4Gi"},
        {"op": "test", "path": "/spec/domain/resources/limits/memory", "value": "3Gi"},
        {"op": "replace", "path": "/spec/domain/resources/limits/memory", "value": "5Gi"},
    ]
    assert outcome.summary == "hotplugging memory to 4Gi, setting requests to 4Gi, setting limits to 5Gi"
    # No limit in the template: the VMI's limit stays as it is.
    [patch] = _memory("4Gi", vmi).patches
    assert [op["path"] for op in patch][-1] == "/spec/domain/resources/requests/memory"


def test_a_memory_request_never_drops_below_the_guest_size() -> None:
    # After an unplug the guest may still hold more than asked: the difference to it would undersize.
    resources = {"requests": {"memory": "2Gi"}, "limits": {"memory": "3Gi"}}
    vmi = _memory_vmi(guest="2Gi", current="3Gi", at_boot="1Gi", resources=resources)
    [patch] = _memory("2560Mi", vmi, resources=resources).patches
    request, limit = patch[3]["value"], patch[5]["value"]
    assert request == "2560Mi"
    assert limit == "3Gi"  # the request took the whole shortfall: nothing is left for the limit


def test_no_memory_status_or_an_unchanged_guest_changes_nothing() -> None:
    assert _memory("2Gi", _memory_vmi()) == NOTHING
    vmi = _vmi({"domain": {"devices": {}, "memory": {"guest": "2Gi", "maxGuest": "8Gi"}}})
    assert _memory("4Gi", vmi) == NOTHING


@pytest.mark.parametrize(
    ("vmi", "guest", "spec", "message"),
    [
        (
            _memory_vmi(conditions=[MIGRATABLE, {"type": "HotMemoryChange", "status": "False"}]),
            "2Gi",  # even with no change: the last hotplug failed
            {},
            MEMORY_HOTPLUG_FAILED,
        ),
        (_memory_vmi(conditions=[]), "4Gi", {}, MEMORY_NOT_MIGRATABLE),
        (_memory_vmi(max_guest=None), "4Gi", {}, MEMORY_NO_MAX_GUEST),
        (_memory_vmi(guest="4Gi", at_boot="4Gi", current="4Gi"), "2Gi", {}, MEMORY_BELOW_BOOT),
        (
            _memory_vmi(),
            "16Gi",
            {},
            MEMORY_NOT_HOTPLUGGABLE.format("Guest memory is greater than the configured maxGuest memory"),
        ),
        (
            _memory_vmi(),
            "4Gi",
            {"architecture": "arm64"},
            MEMORY_NOT_HOTPLUGGABLE.format("Memory hotplug is only available for x86_64 VMs"),
        ),
    ],
)
def test_memory_changes_that_cannot_be_hotplugged_need_a_restart(
    vmi: VirtualMachineInstance, guest: str, spec: JSON, message: str
) -> None:
    assert _memory(guest, vmi, **spec) == Outcome(restart_required=message)


def test_a_memory_change_waits_for_a_running_hotplug_and_for_a_migration() -> None:
    busy = _memory_vmi(conditions=[MIGRATABLE, {"type": "HotMemoryChange", "status": "True"}])
    with pytest.raises(LiveUpdateError, match=MEMORY_HOTPLUG_IN_PROGRESS):
        _memory("4Gi", busy)
    with pytest.raises(LiveUpdateError, match=MEMORY_HOTPLUG_WHILE_MIGRATING):
        _memory("4Gi", _memory_vmi(), migrating=True)


def _unsupported(domain: JSON, max_guest: str | None = "8Gi", architecture: str = "") -> str | None:
    spec = _spec(
        {"domain": {"devices": {}, **domain}, **({"architecture": architecture} if architecture else {})}
    )
    return memory_hotplug_unsupported(spec, Quantity(max_guest) if max_guest else None, "amd64")


@pytest.mark.parametrize(
    ("domain", "max_guest", "reason"),
    [
        ({"cpu": {"realtime": {}}, "memory": {"guest": "2Gi"}}, "8Gi", "not compatible with realtime VMs"),
        (
            {"cpu": {"numa": {"guestMappingPassthrough": {}}}, "memory": {"guest": "2Gi"}},
            "8Gi",
            "not compatible with guest mapping passthrough",
        ),
        ({"launchSecurity": {}, "memory": {"guest": "2Gi"}}, "8Gi", "not compatible with encrypted VMs"),
        ({}, "8Gi", "Guest memory must be configured"),
        ({"memory": {"guest": "2Gi"}}, None, "Max guest memory must be configured"),
        ({"memory": {"guest": "2049Mi"}}, "8Gi", "Guest memory must be 2Mi aligned"),
        ({"memory": {"guest": "2Gi"}}, "8193Mi", "MaxGuest must be 2Mi aligned"),
        (
            {"memory": {"guest": "2050Mi", "hugepages": {"pageSize": "1Gi"}}},
            "8Gi",
            "Guest memory must be 1Gi aligned",
        ),
        ({"memory": {"guest": "512Mi"}}, "8Gi", "at least 1Gi of guest memory"),
    ],
)
def test_memory_hotplug_validation(domain: JSON, max_guest: str | None, reason: str) -> None:
    found = _unsupported(domain, max_guest)
    assert found is not None
    assert reason in found


def test_a_valid_memory_configuration_can_be_hotplugged_on_the_default_architecture() -> None:
    assert _unsupported({"memory": {"guest": "2Gi"}}) is None
    assert _unsupported({"memory": {"guest": "2Gi"}}, architecture="s390x") is not None


def test_memory_hotplug_is_pending_while_the_requested_size_differs() -> None:
    vmi = _memory_vmi(guest="4Gi", current="2Gi")
    assert memory_hotplug_pending(vmi)
    assert not memory_hotplug_pending(_memory_vmi())
    assert not memory_hotplug_pending(_memory_vmi(guest="4Gi", max_guest=None))
